-- Groups: a group is a principal with members. Member roles: owner, admin, member.
-- The table is principal_groups because GROUPS is a reserved word in MySQL 8.

CREATE TABLE principal_groups (
    id               BIGINT        NOT NULL AUTO_INCREMENT,
    principal_id     BIGINT        NOT NULL,
    name             VARCHAR(100)  NOT NULL,
    description      VARCHAR(1000) NOT NULL DEFAULT '',
    picture_media_id VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NULL,
    created_at       DATETIME(6)   NOT NULL,
    updated_at       DATETIME(6)   NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY principal_groups_principal_id_key (principal_id),
    CONSTRAINT principal_groups_principal_id_fk FOREIGN KEY (principal_id) REFERENCES principals (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE group_members (
    group_id   BIGINT      NOT NULL,
    user_id    BIGINT      NOT NULL,
    role       VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (group_id, user_id),
    KEY group_members_user_id_idx (user_id),
    CONSTRAINT group_members_role_check CHECK (role IN ('owner', 'admin', 'member')),
    CONSTRAINT group_members_group_id_fk FOREIGN KEY (group_id) REFERENCES principal_groups (id) ON DELETE CASCADE,
    CONSTRAINT group_members_user_id_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
