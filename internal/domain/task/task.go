// Package task holds the rules of the task resource (a chat run of an agent): who may start,
// see, delete and steer a task (docs/design.md "Task states"). Only the task's owner sees it
// (document 1, rule 7: anyone else gets 404). Which status an action may leave and enter is
// taskstate.Rules; every status change is applied by the store's one writer under the task's
// row lock, so of two concurrent requests at most one moves a task; a refused request writes
// nothing. The agent loop (package agentloop) drives RUNNING tasks
// through the store's lease-guarded methods; this package only adds ScheduleRetry for it.
package task

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/platform/tracing"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/approval"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
)

// Service applies the task rules on top of the store.
type Service struct {
	store         Store
	tools         *tools.Registry
	log           *slog.Logger
	retryAfterMax func() time.Duration // bound of a provider's Retry-After (ScheduleRetryAfter)
}

// New returns the service; reg describes tool operations for pending calls (may be nil). It
// logs to slog.Default until WithLog names another logger (the store logs the transitions).
func New(st Store, reg *tools.Registry) *Service {
	return &Service{store: st, tools: reg, log: slog.Default()}
}

// WithRetryAfterMax bounds the provider's wait ScheduleRetryAfter honours by what max returns
// at each retry (llm_retry_after_max_seconds; zero or less ignores the provider's wait), and
// returns the service. Without it the bound is DefaultRetryAfterMax.
func (s *Service) WithRetryAfterMax(max func() time.Duration) *Service {
	s.retryAfterMax = max
	return s
}

// DefaultRetryAfterMax bounds a provider's Retry-After when WithRetryAfterMax was not called.
const DefaultRetryAfterMax = 10 * time.Minute

// WithLog makes the service log to l, and returns it.
func (s *Service) WithLog(l *slog.Logger) *Service {
	s.log = l
	return s
}

// PendingCall is a tool call awaiting approval with its operation's declared description.
type PendingCall struct {
	store.ToolCall
	Description string
}

// View is a task with what blocks it: HasPending is true in PENDING_APPROVAL and
// AWAITING_INPUT; then Calls holds the calls awaiting a decision and Questions the unanswered
// batches.
type View struct {
	store.Task
	HasPending bool
	Calls      []PendingCall
	Questions  []store.QuestionBatch
	// LastSaid is the text of the last assistant turn that had text, filled for a FAILED task
	// only (the per-agent API shows it as the failed chat's answer); nil otherwise.
	LastSaid *string
}

func notFound() error { return svcerr.New(svcerr.ErrNotFound, "task not found") }

// ParseID turns a task id from a path into the stored id. Anything but a canonical positive
// decimal number names no task: ErrNotFound "task not found".
func ParseID(s string) (int64, error) {
	id, ok := pathid.Parse(s)
	if !ok {
		return 0, notFound()
	}
	return id, nil
}

// owned returns task id when u owns it. Errors: ErrNotFound "task not found" (unknown,
// malformed or someone else's: ownership is not revealed).
func (s *Service) owned(ctx context.Context, u *store.User, id string) (*store.Task, error) {
	tid, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	t, err := s.store.Task(ctx, tid)
	if err != nil {
		return nil, err
	}
	if t.UserID != u.ID {
		return nil, notFound()
	}
	return t, nil
}

// Decidable returns task id when u may decide what it waits for (approval.MayDecide over the
// agent's approvers). Errors: ErrNotFound "task not found" (unknown, malformed, or neither
// u's nor decidable by u: nothing is revealed), ErrForbidden (u's own task whose agent names
// other approvers), and those of the store.
func (s *Service) Decidable(ctx context.Context, u *store.User, id string) (*store.Task, error) {
	tid, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	t, err := s.store.Task(ctx, tid)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, t.AgentID, u.ID)
	if err != nil {
		if errors.Is(err, svcerr.ErrNotFound) && t.UserID != u.ID {
			return nil, notFound()
		}
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if approval.MayDecide(sc, a, t) {
		return t, nil
	}
	if t.UserID == u.ID {
		return nil, svcerr.New(svcerr.ErrForbidden, "this agent's approvers decide its tool calls and questions")
	}
	return nil, notFound()
}

// view adds what blocks t.
// ViewOf is the task as its owner sees it (with pending calls and questions), for the push
// channel. Errors: those of the store.
func (s *Service) ViewOf(ctx context.Context, t *store.Task) (*View, error) { return s.view(ctx, t) }

func (s *Service) view(ctx context.Context, t *store.Task) (*View, error) {
	v := &View{Task: *t, Calls: []PendingCall{}, Questions: []store.QuestionBatch{}}
	switch t.Status {
	case taskstate.PendingApproval:
		v.HasPending = true
		calls, err := s.store.ToolCalls(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if c.Status == store.ToolCallPendingApproval {
				v.Calls = append(v.Calls, PendingCall{ToolCall: c, Description: s.describe(c.ToolClass, c.Operation)})
			}
		}
	case taskstate.AwaitingInput:
		v.HasPending = true
		qs, err := s.store.PendingQuestions(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		v.Questions = qs
	case taskstate.Failed:
		said, err := s.store.LastAssistantText(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		v.LastSaid = said
	}
	return v, nil
}

// describe returns the declared description of a tool operation (the tool's own when the
// operation is not declared, "" when the tool is unknown).
// Describe is the declared description of operation op of tool class (the approvals inbox
// shows it).
func (s *Service) Describe(class, op string) string { return s.describe(class, op) }

func (s *Service) describe(class, op string) string {
	if s.tools == nil {
		return ""
	}
	spec, ok := s.tools.Spec(class)
	if !ok {
		return ""
	}
	for _, o := range spec.Operations {
		if o.Name == op && o.Description != "" {
			return o.Description
		}
	}
	return spec.Description
}

// CreateInput is a new task's request.
type CreateInput struct {
	AgentID  int64
	Prompt   string
	MaxSteps *int
	MediaIDs []string
}

// checkMedia refuses media_ids that do not all name live assets of principals u can see.
// Errors: ErrInvalid naming the first such id.
func (s *Service) checkMedia(ctx context.Context, u *store.User, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	assets, err := s.store.MediaAssets(ctx, ids)
	if err != nil {
		return err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return err
	}
	for _, id := range ids {
		a, ok := assets[id]
		if !ok || !sc.CanSee(a.PrincipalID) {
			return invalid("media_ids: no such media asset %q", id)
		}
	}
	return nil
}

func checkSteps(field string, n *int) error {
	if n != nil && (*n < limits.MinSteps || *n > limits.MaxSteps) {
		return svcerr.New(svcerr.ErrInvalid, "%s must be between %d and %d", field, limits.MinSteps, limits.MaxSteps)
	}
	return nil
}

// Create starts a QUEUED task owned by u for an agent u can see; max_steps defaults to the
// agent's. Errors: ErrInvalid (agent invisible or unknown, max_steps outside 1..100, blank
// prompt, media_ids naming assets u cannot see or that expired).
func (s *Service) Create(ctx context.Context, u *store.User, in CreateInput) (*View, error) {
	if err := checkSteps("max_steps", in.MaxSteps); err != nil {
		return nil, err
	}
	a, err := s.store.Agent(ctx, in.AgentID, u.ID)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, svcerr.New(svcerr.ErrInvalid, "agent_id: no such agent")
	}
	if err != nil {
		return nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, err
	}
	if !sc.CanSee(a.PrincipalID) {
		return nil, svcerr.New(svcerr.ErrInvalid, "agent_id: no such agent")
	}
	if err := s.checkMedia(ctx, u, in.MediaIDs); err != nil {
		return nil, err
	}
	steps := a.MaxSteps
	if in.MaxSteps != nil {
		steps = *in.MaxSteps
	}
	return s.Start(ctx, store.NewTask{
		AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: u.ID, Prompt: in.Prompt, MaxSteps: steps,
		Source: store.TaskSourceSession, MediaIDs: in.MediaIDs,
	})
}

// Start creates a QUEUED task as described; the caller has checked that its owner may use the
// agent and the attached media. Errors: ErrInvalid (CheckNew: blank or oversize prompt,
// max_steps, source, data), those of store.CreateTask.
func (s *Service) Start(ctx context.Context, nt store.NewTask) (*View, error) {
	if err := CheckNew(nt); err != nil {
		return nil, err
	}
	if nt.TraceParent == "" {
		nt.TraceParent = tracing.TraceParent(ctx) // the request's trace, continued by the steps
	}
	t, err := s.store.CreateTask(ctx, nt)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, t)
}

// Get returns task id when u owns it. Errors: ErrNotFound "task not found".
func (s *Service) Get(ctx context.Context, u *store.User, id string) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, t)
}

// ListOptions narrow and page List.
type ListOptions struct {
	AgentID       int64 // 0: every agent
	Status        string
	Since         *time.Time
	Page, PerPage int
}

// List returns one page of u's tasks, newest first. Errors: those of the store.
func (s *Service) List(ctx context.Context, u *store.User, o ListOptions) ([]View, error) {
	ts, err := s.store.ListTasks(ctx, store.TaskQuery{UserID: u.ID, AgentID: o.AgentID, Status: o.Status, Since: o.Since, Page: o.Page, PerPage: o.PerPage})
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(ts))
	for i := range ts {
		v, err := s.view(ctx, &ts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, nil
}

// Delete removes task id with everything belonging to it. Errors: ErrNotFound "task not
// found", ErrInvalidState while RUNNING.
func (s *Service) Delete(ctx context.Context, u *store.User, id string) error {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return err
	}
	return s.store.DeleteTask(ctx, t.ID)
}

// The actions below the user-facing ones act on an already-authorised task t: the caller has
// decided that whoever asks may act on it (the owner through a session, or a key of the
// agent through the per-agent API). They hold the state machine's rules.

// transition applies tr to the authorised task t; the state machine's rule for tr.Action
// (taskstate.Rules) decides whether t may move.
func (s *Service) transition(ctx context.Context, t *store.Task, tr store.TaskTransition) (*View, error) {
	nt, err := s.store.TransitionTask(ctx, t.ID, tr)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, nt)
}

// Abort stops a QUEUED, RUNNING or AWAITING_SUB_AGENTS task (→ ABORTED); a running worker
// loses its lease and writes nothing more. Errors: ErrNotFound, ErrInvalidState (terminal or
// already paused).
func (s *Service) Abort(ctx context.Context, u *store.User, id string) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.AbortTask(ctx, t)
}

// AbortTask is Abort of the authorised task t.
func (s *Service) AbortTask(ctx context.Context, t *store.Task) (*View, error) {
	v, err := s.transition(ctx, t, store.TaskTransition{Action: taskstate.Abort, To: taskstate.Aborted})
	return s.settled(ctx, v, err)
}

// settled resumes the parent of a task that just settled outside the loop (abort, cancelled
// retry chain), once all of the parent's sub-agents are settled.
func (s *Service) settled(ctx context.Context, v *View, err error) (*View, error) {
	if err != nil {
		return nil, err
	}
	if err := s.ResumeParent(ctx, v.Task.ID); err != nil {
		return nil, err
	}
	return v, nil
}

// Reaped handles a task the reaper just failed: the agent's automatic retry, and the parent's
// resumption when that leaves all its sub-agents settled. Errors: those of the store.
func (s *Service) Reaped(ctx context.Context, id int64) error {
	if _, err := s.ScheduleRetry(ctx, id); err != nil {
		return err
	}
	return s.ResumeParent(ctx, id)
}

// ResumeParent queues the parent of task id again when it waits in AWAITING_SUB_AGENTS and all
// its sub-agent tasks are settled. The loop does this itself; callers that settle a task
// elsewhere (abort, reapers, retry-chain cancellation) call it. Errors: those of the store.
func (s *Service) ResumeParent(ctx context.Context, id int64) error {
	t, err := s.store.Task(ctx, id)
	if err != nil || t.ParentTaskID == nil {
		return err
	}
	_, err = s.store.ResumeWhenChildrenSettled(ctx, *t.ParentTaskID)
	return err
}

// AbortSubAgent aborts sub-agent task id (same states as Abort) and every AWAITING_SUB_AGENTS
// ancestor above it, in one transaction. Errors: as Abort.
func (s *Service) AbortSubAgent(ctx context.Context, u *store.User, id string) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.AbortSubAgentTask(ctx, t)
}

// AbortSubAgentTask is AbortSubAgent of the authorised task t.
func (s *Service) AbortSubAgentTask(ctx context.Context, t *store.Task) (*View, error) {
	nt, err := s.store.AbortTaskChain(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, nt)
}

// Approve applies decisions to pending tool calls of a PENDING_APPROVAL task u may decide
// (Decidable), recording u as the decider; all decided → QUEUED. Errors: ErrNotFound, ErrInvalidState (not
// PENDING_APPROVAL), ErrInvalid (unknown, decided or repeated provider_call_id; arguments on a
// rejection).
func (s *Service) Approve(ctx context.Context, u *store.User, id string, ds []store.ToolDecision) (*View, error) {
	t, err := s.Decidable(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.ApproveTask(ctx, t, store.Decider{UserID: u.ID}, ds)
}

// ApproveTask is Approve of the authorised task t, recording by as the decider.
func (s *Service) ApproveTask(ctx context.Context, t *store.Task, by store.Decider, ds []store.ToolDecision) (*View, error) {
	if err := CheckDecisions(ds); err != nil {
		return nil, err
	}
	nt, err := s.store.DecideToolCallsBy(ctx, t.ID, by, ds)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, nt)
}

// Reject rejects every pending call of a PENDING_APPROVAL task with reason (the model sees
// it as their result) and queues the task. Errors: ErrNotFound, ErrInvalidState, ErrInvalid
// (blank reason).
func (s *Service) Reject(ctx context.Context, u *store.User, id, reason string) (*View, error) {
	t, err := s.Decidable(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.RejectTask(ctx, t, store.Decider{UserID: u.ID}, reason)
}

// RejectTask is Reject of the authorised task t, recording by as the decider.
func (s *Service) RejectTask(ctx context.Context, t *store.Task, by store.Decider, reason string) (*View, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, svcerr.New(svcerr.ErrInvalid, "reason is required")
	}
	if err := CheckReason(reason); err != nil {
		return nil, err
	}
	nt, err := s.store.RejectToolCallsBy(ctx, t.ID, by, reason)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, nt)
}

// Answer records the answers to pending question batch toolCallID of an AWAITING_INPUT task;
// all batches answered → QUEUED. Errors: ErrNotFound, ErrInvalidState (not AWAITING_INPUT),
// ErrInvalid (unknown batch, header or selection; a question left unanswered; several
// selections on a single-choice question; free text where not allowed; an empty answer).
func (s *Service) Answer(ctx context.Context, u *store.User, id, toolCallID string, answers []store.QuestionAnswer) (*View, error) {
	t, err := s.Decidable(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.AnswerTask(ctx, t, store.Decider{UserID: u.ID}, toolCallID, answers, func(b *store.QuestionBatch) error {
		return CheckAnswers(b.Questions, answers)
	})
}

// AnswerTask records answers to batch toolCallID of the authorised task t after check (may be
// nil) accepted them; all batches answered → QUEUED. Errors: as Answer (ErrInvalid for answers
// over store.MaxTaskJSONLen bytes of JSON, before the store), and those of check.
func (s *Service) AnswerTask(ctx context.Context, t *store.Task, by store.Decider, toolCallID string, answers []store.QuestionAnswer, check store.AnswerCheck) (*View, error) {
	if err := CheckJSON("answers", answers); err != nil {
		return nil, err
	}
	nt, err := s.store.AnswerQuestionsBy(ctx, t.ID, by, toolCallID, answers, check)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, nt)
}

func invalid(format string, args ...any) error { return svcerr.New(svcerr.ErrInvalid, format, args...) }

// CheckAnswers validates answers against the questions of their batch: every question answered
// exactly once by its header, selections verbatim from its options (at most one unless
// multiple), free text only where allowed, and something selected or written. Errors:
// ErrInvalid naming the first problem.
func CheckAnswers(qs []store.Question, answers []store.QuestionAnswer) error {
	byHeader := make(map[string]*store.Question, len(qs))
	for i := range qs {
		byHeader[qs[i].Header] = &qs[i]
	}
	seen := map[string]bool{}
	for _, a := range answers {
		q, ok := byHeader[a.Header]
		if !ok {
			return invalid("answers: unknown header %q", a.Header)
		}
		if seen[a.Header] {
			return invalid("answers: header %q is answered twice", a.Header)
		}
		seen[a.Header] = true
		picked := map[string]bool{}
		for _, sel := range a.Selections {
			if !slices.Contains(q.Options, sel) {
				return invalid("answers: %q is not an option of question %q", sel, a.Header)
			}
			if picked[sel] {
				return invalid("answers: %q is selected twice for question %q", sel, a.Header)
			}
			picked[sel] = true
		}
		if len(a.Selections) > 1 && !q.Multiple {
			return invalid("answers: question %q takes one selection", a.Header)
		}
		if a.FreeText != nil && !q.AllowFreeText {
			return invalid("answers: question %q does not accept free text", a.Header)
		}
		if len(a.Selections) == 0 && (a.FreeText == nil || strings.TrimSpace(*a.FreeText) == "") {
			return invalid("answers: question %q needs a selection or free text", a.Header)
		}
	}
	for _, q := range qs {
		if !seen[q.Header] {
			return invalid("answers: question %q is not answered", q.Header)
		}
	}
	return nil
}

// ContinueInput is a follow-up request.
type ContinueInput struct {
	Prompt          string
	AdditionalSteps *int
	MediaIDs        []string
	// Queued also accepts a QUEUED task (per-agent API follow-ups): the message joins the
	// queued turn and the budget changes only when AdditionalSteps is set.
	Queued bool
}

// Continue appends a follow-up prompt to a COMPLETED (when the agent allows follow-ups),
// FAILED or ABORTED task, clears its answer and error, grants more steps (default the agent's
// max_steps; max_steps becomes steps_used + additional_steps), drops a pending automatic retry
// and queues it. Errors: ErrNotFound, ErrInvalidState (any other state, or COMPLETED without
// allow_followup), ErrInvalid (blank prompt, additional_steps outside 1..100, media_ids).
func (s *Service) Continue(ctx context.Context, u *store.User, id string, in ContinueInput) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := checkSteps("additional_steps", in.AdditionalSteps); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, invalid("prompt is required")
	}
	if err := s.checkMedia(ctx, u, in.MediaIDs); err != nil {
		return nil, err
	}
	in.Queued = false
	return s.ContinueTask(ctx, t, in)
}

// ContinueTask is Continue of the authorised task t; the caller has checked that the prompt is
// not blank, additional_steps and media_ids; the prompt's length (CheckFollowUp) is checked
// here, before the store. Errors: ErrInvalidState, ErrInvalid.
func (s *Service) ContinueTask(ctx context.Context, t *store.Task, in ContinueInput) (*View, error) {
	a, err := s.store.Agent(ctx, t.AgentID, t.UserID)
	if err != nil {
		return nil, err
	}
	var from []string // the state machine's, unless the agent refuses follow-ups
	if !a.AllowFollowup {
		if t.Status == taskstate.Completed {
			return nil, svcerr.New(svcerr.ErrInvalidState, "the agent does not allow follow-ups on a completed task")
		}
		from = []string{taskstate.Failed, taskstate.Aborted}
	}
	steps := a.MaxSteps
	if in.AdditionalSteps != nil {
		steps = *in.AdditionalSteps
	}
	if err := CheckFollowUp(in.Prompt); err != nil {
		return nil, err
	}
	msg := &store.NewTaskMessage{Text: in.Prompt, MediaIDs: in.MediaIDs}
	if in.Queued && t.Status == taskstate.Queued {
		// Join the queued turn: only the message (and an explicit budget) changes.
		tr := store.TaskTransition{Action: taskstate.FollowUp, To: taskstate.Queued, UserMessage: msg}
		if in.AdditionalSteps != nil {
			tr.GrantSteps = steps
		}
		return s.transition(ctx, t, tr)
	}
	return s.transition(ctx, t, store.TaskTransition{
		Action: taskstate.Continue, From: from, To: taskstate.Queued,
		GrantSteps: steps, UserMessage: msg, UnsetData: []string{"max_steps_reached"},
	})
}

// Retry queues a FAILED task again with its history; error cleared, retry_count + 1, a pending
// automatic retry replaced. Errors: ErrNotFound, ErrInvalidState (not FAILED).
func (s *Service) Retry(ctx context.Context, u *store.User, id string) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return s.transition(ctx, t, store.TaskTransition{Action: taskstate.Retry, To: taskstate.Queued})
}

// CancelRetryChain cancels the pending automatic retry of a FAILED task: the task becomes
// CANCELLED. Errors: ErrNotFound, ErrInvalidState (no retry pending).
func (s *Service) CancelRetryChain(ctx context.Context, u *store.User, id string) (*View, error) {
	t, err := s.owned(ctx, u, id)
	if err != nil {
		return nil, err
	}
	v, err := s.transition(ctx, t, store.TaskTransition{Action: taskstate.CancelRetry, To: taskstate.Cancelled, RequireRetryPending: true})
	return s.settled(ctx, v, err)
}

// missedRetryGrace is how long after a failure housekeeping leaves its retry to the process
// that wrote it (which schedules it moments after the commit).
const missedRetryGrace = time.Minute

// ScheduleMissedRetries schedules the automatic retries that failures written more than a
// minute before now promised but no process scheduled (a process stopped between the failure's
// commit and ScheduleRetry: store.UnscheduledRetries), and returns the ids it scheduled, for
// housekeeping. Errors: those of the store (a task deleted meanwhile is skipped).
func (s *Service) ScheduleMissedRetries(ctx context.Context, now time.Time) ([]int64, error) {
	ids, err := s.store.UnscheduledRetries(ctx, now.Add(-missedRetryGrace))
	if err != nil {
		return nil, err
	}
	var done []int64
	for _, id := range ids {
		ok, err := s.ScheduleRetry(ctx, id)
		if errors.Is(err, svcerr.ErrNotFound) {
			continue
		}
		if err != nil {
			return done, err
		}
		if ok {
			s.log.WarnContext(ctx, "task retry scheduled by housekeeping (its process stopped before scheduling it)", "task_id", id)
			done = append(done, id)
		}
	}
	return done, nil
}

// ScheduleRetry is called by the loop (and housekeeping after ReapStale) when a task has
// FAILED: for a transient error code it schedules the automatic retry after the agent's
// retry_after_minutes while retry_count is below the agent's max_retries, and reports whether
// it did. Errors: ErrNotFound "task not found".
func (s *Service) ScheduleRetry(ctx context.Context, taskID int64) (bool, error) {
	return s.ScheduleRetryAfter(ctx, taskID, 0)
}

// ScheduleRetryAfter is ScheduleRetry for a failure whose cause asked for a wait (a model
// provider's Retry-After on a 429 or 503): the retry waits at least atLeast, cut to the bound
// of WithRetryAfterMax, or the agent's retry_after_minutes when that is longer.
func (s *Service) ScheduleRetryAfter(ctx context.Context, taskID int64, atLeast time.Duration) (bool, error) {
	t, err := s.store.Task(ctx, taskID)
	if err != nil {
		return false, err
	}
	if t.Status != taskstate.Failed || t.Error == nil || !taskstate.IsTransient(t.Error.Code) || t.NextRetryAt != nil {
		return false, nil
	}
	a, err := s.store.Agent(ctx, t.AgentID, 0)
	if err != nil {
		return false, err
	}
	if !taskstate.WillRetry(t.Error.Code, t.RetryCount, a.MaxRetries) {
		return false, nil
	}
	after := max(time.Duration(a.RetryAfterMinutes)*time.Minute, min(atLeast, s.maxRetryAfter()))
	ok, err := s.store.ScheduleTaskRetry(ctx, t.ID, after, a.MaxRetries)
	if ok {
		s.log.InfoContext(ctx, "task retry scheduled", "task_id", t.ID, "error_code", t.Error.Code,
			"retry_count", t.RetryCount, "after_minutes", a.RetryAfterMinutes, "provider_retry_after", atLeast, "after", after)
	}
	return ok, err
}

// maxRetryAfter is the bound of a provider's wait (never negative).
func (s *Service) maxRetryAfter() time.Duration {
	if s.retryAfterMax == nil {
		return DefaultRetryAfterMax
	}
	return max(s.retryAfterMax(), 0)
}
