-- In-app notifications of users, written in the transaction of the task transition that causes
-- them, and the subscriptions that let a user follow an agent or a principal they can see.
CREATE TABLE notifications (
    id         VARCHAR(40)   NOT NULL,
    user_id    BIGINT        NOT NULL,
    kind       VARCHAR(40)   NOT NULL,
    title      VARCHAR(300)  NOT NULL,
    body       TEXT          NOT NULL,
    task_id    BIGINT        NULL,
    agent_id   BIGINT        NULL,
    read_at    TIMESTAMP(6)   NULL,
    created_at TIMESTAMP(6)   NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT notifications_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT notifications_task_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE SET NULL,
    CONSTRAINT notifications_agent_fk FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE SET NULL
);
CREATE INDEX notifications_user_created_idx ON notifications (user_id, created_at);
CREATE INDEX notifications_read_idx ON notifications (read_at);

CREATE TABLE notification_subscriptions (
    id          VARCHAR(40)  NOT NULL,
    user_id     BIGINT       NOT NULL,
    target_type VARCHAR(16)  NOT NULL,
    target_id   BIGINT       NOT NULL,
    kinds       TEXT         NOT NULL,
    email       BOOLEAN      NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMP(6)  NOT NULL,
    updated_at  TIMESTAMP(6)  NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT notification_subscriptions_target_key UNIQUE (user_id, target_type, target_id),
    CONSTRAINT notification_subscriptions_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE INDEX notification_subscriptions_target_idx ON notification_subscriptions (target_type, target_id);
