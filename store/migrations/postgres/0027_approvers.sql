-- Approvals for teams (issue 26). Who may decide an agent's pending tool calls and questions:
-- a JSON object {"owner":bool,"managers":bool,"users":[user ids]} (absent members false/empty;
-- the default is the task's owner alone, as before). How long a call may wait for a decision
-- (0: forever) and what happens then ('reject' with a reason, or 'abort' the task). A call
-- decided by that expiry records decided_by_system; a question batch records who answered it.
ALTER TABLE agents ADD COLUMN approvers VARCHAR(2000) NOT NULL DEFAULT '{"owner":true}';
ALTER TABLE agents ADD COLUMN approval_timeout_seconds INT NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN approval_timeout_action VARCHAR(16) NOT NULL DEFAULT 'reject';
ALTER TABLE task_tool_calls ADD COLUMN decided_by_system BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE task_questions ADD COLUMN answered_by BIGINT NULL;
CREATE INDEX task_tool_calls_pending_idx ON task_tool_calls (status, created_at);
