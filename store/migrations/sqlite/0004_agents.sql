-- Agents: a configurable AI agent owned by a principal (a user's personal principal or a
-- group's), and the per-user favorite markers. Tables of later areas that belong to an agent
-- (tasks, scheduled runs, prompt templates, tool records, API keys …) reference agents (id)
-- with ON DELETE CASCADE, so deleting an agent removes everything that belongs to it.
-- principal_id has no cascade: the store deletes a user's personal agents itself, and a group
-- that owns agents cannot be deleted.

CREATE TABLE agents (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    principal_id        INTEGER  NOT NULL REFERENCES principals (id),
    name                TEXT     NOT NULL,
    description         TEXT     NOT NULL DEFAULT '',
    system_prompt       TEXT     NOT NULL DEFAULT '',
    notes               TEXT     NOT NULL DEFAULT '',
    max_steps           INTEGER  NOT NULL DEFAULT 10 CHECK (max_steps BETWEEN 1 AND 100),
    allow_followup      BOOLEAN  NOT NULL DEFAULT 1,
    retry_after_minutes INTEGER  NOT NULL DEFAULT 0 CHECK (retry_after_minutes >= 0),
    max_retries         INTEGER  NOT NULL DEFAULT 0 CHECK (max_retries >= 0),
    metadata            TEXT     NOT NULL DEFAULT '{}',
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL
);
CREATE INDEX agents_principal_name_idx ON agents (principal_id, name, id);
CREATE INDEX agents_name_idx ON agents (name, id);

CREATE TABLE agent_favorites (
    user_id    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent_id   INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    created_at DATETIME NOT NULL,
    PRIMARY KEY (user_id, agent_id)
);
CREATE INDEX agent_favorites_agent_id_idx ON agent_favorites (agent_id);
