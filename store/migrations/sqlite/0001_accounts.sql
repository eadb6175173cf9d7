-- Accounts: principals, users and their roles, sessions, single-use tokens, profiles,
-- saved locations, administrator settings. Timestamps are UTC, written by the store's clock.
-- Every statement ends with ';' at the end of a line (the migration runner splits on it).

CREATE TABLE principals (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT     NOT NULL CHECK (kind IN ('user', 'group')),
    name       TEXT     NOT NULL,
    created_at DATETIME NOT NULL
);

CREATE TABLE users (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    email             TEXT     NOT NULL,
    password_hash     TEXT     NOT NULL DEFAULT '',
    display_name      TEXT     NOT NULL DEFAULT '',
    principal_id      INTEGER  NOT NULL REFERENCES principals (id),
    email_verified_at DATETIME NULL,
    pending_email     TEXT     NULL,
    created_at        DATETIME NOT NULL,
    updated_at        DATETIME NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);
CREATE UNIQUE INDEX users_principal_id_key ON users (principal_id);

CREATE TABLE user_roles (
    user_id    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT     NOT NULL,
    created_at DATETIME NOT NULL,
    PRIMARY KEY (user_id, role)
);
CREATE INDEX user_roles_role_idx ON user_roles (role);

CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_digest TEXT     NOT NULL,
    csrf_token   TEXT     NOT NULL,
    ip           TEXT     NOT NULL DEFAULT '',
    user_agent   TEXT     NOT NULL DEFAULT '',
    created_at   DATETIME NOT NULL,
    last_seen_at DATETIME NOT NULL,
    expires_at   DATETIME NOT NULL
);
CREATE UNIQUE INDEX sessions_token_digest_key ON sessions (token_digest);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);
CREATE INDEX sessions_expires_at_idx ON sessions (expires_at);

CREATE TABLE auth_tokens (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT     NOT NULL CHECK (kind IN ('verify', 'reset', 'email_change')),
    user_id         INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    selector        TEXT     NOT NULL,
    verifier_digest TEXT     NOT NULL,
    payload         TEXT     NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL
);
CREATE UNIQUE INDEX auth_tokens_selector_key ON auth_tokens (selector);
CREATE INDEX auth_tokens_user_kind_idx ON auth_tokens (user_id, kind);
CREATE INDEX auth_tokens_expires_at_idx ON auth_tokens (expires_at);

CREATE TABLE user_profiles (
    user_id    INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    first_name TEXT     NOT NULL DEFAULT '',
    last_name  TEXT     NOT NULL DEFAULT '',
    locale     TEXT     NOT NULL DEFAULT '',
    timezone   TEXT     NOT NULL DEFAULT '',
    bio        TEXT     NOT NULL DEFAULT '',
    updated_at DATETIME NOT NULL
);

CREATE TABLE user_locations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT     NOT NULL,
    address    TEXT     NOT NULL DEFAULT '',
    latitude   REAL     NULL,
    longitude  REAL     NULL,
    is_default BOOLEAN  NOT NULL DEFAULT 0,
    created_at DATETIME NOT NULL,
    updated_at DATETIME NOT NULL
);
CREATE INDEX user_locations_user_id_idx ON user_locations (user_id);

CREATE TABLE settings (
    `key`      TEXT     NOT NULL PRIMARY KEY,
    value      TEXT     NOT NULL,
    updated_at DATETIME NOT NULL
);

-- One row, locked by transactions that must see a stable set of users and administrators
-- (first-user registration, the last-administrator guard). On SQLite the immediate write
-- transaction already serialises them; the table exists so both dialects share one schema.
CREATE TABLE account_lock (
    id INTEGER PRIMARY KEY
);
INSERT INTO account_lock (id) VALUES (1);
