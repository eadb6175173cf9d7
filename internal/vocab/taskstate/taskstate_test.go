package taskstate_test

import (
	"slices"
	"testing"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// The statuses and codes are the contract's enums.
func TestContractEnums(t *testing.T) {
	statuses := []string{taskstate.Queued, taskstate.Running, taskstate.PendingApproval, taskstate.AwaitingInput,
		taskstate.AwaitingSubAgents, taskstate.Aborted, taskstate.Completed, taskstate.Failed, taskstate.Cancelled}
	for _, s := range statuses {
		if !gen.TaskStatus(s).Valid() {
			t.Errorf("status %s is not in the contract", s)
		}
	}
	for _, c := range taskstate.Codes {
		if !gen.TaskErrorCode(c).Valid() {
			t.Errorf("error code %s is not in the contract", c)
		}
	}
}

func TestIsTransient(t *testing.T) {
	want := []string{taskstate.CodeRateLimit, taskstate.CodeServerOverloaded, taskstate.CodeServerError,
		taskstate.CodeGatewayError, taskstate.CodeLLMTimeout, taskstate.CodeOrphaned, taskstate.CodeWorkerDisconnected}
	for _, c := range taskstate.Codes {
		if got := taskstate.IsTransient(c); got != slices.Contains(want, c) {
			t.Errorf("IsTransient(%s) = %v", c, got)
		}
	}
	if taskstate.IsTransient("NOT_A_CODE") {
		t.Error("an unknown code is transient")
	}
}
