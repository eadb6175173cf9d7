-- Fewer task index entries to write (issue 28): on SQLite and PostgreSQL the lease and retry
-- indexes become partial (see their 0038); MySQL has no partial index. tasks_agent_idx was a
-- prefix of tasks_agent_source_updated_idx, which also serves the agent's foreign key.
ALTER TABLE tasks DROP INDEX tasks_agent_idx;
