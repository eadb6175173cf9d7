-- The event sequence of a task's latest summary (issue 25: a compaction of its conversation,
-- stored as a `summary` event), 0 when it has none: a step reads the summary only when there is
-- one.
ALTER TABLE tasks ADD COLUMN summary_seq BIGINT NOT NULL DEFAULT 0;
