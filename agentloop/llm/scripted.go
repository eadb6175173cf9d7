package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxScriptSize bounds a script file.
const MaxScriptSize = 1 << 20

// ScriptEndText is the answer of a scripted driver once its turns are used up.
const ScriptEndText = "The script has no more turns."

// ScriptTurn is one scripted model answer. A turn has text and/or tool calls, or an error.
//
// Chunks, when set, are the pieces a streamed call reports (the turn's text is their
// concatenation; a turn sets text or chunks, not both), ChunkDelayMS milliseconds apart. A turn
// with chunks and an error streams the chunks, then fails: a stream that broke off.
type ScriptTurn struct {
	Text         string           `json:"text,omitempty" yaml:"text"`
	Chunks       []string         `json:"chunks,omitempty" yaml:"chunks"`
	ChunkDelayMS int              `json:"chunk_delay_ms,omitempty" yaml:"chunk_delay_ms"`
	Reasoning    string           `json:"reasoning,omitempty" yaml:"reasoning"`
	ToolCalls    []ScriptToolCall `json:"tool_calls,omitempty" yaml:"tool_calls"`
	Usage        *Usage           `json:"usage,omitempty" yaml:"usage"`
	Error        *ScriptError     `json:"error,omitempty" yaml:"error"`
}

// ScriptToolCall is a scripted tool call. Name is the caller-facing name ("slug:tool" for a
// plugin tool). ID defaults to "call_<turn>_<index>" (both from 1), so a replay after a
// restart produces the same ids. Arguments must be a JSON object, or a string holding one;
// absent means {}.
type ScriptToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ScriptError makes a turn fail with a task error code (RATE_LIMIT, SERVER_ERROR, …).
type ScriptError struct {
	Code    string `json:"code" yaml:"code"`
	Message string `json:"message,omitempty" yaml:"message"`
}

// Scripted is the driver of the "scripted" configuration. It keeps no state between calls:
// the turn answered is the one whose index equals the number of assistant messages already in
// the request (those a summary replaced included: Request.Compacted), and a compaction call
// (Request.Summary) is answered with a short summary without spending a turn, so a task resumed by another process continues where it stopped, and an error
// turn fails the same way every time it is reached (retries included). Past the last turn it
// answers ScriptEndText.
type Scripted struct {
	turns []ScriptTurn
}

// NewScripted returns a scripted driver over in-memory turns, after the checks a script file
// gets; the turns are copied.
func NewScripted(turns []ScriptTurn) (*Scripted, error) {
	cp := make([]ScriptTurn, len(turns))
	copy(cp, turns)
	for i := range cp {
		cp[i].ToolCalls = append([]ScriptToolCall(nil), cp[i].ToolCalls...)
		if err := normalizeTurn(i, &cp[i]); err != nil {
			return nil, err
		}
	}
	return &Scripted{turns: cp}, nil
}

// LoadScript reads a JSON or YAML script file (path relative to the working directory). The
// file holds a list of turns, or an object {"turns": [...]}.
func LoadScript(path string) (*Scripted, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llm: scripted driver: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, fmt.Errorf("llm: scripted driver: read %s: %w", path, err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("llm: scripted driver: %s: %w", path, err)
	}
	return s, nil
}

// ParseScript parses a script (JSON or YAML, at most MaxScriptSize bytes) and checks it:
// unknown fields, a turn without text, tool calls or error, a tool call without name,
// arguments that are not an object, duplicate ids, negative usage and unknown error codes are
// refused with an error naming the turn. YAML scalars keep their text (text: 1.50 is "1.50").
func ParseScript(data []byte) (*Scripted, error) {
	if len(data) > MaxScriptSize {
		return nil, fmt.Errorf("script is larger than %d bytes", MaxScriptSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("script is empty")
	}
	// JSON is YAML: one strict YAML decoder serves both syntaxes.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("script does not parse: %w", err)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	var turns []ScriptTurn
	var err error
	switch doc.Kind {
	case yaml.SequenceNode:
		err = strictYAML(data, &turns)
	case yaml.MappingNode:
		var wrapper struct {
			Turns *[]ScriptTurn `yaml:"turns"`
		}
		if err = strictYAML(data, &wrapper); err == nil {
			if wrapper.Turns == nil {
				err = errors.New(`the object has no "turns" list`)
			} else {
				turns = *wrapper.Turns
			}
		}
	default:
		err = errors.New(`a script is a list of turns or an object {"turns": [...]}`)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed script: %w", err)
	}
	return NewScripted(turns)
}

func strictYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// UnmarshalYAML accepts arguments as a mapping (or a string holding a JSON object) and refuses
// unknown fields, which a nested custom decoder would not do on its own.
func (c *ScriptToolCall) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a tool call is an object", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "id", "name", "arguments":
		default:
			return fmt.Errorf("line %d: field %s not found in tool call", n.Content[i].Line, k)
		}
	}
	var aux struct {
		ID        string    `yaml:"id"`
		Name      string    `yaml:"name"`
		Arguments yaml.Node `yaml:"arguments"`
	}
	if err := n.Decode(&aux); err != nil {
		return err
	}
	c.ID, c.Name, c.Arguments = aux.ID, aux.Name, nil
	if aux.Arguments.Kind != 0 {
		var v any
		if err := aux.Arguments.Decode(&v); err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: arguments cannot be JSON (non-string keys?)", aux.Arguments.Line)
		}
		c.Arguments = b
	}
	return nil
}

// normalizeTurn checks turn i (0-based) and fills default ids and arguments.
func normalizeTurn(i int, t *ScriptTurn) error {
	where := fmt.Sprintf("turn %d", i+1)
	if t.ChunkDelayMS < 0 {
		return fmt.Errorf("%s: chunk_delay_ms must not be negative", where)
	}
	if len(t.Chunks) > 0 {
		if t.Text != "" {
			return fmt.Errorf("%s: a turn has text or chunks, not both", where)
		}
		t.Chunks = append([]string(nil), t.Chunks...)
	}
	if t.Error != nil {
		if t.Text != "" || t.Reasoning != "" || len(t.ToolCalls) > 0 || t.Usage != nil {
			return fmt.Errorf("%s: an error turn has no text, reasoning, tool_calls or usage", where)
		}
		if !validCode(t.Error.Code) {
			return fmt.Errorf("%s: error.code %q is not one of RATE_LIMIT, SERVER_OVERLOADED, SERVER_ERROR, GATEWAY_ERROR, AUTH_ERROR, LLM_TIMEOUT, BAD_REQUEST, UNKNOWN", where, t.Error.Code)
		}
		return nil
	}
	if t.Text == "" && len(t.Chunks) == 0 && len(t.ToolCalls) == 0 {
		return fmt.Errorf("%s: needs text, chunks, tool_calls or error", where)
	}
	if t.Usage != nil && (t.Usage.InputTokens < 0 || t.Usage.OutputTokens < 0) {
		return fmt.Errorf("%s: usage must not be negative", where)
	}
	ids := map[string]bool{}
	for j := range t.ToolCalls {
		c := &t.ToolCalls[j]
		cw := fmt.Sprintf("%s: tool_calls[%d]", where, j)
		if strings.TrimSpace(c.Name) == "" {
			return fmt.Errorf("%s: name is required", cw)
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", i+1, j+1)
		}
		if ids[c.ID] {
			return fmt.Errorf("%s: duplicate id %q", cw, c.ID)
		}
		ids[c.ID] = true
		args, err := scriptArguments(c.Arguments)
		if err != nil {
			return fmt.Errorf("%s: %w", cw, err)
		}
		c.Arguments = args
	}
	return nil
}

func scriptArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	var obj map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, errors.New("arguments must be a JSON object (or a string holding one)")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return buf.Bytes(), nil
}

// Turns returns the number of scripted turns.
func (s *Scripted) Turns() int { return len(s.turns) }

// Complete answers with the turn selected by the number of assistant messages in req.
func (s *Scripted) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, classifyTransport(ctx, "scripted", 0, err)
	}
	if err := validateRequest(&req); err != nil {
		return nil, err
	}
	if req.Summary {
		// A compaction: a summary naming what it covers, at about a tenth of its size.
		size := 0
		for _, m := range req.Messages {
			size += len(m.Text)
		}
		return &Response{Text: fmt.Sprintf("Summary of the earlier conversation (%d characters).", size), StopReason: StopEndTurn,
			Usage: Usage{InputTokens: int64(size / 4), OutputTokens: 12}}, nil
	}
	n := req.Compacted
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			n++
		}
	}
	if req.OnDelta != nil {
		if err := s.stream(ctx, n, req.OnDelta); err != nil {
			return nil, err
		}
	}
	return s.answer(n)
}

// stream reports turn n's output to onDelta: its chunks, ChunkDelayMS apart, or its whole
// text as one piece (and its reasoning first, as one piece). The turn's error, if any, is
// left to answer.
func (s *Scripted) stream(ctx context.Context, n int, onDelta func(Delta)) error {
	if n >= len(s.turns) {
		onDelta(Delta{Text: ScriptEndText})
		return nil
	}
	t := s.turns[n]
	if t.Reasoning != "" {
		onDelta(Delta{Reasoning: t.Reasoning})
	}
	if len(t.Chunks) == 0 {
		if t.Text != "" {
			onDelta(Delta{Text: t.Text})
		}
		return nil
	}
	delay := time.Duration(t.ChunkDelayMS) * time.Millisecond
	var timer *time.Timer
	for i, c := range t.Chunks {
		if i > 0 && delay > 0 {
			if timer == nil {
				timer = time.NewTimer(delay)
				defer timer.Stop()
			} else {
				timer.Reset(delay)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return classifyTransport(ctx, "scripted", 0, ctx.Err())
			}
		}
		if err := ctx.Err(); err != nil {
			return classifyTransport(ctx, "scripted", 0, err)
		}
		if c != "" {
			onDelta(Delta{Text: c})
		}
	}
	return nil
}

// answer is the response of turn n (0-based); past the last turn, ScriptEndText.
func (s *Scripted) answer(n int) (*Response, error) {
	if n >= len(s.turns) {
		return &Response{Text: ScriptEndText, StopReason: StopEndTurn}, nil
	}
	t := s.turns[n]
	if t.Error != nil {
		msg := t.Error.Message
		if msg == "" {
			msg = fmt.Sprintf("scripted error at turn %d", n+1)
		}
		return nil, newError(t.Error.Code, msg, 0, nil)
	}
	text := t.Text
	if len(t.Chunks) > 0 {
		text = strings.Join(t.Chunks, "")
	}
	out := &Response{Text: text, StopReason: StopEndTurn}
	if t.Reasoning != "" {
		out.Reasoning = []Reasoning{{Text: t.Reasoning}}
	}
	if t.Usage != nil {
		out.Usage = *t.Usage
	}
	for _, c := range t.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: append(json.RawMessage(nil), c.Arguments...)})
	}
	if len(out.ToolCalls) > 0 {
		out.StopReason = StopToolUse
	}
	return out, nil
}
