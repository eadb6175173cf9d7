-- Agents: a configurable AI agent owned by a principal (a user's personal principal or a
-- group's), and the per-user favorite markers. Tables of later areas that belong to an agent
-- (tasks, scheduled runs, prompt templates, tool records, API keys …) reference agents (id)
-- with ON DELETE CASCADE, so deleting an agent removes everything that belongs to it.
-- principal_id has no cascade: the store deletes a user's personal agents itself, and a group
-- that owns agents cannot be deleted.
-- TEXT columns take parenthesised (expression) defaults: MySQL 8.0.13+ and MariaDB 10.2+.
-- name is compared and sorted byte for byte (utf8mb4_bin), as on SQLite, so both dialects list
-- agents in the same order.

CREATE TABLE agents (
    id                  BIGINT        NOT NULL AUTO_INCREMENT,
    principal_id        BIGINT        NOT NULL,
    name                VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    description         VARCHAR(2000) NOT NULL DEFAULT '',
    system_prompt       MEDIUMTEXT    NOT NULL DEFAULT (''),
    notes               MEDIUMTEXT    NOT NULL DEFAULT (''),
    max_steps           INT           NOT NULL DEFAULT 10,
    allow_followup      BOOLEAN       NOT NULL DEFAULT TRUE,
    retry_after_minutes INT           NOT NULL DEFAULT 0,
    max_retries         INT           NOT NULL DEFAULT 0,
    metadata            MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ('{}'),
    created_at          DATETIME(6)   NOT NULL,
    updated_at          DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    KEY agents_principal_name_idx (principal_id, name, id),
    KEY agents_name_idx (name, id),
    CONSTRAINT agents_max_steps_check CHECK (max_steps BETWEEN 1 AND 100),
    CONSTRAINT agents_retry_after_minutes_check CHECK (retry_after_minutes >= 0),
    CONSTRAINT agents_max_retries_check CHECK (max_retries >= 0),
    CONSTRAINT agents_principal_id_fk FOREIGN KEY (principal_id) REFERENCES principals (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE agent_favorites (
    user_id    BIGINT      NOT NULL,
    agent_id   BIGINT      NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (user_id, agent_id),
    KEY agent_favorites_agent_id_idx (agent_id),
    CONSTRAINT agent_favorites_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT agent_favorites_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
