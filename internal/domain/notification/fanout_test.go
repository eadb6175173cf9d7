package notification_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/domain/notification"
	"github.com/agentsvc/svc/internal/platform/config"
	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/notifykind"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestFanOut walks who is told what as tasks settle. Without a subscription the owner is told
// only what needs them (a pause; the failure of an unattended run), with the task's prompt as
// text and its error; a group member subscribed to the agent gets the agent's name only and no
// task id, by mail too when they asked, only for the kinds they follow, and nothing once the
// agent is no longer visible to them; a pause's notification is read, for everyone, once the
// task left the pause. With a subscription to every kind the owner gets the kinds of a
// completion, a failure, an orphaned task, a scheduled retry and a scheduled run; none for a
// sub-agent's task; the scheduled run's mail once its task finished for good. Each notice is
// fanned out once: a second drain writes nothing.
func TestFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	st := storetest.NewWithClock(t, clock.Now)
	cfg := config.Defaults()
	log, _ := testkit.NewLogger()
	svc := notification.New(st, nil, func() *config.Config { return cfg }, log)
	owner := storetest.User(t, st)
	member := storetest.User(t, st)
	g := storetest.Group(t, st, owner)
	if _, err := st.AddGroupMember(ctx, g.ID, member.ID, store.GroupRoleMember, nil); err != nil {
		t.Fatal(err)
	}
	retries := 1
	a := storetest.Agent(t, st, g.PrincipalID, func(f *store.AgentFields) { f.MaxRetries = &retries })
	subscribe := func(u *store.User, kinds ...string) {
		t.Helper()
		if _, _, err := svc.Subscribe(ctx, &store.User{ID: u.ID, PrincipalID: u.PrincipalID}, store.NotificationSubscription{
			TargetType: store.SubscribeAgent, TargetID: a.ID, Kinds: kinds, Email: u.ID == member.ID}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe(member, notifykind.TaskFailed, notifykind.TaskFailed)
	drain := func() {
		t.Helper()
		if _, err := svc.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list := func(u *store.User) []store.Notification {
		t.Helper()
		ns, err := st.Notifications(ctx, store.NotificationQuery{UserID: u.ID, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(ns) // oldest first
		return ns
	}
	kinds := func(ns []store.Notification) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, n.Kind)
		}
		return out
	}
	finish := func(id int64, o store.StepOutcome) {
		t.Helper()
		if got, err := st.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("claim: %v %v", got, err)
		}
		if _, err := st.FinishStep(ctx, id, "w", o); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second) // notifications of one instant have no order among themselves
	}

	// No subscription: a completion and an attended failure tell the owner nothing; an
	// unattended failure and a pause do.
	answer := "42"
	done := storetest.Task(t, st, a, owner.ID)
	finish(done.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer})
	failed := storetest.Task(t, st, a, owner.ID, func(nt *store.NewTask) { nt.Prompt = "Secret plan" })
	finish(failed.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeAuthError, Message: "bad key"}})
	chat := storetest.Task(t, st, a, owner.ID, func(nt *store.NewTask) { nt.Prompt = "Chat \"from\"\n  a script"; nt.Source = store.TaskSourceAgentAPI })
	finish(chat.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeAuthError, Message: "bad key"}})
	paused := storetest.Task(t, st, a, owner.ID, func(nt *store.NewTask) { nt.Prompt = "Delete it" })
	storetest.MoveTo(t, st, paused.ID, taskstate.PendingApproval)
	drain()
	drain() // nothing twice
	ns := list(owner)
	if got := kinds(ns); !slices.Equal(got, []string{notifykind.TaskFailed, notifykind.PendingApproval}) {
		t.Fatalf("owner's kinds = %v", got)
	}
	if ns[0].Body != "Task \u201cChat \"from\" a script\u201d failed: bad key." || ns[0].TaskID == nil || *ns[0].TaskID != chat.ID ||
		ns[1].Body != "Task \u201cDelete it\u201d waits for approval of its tool calls." || ns[1].ReadAt != nil {
		t.Fatalf("owner's notifications = %+v", ns)
	}
	ms := list(member)
	if len(ms) != 2 || ms[0].Kind != notifykind.TaskFailed || ms[0].TaskID != nil || strings.Contains(ms[0].Body, "Secret") ||
		ms[0].Body != "A task of "+a.Name+" failed." {
		t.Fatalf("member's notifications = %+v", ms)
	}
	if mails, _ := st.Mails(ctx, string(member.Email)); len(mails) != 2 || strings.Contains(mails[0].Text, "Secret") {
		t.Fatalf("member's mails = %+v", mails)
	}
	if mails, _ := st.Mails(ctx, string(owner.Email)); len(mails) != 0 {
		t.Fatalf("the owner asked for no mail: %+v", mails)
	}
	// The pause ends (its calls rejected): its notification is read.
	if _, err := st.RejectToolCallsBy(ctx, paused.ID, store.Decider{UserID: owner.ID}, "no"); err != nil {
		t.Fatal(err)
	}
	drain()
	if ns := list(owner); len(ns) != 2 || ns[1].ReadAt == nil || ns[0].ReadAt != nil {
		t.Fatalf("after the pause ended: %+v", ns)
	}

	finish(paused.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer}) // it ran on
	drain()                                                                            // (subscriptions apply when a notice is fanned out)

	// With a subscription to every kind.
	subscribe(owner)
	// Orphaned, then the retry scheduled; a scheduled run; a sub-agent's task tells nobody.
	orphan := storetest.Task(t, st, a, owner.ID)
	for range store.MaxRecoveries + 1 {
		if got, err := st.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		clock.Advance(2 * time.Minute)
		if _, err := st.ReapStale(ctx, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Second)
	if ok, err := st.ScheduleTaskRetry(ctx, orphan.ID, time.Minute, 3); err != nil || !ok {
		t.Fatalf("schedule retry: %v %v", ok, err)
	}
	clock.Advance(time.Second)
	run, err := st.CreateScheduledRun(ctx, a.ID, owner.ID, store.ScheduledRunFields{Name: "Digest", Prompt: ptrTo("Digest"),
		RunAt: ptrTo(clock.Now()), Timezone: "UTC", IsActive: true}, func(*store.Agent, *store.PromptTemplate) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	scheduled := func(nt *store.NewTask) { nt.Data = map[string]any{store.DataScheduledRunID: run.ID} }
	fromRun := storetest.Task(t, st, a, owner.ID, scheduled)
	finish(fromRun.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer})
	parent := fromRun.ID
	kid := storetest.Task(t, st, a, owner.ID, func(nt *store.NewTask) { nt.ParentTaskID = &parent })
	finish(kid.ID, store.StepOutcome{Status: taskstate.Completed, Answer: &answer})
	// A scheduled run failing with a retry to come is not mailed; for good, it is.
	flaky := storetest.Task(t, st, a, owner.ID, scheduled)
	finish(flaky.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeRateLimit, Message: "slow down"}})
	drain()
	want := []string{notifykind.TaskFailed, notifykind.PendingApproval, notifykind.TaskOrphaned,
		notifykind.TaskRetryQueued, notifykind.ScheduledRunCompleted, notifykind.TaskFailed}
	if got := kinds(list(owner)); !slices.Equal(got, want) {
		t.Fatalf("owner's kinds = %v, want %v", got, want)
	}
	mails, _ := st.Mails(ctx, string(owner.Email))
	if len(mails) != 1 || mails[0].Kind != store.MailKindScheduledRun || !strings.Contains(mails[0].Subject, "Digest") {
		t.Fatalf("owner's mails = %+v", mails)
	}

	// The member leaves the group: their subscription stops delivering.
	if err := st.RemoveGroupMember(ctx, g.ID, member.ID, nil); err != nil {
		t.Fatal(err)
	}
	before := len(list(member))
	later := storetest.Task(t, st, a, owner.ID)
	finish(later.ID, store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeAuthError, Message: "x"}})
	drain()
	if got := list(member); len(got) != before {
		t.Fatalf("an invisible agent still notifies: %+v", got)
	}
}

func ptrTo[T any](v T) *T { return &v }
