-- The durable mail outbox (issue 12): every mail the service sends is enqueued here, in the
-- transaction of its cause when there is one, and delivered by the mail dispatcher with a
-- lease, retries and backoff (the machinery shared with webhook_deliveries).
CREATE TABLE mail_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT     NOT NULL,
    recipient       TEXT     NOT NULL,
    subject         TEXT     NOT NULL,
    text_body       TEXT     NOT NULL,
    html_body       TEXT     NOT NULL DEFAULT '',
    state           TEXT     NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER  NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL,
    lease_until     DATETIME NULL,
    last_error      TEXT     NULL,
    created_at      DATETIME NOT NULL,
    updated_at      DATETIME NOT NULL,
    finished_at     DATETIME NULL
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (state, next_attempt_at);
