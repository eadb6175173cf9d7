package store

import "context"

// OnTaskTrace sets how CreateTask finds the trace context of the request creating a task: f
// returns the W3C traceparent of ctx's span ("" : none), stored with the task (trace_parent) so
// the spans of its steps link back to the request across the queue. Set once, before use; nil
// (the default) stores none.
func (s *Store) OnTaskTrace(f func(ctx context.Context) string) { s.onTaskTrace = f }

// traceParent is the traceparent CreateTask stores for ctx: nil when there is none.
func (s *Store) traceParent(ctx context.Context) *string {
	if s.onTaskTrace == nil {
		return nil
	}
	tp := s.onTaskTrace(ctx)
	if tp == "" || len(tp) > 128 {
		return nil
	}
	return &tp
}
