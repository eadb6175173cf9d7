package task

import "github.com/agentsvc/svc/store"

// SnapshotView is the view of a chat as a callback snapshot captured it when it settled (see
// store.ChatSnapshot): the shape view builds from the live rows, with the pending calls'
// operations described from the tool registry the same way. It reads nothing from the store,
// so a callback retried later still shows the moment it reports.
func (s *Service) SnapshotView(snap store.ChatSnapshot) *View {
	v := &View{Task: snap.Task, Calls: []PendingCall{}, Questions: []store.QuestionBatch{}}
	switch snap.Task.Status {
	case store.TaskPendingApproval:
		v.HasPending = true
		for _, c := range snap.Calls {
			if c.Status == store.ToolCallPendingApproval {
				v.Calls = append(v.Calls, PendingCall{ToolCall: c, Description: s.describe(c.ToolClass, c.Operation)})
			}
		}
	case store.TaskAwaitingInput:
		v.HasPending = true
		if snap.Questions != nil {
			v.Questions = snap.Questions
		}
	case store.TaskFailed:
		v.LastSaid = snap.LastSaid
	}
	return v
}
