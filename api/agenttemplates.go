package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/agenttemplate"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// schemaPath is where the template schema is served, below the mount prefix ({schema_url}).
const schemaPath = "/schemas/agent-template.schema.json"

func toTemplateSummary(s *agenttemplate.Summary) gen.AgentTemplateCatalogEntry {
	out := gen.AgentTemplateCatalogEntry{
		Id: s.ID, Name: s.Name, Description: s.Description, Version: s.Version,
		Source: gen.AgentTemplateCatalogEntrySource(s.Source), Icon: s.Icon,
		ToolClasses:     append([]string{}, s.ToolClasses...),
		RequiredPlugins: append([]string{}, s.RequiredPlugins...),
		MissingPlugins:  append([]string{}, s.MissingPlugins...),
	}
	if s.PluginSlug != "" {
		out.PluginSlug = &s.PluginSlug
	}
	if s.Category != "" {
		out.Category = &s.Category
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// toTemplateDocument converts a template as written: absent optional fields stay absent.
func toTemplateDocument(t *agenttemplate.Template) gen.AgentTemplateDocument {
	d := gen.AgentTemplateDocument{
		Schema: optString(t.Schema), Id: t.ID, Name: t.Name, Description: optString(t.Description), Version: t.Version,
		Agent: gen.AgentTemplateDocumentAgent{
			Description: optString(t.Agent.Description), SystemPrompt: optString(t.Agent.SystemPrompt),
			Notes: optString(t.Agent.Notes), MaxSteps: t.Agent.MaxSteps, AllowFollowup: t.Agent.AllowFollowup,
			RetryAfterMinutes: t.Agent.RetryAfterMinutes, MaxRetries: t.Agent.MaxRetries,
		},
	}
	ag := &d.Agent
	ag.CompactionEnabled, ag.CompactionThresholdPercent = t.Agent.CompactionEnabled, t.Agent.CompactionThresholdPercent
	ag.CompactionAnswerReserve, ag.ToolResultMaxChars = t.Agent.CompactionAnswerReserve, t.Agent.ToolResultMaxChars
	if len(t.Agent.Memories) > 0 {
		ag.Memories = &t.Agent.Memories
	}
	if ap := t.Agent.Approvers; ap != nil {
		ag.Approvers = &gen.AgentTemplateApprovers{Owner: &ap.Owner, Managers: &ap.Managers}
	}
	ag.ApprovalTimeoutSeconds = t.Agent.ApprovalTimeoutSeconds
	if v := t.Agent.ApprovalTimeoutAction; v != "" {
		action := gen.ApprovalTimeoutAction(v)
		ag.ApprovalTimeoutAction = &action
	}
	if len(t.Tools) > 0 {
		list := make([]gen.AgentTemplateDocumentTool, 0, len(t.Tools))
		for _, tl := range t.Tools {
			gt := gen.AgentTemplateDocumentTool{ToolClass: tl.ToolClass, Enabled: tl.Enabled,
				Operations: make([]gen.AgentTemplateDocumentOperation, 0, len(tl.Operations))}
			for _, op := range tl.Operations {
				gt.Operations = append(gt.Operations, gen.AgentTemplateDocumentOperation{Name: op.Name, Enabled: op.Enabled,
					AutoApprove: op.AutoApprove, ApprovalTimeoutSeconds: op.ApprovalTimeoutSeconds})
			}
			if tl.Settings != nil {
				settings := map[string]any(tl.Settings)
				gt.Settings = &settings
			}
			if tl.ApprovalPolicy != nil {
				policy := tl.ApprovalPolicy
				gt.ApprovalPolicy = &policy
			}
			list = append(list, gt)
		}
		d.Tools = &list
	}
	if len(t.RequiredPlugins) > 0 {
		plugins := append([]string{}, t.RequiredPlugins...)
		d.RequiredPlugins = &plugins
	}
	if m := t.Metadata; m != nil {
		md := gen.AgentTemplateDocumentMetadata{Category: optString(m.Category), Icon: optString(m.Icon)}
		if m.Archetype != "" {
			v := gen.AgentTemplateDocumentMetadataArchetype(m.Archetype)
			md.Archetype = &v
		}
		if m.VariantKey != "" {
			v := gen.AgentTemplateDocumentMetadataVariantKey(m.VariantKey)
			md.VariantKey = &v
		}
		if m.PaletteKey != "" {
			v := gen.AgentTemplateDocumentMetadataPaletteKey(m.PaletteKey)
			md.PaletteKey = &v
		}
		d.Metadata = &md
	}
	return d
}

func toTemplateFindings(fs []agenttemplate.Finding) []gen.AgentTemplateFinding {
	out := make([]gen.AgentTemplateFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, gen.AgentTemplateFinding{Code: gen.AgentTemplateFindingCode(f.Code), Message: f.Message, Path: f.Path})
	}
	return out
}

// templateInput is the uploaded template exactly as sent: the raw bytes the gate kept (so JSON
// is checked as written: duplicate keys, key order, exact numbers) with the request's content
// type. Without them (outside the gate) the decoded body stands in.
func templateInput(ctx context.Context, jsonBody map[string]any, text *string, body io.Reader) agenttemplate.Input {
	in := agenttemplate.Input{Raw: requestInfo(ctx).RawBody, Source: agenttemplate.SourceUploaded}
	if r := request(ctx); r != nil {
		in.ContentType = r.Header.Get("Content-Type")
	}
	if in.Raw == nil {
		switch {
		case text != nil:
			in.Raw = []byte(*text)
		case jsonBody != nil:
			in.Raw, _ = json.Marshal(jsonBody) // a decoded JSON object always encodes
		case body != nil:
			in.Raw, _ = io.ReadAll(io.LimitReader(body, agenttemplate.MaxSize+1))
		}
	}
	return in
}

// ListAgentTemplates lists the available templates (any signed-in user).
func (a *API) ListAgentTemplates(ctx context.Context, _ gen.ListAgentTemplatesRequestObject) (gen.ListAgentTemplatesResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	list, err := a.templates.List(ctx)
	if err != nil {
		return nil, err
	}
	var r gen.ListAgentTemplates200JSONResponse
	r.Data.Templates = make([]gen.AgentTemplateCatalogEntry, 0, len(list))
	for i := range list {
		r.Data.Templates = append(r.Data.Templates, toTemplateSummary(&list[i]))
	}
	return r, nil
}

// GetAgentTemplate shows one template document (any signed-in user).
func (a *API) GetAgentTemplate(ctx context.Context, req gen.GetAgentTemplateRequestObject) (gen.GetAgentTemplateResponseObject, error) {
	if _, err := caller(ctx); err != nil {
		return nil, err
	}
	t, err := a.templates.Get(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	var r gen.GetAgentTemplate200JSONResponse
	r.Data.Template = toTemplateDocument(t)
	return r, nil
}

// ValidateAgentTemplate reports every finding of an uploaded template; it writes nothing.
func (a *API) ValidateAgentTemplate(ctx context.Context, req gen.ValidateAgentTemplateRequestObject) (gen.ValidateAgentTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var jsonBody map[string]any
	if req.JSONBody != nil {
		jsonBody = *req.JSONBody
	}
	rep, err := a.templates.Validate(ctx, id.User, templateInput(ctx, jsonBody, req.TextBody, req.Body))
	if err != nil {
		return nil, err
	}
	var r gen.ValidateAgentTemplate200JSONResponse
	r.Data.Valid = rep.Valid
	r.Data.Errors = toTemplateFindings(rep.Errors)
	r.Data.Warnings = toTemplateFindings(rep.Warnings)
	return r, nil
}

// ImportAgentTemplate creates an agent from an uploaded template.
func (a *API) ImportAgentTemplate(ctx context.Context, req gen.ImportAgentTemplateRequestObject) (gen.ImportAgentTemplateResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var jsonBody map[string]any
	if req.JSONBody != nil {
		jsonBody = *req.JSONBody
	}
	ag, warnings, err := a.templates.Import(ctx, id.User, req.Params.PrincipalId, templateInput(ctx, jsonBody, req.TextBody, req.Body))
	var refusal *agenttemplate.RefusedError
	if errors.As(err, &refusal) {
		// The contract's 422 carries the findings beside the error (TemplateImportRefusedError).
		e := &svcerr.Error{Kind: svcerr.ErrInvalid, Msg: refusal.Error()}
		e.Details = gen.TemplateImportFindings{Errors: toTemplateFindings(refusal.Errors), Warnings: toTemplateFindings(refusal.Warnings)}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	var r gen.ImportAgentTemplate201JSONResponse
	r.Data.Agent = toAgent(a.publicBase(ctx), ag)
	r.Data.Warnings = toTemplateFindings(warnings)
	return r, nil
}

// ExportAgent returns an agent as a template document.
func (a *API) ExportAgent(ctx context.Context, req gen.ExportAgentRequestObject) (gen.ExportAgentResponseObject, error) {
	id, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	t, err := a.templates.Export(ctx, id.User, req.Id, deref(req.Params.IncludeSettings), a.publicBase(ctx)+schemaPath)
	if err != nil {
		return nil, err
	}
	var r gen.ExportAgent200JSONResponse
	r.Data.Template = toTemplateDocument(t)
	return r, nil
}
