-- The notices of task transitions that may notify someone (issue 21): written by the one
-- status writer in the transaction of the transition (a top-level task entering a settled status,
-- or an automatic retry scheduled), naming the task and the status event that announces it.
-- The notification service claims them with a lease (the outbox machinery shared with
-- mail_outbox and webhook_deliveries), decides who is told what, and deletes the notice in the
-- transaction that creates the notifications and their mails: each notice is fanned out once.
CREATE TABLE notification_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         INTEGER  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    event_sequence  INTEGER  NOT NULL,
    state           TEXT     NOT NULL CHECK (state IN ('pending', 'failed')),
    attempts        INTEGER  NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL,
    lease_until     DATETIME NULL,
    last_error      TEXT     NULL,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    finished_at     DATETIME NULL
);
CREATE INDEX notification_outbox_due_idx ON notification_outbox (state, next_attempt_at);
CREATE INDEX notification_outbox_task_idx ON notification_outbox (task_id);

-- The task a notification is about, for every recipient (task_id is its owner's only, the one
-- they may read): a notification that asked for a decision is marked read, for everyone, once
-- the task left the pause (issue 24).
ALTER TABLE notifications ADD COLUMN about_task_id INTEGER NULL;
CREATE INDEX notifications_about_task_idx ON notifications (about_task_id);
