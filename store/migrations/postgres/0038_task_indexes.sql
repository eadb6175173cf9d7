-- Fewer task index entries to write (issue 28): a task row changes status at least twice in its
-- life (claimed, finished), and every index that leads with the status moved its entry each
-- time (on PostgreSQL an update that is not HOT writes an entry in every index whose predicate
-- the row meets). The reaper reads running tasks by lease and the retry claim waiting retries:
-- a lease is set only while a task runs and next_retry_at only while a retry waits, so their
-- indexes now hold only those rows (partial), and a task that never retries never enters the
-- retry index. tasks_agent_idx was a prefix of tasks_agent_source_updated_idx. MySQL has no
-- partial index: there only tasks_agent_idx goes.
DROP INDEX tasks_agent_idx;
DROP INDEX tasks_status_lease_idx;
DROP INDEX tasks_status_retry_idx;
CREATE INDEX tasks_status_lease_idx ON tasks (status, lease_expires_at) WHERE lease_expires_at IS NOT NULL;
CREATE INDEX tasks_status_retry_idx ON tasks (status, next_retry_at) WHERE next_retry_at IS NOT NULL;
