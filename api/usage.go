package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/usage"
	"github.com/agentsvc/svc/store"
)

// GetUsage sums the model usage the caller may see (usage.Service.Usage), as JSON or CSV.
func (a *API) GetUsage(ctx context.Context, req gen.GetUsageRequestObject) (gen.GetUsageResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	p := req.Params
	q := usage.Query{From: p.From.Time, To: p.To.Time, AgentID: p.AgentId, UserID: p.UserId, GroupID: p.GroupId,
		KeyID: p.KeyId, TaskID: p.TaskId}
	if p.GroupBy != nil {
		for _, g := range *p.GroupBy {
			q.GroupBy = append(q.GroupBy, string(g))
		}
	}
	rows, err := a.usage.Usage(ctx, id.User, q)
	if err != nil {
		return nil, err
	}
	if p.Format != nil && *p.Format == gen.Csv {
		body := usageCSV(q.GroupBy, rows)
		return gen.GetUsage200TextcsvResponse{Body: bytes.NewReader(body), ContentLength: int64(len(body))}, nil
	}
	var r gen.GetUsage200JSONResponse
	r.Data.Currency, r.Data.TimeZone = a.cfg.Current().Currency, a.store.TimeZone().String()
	r.Data.From, r.Data.To = p.From, p.To
	r.Data.Rows = make([]gen.UsageRow, 0, len(rows))
	for _, u := range rows {
		row := gen.UsageRow{AgentId: u.AgentID, UserId: u.UserID, GroupId: u.GroupID, KeyId: u.KeyID, Model: u.Model,
			Calls: u.Calls, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost}
		if u.Day != nil {
			if d, err := time.Parse(time.DateOnly, *u.Day); err == nil {
				row.Day = &openapi_types.Date{Time: d}
			}
		}
		r.Data.Rows = append(r.Data.Rows, row)
	}
	return r, nil
}

// usageCSV writes rows as CSV: the grouping keys in their order, then the sums.
func usageCSV(groupBy []string, rows []store.UsageRow) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := make([]string, 0, len(groupBy)+5)
	for _, g := range groupBy {
		if g == store.UsageByGroup {
			g = "group_id"
		} else if g != store.UsageByDay && g != store.UsageByModel {
			g += "_id"
		}
		head = append(head, g)
	}
	_ = w.Write(append(head, "calls", "input_tokens", "cached_input_tokens", "output_tokens", "cost"))
	id := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, r := range rows {
		line := make([]string, 0, len(head)+5)
		for _, g := range groupBy {
			switch g {
			case store.UsageByAgent:
				line = append(line, id(r.AgentID))
			case store.UsageByUser:
				line = append(line, id(r.UserID))
			case store.UsageByGroup:
				line = append(line, id(r.GroupID))
			case store.UsageByKey:
				line = append(line, str(r.KeyID))
			case store.UsageByModel:
				line = append(line, csvSafe(str(r.Model)))
			case store.UsageByDay:
				line = append(line, str(r.Day))
			}
		}
		for _, n := range []int64{r.Calls, r.InputTokens, r.CachedInputTokens, r.OutputTokens, r.Cost} {
			line = append(line, strconv.FormatInt(n, 10))
		}
		_ = w.Write(line)
	}
	w.Flush()
	return buf.Bytes()
}

// csvSafe keeps a spreadsheet from reading a free-text cell (a model name) as a formula: one
// that starts with =, +, -, @, a tab or a carriage return is prefixed with a quote.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func toBudget(b *usage.Budget) gen.Budget {
	return gen.Budget{Id: b.ID, ScopeKind: gen.BudgetScopeKind(b.ScopeKind), ScopeId: b.ScopeRef, Period: gen.BudgetPeriod(b.Period),
		LimitTokens: b.LimitTokens, LimitCost: b.LimitCost, SoftPercent: b.SoftPercent, SpentTokens: b.SpentTokens,
		SpentCost: b.SpentCost, PeriodStart: b.PeriodStart, ResetsAt: b.ResetsAt, Exceeded: b.Exceeded(),
		CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC()}
}

// ListBudgets lists the budgets the caller may see, with their current use.
func (a *API) ListBudgets(ctx context.Context, req gen.ListBudgetsRequestObject) (gen.ListBudgetsResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	kind := ""
	if req.Params.ScopeKind != nil {
		kind = string(*req.Params.ScopeKind)
	}
	bs, err := a.usage.Budgets(ctx, id.User, kind, deref(req.Params.ScopeId))
	if err != nil {
		return nil, err
	}
	r := gen.ListBudgets200JSONResponse{Data: make([]gen.Budget, 0, len(bs))}
	for i := range bs {
		r.Data = append(r.Data, toBudget(&bs[i]))
	}
	return r, nil
}

// CreateBudget sets a budget (administrators; a group's owners and admins on the group, its
// agents and keys).
func (a *API) CreateBudget(ctx context.Context, req gen.CreateBudgetRequestObject) (gen.CreateBudgetResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	out, err := a.usage.CreateBudget(ctx, id.User, b.ScopeId, store.Budget{ScopeKind: string(b.ScopeKind), Period: string(b.Period),
		LimitTokens: b.LimitTokens, LimitCost: b.LimitCost, SoftPercent: b.SoftPercent})
	if err != nil {
		return nil, err
	}
	return gen.CreateBudget201JSONResponse{Data: toBudget(out)}, nil
}

// UpdateBudget changes a budget's limits.
func (a *API) UpdateBudget(ctx context.Context, req gen.UpdateBudgetRequestObject) (gen.UpdateBudgetResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	p := usage.Patch{LimitTokens: b.LimitTokens, LimitCost: b.LimitCost, SoftPercent: b.SoftPercent}
	if b.Clear != nil {
		for _, c := range *b.Clear {
			p.Clear = append(p.Clear, string(c))
		}
	}
	out, err := a.usage.UpdateBudget(ctx, id.User, req.BudgetId, p)
	if err != nil {
		return nil, err
	}
	return gen.UpdateBudget200JSONResponse{Data: toBudget(out)}, nil
}

// DeleteBudget removes a budget.
func (a *API) DeleteBudget(ctx context.Context, req gen.DeleteBudgetRequestObject) (gen.DeleteBudgetResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.usage.DeleteBudget(ctx, id.User, req.BudgetId); err != nil {
		return nil, err
	}
	return gen.DeleteBudget200JSONResponse(deleted()), nil
}
