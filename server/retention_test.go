package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// TestRetentionSettingApplies: the retention settings are runtime settings an administrator
// changes, and the next housekeeping pass (here client mode's endpoint; the daemon's chores run
// the same) applies them: a chat finished longer ago than retention_task_days is gone, with its
// event log; a newer one stays; 0 (the default) keeps chats.
func TestRetentionSettingApplies(t *testing.T) {
	t.Parallel()
	w := &taskWorld{env: apitest.New(t, "SVC_WORKER_RUNTIME_MODE=client")}
	admin, _ := w.env.UserClient("root@example.com")
	owner, _ := w.env.UserClient("owner@example.com")
	agent := mkAgent(t, owner, map[string]any{"name": "Helper"})
	done := func() int64 {
		tk := w.newTask(t, owner, agent.Id)
		w.finish(t, tk.Id, store.StepOutcome{Status: taskstate.Completed, Answer: ptrTo("ok"), Steps: 1}, nil, nil)
		return tk.Id
	}
	old := done()
	w.env.Clock.Advance(3 * 24 * time.Hour)
	owner.Post("/worker/housekeeping", nil).Expect(t, http.StatusOK)
	owner.Get(fmt.Sprintf("/tasks/%d", old)).Expect(t, http.StatusOK) // kept by default

	admin.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"retention_task_days": 2}}).Expect(t, http.StatusOK)
	recent := done()
	owner.Post("/worker/housekeeping", nil).Expect(t, http.StatusOK)
	owner.Get(fmt.Sprintf("/tasks/%d", old)).Expect(t, http.StatusNotFound, "NOT_FOUND")
	owner.Get(fmt.Sprintf("/tasks/%d", recent)).Expect(t, http.StatusOK)
	if evs, err := w.st().TaskEvents(t.Context(), old, 0, 100); err != nil || len(evs) != 0 {
		t.Fatalf("events of the deleted chat: %d, %v", len(evs), err)
	}
	admin.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"retention_task_days": -1}}).Expect(t, http.StatusUnprocessableEntity)
}
