-- Group configuration: free-form preferences and language-model configurations.
-- A configuration belongs to a group; is_global makes it usable by every principal. The default
-- flag is scoped: at most one default per group among its non-global configurations, and one
-- installation-wide default among the global ones. default_scope (0 for the global scope, the
-- group id for a group's scope, NULL when not a default) makes that a unique index, so the
-- database refuses a second default even if a writer forgets to clear the previous one.
-- api_key_sealed holds the key sealed with the master key (AES-256-GCM), never the plaintext.
-- Configurations are deleted explicitly with their group (no cascade: MySQL restricts cascades
-- on the base columns of generated columns).

CREATE TABLE group_preferences (
    group_id    INTEGER PRIMARY KEY REFERENCES principal_groups (id) ON DELETE CASCADE,
    preferences TEXT     NOT NULL,
    updated_at  DATETIME NOT NULL
);

CREATE TABLE llm_configs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    group_id          INTEGER  NOT NULL REFERENCES principal_groups (id),
    name              TEXT     NOT NULL,
    driver            TEXT     NOT NULL CHECK (driver IN ('openai', 'anthropic', 'scripted')),
    model             TEXT     NOT NULL,
    base_url          TEXT     NULL,
    api_key_sealed    TEXT     NULL,
    temperature       REAL     NULL,
    max_tokens_output INTEGER  NULL,
    context_window    INTEGER  NULL,
    timeout_seconds   INTEGER  NULL,
    is_default        BOOLEAN  NOT NULL DEFAULT 0,
    is_global         BOOLEAN  NOT NULL DEFAULT 0,
    default_scope     INTEGER  GENERATED ALWAYS AS (CASE WHEN is_default THEN (CASE WHEN is_global THEN 0 ELSE group_id END) END) VIRTUAL,
    created_at        DATETIME NOT NULL,
    updated_at        DATETIME NOT NULL
);
CREATE UNIQUE INDEX llm_configs_group_name_key ON llm_configs (group_id, name);
CREATE UNIQUE INDEX llm_configs_default_scope_key ON llm_configs (default_scope);
CREATE INDEX llm_configs_is_global_idx ON llm_configs (is_global);
