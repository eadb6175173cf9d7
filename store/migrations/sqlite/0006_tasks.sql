-- Tasks: a chat run of an agent, its conversation, its tool calls and its question batches.
-- user_id is the owner (only the owner sees a task); principal_id is the agent's principal
-- when the task started (kept as a plain value: the agent may move later). Deleting an agent,
-- the owner or a parent task removes the task with everything that belongs to it.
-- Status changes are compare-and-swap updates on status; lease_owner/lease_expires_at say
-- which worker holds a RUNNING task and until when.

CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id         INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    principal_id     INTEGER  NOT NULL,
    user_id          INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    parent_task_id   INTEGER  REFERENCES tasks (id) ON DELETE CASCADE,
    status           TEXT     NOT NULL,
    prompt           TEXT     NOT NULL,
    answer           TEXT,
    error_code       TEXT,
    error_message    TEXT,
    max_steps        INTEGER  NOT NULL CHECK (max_steps >= 1),
    steps_used       INTEGER  NOT NULL DEFAULT 0 CHECK (steps_used >= 0),
    retry_count      INTEGER  NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    next_retry_at    DATETIME,
    input_tokens     INTEGER  NOT NULL DEFAULT 0,
    output_tokens    INTEGER  NOT NULL DEFAULT 0,
    data             TEXT     NOT NULL DEFAULT '{}',
    source           TEXT     NOT NULL CHECK (source IN ('session', 'agent_api')),
    lease_owner      TEXT,
    lease_expires_at DATETIME,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL,
    finished_at      DATETIME
);
CREATE INDEX tasks_status_lease_idx ON tasks (status, lease_expires_at);
CREATE INDEX tasks_status_retry_idx ON tasks (status, next_retry_at);
CREATE INDEX tasks_user_updated_idx ON tasks (user_id, updated_at);
CREATE INDEX tasks_user_created_idx ON tasks (user_id, created_at, id);
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id);
CREATE INDEX tasks_agent_idx ON tasks (agent_id);

CREATE TABLE task_messages (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id          INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    sequence         INTEGER  NOT NULL,
    role             TEXT     NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    text             TEXT     NOT NULL DEFAULT '',
    reasoning        TEXT,
    tool_calls       TEXT,
    provider_call_id TEXT,
    media_ids        TEXT,
    input_tokens     INTEGER  NOT NULL DEFAULT 0,
    output_tokens    INTEGER  NOT NULL DEFAULT 0,
    created_at       DATETIME NOT NULL,
    UNIQUE (task_id, sequence)
);

CREATE TABLE task_tool_calls (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id            INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    message_sequence   INTEGER  NOT NULL,
    provider_call_id   TEXT     NOT NULL,
    tool_class         TEXT     NOT NULL,
    name               TEXT     NOT NULL,
    operation          TEXT     NOT NULL DEFAULT '',
    status             TEXT     NOT NULL CHECK (status IN ('PENDING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXECUTED', 'FAILED')),
    proposed_arguments TEXT     NOT NULL DEFAULT '{}',
    approved_arguments TEXT,
    result             TEXT,
    reason             TEXT,
    decided_by         INTEGER,
    decided_at         DATETIME,
    created_at         DATETIME NOT NULL,
    executed_at        DATETIME,
    UNIQUE (task_id, provider_call_id)
);
CREATE INDEX task_tool_calls_status_idx ON task_tool_calls (task_id, status);

CREATE TABLE task_questions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    tool_call_id TEXT     NOT NULL,
    questions    TEXT     NOT NULL,
    answers      TEXT,
    created_at   DATETIME NOT NULL,
    answered_at  DATETIME,
    UNIQUE (task_id, tool_call_id)
);
