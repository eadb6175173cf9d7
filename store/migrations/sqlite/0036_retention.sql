-- Retention (issue 28): housekeeping finds the tasks finished longest ago through this index,
-- both to delete old chats (retention_task_days) and to delete the event log of finished tasks
-- (retention_task_events_days). finished_at changes only on finishing and on moving on again,
-- so the index costs a status change nothing else.
CREATE INDEX tasks_finished_idx ON tasks (finished_at);
