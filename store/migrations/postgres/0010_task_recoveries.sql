-- recoveries counts how often a RUNNING task was taken back from a worker that stopped
-- answering (its lease expired) or failed mid-step, and queued again to resume from its durable
-- steps. A finished step resets it; past store.MaxRecoveries the task fails ORPHANED instead.
ALTER TABLE tasks ADD COLUMN recoveries INT NOT NULL DEFAULT 0;
