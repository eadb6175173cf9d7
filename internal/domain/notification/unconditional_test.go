package notification

import (
	"context"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestUnconditionalAgreesWithDecide: the status writer leaves no notice for a transition that
// notifykind calls conditional when nobody subscribes and no earlier notification of the task
// waits; that is right only if such a notice would have been decided into nothing. Over every
// status, error, retry, source and scheduled run: with no subscription, Decide tells or mails
// someone exactly when the transition is unconditional.
func TestUnconditionalAgreesWithDecide(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	cfg := config.Defaults()
	log, _ := testkit.NewLogger()
	s := New(st, nil, func() *config.Config { return cfg }, log)
	retryAt := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	statuses := []string{taskstate.Queued, taskstate.Running, taskstate.PendingApproval, taskstate.AwaitingInput, taskstate.AwaitingSubAgents, taskstate.Aborted,
		taskstate.Completed, taskstate.Failed, taskstate.Cancelled}
	seen := map[bool]int{}
	for _, status := range statuses {
		for _, code := range []string{"", taskstate.CodeAuthError, taskstate.CodeOrphaned} {
			for _, retry := range []string{"none", "queued", "promised"} {
				for _, source := range []string{store.TaskSourceSession, store.TaskSourceAgentAPI} {
					for _, runID := range []int64{0, 7} {
						n := &store.TaskNotice{TaskID: 1 << 40, UserID: 1, OwnerEmail: "ada@example.com", AgentName: "Lab",
							Source: source, ScheduledRunID: runID, Status: store.StatusEvent{Status: status, Retrying: retry == "promised"}}
						if code != "" {
							n.Status.Error = &store.TaskError{Code: code, Message: "m"}
						}
						if retry == "queued" {
							n.Status.NextRetryAt = &retryAt
						}
						d, err := s.Decide(context.Background(), n)
						if err != nil {
							t.Fatal(err)
						}
						told := len(d.Notifications)+len(d.Mails) > 0
						want := transition(n).Unconditional()
						seen[want]++
						if told != want {
							t.Errorf("%s (error %q, retry %s, %s, run %d): told %v (%+v), unconditional %v",
								status, code, retry, source, runID, told, d, want)
						}
					}
				}
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("cases: %v", seen)
	}
}
