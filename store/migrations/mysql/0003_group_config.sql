-- Group configuration: free-form preferences and language-model configurations.
-- A configuration belongs to a group; is_global makes it usable by every principal. The default
-- flag is scoped: at most one default per group among its non-global configurations, and one
-- installation-wide default among the global ones. default_scope (0 for the global scope, the
-- group id for a group's scope, NULL when not a default) makes that a unique index, so the
-- database refuses a second default even if a writer forgets to clear the previous one.
-- api_key_sealed holds the key sealed with the master key (AES-256-GCM), never the plaintext.
-- Configuration names compare byte for byte (utf8mb4_bin), as on SQLite. Configurations are
-- deleted explicitly with their group (no cascade: MySQL restricts cascades on the base columns
-- of generated columns).

CREATE TABLE group_preferences (
    group_id    BIGINT      NOT NULL,
    preferences MEDIUMTEXT  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    updated_at  DATETIME(6) NOT NULL,
    PRIMARY KEY (group_id),
    CONSTRAINT group_preferences_group_id_fk FOREIGN KEY (group_id) REFERENCES principal_groups (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE llm_configs (
    id                BIGINT        NOT NULL AUTO_INCREMENT,
    group_id          BIGINT        NOT NULL,
    name              VARCHAR(100)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    driver            VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    model             VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    base_url          VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    api_key_sealed    TEXT          CHARACTER SET ascii COLLATE ascii_bin NULL,
    temperature       DOUBLE        NULL,
    max_tokens_output INT           NULL,
    context_window    INT           NULL,
    timeout_seconds   INT           NULL,
    is_default        BOOLEAN       NOT NULL DEFAULT FALSE,
    is_global         BOOLEAN       NOT NULL DEFAULT FALSE,
    default_scope     BIGINT        AS (CASE WHEN is_default THEN (CASE WHEN is_global THEN 0 ELSE group_id END) END) VIRTUAL,
    created_at        DATETIME(6)   NOT NULL,
    updated_at        DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY llm_configs_group_name_key (group_id, name),
    UNIQUE KEY llm_configs_default_scope_key (default_scope),
    KEY llm_configs_is_global_idx (is_global),
    CONSTRAINT llm_configs_driver_check CHECK (driver IN ('openai', 'anthropic', 'scripted')),
    CONSTRAINT llm_configs_group_id_fk FOREIGN KEY (group_id) REFERENCES principal_groups (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
