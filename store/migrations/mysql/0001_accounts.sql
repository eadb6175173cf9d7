-- Accounts: principals, users and their roles, sessions, single-use tokens, profiles,
-- saved locations, administrator settings. Timestamps are UTC, written by the store's clock.
-- Every statement ends with ';' at the end of a line (the migration runner splits on it).
-- Emails (stored lowercased), tokens, digests, selectors and setting keys compare byte for byte
-- (ascii_bin / utf8mb4_bin), as they do on SQLite.

CREATE TABLE principals (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    kind       VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    name       VARCHAR(255) NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT principals_kind_check CHECK (kind IN ('user', 'group'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE users (
    id                BIGINT       NOT NULL AUTO_INCREMENT,
    email             VARCHAR(254) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    password_hash     VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    display_name      VARCHAR(100) NOT NULL DEFAULT '',
    principal_id      BIGINT       NOT NULL,
    email_verified_at DATETIME(6)  NULL,
    pending_email     VARCHAR(254) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    created_at        DATETIME(6)  NOT NULL,
    updated_at        DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY users_email_key (email),
    UNIQUE KEY users_principal_id_key (principal_id),
    CONSTRAINT users_principal_id_fk FOREIGN KEY (principal_id) REFERENCES principals (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE user_roles (
    user_id    BIGINT      NOT NULL,
    role       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (user_id, role),
    KEY user_roles_role_idx (role),
    CONSTRAINT user_roles_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE sessions (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    user_id      BIGINT       NOT NULL,
    token_digest CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    csrf_token   VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    ip           VARCHAR(64)  NOT NULL DEFAULT '',
    user_agent   VARCHAR(512) NOT NULL DEFAULT '',
    created_at   DATETIME(6)  NOT NULL,
    last_seen_at DATETIME(6)  NOT NULL,
    expires_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY sessions_token_digest_key (token_digest),
    KEY sessions_user_id_idx (user_id),
    KEY sessions_expires_at_idx (expires_at),
    CONSTRAINT sessions_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE auth_tokens (
    id              BIGINT      NOT NULL AUTO_INCREMENT,
    kind            VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    user_id         BIGINT      NOT NULL,
    selector        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    verifier_digest CHAR(64)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload         TEXT        NOT NULL,
    created_at      DATETIME(6) NOT NULL,
    expires_at      DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY auth_tokens_selector_key (selector),
    KEY auth_tokens_user_kind_idx (user_id, kind),
    KEY auth_tokens_expires_at_idx (expires_at),
    CONSTRAINT auth_tokens_kind_check CHECK (kind IN ('verify', 'reset', 'email_change')),
    CONSTRAINT auth_tokens_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE user_profiles (
    user_id    BIGINT       NOT NULL,
    first_name VARCHAR(100) NOT NULL DEFAULT '',
    last_name  VARCHAR(100) NOT NULL DEFAULT '',
    locale     VARCHAR(35)  NOT NULL DEFAULT '',
    timezone   VARCHAR(64)  NOT NULL DEFAULT '',
    bio        TEXT         NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (user_id),
    CONSTRAINT user_profiles_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE user_locations (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    user_id    BIGINT       NOT NULL,
    name       VARCHAR(100) NOT NULL,
    address    VARCHAR(500) NOT NULL DEFAULT '',
    latitude   DOUBLE       NULL,
    longitude  DOUBLE       NULL,
    is_default BOOLEAN      NOT NULL DEFAULT FALSE,
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    KEY user_locations_user_id_idx (user_id),
    CONSTRAINT user_locations_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE settings (
    `key`      VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    value      TEXT         NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (`key`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row, locked (SELECT ... FOR UPDATE) by transactions that must see a stable set of users
-- and administrators: first-user registration and the last-administrator guard.
CREATE TABLE account_lock (
    id INT NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
INSERT INTO account_lock (id) VALUES (1);
