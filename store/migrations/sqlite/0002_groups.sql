-- Groups: a group is a principal with members. Member roles: owner, admin, member.
-- The table is principal_groups because GROUPS is a reserved word in MySQL 8.

CREATE TABLE principal_groups (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    principal_id     INTEGER  NOT NULL REFERENCES principals (id),
    name             TEXT     NOT NULL,
    description      TEXT     NOT NULL DEFAULT '',
    picture_media_id TEXT     NULL,
    created_at       DATETIME NOT NULL,
    updated_at       DATETIME NOT NULL
);
CREATE UNIQUE INDEX principal_groups_principal_id_key ON principal_groups (principal_id);

CREATE TABLE group_members (
    group_id   INTEGER  NOT NULL REFERENCES principal_groups (id) ON DELETE CASCADE,
    user_id    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT     NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at DATETIME NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user_id_idx ON group_members (user_id);
