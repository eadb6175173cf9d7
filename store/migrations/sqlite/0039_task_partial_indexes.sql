-- Fewer task index entries to write (issue 28, after 0038): an index holds only the rows its
-- readers ask for. The subtask reads and the parent's foreign key read tasks by a parent,
-- which only subtasks have; housekeeping reads tasks by finished_at, which only finished tasks
-- have. A task's creation and claim each wrote an entry in both. The status index stays whole
-- here (PostgreSQL's 0039 makes it partial): SQLite proves a partial index's condition on the
-- status against the value bound to a statement's "status = ?", and a statement whose plan
-- used a bound value is prepared again at each run — every status write would be.
DROP INDEX tasks_parent_idx;
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
DROP INDEX tasks_finished_idx;
CREATE INDEX tasks_finished_idx ON tasks (finished_at) WHERE finished_at IS NOT NULL;
