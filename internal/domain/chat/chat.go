// Package chat holds the rules of the per-agent API's chats (document 2, "Per-agent API"): a
// chat is a task started through an agent's key (source agent_api) and seen through that key.
// A key sees a chat iff the task's source is agent_api, its agent is the key's agent and it
// is no sub-agent task; anything else answers 404 "chat not found", identical to a missing id.
// The state machine itself is package task's: every action here authorises the chat for the
// key and calls the task service's action on the authorised task.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/internal/domain/spool"
	"github.com/agentsvc/svc/internal/domain/task"
	"github.com/agentsvc/svc/internal/domain/usage"
	"github.com/agentsvc/svc/internal/platform/netguard"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/internal/vocab/pathid"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
)

// Limits of a chat request (document 2, "Limits").
const (
	MaxFiles       = 8                    // inline files considered per request
	MaxInlineBytes = media.MaxInlineBytes // decoded size of one inline file
)

// Service applies the chat rules on top of the task service.
type Service struct {
	store *store.Store
	tasks *task.Service
	media *media.Service
	net   netguard.Options
	spend *usage.Service // refuses a chat over budget (CheckChat)
}

// New returns the service; net screens callback URLs (AllowLoopback and Resolver only).
// Without WithMedia, inline files are dropped.
func New(st *store.Store, tasks *task.Service, net netguard.Options) *Service {
	return &Service{store: st, tasks: tasks, net: net, spend: usage.New(st)}
}

// WithMedia sets the media storage inline files are saved to and returns s.
func (s *Service) WithMedia(m *media.Service) *Service {
	s.media = m
	return s
}

func notFound() error { return svcerr.New(svcerr.ErrNotFound, "chat not found") }

func invalid(format string, args ...any) error { return svcerr.New(svcerr.ErrInvalid, format, args...) }

// ClampSteps clamps a step budget to 1..100 (max_steps and additional_steps are never
// refused).
func ClampSteps(n int) int { return min(max(n, limits.MinSteps), limits.MaxSteps) }

// chat returns chat id when key k may see it. Errors: ErrNotFound "chat not found" (malformed
// id, missing, another agent's, a session task or a sub-agent task).
func (s *Service) chat(ctx context.Context, k *store.AgentAPIKey, id string) (*store.Task, error) {
	tid, ok := pathid.Parse(id)
	if !ok {
		return nil, notFound()
	}
	t, err := s.store.Task(ctx, tid)
	if errors.Is(err, svcerr.ErrNotFound) {
		return nil, notFound()
	}
	if err != nil {
		return nil, err
	}
	if t.Source != store.TaskSourceAgentAPI || t.AgentID != k.AgentID || t.ParentTaskID != nil {
		return nil, notFound()
	}
	return t, nil
}

// File is an inline file of a request: a data URL.
type File struct {
	Filename string
	DataURL  string
	// Spooled is the decoded file when the data URL was decoded while the request streamed
	// (package spool; DataURL then holds its placeholder); nil: DataURL is decoded here.
	Spooled *spool.File
}

// Input is the message part shared by start and follow-up: text (or its alias prompt: text
// wins when it is not blank), inline files and earlier uploads.
type Input struct {
	Text, Prompt *string
	Files        []File
	MediaIDs     []string
}

func (in Input) text() (string, error) {
	for _, p := range []*string{in.Text, in.Prompt} {
		if p != nil && strings.TrimSpace(*p) != "" {
			return *p, nil
		}
	}
	return "", invalid("text is required")
}

// StartInput is a new chat.
type StartInput struct {
	Input
	CallbackURL     *string
	MaxSteps        *int
	AdditionalSteps *int // the step cap when MaxSteps is absent
	// Limit is the request's rate-limit event, counted in the task's transaction, or before
	// any inline file is stored when there are some; nil when the gate counted it already.
	Limit *store.LimitHit
}

// attachments checks that every media id is readable by the key and stores the inline files
// (at most the first MaxFiles; an oversize file or one outside the accept list is dropped
// silently, as document 2 says), returning the ids the message attaches. Errors: ErrInvalid (a
// media id the key cannot read, a malformed data URL naming its file; the inline files stored
// before it are discarded, so a refused message leaves none).
func (s *Service) attachments(ctx context.Context, k *store.AgentAPIKey, a *store.Agent, in Input) (ids []string, err error) {
	ids = make([]string, 0, len(in.MediaIDs)+len(in.Files))
	for _, id := range in.MediaIDs {
		if _, err := s.store.MediaReadableByAgent(ctx, k.AgentID, id); err != nil {
			if errors.Is(err, svcerr.ErrNotFound) {
				return nil, invalid("media_ids: no such media asset %q", id)
			}
			return nil, err
		}
		ids = append(ids, id)
	}
	files := in.Files
	if len(files) > MaxFiles {
		files = files[:MaxFiles]
	}
	var saved []string
	defer func() {
		if err != nil {
			for _, id := range saved {
				s.media.Discard(ctx, id)
			}
		}
	}()
	for i, f := range files {
		id, err := s.saveInline(ctx, k, a, f)
		if err != nil {
			if isDrop(err) {
				continue
			}
			return nil, invalidFile(i, f, err)
		}
		saved = append(saved, id)
		ids = append(ids, id)
	}
	return ids, nil
}

// invalidFile names the inline file a refusal is about.
func invalidFile(i int, f File, err error) error {
	if !errors.Is(err, svcerr.ErrInvalid) && !errors.Is(err, svcerr.ErrBadRequest) {
		return err
	}
	return invalid("files[%d] (%q): %s", i, f.Filename, err.Error())
}

// isDrop reports whether an inline file failed for a reason that drops it silently (document 2:
// oversize, or outside the accept list).
func isDrop(err error) bool {
	return errors.Is(err, svcerr.ErrTooLarge) || errors.Is(err, svcerr.ErrUnsupportedMediaType)
}

// saveInline decodes and stores one inline file, owned by the agent's principal and marked as
// uploaded through the agent; the type is detected from the bytes, but the data URL must
// declare one.
func (s *Service) saveInline(ctx context.Context, k *store.AgentAPIKey, a *store.Agent, f File) (string, error) {
	if s.media == nil {
		return "", svcerr.New(svcerr.ErrUnsupportedMediaType, "media storage is not available")
	}
	data, err := inlineData(f)
	if err != nil {
		return "", err
	}
	defer data.Close()
	by, agentID := k.CreatedBy, a.ID
	asset, err := s.media.Save(ctx, media.NewAsset{
		PrincipalID: a.PrincipalID, Filename: f.Filename, Data: data, MaxBytes: MaxInlineBytes,
		UploadedBy: &by, AgentID: &agentID,
	})
	if err != nil {
		return "", err
	}
	return asset.ID, nil
}

// errNoType refuses a data URL without a media type: the type is detected from the bytes, but
// the data URL must declare one.
func errNoType() error {
	return invalid("data_url declares no media type (data:<type>[;base64],<data>)")
}

// inlineData opens the decoded bytes of an inline file: the spooled file, or the data URL decoded
// here. Errors: ErrInvalid (no declared type, a malformed data URL), ErrTooLarge.
func inlineData(f File) (io.ReadCloser, error) {
	if sf := f.Spooled; sf != nil {
		if sf.MediaType != "" && !sf.Declared {
			return nil, errNoType()
		}
		return sf.Open()
	}
	if !declaresType(f.DataURL) {
		return nil, errNoType()
	}
	_, data, err := media.ParseDataURL(f.DataURL)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// declaresType reports whether a data URL names a media type before its parameters and data
// ("data:image/png;base64,…", not "data:;base64,…" or "data:,…"). Anything that is not a data URL
// at all is left to ParseDataURL to refuse.
func declaresType(u string) bool {
	rest, ok := cutPrefixFold(u, "data:")
	if !ok {
		return true
	}
	end := strings.IndexAny(rest, ";,")
	return end < 0 || strings.Contains(rest[:end], "/")
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// Start queues a new chat of the key's agent, owned by the key's minter on the agent's
// principal: the callback_url is screened before anything is written; max_steps (or, when
// absent, additional_steps) is clamped to 1..100 and defaults to the agent's max_steps.
// Errors: ErrInvalid (blank text, unscreened callback_url, a media id the key cannot read),
// in.Limit's refusal (nothing stored).
func (s *Service) Start(ctx context.Context, k *store.AgentAPIKey, in StartInput) (*task.View, error) {
	text, err := in.text()
	if err != nil {
		return nil, err
	}
	var callback *string
	if in.CallbackURL != nil {
		u, err := ScreenCallback(ctx, *in.CallbackURL, s.net)
		if err != nil {
			return nil, err
		}
		callback = &u
	}
	a, err := s.store.Agent(ctx, k.AgentID, k.CreatedBy)
	if err != nil {
		return nil, err
	}
	steps := a.MaxSteps
	switch {
	case in.MaxSteps != nil:
		steps = ClampSteps(*in.MaxSteps)
	case in.AdditionalSteps != nil:
		steps = ClampSteps(*in.AdditionalSteps)
	}
	if err := task.CheckPrompt(text); err != nil { // before any inline file is stored
		return nil, err
	}
	if err := s.spend.CheckChat(ctx, k, a, k.CreatedBy); err != nil { // 429 BUDGET_EXCEEDED, nothing stored
		return nil, err
	}
	limit := in.Limit
	if limit != nil && len(in.Files) > 0 { // decided before the files are stored
		if err := s.store.CountLimitHit(ctx, limit); err != nil {
			return nil, err
		}
		limit = nil
	}
	ids, err := s.attachments(ctx, k, a, in.Input)
	if err != nil {
		return nil, err
	}
	keyID := k.ID
	return s.tasks.Start(ctx, store.NewTask{
		AgentID: a.ID, PrincipalID: a.PrincipalID, UserID: k.CreatedBy, Prompt: text, MaxSteps: steps,
		Source: store.TaskSourceAgentAPI, APIKeyID: &keyID, CallbackURL: callback, MediaIDs: ids, Limit: limit,
	})
}

// ListOptions narrow and page List.
type ListOptions struct {
	Since         *time.Time
	Page, PerPage int
}

// ParseSince parses the since filter of the chat list: RFC 3339, with or without fractional
// seconds. Errors: ErrInvalid.
func ParseSince(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalid("since must be an ISO 8601 instant such as 2025-05-01T12:00:00Z")
	}
	return t, nil
}

// List returns one page of the key's agent's chats, newest first.
func (s *Service) List(ctx context.Context, k *store.AgentAPIKey, o ListOptions) ([]task.View, error) {
	ts, err := s.store.ListChats(ctx, store.ChatQuery{AgentID: k.AgentID, Since: o.Since, Page: o.Page, PerPage: o.PerPage})
	if err != nil {
		return nil, err
	}
	out := make([]task.View, 0, len(ts))
	for i := range ts {
		v, err := s.tasks.ViewOf(ctx, &ts[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *v)
	}
	return out, nil
}

// Get returns chat id. Errors: ErrNotFound "chat not found".
func (s *Service) Get(ctx context.Context, k *store.AgentAPIKey, id string) (*task.View, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	return s.tasks.ViewOf(ctx, t)
}

// SendInput is a follow-up message.
type SendInput struct {
	Input
	AdditionalSteps *int
}

// Send continues chat id with a follow-up: a QUEUED chat takes the message into its queued
// turn; a COMPLETED (when the agent allows follow-ups), FAILED or ABORTED one is queued again
// with more steps (additional_steps clamped to 1..100, default the agent's max_steps).
// Errors: ErrNotFound, ErrInvalid (blank text, unreadable media id), ErrInvalidState (any
// other state).
func (s *Service) Send(ctx context.Context, k *store.AgentAPIKey, id string, in SendInput) (*task.View, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	text, err := in.text()
	if err != nil {
		return nil, err
	}
	var steps *int
	if in.AdditionalSteps != nil {
		n := ClampSteps(*in.AdditionalSteps)
		steps = &n
	}
	a, err := s.store.Agent(ctx, t.AgentID, t.UserID)
	if err != nil {
		return nil, err
	}
	if err := followable(t, a); err != nil {
		return nil, err
	}
	if err := task.CheckFollowUp(text); err != nil { // before any inline file is stored
		return nil, err
	}
	ids, err := s.attachments(ctx, k, a, in.Input)
	if err != nil {
		return nil, err
	}
	return s.tasks.ContinueTask(ctx, t, task.ContinueInput{Prompt: text, AdditionalSteps: steps, MediaIDs: ids, Queued: true})
}

// followable refuses a follow-up in a state that does not take one before any file is stored.
func followable(t *store.Task, a *store.Agent) error {
	if t.Status == taskstate.Completed && !a.AllowFollowup {
		return svcerr.New(svcerr.ErrInvalidState, "the agent does not allow follow-ups on a completed chat")
	}
	if taskstate.Leaves(taskstate.FollowUp, t.Status) || taskstate.Leaves(taskstate.Continue, t.Status) {
		return nil
	}
	return svcerr.New(svcerr.ErrInvalidState, "cannot send a message to a chat that is %s", t.Status)
}

// decider is the key as the decider of tool calls: its minter, through the key's public id.
func decider(k *store.AgentAPIKey) store.Decider {
	return store.Decider{UserID: k.CreatedBy, KeyID: k.KeyID}
}

// Approve decides the pending tool calls of a PENDING_APPROVAL chat by provider_call_id,
// recording the key as the decider. Errors: ErrNotFound, ErrInvalidState (not
// PENDING_APPROVAL), ErrInvalid (unknown provider_call_id, …).
func (s *Service) Approve(ctx context.Context, k *store.AgentAPIKey, id string, ds []store.ToolDecision) (*task.View, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	return s.tasks.ApproveTask(ctx, t, decider(k), ds)
}

// Reject rejects the pending batch of a PENDING_APPROVAL chat; the agent sees the reason.
// Errors: ErrNotFound, ErrInvalidState, ErrInvalid (blank reason).
func (s *Service) Reject(ctx context.Context, k *store.AgentAPIKey, id, reason string) (*task.View, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	return s.tasks.RejectTask(ctx, t, decider(k), reason)
}

// Answer answers question batch toolCallID of an AWAITING_INPUT chat with free text: content
// becomes the free-text answer of every question of the batch (the options and allowFreeText
// of the session API are not applied: the per-agent API answers a batch with one text).
// Errors: ErrNotFound, ErrInvalidState (not AWAITING_INPUT), ErrInvalid (unknown
// tool_call_id, blank content).
func (s *Service) Answer(ctx context.Context, k *store.AgentAPIKey, id, toolCallID, content string) (*task.View, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	if !taskstate.Leaves(taskstate.Answer, t.Status) {
		return nil, svcerr.New(svcerr.ErrInvalidState, "cannot answer a chat that is %s", t.Status)
	}
	pending, err := s.store.PendingQuestions(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	var batch *store.QuestionBatch
	for i := range pending {
		if pending[i].ToolCallID == toolCallID {
			batch = &pending[i]
		}
	}
	if batch == nil {
		return nil, invalid("tool_call_id: no pending question batch %q", toolCallID)
	}
	if strings.TrimSpace(content) == "" {
		return nil, invalid("content is required")
	}
	answers := make([]store.QuestionAnswer, 0, len(batch.Questions))
	for _, q := range batch.Questions {
		text := content
		answers = append(answers, store.QuestionAnswer{Header: q.Header, Selections: []string{}, FreeText: &text})
	}
	return s.tasks.AnswerTask(ctx, t, decider(k), toolCallID, answers, func(b *store.QuestionBatch) error {
		if len(b.Questions) != len(answers) {
			return svcerr.New(svcerr.ErrInvalidState, "the question batch changed meanwhile")
		}
		return nil
	})
}

// Attachment is a media asset a message attaches.
type Attachment struct {
	MediaID string
	Kind    string
}

// Message is one turn of a chat with its attachments (nil when it attaches nothing; assets
// deleted since are left out).
type Message struct {
	store.TaskMessage
	Attachments []Attachment
}

// Messages returns the user and assistant turns of chat id after sinceSequence: tool turns
// and assistant turns that only request tools (no text) are left out. Errors: ErrNotFound.
func (s *Service) Messages(ctx context.Context, k *store.AgentAPIKey, id string, sinceSequence int) ([]Message, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	ms, err := s.store.Messages(ctx, t.ID, sinceSequence)
	if err != nil {
		return nil, err
	}
	kept := ms[:0]
	for _, m := range ms {
		if m.Role == store.RoleUser || (m.Role == store.RoleAssistant && m.Text != "") {
			kept = append(kept, m)
		}
	}
	return s.withAttachments(ctx, kept)
}

func (s *Service) withAttachments(ctx context.Context, ms []store.TaskMessage) ([]Message, error) {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.MediaIDs...)
	}
	assets, err := s.store.MediaAssets(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(ms))
	for _, m := range ms {
		msg := Message{TaskMessage: m}
		for _, id := range m.MediaIDs {
			if a, ok := assets[id]; ok {
				msg.Attachments = append(msg.Attachments, Attachment{MediaID: id, Kind: a.Kind})
			}
		}
		out = append(out, msg)
	}
	return out, nil
}

// Transcript is a chat's full history: every turn (with reasoning and tool call ids), its
// tool calls with their decisions and outcomes, and the chat itself (usage and data).
type Transcript struct {
	Chat      *task.View
	Messages  []Message
	ToolCalls []store.ToolCall
	Summaries []store.TaskEvent // the summary events of compactions, oldest first (every one)
}

// Transcript returns the transcript of chat id; sinceSequence filters the turns and the tool
// calls those turns requested. Errors: ErrNotFound.
func (s *Service) Transcript(ctx context.Context, k *store.AgentAPIKey, id string, sinceSequence int) (*Transcript, error) {
	t, err := s.chat(ctx, k, id)
	if err != nil {
		return nil, err
	}
	v, err := s.tasks.ViewOf(ctx, t)
	if err != nil {
		return nil, err
	}
	ms, err := s.store.Messages(ctx, t.ID, sinceSequence)
	if err != nil {
		return nil, err
	}
	calls, err := s.store.ToolCalls(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	batches, err := s.store.QuestionBatches(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	msgs, err := s.withAttachments(ctx, withToolTurns(ms, calls, batches))
	if err != nil {
		return nil, err
	}
	kept := calls[:0]
	for _, c := range calls {
		if c.MessageSequence > sinceSequence {
			kept = append(kept, c)
		}
	}
	var sums []store.TaskEvent
	if t.SummarySeq > 0 { // never compacted: nothing to read
		if sums, err = s.store.Summaries(ctx, t.ID); err != nil {
			return nil, err
		}
	}
	return &Transcript{Chat: v, Messages: msgs, ToolCalls: kept, Summaries: sums}, nil
}

// withToolTurns inserts after each assistant turn the tool turns the model sees for its tool
// calls (the loop keeps tool results on the tool call rows, not as messages): the answers of an
// answered question batch, else the call's result; a call without a result yet has no turn. A
// tool turn carries the sequence of the assistant turn that requested it.
func withToolTurns(ms []store.TaskMessage, calls []store.ToolCall, batches []store.QuestionBatch) []store.TaskMessage {
	byCall := make(map[string]*store.ToolCall, len(calls))
	for i := range calls {
		byCall[calls[i].ProviderCallID] = &calls[i]
	}
	answered := map[string]*store.QuestionBatch{}
	for i := range batches {
		if batches[i].Answers != nil {
			answered[batches[i].ToolCallID] = &batches[i]
		}
	}
	out := make([]store.TaskMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
		if m.Role != store.RoleAssistant {
			continue
		}
		for _, tc := range m.ToolCalls {
			turn := store.TaskMessage{TaskID: m.TaskID, Sequence: m.Sequence}
			turn.Role, turn.ProviderCallID = store.RoleTool, tc.ProviderCallID
			if b, ok := answered[tc.ProviderCallID]; ok {
				enc, _ := json.Marshal(map[string]any{"answers": b.Answers})
				turn.Text, turn.CreatedAt = string(enc), *b.AnsweredAt
			} else if c, ok := byCall[tc.ProviderCallID]; ok && len(c.Result) > 0 {
				turn.Text, turn.CreatedAt = *ResultText(c.Result), c.CreatedAt
				if c.ExecutedAt != nil {
					turn.CreatedAt = *c.ExecutedAt
				} else if c.DecidedAt != nil {
					turn.CreatedAt = *c.DecidedAt
				}
			} else {
				continue
			}
			out = append(out, turn)
		}
	}
	return out
}

// DecidedBy names who decided a tool call: "key:<key id>" through an API key, "user:<id>"
// through a session, "system" for a call its approval timeout decided; without a person, the
// approval gate: "refused" (its tool or operation could not be resolved, or is off), "policy"
// (a rule of the operation's approval policy allowed or denied it: PolicyRule), "task" (an
// earlier approval allowed the operation for the rest of the task), "auto" (its operation needs
// no approval); nil while undecided.
func DecidedBy(c *store.ToolCall) *string {
	var s string
	switch {
	case c.DecidedBySystem:
		s = "system"
	case c.DecidedByKey != nil:
		s = "key:" + *c.DecidedByKey
	case c.DecidedBy != nil:
		s = "user:" + strconv.FormatInt(*c.DecidedBy, 10)
	case c.Status == store.ToolCallPendingApproval:
		return nil
	case c.Gate == store.GateRefused, c.Gate == store.GateTask:
		s = c.Gate
	default:
		if _, ok := c.PolicyRule(); ok {
			s = "policy"
		} else {
			s = "auto"
		}
	}
	return &s
}

// PolicyRule is the 1-based number of the approval policy rule that decided a call (allowed,
// denied, or asked a person), nil when no rule did.
func PolicyRule(c *store.ToolCall) *int64 {
	n, ok := c.PolicyRule()
	if !ok {
		return nil
	}
	v := int64(n)
	return &v
}

// ResultText is a tool call's result as the model saw it: a JSON string unquoted, any other
// JSON value as its text; nil when there is none.
func ResultText(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return &s
	}
	out := string(raw)
	return &out
}

// SentChars is the characters of a stored tool result the model was sent when it passed its
// budget and was cut (the loop records it with the result); nil when it was sent whole.
func SentChars(raw json.RawMessage) *int64 {
	var r struct {
		SentChars *int64 `json:"sent_chars"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return nil
	}
	return r.SentChars
}

// Reasoning joins the texts of a turn's reasoning blocks (stored as the provider's list of
// {text, signature, redacted}); redacted blocks and signatures are never shown. nil when no
// block has text.
func Reasoning(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	var blocks []struct {
		Text     string `json:"text"`
		Redacted bool   `json:"redacted"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil
	}
	var parts []string
	for _, b := range blocks {
		if !b.Redacted && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	out := strings.Join(parts, "\n\n")
	return &out
}
