-- Single sign-on with OpenID Connect (issue 30). Providers an administrator configures (the
-- client secret sealed like LLM API keys; group mappings as a JSON array), the identities that
-- link a provider subject to a user, the one-time states of sign-ins in progress (PKCE verifier
-- and nonce kept server-side; a link ticket is a state row of kind "link" naming the user), and
-- where a group membership came from ("manual", or "oidc:<slug>" for a provider mapping).
CREATE TABLE oidc_providers (
    id                   BIGINT        NOT NULL AUTO_INCREMENT,
    slug                 VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    display_name         VARCHAR(400)  NOT NULL,
    issuer_url           VARCHAR(2000) NOT NULL,
    client_id            VARCHAR(1020) NOT NULL,
    client_secret_sealed TEXT          NOT NULL,
    scopes               VARCHAR(2100) NOT NULL,
    allow_registration   BOOLEAN       NOT NULL DEFAULT FALSE,
    groups_claim         VARCHAR(400)  NOT NULL DEFAULT '',
    group_mappings       MEDIUMTEXT    NOT NULL,
    logout_url           VARCHAR(2000) NOT NULL DEFAULT '',
    created_at           DATETIME(6)   NOT NULL,
    updated_at           DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY oidc_providers_slug_key (slug)
);
CREATE TABLE oidc_identities (
    id          BIGINT        NOT NULL AUTO_INCREMENT,
    provider_id BIGINT        NOT NULL,
    subject     VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id     BIGINT        NOT NULL,
    email       VARCHAR(320)  NOT NULL DEFAULT '',
    created_at  DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY oidc_identities_provider_subject_key (provider_id, subject),
    KEY oidc_identities_user_id_idx (user_id),
    CONSTRAINT oidc_identities_provider_fk FOREIGN KEY (provider_id) REFERENCES oidc_providers (id) ON DELETE CASCADE,
    CONSTRAINT oidc_identities_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE TABLE oidc_states (
    id            BIGINT        NOT NULL AUTO_INCREMENT,
    state_digest  CHAR(64)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind          VARCHAR(8)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    provider_id   BIGINT        NOT NULL,
    nonce         VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    pkce_verifier VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    subject       VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    email         VARCHAR(320)  NOT NULL DEFAULT '',
    claim_groups  TEXT          NOT NULL,
    user_id       BIGINT        NULL,
    expires_at    DATETIME(6)   NOT NULL,
    created_at    DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY oidc_states_digest_key (state_digest),
    KEY oidc_states_expires_at_idx (expires_at),
    CONSTRAINT oidc_states_provider_fk FOREIGN KEY (provider_id) REFERENCES oidc_providers (id) ON DELETE CASCADE,
    CONSTRAINT oidc_states_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
ALTER TABLE group_members ADD COLUMN source VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'manual';
