-- Per-agent API: keys, the chat columns of tasks, and the durable outbox of signed callbacks.
-- A key is svk_<key_id>_<secret>; only the lowercase hex SHA-256 of the secret is kept
-- (secret_digest), which is also the HMAC key of callback signatures. A revoked key keeps its
-- row (revoked_at set) so the chats it started still name it; it never authenticates again.
-- created_by is the user who minted the key: chats started with it are owned by that user
-- (tasks.user_id), so deleting the user removes the key with the chats.

CREATE TABLE agent_api_keys (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id        TEXT     NOT NULL,
    agent_id      INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name          TEXT     NOT NULL,
    secret_digest TEXT     NOT NULL,
    created_by    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    DATETIME NOT NULL,
    last_used_at  DATETIME NULL,
    revoked_at    DATETIME NULL
);
CREATE UNIQUE INDEX agent_api_keys_key_id_key ON agent_api_keys (key_id);
CREATE INDEX agent_api_keys_agent_idx ON agent_api_keys (agent_id, created_at);

-- A chat of the per-agent API is a task with source 'agent_api', the key that started it and
-- the callback target screened at start (NULL: no callbacks).
ALTER TABLE tasks ADD COLUMN api_key_id INTEGER NULL REFERENCES agent_api_keys (id) ON DELETE SET NULL;
ALTER TABLE tasks ADD COLUMN callback_url TEXT NULL;
CREATE INDEX tasks_agent_source_updated_idx ON tasks (agent_id, source, updated_at);

-- A tool call decided through the per-agent API records the public id of the key (decided_by
-- then holds the key's minter).
ALTER TABLE task_tool_calls ADD COLUMN decided_by_key TEXT NULL;

-- Callback outbox: one row per settle event of a chat with a callback_url, written in the same
-- transaction as the status change that settled it. snapshot is the chat as it settled (JSON);
-- state pending rows are due at next_attempt_at; lease_until keeps two dispatchers off one row.
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    api_key_id      INTEGER  NOT NULL REFERENCES agent_api_keys (id) ON DELETE CASCADE,
    url             TEXT     NOT NULL,
    status          TEXT     NOT NULL,
    snapshot        TEXT     NOT NULL,
    state           TEXT     NOT NULL CHECK (state IN ('pending', 'delivered', 'abandoned')),
    attempts        INTEGER  NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL,
    lease_until     DATETIME NULL,
    last_error      TEXT     NULL,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    finished_at     DATETIME NULL
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_task_idx ON webhook_deliveries (task_id);
