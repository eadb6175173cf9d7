// Package schedule holds the rules of prompt templates and scheduled runs of an agent: reads
// need visibility of the agent, writes need manage rights (invisible agents answer 404, visible
// ones without manage 403), templates declare every {{key}} placeholder, runs have exactly one
// prompt source and exactly one timing, and due runs are dispatched into QUEUED tasks.
package schedule

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

// Store is what the service needs of the store; *store.Store satisfies it. It embeds
// agent.Store because the agent's visibility is package agent's rule.
type Store interface {
	agent.Store
	PromptTemplates(ctx context.Context, agentID int64) ([]store.PromptTemplate, error)
	PromptTemplate(ctx context.Context, agentID, id int64) (*store.PromptTemplate, error)
	CreatePromptTemplate(ctx context.Context, agentID int64, f store.PromptTemplateFields, check store.AgentCheck) (*store.PromptTemplate, error)
	UpdatePromptTemplate(ctx context.Context, agentID, id int64, f store.PromptTemplateFields, check store.AgentCheck) (*store.PromptTemplate, error)
	DeletePromptTemplate(ctx context.Context, agentID, id int64, check store.AgentCheck) error
	ScheduledRuns(ctx context.Context, agentID int64) ([]store.ScheduledRun, error)
	ScheduledRun(ctx context.Context, agentID, id int64) (*store.ScheduledRun, error)
	CreateScheduledRun(ctx context.Context, agentID, createdBy int64, f store.ScheduledRunFields, check store.RunCheck) (*store.ScheduledRun, error)
	UpdateScheduledRun(ctx context.Context, agentID, id int64, f store.ScheduledRunFields, check store.RunCheck) (*store.ScheduledRun, error)
	DeleteScheduledRun(ctx context.Context, agentID, id int64, check store.AgentCheck) error
	RecordRunStart(ctx context.Context, id, taskID int64, at time.Time) error
	ClaimDueRun(ctx context.Context, now time.Time, next store.NextRunFunc) (*store.ScheduledRun, error)
	CreateTask(ctx context.Context, nt store.NewTask) (*store.Task, error)
}

// Service applies the rules on top of the store.
type Service struct {
	store Store
	clock func() time.Time
}

// New returns the service.
func New(st Store) *Service { return &Service{store: st, clock: time.Now} }

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

func parseID(s, what string) (int64, error) {
	id, ok := pathid.Parse(s)
	if !ok {
		return 0, svcerr.New(svcerr.ErrNotFound, "%s not found", what)
	}
	return id, nil
}

// visible loads the agent and checks that u can see it. ErrNotFound otherwise.
func (s *Service) visible(ctx context.Context, u *store.User, agentID string) (*store.Agent, *access.Scope, error) {
	a, err := (agent.New(s.store)).Get(ctx, u, agentID)
	if err != nil {
		return nil, nil, err
	}
	sc, err := access.For(ctx, s.store, u)
	if err != nil {
		return nil, nil, err
	}
	return a, sc, nil
}

func manage(sc *access.Scope) store.AgentCheck {
	return func(a *store.Agent) error {
		if err := sc.See(a.PrincipalID, "agent"); err != nil {
			return err
		}
		return sc.Manage(a.PrincipalID, "agent")
	}
}

// ---- prompt templates -----------------------------------------------------------------------

// Templates lists the agent's templates by name. Errors: ErrNotFound "agent not found".
func (s *Service) Templates(ctx context.Context, u *store.User, agentID string) ([]store.PromptTemplate, error) {
	a, _, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	return s.store.PromptTemplates(ctx, a.ID)
}

// Template returns one template. Errors: ErrNotFound (agent, or template of this agent).
func (s *Service) Template(ctx context.Context, u *store.User, agentID, id string) (*store.PromptTemplate, error) {
	a, _, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	tid, err := parseID(id, "prompt template")
	if err != nil {
		return nil, err
	}
	return s.store.PromptTemplate(ctx, a.ID, tid)
}

// checkPlaceholders refuses a template text using an undeclared {{key}} (ErrInvalid).
func checkPlaceholders(f store.PromptTemplateFields) error {
	declared := map[string]bool{}
	for _, v := range f.Variables {
		declared[v.Key] = true
	}
	for _, m := range placeholder.FindAllStringSubmatch(f.Template, -1) {
		if !declared[m[1]] {
			return svcerr.New(svcerr.ErrInvalid, "template: placeholder {{%s}} is not declared in variables", m[1])
		}
	}
	return nil
}

// CreateTemplate stores a template. Errors: ErrNotFound, ErrForbidden, ErrInvalid (undeclared
// placeholder, then CheckTemplateFields: lengths, duplicate keys, max_steps), ErrConflict (name
// taken within the agent).
func (s *Service) CreateTemplate(ctx context.Context, u *store.User, agentID string, f store.PromptTemplateFields) (*store.PromptTemplate, error) {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
		return nil, err
	}
	if err := checkPlaceholders(f); err != nil {
		return nil, err
	}
	if err := CheckTemplateFields(f); err != nil {
		return nil, err
	}
	return s.store.CreatePromptTemplate(ctx, a.ID, f, manage(sc))
}

// UpdateTemplate replaces a template. Errors: as CreateTemplate, plus ErrNotFound for the
// template and ErrInvalid when a scheduled run would lack a mandatory variable.
func (s *Service) UpdateTemplate(ctx context.Context, u *store.User, agentID, id string, f store.PromptTemplateFields) (*store.PromptTemplate, error) {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	tid, err := parseID(id, "prompt template")
	if err != nil {
		return nil, err
	}
	if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
		return nil, err
	}
	if err := checkPlaceholders(f); err != nil {
		return nil, err
	}
	if err := CheckTemplateFields(f); err != nil {
		return nil, err
	}
	return s.store.UpdatePromptTemplate(ctx, a.ID, tid, f, manage(sc))
}

// DeleteTemplate removes a template. Errors: ErrNotFound, ErrForbidden, ErrInvalidState while a
// scheduled run uses it.
func (s *Service) DeleteTemplate(ctx context.Context, u *store.User, agentID, id string) error {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return err
	}
	tid, err := parseID(id, "prompt template")
	if err != nil {
		return err
	}
	return s.store.DeletePromptTemplate(ctx, a.ID, tid, manage(sc))
}

// ---- scheduled runs -------------------------------------------------------------------------

// Runs lists the agent's scheduled runs. Errors: ErrNotFound "agent not found".
func (s *Service) Runs(ctx context.Context, u *store.User, agentID string) ([]store.ScheduledRun, error) {
	a, _, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	return s.store.ScheduledRuns(ctx, a.ID)
}

// Run returns one scheduled run. Errors: ErrNotFound (agent, or run of this agent).
func (s *Service) Run(ctx context.Context, u *store.User, agentID, id string) (*store.ScheduledRun, error) {
	a, _, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	rid, err := parseID(id, "scheduled run")
	if err != nil {
		return nil, err
	}
	return s.store.ScheduledRun(ctx, a.ID, rid)
}

func invalid(format string, args ...any) error { return svcerr.New(svcerr.ErrInvalid, format, args...) }

// prepareRun checks the template-independent rules and computes next_run_at.
func (s *Service) prepareRun(f *store.ScheduledRunFields) error {
	if (f.TemplateID == nil) == (f.Prompt == nil) {
		return invalid("exactly one of template_id and prompt is required")
	}
	if f.Prompt != nil && strings.TrimSpace(*f.Prompt) == "" {
		return invalid("prompt must not be blank")
	}
	if f.TemplateID == nil && len(f.Variables) > 0 {
		return invalid("variables are allowed with template_id only")
	}
	if (f.CronExpression == nil) == (f.RunAt == nil) {
		return invalid("exactly one of cron_expression and run_at is required")
	}
	if f.Timezone == "" {
		f.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(f.Timezone)
	if err != nil || f.Timezone == "Local" {
		return invalid("timezone: unknown time zone %q", f.Timezone)
	}
	now := s.clock()
	f.NextRunAt = nil
	if f.CronExpression != nil {
		c, err := ParseCron(*f.CronExpression)
		if err != nil {
			return invalid("cron_expression: %v", err)
		}
		if f.IsActive {
			if n := c.Next(now, loc); !n.IsZero() {
				nu := n.UTC()
				f.NextRunAt = &nu
			}
		}
		return nil
	}
	if f.IsActive {
		if !f.RunAt.After(now) {
			return invalid("run_at must lie in the future while is_active")
		}
		t := f.RunAt.UTC()
		f.NextRunAt = &t
	}
	return nil
}

// runCheck applies manage rights and the variable rules against the run's template.
func runCheck(sc *access.Scope, f store.ScheduledRunFields) store.RunCheck {
	return func(a *store.Agent, t *store.PromptTemplate) error {
		if err := manage(sc)(a); err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		declared := map[string]bool{}
		for _, v := range t.Variables {
			declared[v.Key] = true
			if _, ok := f.Variables[v.Key]; !ok && v.DefaultValue == nil {
				return invalid("variables: %q has no default and needs a value", v.Key)
			}
		}
		for k := range f.Variables {
			if !declared[k] {
				return invalid("variables: %q is not a variable of the template", k)
			}
		}
		return nil
	}
}

// CreateRun stores a scheduled run created by u. Errors: ErrNotFound "agent not found",
// ErrForbidden (no manage rights), ErrInvalid (the one-of rules, cron, timezone, run_at in the
// past, then CheckRunFields, then in the store's transaction the template variables and a
// template of another agent).
func (s *Service) CreateRun(ctx context.Context, u *store.User, agentID string, f store.ScheduledRunFields) (*store.ScheduledRun, error) {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
		return nil, err
	}
	if err := s.prepareRun(&f); err != nil {
		return nil, err
	}
	if err := CheckRunFields(f); err != nil {
		return nil, err
	}
	return s.store.CreateScheduledRun(ctx, a.ID, u.ID, f, runCheck(sc, f))
}

// UpdateRun replaces a scheduled run; next_run_at is recomputed. Errors: as CreateRun, plus
// ErrNotFound "scheduled run not found".
func (s *Service) UpdateRun(ctx context.Context, u *store.User, agentID, id string, f store.ScheduledRunFields) (*store.ScheduledRun, error) {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	rid, err := parseID(id, "scheduled run")
	if err != nil {
		return nil, err
	}
	if err := sc.Manage(a.PrincipalID, "agent"); err != nil {
		return nil, err
	}
	if _, err := s.store.ScheduledRun(ctx, a.ID, rid); err != nil {
		return nil, err
	}
	if err := s.prepareRun(&f); err != nil {
		return nil, err
	}
	if err := CheckRunFields(f); err != nil {
		return nil, err
	}
	return s.store.UpdateScheduledRun(ctx, a.ID, rid, f, runCheck(sc, f))
}

// DeleteRun removes a scheduled run. Errors: ErrNotFound, ErrForbidden.
func (s *Service) DeleteRun(ctx context.Context, u *store.User, agentID, id string) error {
	a, sc, err := s.visible(ctx, u, agentID)
	if err != nil {
		return err
	}
	rid, err := parseID(id, "scheduled run")
	if err != nil {
		return err
	}
	return s.store.DeleteScheduledRun(ctx, a.ID, rid, manage(sc))
}

// Trigger starts the run now as a QUEUED task owned by u, active or not; last_run_at and
// last_task_id are set, next_run_at is unchanged. Errors: ErrNotFound (agent or run),
// ErrInvalid (the template lost a mandatory value).
func (s *Service) Trigger(ctx context.Context, u *store.User, agentID, id string) (*store.Task, error) {
	a, _, err := s.visible(ctx, u, agentID)
	if err != nil {
		return nil, err
	}
	rid, err := parseID(id, "scheduled run")
	if err != nil {
		return nil, err
	}
	r, err := s.store.ScheduledRun(ctx, a.ID, rid)
	if err != nil {
		return nil, err
	}
	return s.start(ctx, a, r, u.ID)
}

// start renders the run's prompt and creates its task owned by userID.
func (s *Service) start(ctx context.Context, a *store.Agent, r *store.ScheduledRun, userID int64) (*store.Task, error) {
	steps := a.MaxSteps
	var prompt string
	if r.TemplateID != nil {
		t, err := s.store.PromptTemplate(ctx, a.ID, *r.TemplateID)
		if err != nil {
			return nil, err
		}
		if t.MaxSteps != nil {
			steps = *t.MaxSteps
		}
		if prompt, err = Render(t, r.Variables); err != nil {
			return nil, err
		}
	} else if r.Prompt != nil {
		prompt = *r.Prompt
	}
	if r.MaxStepsOverride != nil {
		steps = *r.MaxStepsOverride
	}
	nt := store.NewTask{AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: userID,
		Prompt: prompt, MaxSteps: steps, Source: store.TaskSourceSession,
		Data: map[string]any{store.DataScheduledRunID: r.ID}}
	if err := task.CheckNew(nt); err != nil { // a prompt that renders blank, for one
		return nil, err
	}
	t, err := s.store.CreateTask(ctx, nt)
	if err != nil {
		return nil, err
	}
	if err := s.store.RecordRunStart(ctx, r.ID, t.ID, s.clock()); err != nil {
		return nil, err
	}
	return t, nil
}

// Render fills the template's placeholders from values, then defaults. Errors: ErrInvalid when
// a variable without a default has no value.
func Render(t *store.PromptTemplate, values map[string]string) (string, error) {
	vals := map[string]string{}
	for _, v := range t.Variables {
		if x, ok := values[v.Key]; ok {
			vals[v.Key] = x
		} else if v.DefaultValue != nil {
			vals[v.Key] = *v.DefaultValue
		} else {
			return "", invalid("variables: %q has no default and needs a value", v.Key)
		}
	}
	return placeholder.ReplaceAllStringFunc(t.Template, func(m string) string {
		key := placeholder.FindStringSubmatch(m)[1]
		if v, ok := vals[key]; ok {
			return v
		}
		return m
	}), nil
}

// nextRun is the store's NextRunFunc: the cron's next time in the run's zone.
func nextRun(r *store.ScheduledRun, after time.Time) *time.Time {
	if r.CronExpression == nil {
		return nil
	}
	c, err := ParseCron(*r.CronExpression)
	if err != nil {
		return nil
	}
	loc, err := time.LoadLocation(r.Timezone)
	if err != nil {
		return nil
	}
	n := c.Next(after, loc)
	if n.IsZero() {
		return nil
	}
	n = n.UTC()
	return &n
}

// DispatchDue claims every run due at now and starts its task owned by the run's creator. A run
// whose task cannot be created (for example its template lost a value) is skipped; its schedule
// has advanced. It returns how many tasks it started. Errors: database failures of the claim.
func (s *Service) DispatchDue(ctx context.Context, now time.Time) (int, error) {
	n := 0
	for {
		r, err := s.store.ClaimDueRun(ctx, now, nextRun)
		if err != nil || r == nil {
			return n, err
		}
		a, err := s.store.Agent(ctx, r.AgentID, r.CreatedBy)
		if err != nil {
			continue
		}
		if _, err := s.start(ctx, a, r, r.CreatedBy); err == nil {
			n++
		}
	}
}
