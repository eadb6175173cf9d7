package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/testkit"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestNoticesFollowTransitions: the status writer leaves a notice in the transaction of a
// top-level task's settling transition or scheduled retry, naming the status event as written
// (a refused transition, a step that stays RUNNING and a sub-agent's task leave none); the
// commit's listeners are told. FinishTaskNotice writes the notifications and mails with the
// notice's removal, once: a second finish, or one whose lease was taken over, writes nothing.
func TestNoticesFollowTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	var mu sync.Mutex
	var commits []store.Commit
	s.AfterCommit(func(c store.Commit) {
		mu.Lock()
		defer mu.Unlock()
		commits = append(commits, c)
	})
	noticed := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range commits {
			if c.Noticed {
				n++
			}
		}
		return n
	}
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	follow(t, s, u.ID, store.SubscribeAgent, a.ID) // every settling transition may tell someone
	claimTask := func() int64 {
		t.Helper()
		got, err := s.ClaimQueued(ctx, "w", time.Minute, 1)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v %v", got, err)
		}
		return got[0].ID
	}
	notices := func() []store.TaskNotice {
		t.Helper()
		ns, err := s.ClaimTaskNotices(ctx, "fanout", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}

	tk := storetest.Task(t, s, a, u.ID)
	claimTask()
	if _, err := s.FinishStep(ctx, tk.ID, "someone-else", store.StepOutcome{Status: taskstate.Completed}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("finish with a lost lease = %v", err)
	}
	if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Running, Steps: 1}); err != nil {
		t.Fatal(err)
	}
	if ns := notices(); len(ns) != 0 || noticed() != 0 {
		t.Fatalf("a refused transition or a running step left notices: %+v", ns)
	}
	answer := "done"
	if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	ns := notices()
	if len(ns) != 1 || noticed() != 1 {
		t.Fatalf("after completion: %+v", ns)
	}
	n := ns[0]
	if n.TaskID != tk.ID || n.UserID != u.ID || n.OwnerEmail != string(u.Email) || n.AgentID != a.ID || n.AgentName != a.Name ||
		n.PrincipalID != a.PrincipalID || n.Prompt != tk.Prompt || n.Status.Status != taskstate.Completed ||
		n.Status.Answer == nil || *n.Status.Answer != answer || n.ScheduledRunID != 0 {
		t.Fatalf("notice = %+v", n)
	}
	if again := notices(); len(again) != 0 {
		t.Fatalf("a leased notice was claimed twice: %+v", again)
	}

	// Finishing writes the notifications and mails once.
	mail := store.NewMail{To: string(u.Email), Subject: "done", Text: "done\n", Kind: store.MailKindNotification}
	agentID := a.ID
	stored, err := s.FinishTaskNotice(ctx, n, store.NoticeDecision{
		Notifications: []store.Notification{{UserID: u.ID, Kind: "task_completed", Title: "t", Body: "b", TaskID: &tk.ID, AgentID: &agentID}},
		Mails:         []store.NewMail{mail}})
	if err != nil || len(stored) != 1 || stored[0].ID == "" || !stored[0].CreatedAt.Equal(clock.Now()) {
		t.Fatalf("finish = %+v, %v", stored, err)
	}
	if _, err := s.FinishTaskNotice(ctx, n, store.NoticeDecision{Notifications: []store.Notification{{UserID: u.ID, Kind: "task_completed"}}}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("a second finish = %v", err)
	}
	if got, _ := s.Notifications(ctx, store.NotificationQuery{UserID: u.ID, PerPage: 10}); len(got) != 1 {
		t.Fatalf("notifications = %+v", got)
	}
	if ms, _ := s.Mails(ctx, string(u.Email)); len(ms) != 1 {
		t.Fatalf("mails = %+v", ms)
	}

	// A lapsed lease taken over: the first holder's finish writes nothing; a failed fan-out is
	// due again after the backoff.
	failing := storetest.FailedTask(t, s, a, u.ID, taskstate.CodeAuthError)
	first := notices()
	if len(first) != 1 || first[0].TaskID != failing || first[0].Status.Error == nil || first[0].Status.Error.Code != taskstate.CodeAuthError {
		t.Fatalf("failure notice = %+v", first)
	}
	clock.Advance(2 * time.Minute)
	second := notices()
	if len(second) != 1 {
		t.Fatalf("the lapsed notice was not claimed again: %+v", second)
	}
	if _, err := s.FinishTaskNotice(ctx, first[0], store.NoticeDecision{}); !errors.Is(err, svcerr.ErrInvalidState) {
		t.Fatalf("the lapsed holder's finish = %v", err)
	}
	if err := s.FailTaskNotice(ctx, second[0], "boom"); err != nil {
		t.Fatal(err)
	}
	if again := notices(); len(again) != 0 {
		t.Fatalf("a failed notice is due at once: %+v", again)
	}
	clock.Advance(store.NoticeBackoff.Delays[0])
	retried := notices()
	if len(retried) != 1 {
		t.Fatalf("a failed notice was not retried: %+v", retried)
	}
	if _, err := s.FinishTaskNotice(ctx, retried[0], store.NoticeDecision{}); err != nil {
		t.Fatal(err)
	}

	// A scheduled retry leaves its own notice (the status event carries next_retry_at); a
	// scheduled run's task names its run; a sub-agent's task leaves none.
	if ok, err := s.ScheduleTaskRetry(ctx, failing, time.Minute, 3); err != nil || !ok {
		t.Fatalf("schedule retry: %v %v", ok, err)
	}
	run, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "Digest", Prompt: ptrTo("Digest"),
		RunAt: ptrTo(clock.Now()), Timezone: "UTC", IsActive: true}, func(*store.Agent, *store.PromptTemplate) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	scheduled := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.Data = map[string]any{store.DataScheduledRunID: run.ID} })
	claimTask()
	if _, err := s.FinishStep(ctx, scheduled.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	parent := scheduled.ID
	kid := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.ParentTaskID = &parent })
	claimTask()
	if _, err := s.FinishStep(ctx, kid.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
		t.Fatal(err)
	}
	last := notices()
	if len(last) != 2 || last[0].TaskID != failing || last[0].Status.NextRetryAt == nil ||
		last[1].TaskID != scheduled.ID || last[1].ScheduledRunID != run.ID || last[1].ScheduledRunName != "Digest" {
		t.Fatalf("retry and scheduled-run notices = %+v", last)
	}
}

// TestNoticeClaimReadsFactsOnce: a claim of many notices reads their facts and the
// subscriptions to their agents in as many statements as a claim of one, not one per notice
// (issue 28: the notification fan-out was a seventh of PostgreSQL's CPU samples), and each
// notice still comes with its own facts and subscriptions.
func TestNoticeClaimReadsFactsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := storetest.NewCounted(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	other := storetest.User(t, s)
	follow(t, s, other.ID, store.SubscribeAgent, a.ID)
	// Another owner's agent, whose notices share the batch: a subscription to its principal
	// reaches its notices only, and the one to a reaches none of them.
	v := storetest.User(t, s)
	b := storetest.Agent(t, s, v.PrincipalID)
	follow(t, s, v.ID, store.SubscribePrincipal, v.PrincipalID)
	claim := func(settle int) (int, int64) {
		t.Helper()
		for range settle {
			storetest.FailedTask(t, s, a, u.ID, taskstate.CodeAuthError)
		}
		storetest.FailedTask(t, s, b, v.ID, taskstate.CodeAuthError)
		before := counter.Counts()
		ns, err := s.ClaimTaskNotices(ctx, "fanout", 20, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			owner, agent, subscriber := u, a, other
			if n.AgentID == b.ID {
				owner, agent, subscriber = v, b, v
			}
			if n.UserID != owner.ID || n.OwnerEmail != owner.Email || n.AgentName != agent.Name || n.Status.Status != taskstate.Failed ||
				len(n.Subscriptions) != 1 || n.Subscriptions[0].UserID != subscriber.ID {
				t.Fatalf("notice facts = %+v", n)
			}
		}
		return len(ns), counter.Counts().Sub(before).Statements
	}
	n1, one := claim(1)
	n8, eight := claim(8)
	if n1 != 2 || n8 != 9 || eight != one {
		t.Fatalf("claims of %d and %d notices took %d and %d statements, want the same", n1, n8, one, eight)
	}
}

// TestNotificationRetention: read notifications older than the cutoff go, unread ones stay.
func TestNotificationRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	s := storetest.NewWithClock(t, clock.Now)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	follow(t, s, u.ID, store.SubscribeAgent, a.ID)
	for range 3 {
		storetest.FailedTask(t, s, a, u.ID, taskstate.CodeAuthError)
	}
	ns, err := s.ClaimTaskNotices(ctx, "fanout", 10, time.Minute)
	if err != nil || len(ns) != 3 {
		t.Fatalf("notices = %+v, %v", ns, err)
	}
	for _, n := range ns {
		if _, err := s.FinishTaskNotice(ctx, n, store.NoticeDecision{Notifications: []store.Notification{{UserID: u.ID, Kind: "task_failed", Title: "t", Body: "b"}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Notifications(ctx, store.NotificationQuery{UserID: u.ID, PerPage: 10})
	if err != nil || len(got) != 3 {
		t.Fatalf("notifications = %+v, %v", got, err)
	}
	if _, err := s.MarkNotificationRead(ctx, u.ID, got[0].ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if n, err := s.DeleteReadNotificationsBefore(ctx, clock.Now(), 100); err != nil || n != 1 {
		t.Fatalf("retention removed %d, %v", n, err)
	}
	if n, err := s.UnreadNotifications(ctx, u.ID); err != nil || n != 2 {
		t.Fatalf("unread = %d, %v", n, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// follow subscribes user uid to every kind of the target.
func follow(t *testing.T, s *store.Store, uid int64, targetType string, target int64) {
	t.Helper()
	if _, _, err := s.Subscribe(context.Background(), store.NotificationSubscription{UserID: uid, TargetType: targetType, TargetID: target}); err != nil {
		t.Fatal(err)
	}
}

// TestNoticesOnlyWhenTheyMayTell: a transition whose owner is not told of it by default (a
// session task's completion or failure, a retry scheduled) leaves no notice while nobody
// subscribes to its agent or principal and no earlier notice or unread notification of the
// task that asked for something waits; a per-agent API chat's failure and a scheduled run's
// end leave theirs regardless. Each clause of the condition leaves the notice on its own.
func TestNoticesOnlyWhenTheyMayTell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	u := storetest.User(t, s)
	a := storetest.Agent(t, s, u.PrincipalID)
	answer := "done"
	complete := func(opts ...func(*store.NewTask)) int64 {
		t.Helper()
		tk := storetest.Task(t, s, a, u.ID, opts...)
		if got, err := s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != tk.ID {
			t.Fatalf("claim = %v, %v", got, err)
		}
		if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Completed, Answer: &answer}); err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	retry := func(id int64) {
		t.Helper()
		if ok, err := s.ScheduleTaskRetry(ctx, id, time.Minute, 3); err != nil || !ok {
			t.Fatalf("schedule retry: %v %v", ok, err)
		}
	}
	noticed := func() []int64 {
		t.Helper()
		ns, err := s.ClaimTaskNotices(ctx, "fanout", 20, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, n := range ns {
			ids = append(ids, n.TaskID)
			if _, err := s.FinishTaskNotice(ctx, n, store.NoticeDecision{}); err != nil {
				t.Fatal(err)
			}
		}
		return ids
	}

	complete()
	failed := storetest.FailedTask(t, s, a, u.ID, taskstate.CodeAuthError)
	retry(failed)
	if got := noticed(); len(got) != 0 {
		t.Fatalf("notices nobody can be told of: tasks %v", got)
	}

	// Told by default: a per-agent API chat's failure; a scheduled run's end is mailed.
	chatFailed := func() int64 {
		t.Helper()
		tk := storetest.Task(t, s, a, u.ID, func(nt *store.NewTask) { nt.Source = store.TaskSourceAgentAPI })
		if got, err := s.ClaimQueued(ctx, "w", time.Minute, 1); err != nil || len(got) != 1 || got[0].ID != tk.ID {
			t.Fatalf("claim = %v, %v", got, err)
		}
		if _, err := s.FinishStep(ctx, tk.ID, "w", store.StepOutcome{Status: taskstate.Failed, Error: &store.TaskError{Code: taskstate.CodeRateLimit, Message: "m"}}); err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	chat := chatFailed()
	run, err := s.CreateScheduledRun(ctx, a.ID, u.ID, store.ScheduledRunFields{Name: "Digest", Prompt: ptrTo("Digest"),
		RunAt: ptrTo(time.Now()), Timezone: "UTC", IsActive: true}, func(*store.Agent, *store.PromptTemplate) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	scheduled := complete(func(nt *store.NewTask) { nt.Data = map[string]any{store.DataScheduledRunID: run.ID} })
	if got := noticed(); !slices.Equal(got, []int64{chat, scheduled}) {
		t.Fatalf("notices = tasks %v, want %v", got, []int64{chat, scheduled})
	}

	// An earlier notice of the task still pending: the retry's follows it.
	pending := chatFailed()
	retry(pending)
	if got := noticed(); !slices.Equal(got, []int64{pending, pending}) {
		t.Fatalf("notices = tasks %v, want the failure's and the retry's of %d", got, pending)
	}

	// An unread notification about the task that asked for something: the retry's notice may
	// settle it; once it is read, nothing waits.
	asked := func(read bool) int64 {
		t.Helper()
		id := chatFailed()
		ns, err := s.ClaimTaskNotices(ctx, "fanout", 20, time.Minute)
		if err != nil || len(ns) != 1 || ns[0].TaskID != id {
			t.Fatalf("notices = %+v, %v", ns, err)
		}
		stored, err := s.FinishTaskNotice(ctx, ns[0], store.NoticeDecision{Notifications: []store.Notification{{UserID: u.ID, Kind: "awaiting_input", Title: "t", Body: "b"}}})
		if err != nil || len(stored) != 1 {
			t.Fatalf("finish = %+v, %v", stored, err)
		}
		if read {
			if _, err := s.MarkNotificationRead(ctx, u.ID, stored[0].ID); err != nil {
				t.Fatal(err)
			}
		}
		retry(id)
		return id
	}
	unread := asked(false)
	if got := noticed(); !slices.Equal(got, []int64{unread}) {
		t.Fatalf("notices = tasks %v, want the retry's of %d", got, unread)
	}
	asked(true)
	if got := noticed(); len(got) != 0 {
		t.Fatalf("notices after the notification was read: tasks %v", got)
	}

	// A subscription to the agent's principal.
	v := storetest.User(t, s)
	follow(t, s, v.ID, store.SubscribePrincipal, a.PrincipalID)
	done := complete()
	if got := noticed(); !slices.Equal(got, []int64{done}) {
		t.Fatalf("notices = tasks %v, want %d's", got, done)
	}
}
