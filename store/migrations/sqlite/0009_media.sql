-- Media assets: files uploaded by users or through an agent's key, produced by agents, or
-- derived from other assets. The bytes live on disk under storage/media (storage_key is the
-- path below it); the type is detected from the content. An unkept asset expires at
-- expires_at and is swept with its file. agent_id/task_id say which agent and chat produced or
-- uploaded it (the per-agent API's scope rules); task_media lists the assets a chat's messages
-- attach. Pictures of users, agents and groups point at an asset.

CREATE TABLE media_assets (
    id           TEXT     PRIMARY KEY,
    principal_id INTEGER  NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    filename     TEXT     NOT NULL,
    mime_type    TEXT     NOT NULL,
    kind         TEXT     NOT NULL CHECK (kind IN ('image', 'audio', 'video', 'document', 'other')),
    size         INTEGER  NOT NULL CHECK (size >= 0),
    width        INTEGER  NULL,
    height       INTEGER  NULL,
    sha256       TEXT     NOT NULL,
    storage_key  TEXT     NOT NULL,
    keep         BOOLEAN  NOT NULL DEFAULT 0,
    expires_at   DATETIME NULL,
    parent_id    TEXT     NULL REFERENCES media_assets (id) ON DELETE SET NULL,
    uploaded_by  INTEGER  NULL REFERENCES users (id) ON DELETE SET NULL,
    agent_id     INTEGER  NULL REFERENCES agents (id) ON DELETE SET NULL,
    task_id      INTEGER  NULL REFERENCES tasks (id) ON DELETE SET NULL,
    created_at   DATETIME NOT NULL
);
CREATE INDEX media_assets_principal_created_idx ON media_assets (principal_id, created_at, id);
CREATE INDEX media_assets_expires_idx ON media_assets (expires_at);
CREATE INDEX media_assets_agent_idx ON media_assets (agent_id);
CREATE INDEX media_assets_task_idx ON media_assets (task_id);

CREATE TABLE task_media (
    task_id          INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    media_id         TEXT     NOT NULL REFERENCES media_assets (id) ON DELETE CASCADE,
    message_sequence INTEGER  NOT NULL,
    created_at       DATETIME NOT NULL,
    PRIMARY KEY (task_id, media_id, message_sequence)
);
CREATE INDEX task_media_media_idx ON task_media (media_id);

ALTER TABLE users ADD COLUMN picture_media_id TEXT NULL REFERENCES media_assets (id) ON DELETE SET NULL;
ALTER TABLE agents ADD COLUMN picture_media_id TEXT NULL REFERENCES media_assets (id) ON DELETE SET NULL;
