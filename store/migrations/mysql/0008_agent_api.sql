-- Per-agent API: keys, the chat columns of tasks, and the durable outbox of signed callbacks.
-- A key is svk_<key_id>_<secret>; only the lowercase hex SHA-256 of the secret is kept
-- (secret_digest), which is also the HMAC key of callback signatures. A revoked key keeps its
-- row (revoked_at set) so the chats it started still name it; it never authenticates again.
-- created_by is the user who minted the key: chats started with it are owned by that user
-- (tasks.user_id), so deleting the user removes the key with the chats.

CREATE TABLE agent_api_keys (
    id            BIGINT       NOT NULL AUTO_INCREMENT,
    key_id        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id      BIGINT       NOT NULL,
    name          VARCHAR(100) NOT NULL,
    secret_digest CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_by    BIGINT       NOT NULL,
    created_at    DATETIME(6)  NOT NULL,
    last_used_at  DATETIME(6)  NULL,
    revoked_at    DATETIME(6)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY agent_api_keys_key_id_key (key_id),
    KEY agent_api_keys_agent_idx (agent_id, created_at),
    CONSTRAINT agent_api_keys_agent_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE,
    CONSTRAINT agent_api_keys_user_fk FOREIGN KEY (created_by) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- A chat of the per-agent API is a task with source 'agent_api', the key that started it and
-- the callback target screened at start (NULL: no callbacks).
ALTER TABLE tasks
    ADD COLUMN api_key_id BIGINT NULL,
    ADD COLUMN callback_url VARCHAR(2048) NULL,
    ADD KEY tasks_agent_source_updated_idx (agent_id, source, updated_at),
    ADD CONSTRAINT tasks_api_key_fk FOREIGN KEY (api_key_id) REFERENCES agent_api_keys (id) ON DELETE SET NULL;

-- A tool call decided through the per-agent API records the public id of the key (decided_by
-- then holds the key's minter).
ALTER TABLE task_tool_calls ADD COLUMN decided_by_key VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL;

-- Callback outbox: one row per settle event of a chat with a callback_url, written in the same
-- transaction as the status change that settled it. snapshot is the chat as it settled (JSON);
-- state pending rows are due at next_attempt_at; lease_until keeps two dispatchers off one row.
CREATE TABLE webhook_deliveries (
    id              BIGINT        NOT NULL AUTO_INCREMENT,
    task_id         BIGINT        NOT NULL,
    api_key_id      BIGINT        NOT NULL,
    url             VARCHAR(2048) NOT NULL,
    status          VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    snapshot        MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    state           VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempts        INT           NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)   NOT NULL,
    lease_until     DATETIME(6)   NULL,
    last_error      TEXT          NULL,
    created_at      DATETIME(6)   NOT NULL,
    updated_at      DATETIME(6)   NOT NULL,
    finished_at     DATETIME(6)   NULL,
    PRIMARY KEY (id),
    KEY webhook_deliveries_due_idx (state, next_attempt_at),
    KEY webhook_deliveries_task_idx (task_id),
    CONSTRAINT webhook_deliveries_state_check CHECK (state IN ('pending', 'delivered', 'abandoned')),
    CONSTRAINT webhook_deliveries_task_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE,
    CONSTRAINT webhook_deliveries_key_fk FOREIGN KEY (api_key_id) REFERENCES agent_api_keys (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
