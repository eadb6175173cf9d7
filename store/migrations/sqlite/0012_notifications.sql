-- In-app notifications of users, written in the transaction of the task transition that causes
-- them, and the subscriptions that let a user follow an agent or a principal they can see.
CREATE TABLE notifications (
    id         TEXT     NOT NULL PRIMARY KEY,
    user_id    INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT     NOT NULL,
    title      TEXT     NOT NULL,
    body       TEXT     NOT NULL,
    task_id    INTEGER  NULL REFERENCES tasks (id) ON DELETE SET NULL,
    agent_id   INTEGER  NULL REFERENCES agents (id) ON DELETE SET NULL,
    read_at    DATETIME NULL,
    created_at DATETIME NOT NULL
);
CREATE INDEX notifications_user_created_idx ON notifications (user_id, created_at);
CREATE INDEX notifications_read_idx ON notifications (read_at);

CREATE TABLE notification_subscriptions (
    id          TEXT     NOT NULL PRIMARY KEY,
    user_id     INTEGER  NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    target_type TEXT     NOT NULL CHECK (target_type IN ('agent', 'principal')),
    target_id   INTEGER  NOT NULL,
    kinds       TEXT     NOT NULL DEFAULT '[]',
    email       INTEGER  NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL
);
CREATE UNIQUE INDEX notification_subscriptions_target_key ON notification_subscriptions (user_id, target_type, target_id);
CREATE INDEX notification_subscriptions_target_idx ON notification_subscriptions (target_type, target_id);
