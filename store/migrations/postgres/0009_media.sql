-- Media assets: files uploaded by users or through an agent's key, produced by agents, or
-- derived from other assets. The bytes live on disk under storage/media (storage_key is the
-- path below it); the type is detected from the content. An unkept asset expires at
-- expires_at and is swept with its file. agent_id/task_id say which agent and chat produced or
-- uploaded it (the per-agent API's scope rules); task_media lists the assets a chat's messages
-- attach. Pictures of users, agents and groups point at an asset.

CREATE TABLE media_assets (
    id           VARCHAR(64)  COLLATE "C" NOT NULL,
    principal_id BIGINT       NOT NULL,
    filename     VARCHAR(255) NOT NULL,
    mime_type    VARCHAR(255) COLLATE "C" NOT NULL,
    kind         VARCHAR(16)  COLLATE "C" NOT NULL,
    size         BIGINT       NOT NULL,
    width        INT          NULL,
    height       INT          NULL,
    sha256       CHAR(64)     COLLATE "C" NOT NULL,
    storage_key  VARCHAR(255) COLLATE "C" NOT NULL,
    keep         BOOLEAN      NOT NULL DEFAULT FALSE,
    expires_at   TIMESTAMP(6)  NULL,
    parent_id    VARCHAR(64)  COLLATE "C" NULL,
    uploaded_by  BIGINT       NULL,
    agent_id     BIGINT       NULL,
    task_id      BIGINT       NULL,
    created_at   TIMESTAMP(6)  NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT media_assets_kind_check CHECK (kind IN ('image', 'audio', 'video', 'document', 'other')),
    CONSTRAINT media_assets_size_check CHECK (size >= 0),
    CONSTRAINT media_assets_principal_fk FOREIGN KEY (principal_id) REFERENCES principals (id) ON DELETE CASCADE,
    CONSTRAINT media_assets_parent_fk FOREIGN KEY (parent_id) REFERENCES media_assets (id) ON DELETE SET NULL,
    CONSTRAINT media_assets_user_fk FOREIGN KEY (uploaded_by) REFERENCES users (id) ON DELETE SET NULL,
    CONSTRAINT media_assets_agent_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE SET NULL,
    CONSTRAINT media_assets_task_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE SET NULL
);
CREATE INDEX media_assets_principal_created_idx ON media_assets (principal_id, created_at, id);
CREATE INDEX media_assets_expires_idx ON media_assets (expires_at);
CREATE INDEX media_assets_agent_idx ON media_assets (agent_id);
CREATE INDEX media_assets_task_idx ON media_assets (task_id);

CREATE TABLE task_media (
    task_id          BIGINT      NOT NULL,
    media_id         VARCHAR(64) COLLATE "C" NOT NULL,
    message_sequence INT         NOT NULL,
    created_at       TIMESTAMP(6) NOT NULL,
    PRIMARY KEY (task_id, media_id, message_sequence),
    CONSTRAINT task_media_task_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE,
    CONSTRAINT task_media_media_fk FOREIGN KEY (media_id) REFERENCES media_assets (id) ON DELETE CASCADE
);
CREATE INDEX task_media_media_idx ON task_media (media_id);

ALTER TABLE users
    ADD COLUMN picture_media_id VARCHAR(64) COLLATE "C" NULL,
    ADD CONSTRAINT users_picture_fk FOREIGN KEY (picture_media_id) REFERENCES media_assets (id) ON DELETE SET NULL;
ALTER TABLE agents
    ADD COLUMN picture_media_id VARCHAR(64) COLLATE "C" NULL,
    ADD CONSTRAINT agents_picture_fk FOREIGN KEY (picture_media_id) REFERENCES media_assets (id) ON DELETE SET NULL;
