-- The last message sequence given out per task (issue 14), kept on the task row like event_seq:
-- a transaction that stores messages bumps it (under the task's row lock) instead of looking
-- for MAX(sequence) among the task's messages.
ALTER TABLE tasks ADD COLUMN message_seq INT NOT NULL DEFAULT 0;
UPDATE tasks SET message_seq = (SELECT COALESCE(MAX(m.sequence), 0) FROM task_messages m WHERE m.task_id = tasks.id);
