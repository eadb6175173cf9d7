-- How many tool calls a task has recorded (issue 14), kept on the task row like message_seq: a
-- step of a task that has none (every first step) skips reading its tool calls. Bumped by the
-- transaction that records them (AppendAssistantTurn, under the task's row lock); tool calls are
-- only ever deleted with their task.
ALTER TABLE tasks ADD COLUMN tool_call_count INT NOT NULL DEFAULT 0;
UPDATE tasks SET tool_call_count = (SELECT COUNT(*) FROM task_tool_calls c WHERE c.task_id = tasks.id);
