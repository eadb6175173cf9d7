package task

import (
	"github.com/agentsvc/svc/store"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// SnapshotView is the view of a chat as a callback snapshot captured it when it settled (see
// store.ChatSnapshot): the shape view builds from the live rows, with the pending calls'
// operations described from the tool registry the same way. It reads nothing from the store,
// so a callback retried later still shows the moment it reports.
func (s *Service) SnapshotView(snap store.ChatSnapshot) *View {
	v := &View{Task: snap.Task, Calls: []PendingCall{}, Questions: []store.QuestionBatch{}}
	switch snap.Task.Status {
	case taskstate.PendingApproval:
		v.HasPending = true
		for _, c := range snap.Calls {
			if c.Status == store.ToolCallPendingApproval {
				v.Calls = append(v.Calls, PendingCall{ToolCall: c, Description: s.describe(c.ToolClass, c.Operation)})
			}
		}
	case taskstate.AwaitingInput:
		v.HasPending = true
		if snap.Questions != nil {
			v.Questions = snap.Questions
		}
	case taskstate.Failed:
		v.LastSaid = snap.LastSaid
	}
	return v
}
