-- Idempotency-Key records: the first request with a key per caller acts and its answer is kept
-- (24 hours) so a repeat answers it again without acting.
CREATE TABLE idempotency_keys (
    scope        VARCHAR(80)  NOT NULL,
    idem_key     VARCHAR(255) COLLATE "C" NOT NULL,
    request_hash CHAR(64)     NOT NULL,
    status       INT          NULL,
    content_type VARCHAR(100) NOT NULL DEFAULT '',
    body         BYTEA        NULL,
    created_at   TIMESTAMP(6)  NOT NULL,
    completed_at TIMESTAMP(6)  NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
