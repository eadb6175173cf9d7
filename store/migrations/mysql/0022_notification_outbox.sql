-- The notices of task transitions that may notify someone (issue 21): written by the one
-- status writer in the transaction of the transition (a top-level task entering a settled status,
-- or an automatic retry scheduled), naming the task and the status event that announces it.
-- The notification service claims them with a lease (the outbox machinery shared with
-- mail_outbox and webhook_deliveries), decides who is told what, and deletes the notice in the
-- transaction that creates the notifications and their mails: each notice is fanned out once.
CREATE TABLE notification_outbox (
    id              BIGINT      NOT NULL AUTO_INCREMENT,
    task_id         BIGINT      NOT NULL,
    event_sequence  BIGINT      NOT NULL,
    state           VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempts        INT         NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6) NOT NULL,
    lease_until     DATETIME(6) NULL,
    last_error      TEXT        NULL,
    created_at      DATETIME(6) NOT NULL,
    updated_at      DATETIME(6) NOT NULL,
    finished_at     DATETIME(6) NULL,
    PRIMARY KEY (id),
    KEY notification_outbox_due_idx (state, next_attempt_at),
    KEY notification_outbox_task_idx (task_id),
    CONSTRAINT notification_outbox_task_id_fk FOREIGN KEY (task_id) REFERENCES tasks (id) ON DELETE CASCADE,
    CONSTRAINT notification_outbox_state_check CHECK (state IN ('pending', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The task a notification is about, for every recipient (task_id is its owner's only, the one
-- they may read): a notification that asked for a decision is marked read, for everyone, once
-- the task left the pause (issue 24).
ALTER TABLE notifications ADD COLUMN about_task_id BIGINT NULL, ADD KEY notifications_about_task_idx (about_task_id);
