-- Tool configuration: which tools an agent (or a group) has enabled, per-operation overrides of
-- an agent, and tool settings at every layer of the cascade (global < user < group < agent).
-- A setting row holds one key of one tool at one layer; its value is JSON, and password-typed
-- values are sealed (AES-256-GCM, "v1:…") inside that JSON string. scope_key is the layer with
-- its owner ("global", "user:3", "group:2", "agent:7") so one unique index covers all layers;
-- the nullable owner columns cascade deletes from users, groups and agents.

CREATE TABLE agent_tools (
    agent_id   INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_class TEXT     NOT NULL,
    enabled    BOOLEAN  NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (agent_id, tool_class)
);

CREATE TABLE agent_tool_operations (
    agent_id     INTEGER  NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_class   TEXT     NOT NULL,
    operation    TEXT     NOT NULL,
    enabled      BOOLEAN  NULL,
    auto_approve BOOLEAN  NULL,
    updated_at   DATETIME NOT NULL,
    PRIMARY KEY (agent_id, tool_class, operation)
);

CREATE TABLE group_tools (
    group_id   INTEGER  NOT NULL REFERENCES principal_groups (id) ON DELETE CASCADE,
    tool_class TEXT     NOT NULL,
    enabled    BOOLEAN  NOT NULL,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL,
    PRIMARY KEY (group_id, tool_class)
);

CREATE TABLE tool_settings (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    scope       TEXT     NOT NULL CHECK (scope IN ('global', 'user', 'group', 'agent')),
    scope_key   TEXT     NOT NULL,
    user_id     INTEGER  NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id    INTEGER  NULL REFERENCES principal_groups (id) ON DELETE CASCADE,
    agent_id    INTEGER  NULL REFERENCES agents (id) ON DELETE CASCADE,
    tool_class  TEXT     NOT NULL,
    setting_key TEXT     NOT NULL,
    value       TEXT     NOT NULL,
    updated_at  DATETIME NOT NULL
);
CREATE UNIQUE INDEX tool_settings_key ON tool_settings (scope_key, tool_class, setting_key);
