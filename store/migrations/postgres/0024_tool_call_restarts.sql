-- How many times a tool call was started again after a crash interrupted it (issue 23): only a
-- call of a repeatable operation (it reads only, or repeating it has no further effect) is;
-- the transcript shows it. Any other call found started and unfinished is never run again.
ALTER TABLE task_tool_calls ADD COLUMN restarts INT NOT NULL DEFAULT 0;
