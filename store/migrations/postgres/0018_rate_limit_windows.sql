-- Rate-limit windows shared by every process on the database: one row per limited key and fixed
-- window (window_start and expires_at in Unix milliseconds), hits counted with an atomic upsert.
-- Rows whose expires_at passed can no longer affect a decision and are swept by housekeeping.
CREATE TABLE rate_limit_windows (
    limit_key    VARCHAR(191) COLLATE "C" NOT NULL,
    window_start BIGINT       NOT NULL,
    hits         BIGINT       NOT NULL,
    expires_at   BIGINT       NOT NULL,
    PRIMARY KEY (limit_key, window_start)
);
CREATE INDEX rate_limit_windows_expires_idx ON rate_limit_windows (expires_at);

-- The fair claim (store/taskclaim.go) ranks queued tasks within each user by id: this index
-- hands it the partitions in order, without a sort.
CREATE INDEX tasks_status_user_idx ON tasks (status, user_id, id);
