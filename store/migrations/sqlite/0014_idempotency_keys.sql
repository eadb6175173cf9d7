-- Idempotency-Key records: the first request with a key per caller acts and its answer is kept
-- (24 hours) so a repeat answers it again without acting.
CREATE TABLE idempotency_keys (
    scope        TEXT     NOT NULL,
    idem_key     TEXT     NOT NULL,
    request_hash TEXT     NOT NULL,
    status       INTEGER  NULL,
    content_type TEXT     NOT NULL DEFAULT '',
    body         BLOB     NULL,
    created_at   DATETIME NOT NULL,
    completed_at DATETIME NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
