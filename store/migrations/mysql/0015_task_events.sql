-- The ordered event log of each task (issue 13): status changes, messages, tool calls proposed,
-- decided and executed, questions asked and answered, and coalesced model output deltas while a
-- turn streams (deleted once the turn's message is stored). sequence counts per task from 1;
-- tasks.event_seq is the last one given out, bumped in the transaction that writes the events,
-- so the row lock orders writers and a reader never sees a later sequence before an earlier one.
ALTER TABLE tasks ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;
CREATE TABLE task_events (
    id         BIGINT      NOT NULL AUTO_INCREMENT,
    task_id    BIGINT      NOT NULL,
    sequence   BIGINT      NOT NULL,
    type       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    data       LONGTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY task_events_task_sequence_uq (task_id, sequence),
    CONSTRAINT task_events_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
