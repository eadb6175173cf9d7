-- Single sign-on with OpenID Connect (issue 30). Providers an administrator configures (the
-- client secret sealed like LLM API keys; group mappings as a JSON array), the identities that
-- link a provider subject to a user, the one-time states of sign-ins in progress (PKCE verifier
-- and nonce kept server-side; a link ticket is a state row of kind "link" naming the user), and
-- where a group membership came from ("manual", or "oidc:<slug>" for a provider mapping).
CREATE TABLE oidc_providers (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    slug                 TEXT     NOT NULL,
    display_name         TEXT     NOT NULL,
    issuer_url           TEXT     NOT NULL,
    client_id            TEXT     NOT NULL,
    client_secret_sealed TEXT     NOT NULL,
    scopes               TEXT     NOT NULL,
    allow_registration   INTEGER  NOT NULL DEFAULT 0,
    groups_claim         TEXT     NOT NULL DEFAULT '',
    group_mappings       TEXT     NOT NULL DEFAULT '[]',
    logout_url           TEXT     NOT NULL DEFAULT '',
    created_at           DATETIME NOT NULL,
    updated_at           DATETIME NOT NULL
);
CREATE UNIQUE INDEX oidc_providers_slug_key ON oidc_providers (slug);
CREATE TABLE oidc_identities (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id INTEGER  NOT NULL REFERENCES oidc_providers (id) ON DELETE CASCADE,
    subject     TEXT     NOT NULL,
    user_id     INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email       TEXT     NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL
);
CREATE UNIQUE INDEX oidc_identities_provider_subject_key ON oidc_identities (provider_id, subject);
CREATE INDEX oidc_identities_user_id_idx ON oidc_identities (user_id);
CREATE TABLE oidc_states (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    state_digest  TEXT     NOT NULL,
    kind          TEXT     NOT NULL,
    provider_id   INTEGER  NOT NULL REFERENCES oidc_providers (id) ON DELETE CASCADE,
    nonce         TEXT     NOT NULL DEFAULT '',
    pkce_verifier TEXT     NOT NULL DEFAULT '',
    subject       TEXT     NOT NULL DEFAULT '',
    email         TEXT     NOT NULL DEFAULT '',
    claim_groups  TEXT     NOT NULL DEFAULT '[]',
    user_id       INTEGER  NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at    DATETIME NOT NULL,
    created_at    DATETIME NOT NULL
);
CREATE UNIQUE INDEX oidc_states_digest_key ON oidc_states (state_digest);
CREATE INDEX oidc_states_expires_at_idx ON oidc_states (expires_at);
ALTER TABLE group_members ADD COLUMN source TEXT NOT NULL DEFAULT 'manual';
