-- The durable mail outbox (issue 12): every mail the service sends is enqueued here, in the
-- transaction of its cause when there is one, and delivered by the mail dispatcher with a
-- lease, retries and backoff (the machinery shared with webhook_deliveries).
CREATE TABLE mail_outbox (
    id              BIGINT        NOT NULL AUTO_INCREMENT,
    kind            VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    recipient       VARCHAR(320)  NOT NULL,
    subject         VARCHAR(1000) NOT NULL,
    text_body       MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    html_body       MEDIUMTEXT    CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    state           VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempts        INT           NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)   NOT NULL,
    lease_until     DATETIME(6)   NULL,
    last_error      TEXT          NULL,
    created_at      DATETIME(6)   NOT NULL,
    updated_at      DATETIME(6)   NOT NULL,
    finished_at     DATETIME(6)   NULL,
    PRIMARY KEY (id),
    KEY mail_outbox_due_idx (state, next_attempt_at),
    CONSTRAINT mail_outbox_state_check CHECK (state IN ('pending', 'delivered', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
