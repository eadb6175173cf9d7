-- The ordered event log of each task (issue 13): status changes, messages, tool calls proposed,
-- decided and executed, questions asked and answered, and coalesced model output deltas while a
-- turn streams (deleted once the turn's message is stored). sequence counts per task from 1;
-- tasks.event_seq is the last one given out, bumped in the transaction that writes the events,
-- so the row lock orders writers and a reader never sees a later sequence before an earlier one.
ALTER TABLE tasks ADD COLUMN event_seq INTEGER NOT NULL DEFAULT 0;
CREATE TABLE task_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    sequence   INTEGER  NOT NULL,
    type       TEXT     NOT NULL,
    data       TEXT     NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX task_events_task_sequence_uq ON task_events (task_id, sequence);
