-- Tool configuration: which tools an agent (or a group) has enabled, per-operation overrides of
-- an agent, and tool settings at every layer of the cascade (global < user < group < agent).
-- A setting row holds one key of one tool at one layer; its value is JSON, and password-typed
-- values are sealed (AES-256-GCM, "v1:…") inside that JSON string. scope_key is the layer with
-- its owner ("global", "user:3", "group:2", "agent:7") so one unique index covers all layers;
-- the nullable owner columns cascade deletes from users, groups and agents.

CREATE TABLE agent_tools (
    agent_id   BIGINT       NOT NULL,
    tool_class VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    enabled    BOOLEAN      NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (agent_id, tool_class),
    CONSTRAINT agent_tools_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE agent_tool_operations (
    agent_id     BIGINT       NOT NULL,
    tool_class   VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    operation    VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    enabled      BOOLEAN      NULL,
    auto_approve BOOLEAN      NULL,
    updated_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (agent_id, tool_class, operation),
    CONSTRAINT agent_tool_operations_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE group_tools (
    group_id   BIGINT       NOT NULL,
    tool_class VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    enabled    BOOLEAN      NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (group_id, tool_class),
    CONSTRAINT group_tools_group_id_fk FOREIGN KEY (group_id) REFERENCES principal_groups (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE tool_settings (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    scope       VARCHAR(8)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    scope_key   VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id     BIGINT       NULL,
    group_id    BIGINT       NULL,
    agent_id    BIGINT       NULL,
    tool_class  VARCHAR(191) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    setting_key VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    value       MEDIUMTEXT   NOT NULL,
    updated_at  DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY tool_settings_key (scope_key, tool_class, setting_key),
    CONSTRAINT tool_settings_scope_check CHECK (scope IN ('global', 'user', 'group', 'agent')),
    CONSTRAINT tool_settings_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT tool_settings_group_id_fk FOREIGN KEY (group_id) REFERENCES principal_groups (id) ON DELETE CASCADE,
    CONSTRAINT tool_settings_agent_id_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
