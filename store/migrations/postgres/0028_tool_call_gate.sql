-- What the approval gate decided about a tool call without asking anyone (issue 26): "refused"
-- (its tool or operation could not be resolved, or is off), "policy:<n>" (rule n of the
-- operation's approval policy allowed, denied or asked for it), "task" (an earlier approval
-- allowed the operation for the rest of the task); NULL: the operation's approval flag decided.
ALTER TABLE task_tool_calls ADD COLUMN gate VARCHAR(32) NULL;
-- An approval that also allows later calls of the same tool operation in the same task.
ALTER TABLE task_tool_calls ADD COLUMN allow_for_task BOOLEAN NOT NULL DEFAULT FALSE;
