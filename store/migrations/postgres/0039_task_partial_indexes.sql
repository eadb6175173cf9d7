-- Fewer task index entries to write (issue 28, after 0038): an index holds only the rows its
-- readers ask for. The fair claim reads QUEUED tasks and housekeeping's unscheduled retries
-- FAILED ones, both with the status written into the statement; the subtask reads and the
-- parent's foreign key read tasks by a parent, which only subtasks have; housekeeping reads
-- tasks by finished_at, which only finished tasks have. A task's creation, claim and finish
-- each wrote an entry in all three (an update that is not HOT writes one in every index whose
-- predicate the row meets); now each writes one in at most one of them. (SQLite keeps its
-- status index whole: see its 0039. MySQL has no partial index.)
DROP INDEX tasks_status_user_idx;
CREATE INDEX tasks_status_user_idx ON tasks (status, user_id, id) WHERE status = 'QUEUED' OR status = 'FAILED';
DROP INDEX tasks_parent_idx;
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;
DROP INDEX tasks_finished_idx;
CREATE INDEX tasks_finished_idx ON tasks (finished_at) WHERE finished_at IS NOT NULL;
