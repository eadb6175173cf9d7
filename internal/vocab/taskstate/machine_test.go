package taskstate_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

var all = []string{taskstate.Queued, taskstate.Running, taskstate.PendingApproval, taskstate.AwaitingInput,
	taskstate.AwaitingSubAgents, taskstate.Aborted, taskstate.Completed, taskstate.Failed, taskstate.Cancelled}

func without(set []string, drop ...[]string) []string {
	var out []string
	for _, s := range set {
		if !slices.ContainsFunc(drop, func(d []string) bool { return slices.Contains(d, s) }) {
			out = append(out, s)
		}
	}
	return out
}

// statesOf reads a state phrase of the specification's tables as a set of statuses; ok is false
// for a phrase this test does not know (the specification changed: teach it here).
func statesOf(phrase string) (set []string, ok bool) {
	quiescent := append(slices.Clone(taskstate.Paused), taskstate.AwaitingSubAgents)
	switch p := strings.TrimSpace(phrase); p {
	case "any non-terminal, not already paused":
		return without(all, taskstate.Terminal, taskstate.Paused), true
	case "non-terminal, not quiescent":
		return without(all, taskstate.Terminal, quiescent), true
	case "(none)":
		return []string{""}, true
	case "any":
		return all, true
	case "running":
		return []string{taskstate.Running}, true
	case "queued again":
		return []string{taskstate.Queued}, true
	case "blocked", "blocked, PENDING_APPROVAL", "blocked, AWAITING_INPUT":
		if p == "blocked" {
			return []string{taskstate.PendingApproval, taskstate.AwaitingInput}, true
		}
		return []string{strings.TrimPrefix(p, "blocked, ")}, true
	case "terminal state (for example COMPLETED)":
		return []string{taskstate.Completed, taskstate.Failed}, true
	default:
		if slices.Contains(all, p) {
			return []string{p}, true
		}
	}
	return nil, false
}

// actionOf maps a trigger of the specification's tables to the actions it names.
func actionOf(trigger string) []taskstate.Action {
	t := strings.Trim(strings.TrimSpace(trigger), "`")
	switch {
	case strings.HasSuffix(t, "/abort"), strings.HasSuffix(t, "/abort-sub-agent"):
		return []taskstate.Action{taskstate.Abort}
	case strings.HasSuffix(t, "/answer"):
		return []taskstate.Action{taskstate.Answer}
	case strings.HasSuffix(t, "/tick"):
		return []taskstate.Action{taskstate.Tick}
	case strings.HasSuffix(t, "/approve"):
		return []taskstate.Action{taskstate.Approve}
	case strings.HasSuffix(t, "/reject"):
		return []taskstate.Action{taskstate.Reject}
	case t == "approve, reject or answer":
		return []taskstate.Action{taskstate.Approve, taskstate.Reject, taskstate.Answer}
	case strings.HasSuffix(t, "/messages"):
		return []taskstate.Action{taskstate.FollowUp}
	case strings.HasSuffix(t, "/agent-api/chats"):
		return []taskstate.Action{taskstate.Create}
	case t == "worker completes", t == "worker parks":
		return []taskstate.Action{taskstate.Step}
	}
	return nil
}

// specRows returns the rows (State, Trigger, Condition, Next state) of the "States and
// transitions" table of a specification document.
func specRows(t *testing.T, doc string) [][]string {
	t.Helper()
	path := filepath.Join("..", "..", "..", "..", "shared", "spec", doc)
	raw, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("the specification is not beside the repository: %v", err)
		}
		t.Fatalf("the specification must be beside the repository in CI: %v", err)
	}
	text := string(raw)
	start := strings.Index(text, "## States and transitions")
	if start < 0 {
		t.Fatalf("%s: no States and transitions section", doc)
	}
	text = text[start+len("## States and transitions"):]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	var rows [][]string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| State") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 4 {
			t.Fatalf("%s: row %q", doc, line)
		}
		rows = append(rows, cells[:4])
	}
	if len(rows) == 0 {
		t.Fatalf("%s: the table has no rows", doc)
	}
	return rows
}

// TestRulesFollowTheSpecification walks both documents' tables of states against Rules: every
// row's trigger names actions whose rule lets the row's states go to its next state (a next
// state equal to the state means the action may be taken there and the status stays); the
// refusals the session API names (abort on terminal or paused tasks, tick on quiescent ones)
// make those rules' From exactly the row's set; a row the test cannot read fails it.
func TestRulesFollowTheSpecification(t *testing.T) {
	for _, doc := range []string{"session-api.md", "agent-api.md"} {
		for _, row := range specRows(t, doc) {
			state, trigger, next := strings.TrimSpace(row[0]), strings.TrimSpace(row[1]), strings.TrimSpace(row[3])
			actions := actionOf(trigger)
			if actions == nil {
				t.Errorf("%s: trigger %q names no action this test knows", doc, trigger)
				continue
			}
			from, ok := statesOf(state)
			if !ok {
				t.Errorf("%s: state %q is not a phrase this test knows", doc, state)
				continue
			}
			switch next {
			case "unchanged": // refused in any state that does not allow it: some state must not
				for _, a := range actions {
					if len(taskstate.Rules[a].From) == len(all) {
						t.Errorf("%s: %s is allowed in every state, but the specification refuses it in some", doc, a)
					}
				}
				continue
			case "state after one tick": // the tick leases the task, then one step runs
				if !slices.Equal(taskstate.Rules[taskstate.Tick].To, []string{taskstate.Running}) ||
					!slices.Equal(taskstate.Rules[taskstate.Step].From, []string{taskstate.Running}) {
					t.Errorf("%s: a tick must lease the task (RUNNING) for one step", doc)
				}
			}
			to, ok := statesOf(next)
			if next != "state after one tick" && !ok {
				t.Errorf("%s: next state %q is not a phrase this test knows", doc, next)
				continue
			}
			for _, a := range actions {
				rule, known := taskstate.Rules[a]
				if !known {
					t.Errorf("%s: no rule for %s", doc, a)
					continue
				}
				for _, f := range from {
					if next == "state after one tick" {
						if !taskstate.Leaves(a, f) {
							t.Errorf("%s: %s (%q) may not be taken in %s", doc, a, trigger, f)
						}
						continue
					}
					for _, n := range to {
						stays := n == f && !slices.Contains(rule.To, n)
						if stays && !taskstate.Leaves(a, f) || !stays && !taskstate.Allows(a, f, n) {
							t.Errorf("%s: %q: %s does not move %q to %s", doc, trigger, a, f, n)
						}
					}
				}
			}
			if doc == "session-api.md" && (actions[0] == taskstate.Abort || actions[0] == taskstate.Tick) {
				if got := taskstate.Rules[actions[0]].From; !sameSet(got, from) {
					t.Errorf("%s: %s leaves %v, the specification %v (it refuses the others)", doc, actions[0], got, from)
				}
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestRulesAreWhole: every status but the new task's is entered by some action and every
// non-terminal status is left by some action; every rule names known statuses and a verb.
func TestRulesAreWhole(t *testing.T) {
	entered, left := map[string]bool{}, map[string]bool{}
	for a, r := range taskstate.Rules {
		if r.Verb == "" || len(r.To) == 0 {
			t.Errorf("%s: a rule needs a verb and a status to enter", a)
		}
		for _, s := range slices.Concat(r.From, r.To) {
			if !slices.Contains(all, s) {
				t.Errorf("%s: unknown status %q", a, s)
			}
		}
		for _, s := range r.To {
			entered[s] = true
		}
		for _, s := range r.From {
			left[s] = true
		}
	}
	for _, s := range all {
		if !entered[s] {
			t.Errorf("no action enters %s", s)
		}
		if !slices.Contains(taskstate.Terminal, s) && !left[s] {
			t.Errorf("no action leaves %s", s)
		}
	}
	if !taskstate.Allows(taskstate.Create, "", taskstate.Queued) || taskstate.Allows(taskstate.Abort, taskstate.Completed, taskstate.Aborted) {
		t.Error("Allows disagrees with the table")
	}
	if taskstate.Allows("no such action", taskstate.Queued, taskstate.Running) {
		t.Error("an unknown action allows something")
	}
}
