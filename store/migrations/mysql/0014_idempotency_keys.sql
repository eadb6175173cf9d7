-- Idempotency-Key records: the first request with a key per caller acts and its answer is kept
-- (24 hours) so a repeat answers it again without acting.
CREATE TABLE idempotency_keys (
    scope        VARCHAR(80)  NOT NULL,
    idem_key     VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    request_hash CHAR(64)     NOT NULL,
    status       INT          NULL,
    content_type VARCHAR(100) NOT NULL DEFAULT '',
    body         MEDIUMBLOB   NULL,
    created_at   DATETIME(6)  NOT NULL,
    completed_at DATETIME(6)  NULL,
    PRIMARY KEY (scope, idem_key),
    KEY idempotency_keys_created_idx (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
