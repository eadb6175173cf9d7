-- Observability (issue 14): the W3C traceparent of the request that created a task, so the
-- spans of its steps (run later, by any worker) link back to that request's trace. NULL when
-- tracing was off or the task was created outside a traced request.
ALTER TABLE tasks ADD COLUMN trace_parent VARCHAR(128) NULL;
