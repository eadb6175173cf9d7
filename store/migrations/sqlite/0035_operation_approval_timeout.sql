-- Per-operation approval timeout (issue 26): an agent's operation override may set how long a
-- call of that operation waits for a decision (0: forever), overriding the agent's
-- approval_timeout_seconds; NULL inherits it. The approval gate copies the effective override
-- onto the call it holds, so the expiry sweep reads COALESCE(call's, agent's) without reading
-- tool configuration; NULL on the call means the agent's timeout applies.
ALTER TABLE agent_tool_operations ADD COLUMN approval_timeout_seconds INTEGER NULL;
ALTER TABLE task_tool_calls ADD COLUMN approval_timeout_seconds INTEGER NULL;
