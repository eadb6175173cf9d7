-- A task's messages are named by (task_id, sequence) everywhere (the transcript, the step's
-- write, the answer a status event names); the identity column id and its index served
-- nothing once the step's message became a blind write (issue 28: two messages a one-step
-- task, so two index entries and 16 bytes of rows a task). The unique constraint becomes the
-- primary key, as task_events' did (0040).
ALTER TABLE task_messages DROP CONSTRAINT task_messages_pkey;
ALTER TABLE task_messages DROP COLUMN id;
ALTER TABLE task_messages DROP CONSTRAINT task_messages_task_sequence_uq;
ALTER TABLE task_messages ADD CONSTRAINT task_messages_pkey PRIMARY KEY (task_id, sequence);
