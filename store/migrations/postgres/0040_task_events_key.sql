-- A task's events are named by (task_id, sequence) everywhere (the streams, the notices, the
-- transcript); the identity column id and its index served nothing (issue 28: five events a
-- task, so five index entries and 40 bytes of rows a task, 131 of the 2.8 KB a one-step task
-- kept). The unique constraint becomes the primary key.
ALTER TABLE task_events DROP CONSTRAINT task_events_pkey;
ALTER TABLE task_events DROP COLUMN id;
ALTER TABLE task_events DROP CONSTRAINT task_events_task_sequence_uq;
ALTER TABLE task_events ADD CONSTRAINT task_events_pkey PRIMARY KEY (task_id, sequence);
