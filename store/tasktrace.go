package store

// traceParent is the trace_parent column of a new task: nil for none or an oversize one.
func traceParent(tp string) *string {
	if tp == "" || len(tp) > 128 {
		return nil
	}
	return &tp
}
