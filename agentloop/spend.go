package agentloop

import (
	"context"
	"fmt"
	"time"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// Budgets (issue 27): before a step calls the model, the budgets of the task's user, its
// agent, the agent's group and the per-agent key that started it are read with their use in
// the current period (store.BudgetsFor); one that is used up fails the task with
// BUDGET_EXCEEDED, naming the budget and its reset, before any model call. A task that passed
// the check finishes the call it makes (its usage is then recorded with its step), so the
// overshoot is at most one model call per task in flight when the limit is reached.

// overBudget returns the first used-up budget of t's scope, or nil.
func (l *Loop) overBudget(ctx context.Context, t *store.Task) (*store.BudgetUse, error) {
	uses, err := l.Store.BudgetsFor(ctx, store.BudgetScope{UserID: t.UserID, AgentID: t.AgentID, PrincipalID: t.PrincipalID, APIKeyID: t.APIKeyID})
	if err != nil {
		return nil, fmt.Errorf("budgets of task %d: %w", t.ID, err)
	}
	for i := range uses {
		if uses[i].Exceeded() {
			return &uses[i], nil
		}
	}
	for _, u := range uses {
		if u.SoftReached() && (u.NotifiedPeriod == nil || *u.NotifiedPeriod != l.Store.Day(u.PeriodStart)) {
			title, body := thresholdText(u)
			if _, err := l.Store.NotifyBudgetThreshold(ctx, u, title, body); err != nil {
				l.log().WarnContext(ctx, "budget threshold notification", "budget_id", u.ID, "err", err)
			}
		}
	}
	return nil, nil
}

// thresholdText is the notification of budget u's soft threshold.
func thresholdText(u store.BudgetUse) (title, body string) {
	used := fmt.Sprintf("%d tokens", u.SpentTokens)
	if u.LimitTokens != nil {
		used += fmt.Sprintf(" of %d", *u.LimitTokens)
	}
	if u.LimitCost != nil {
		used += fmt.Sprintf(", %d of %d micro-units", u.SpentCost, *u.LimitCost)
	}
	return fmt.Sprintf("Budget at %d %%", *u.SoftPercent),
		fmt.Sprintf("The %s budget of %s %d has used %s; it resets at %s.", u.Period, u.ScopeKind, u.ScopeID, used,
			u.ResetsAt.UTC().Format(time.RFC3339))
}

// failBudget fails t with BUDGET_EXCEEDED for budget u; the task's data records which budget
// and when it resets (budget_exceeded).
func (l *Loop) failBudget(ctx context.Context, t *store.Task, worker string, u *store.BudgetUse) (*store.Task, error) {
	out, err := l.finish(ctx, t, worker, store.StepOutcome{Status: taskstate.Failed,
		Error: &store.TaskError{Code: taskstate.CodeBudgetExceeded, Message: u.Message()},
		Data: map[string]any{"budget_exceeded": map[string]any{"budget_id": u.ID, "scope_kind": u.ScopeKind,
			"scope_id": u.ScopeID, "period": u.Period, "resets_at": u.ResetsAt.UTC().Format(time.RFC3339)}}})
	if err != nil {
		return nil, err
	}
	return l.settle(ctx, out), nil
}
