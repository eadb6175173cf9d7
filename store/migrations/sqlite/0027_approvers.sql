-- Approvals for teams (issue 26). Who may decide an agent's pending tool calls and questions:
-- a JSON object {"owner":bool,"managers":bool,"users":[user ids]} (absent members false/empty;
-- the default is the task's owner alone, as before). How long a call may wait for a decision
-- (0: forever) and what happens then ('reject' with a reason, or 'abort' the task). A call
-- decided by that expiry records decided_by_system; a question batch records who answered it.
ALTER TABLE agents ADD COLUMN approvers TEXT NOT NULL DEFAULT '{"owner":true}';
ALTER TABLE agents ADD COLUMN approval_timeout_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN approval_timeout_action TEXT NOT NULL DEFAULT 'reject';
ALTER TABLE task_tool_calls ADD COLUMN decided_by_system INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_questions ADD COLUMN answered_by INTEGER;
CREATE INDEX task_tool_calls_pending_idx ON task_tool_calls (status, created_at);
