package core_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/agentloop/llm"
	"github.com/agentsvc/svc/agentloop/looptest"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

// memFiles serves asset contents from memory.
type memFiles map[string][]byte

func (m memFiles) Open(_ context.Context, a *store.MediaAsset) (io.ReadSeekCloser, error) {
	b, ok := m[a.ID]
	if !ok {
		return nil, errors.New("no file")
	}
	return nopCloser{bytes.NewReader(b)}, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// mediaWorld is a fixture with assets around one chat tree: root (the chat) with a sub-agent
// chat below it, and an unrelated chat.
type mediaWorld struct {
	*looptest.Fixture
	files                   memFiles
	exec                    tools.Executor // the media tool over st and files
	root, child, unrelated  *store.Task
	stranger                *store.User
	notes, photo, big, utf  *store.MediaAsset // the agent's owner's
	attached, produced      *store.MediaAsset // a stranger's, attached to the root / produced in the child
	secret, expired, outsid *store.MediaAsset // invisible
	n                       int
}

func newMediaWorld(t *testing.T, turns []llm.ScriptTurn) *mediaWorld {
	t.Helper()
	ctx := context.Background()
	w := &mediaWorld{Fixture: looptest.New(t, turns, store.AgentFields{}, true), files: memFiles{}}
	w.stranger = storetest.User(t, w.Store)
	w.root = w.NewTask("look at the files", 10)
	w.child = storetest.Task(t, w.Store, w.Agent, w.User.ID, func(nt *store.NewTask) { nt.ParentTaskID = &w.root.ID })
	w.unrelated = w.NewTask("other chat", 10)
	own := w.Agent.PrincipalID
	w.notes = w.asset(t, own, "Meeting_Notes.txt", "text/plain", "document", []byte("agenda: ship it"), nil)
	w.photo = w.asset(t, own, "photo.png", "image/png", "image", []byte("\x89PNG...."), nil)
	w.big = w.asset(t, own, "big.json", "application/json", "document", []byte(strings.Repeat("é", core.MaxMediaText)), nil)
	w.utf = w.asset(t, own, "100%_done.md", "text/markdown", "document", []byte("# done"), nil)
	other := w.stranger.PrincipalID
	w.attached = w.asset(t, other, "brief.md", "text/markdown", "document", []byte("the brief"), nil)
	if err := w.Store.AttachTaskMedia(ctx, w.root.ID, 1, []string{w.attached.ID}); err != nil {
		t.Fatal(err)
	}
	w.produced = w.asset(t, other, "result.csv", "text/csv", "document", []byte("a,b\n1,2\n"), func(a *store.MediaAsset) { a.TaskID = &w.child.ID })
	w.secret = w.asset(t, other, "secret.txt", "text/plain", "document", []byte("nope"), nil)
	w.outsid = w.asset(t, other, "elsewhere.txt", "text/plain", "document", []byte("nope"), func(a *store.MediaAsset) { a.TaskID = &w.unrelated.ID })
	w.expired = w.asset(t, own, "old.txt", "text/plain", "document", []byte("gone"), func(a *store.MediaAsset) {
		past := time.Now().Add(-time.Hour)
		a.Keep, a.ExpiresAt = false, &past
	})
	w.exec = core.Executors(core.Deps{Media: w.Store, Files: w.files})["core.MediaTool"]
	return w
}

// asset stores an asset created a minute after the previous one (so newest first is the
// reverse creation order).
func (w *mediaWorld) asset(t *testing.T, principal int64, name, mime, kind string, data []byte, mod func(*store.MediaAsset)) *store.MediaAsset {
	t.Helper()
	w.n++
	id := fmt.Sprintf("med_agentloop%04d", w.n)
	a := store.MediaAsset{ID: id, PrincipalID: principal, Filename: name, MimeType: mime, Kind: kind, Size: int64(len(data)),
		SHA256: strings.Repeat("a", 64), StorageKey: "ag/" + id, Keep: true,
		CreatedAt: time.Date(2026, 1, 1, 0, w.n, 0, 0, time.UTC)}
	if mod != nil {
		mod(&a)
	}
	got, err := w.Store.CreateMediaAsset(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	w.files[id] = data
	return got
}

type mediaSearch struct {
	Count int `json:"count"`
	Media []struct {
		ID       string `json:"id"`
		Filename string `json:"filename"`
		Kind     string `json:"kind"`
		Size     int64  `json:"size"`
	} `json:"media"`
}

func (s mediaSearch) ids() string {
	var out []string
	for _, m := range s.Media {
		out = append(out, m.ID)
	}
	return strings.Join(out, ",")
}

func ids(as ...*store.MediaAsset) string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return strings.Join(out, ",")
}

func TestMediaToolSearch(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t, nil)
	for _, tc := range []struct {
		name string
		task int64
		args map[string]any
		want string
		err  string
	}{
		{"everything visible in the chat, newest first", w.root.ID, map[string]any{},
			ids(w.produced, w.attached, w.utf, w.big, w.photo, w.notes), ""},
		{"from the sub-agent chat the tree is the same", w.child.ID, map[string]any{},
			ids(w.produced, w.attached, w.utf, w.big, w.photo, w.notes), ""},
		{"another chat sees its own and the owner's", w.unrelated.ID, map[string]any{},
			ids(w.outsid, w.utf, w.big, w.photo, w.notes), ""},
		{"text, case-insensitive", w.root.ID, map[string]any{"query": "meeting"}, ids(w.notes), ""},
		{"wildcards are literal", w.root.ID, map[string]any{"query": "%_"}, ids(w.utf), ""},
		{"underscore is literal", w.root.ID, map[string]any{"query": "g_n"}, ids(w.notes), ""},
		{"kind", w.root.ID, map[string]any{"kind": "image"}, ids(w.photo), ""},
		{"kind and text", w.root.ID, map[string]any{"kind": "document", "query": ".md"}, ids(w.attached, w.utf), ""},
		{"paged", w.root.ID, map[string]any{"page": 2, "per_page": 2}, ids(w.utf, w.big), ""},
		{"nothing", w.root.ID, map[string]any{"query": "zzz"}, "", ""},
		{"bad kind", w.root.ID, map[string]any{"kind": "pdf"}, "", "kind must be one of"},
		{"bad query", w.root.ID, map[string]any{"query": 3}, "", "query must be a string"},
		{"bad page", w.root.ID, map[string]any{"page": 0}, "", "page"},
	} {
		res, err := w.exec.Execute(context.Background(), tools.Call{Operation: "search", Args: tc.args, TaskID: tc.task, AgentID: w.Agent.ID})
		if tc.err != "" {
			var te *tools.ToolError
			if !errors.As(err, &te) || !strings.Contains(te.Msg, tc.err) {
				t.Errorf("%s: err %v, want a tool error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got mediaSearch
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("%s: %s", tc.name, res.Content)
		}
		if got.ids() != tc.want || got.Count != len(got.Media) {
			t.Errorf("%s: got %s, want %s", tc.name, got.ids(), tc.want)
		}
	}
}

func TestMediaToolGetMedia(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t, nil)
	type answer struct {
		Media struct {
			ID       string `json:"id"`
			Filename string `json:"filename"`
			MimeType string `json:"mime_type"`
			Size     int64  `json:"size"`
		} `json:"media"`
		ContentIncluded bool   `json:"content_included"`
		Content         string `json:"content"`
		Truncated       bool   `json:"truncated"`
		Note            string `json:"note"`
	}
	for _, tc := range []struct {
		name    string
		task    int64
		id      any
		content string // "-" for metadata only
		trunc   bool
		err     string
	}{
		{"own text", w.root.ID, w.notes.ID, "agenda: ship it", false, ""},
		{"attached to the chat", w.child.ID, w.attached.ID, "the brief", false, ""},
		{"produced in the sub-agent chat", w.root.ID, w.produced.ID, "a,b\n1,2\n", false, ""},
		{"image: metadata only", w.root.ID, w.photo.ID, "-", false, ""},
		{"long text is cut at a rune boundary", w.root.ID, w.big.ID, strings.Repeat("é", core.MaxMediaText/2), true, ""},
		{"padded id", w.root.ID, " " + w.notes.ID + " ", "agenda: ship it", false, ""},
		{"someone else's", w.root.ID, w.secret.ID, "", false, "no media " + w.secret.ID},
		{"another chat's", w.root.ID, w.outsid.ID, "", false, "no media"},
		{"expired", w.root.ID, w.expired.ID, "", false, "no media"},
		{"unknown", w.root.ID, "med_nope", "", false, "no media"},
		{"missing id", w.root.ID, nil, "", false, "media_id is required"},
		{"numeric id", w.root.ID, 7, "", false, "media_id must be a string"},
	} {
		args := map[string]any{}
		if tc.id != nil {
			args["media_id"] = tc.id
		}
		res, err := w.exec.Execute(context.Background(), tools.Call{Operation: "get_media", Args: args, TaskID: tc.task, AgentID: w.Agent.ID})
		if tc.err != "" {
			var te *tools.ToolError
			if !errors.As(err, &te) || !strings.Contains(te.Msg, tc.err) {
				t.Errorf("%s: err %v, want a tool error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got answer
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("%s: %s", tc.name, res.Content)
		}
		if got.Media.ID == "" || got.Media.MimeType == "" || got.Media.Filename == "" {
			t.Errorf("%s: metadata %+v", tc.name, got.Media)
		}
		if tc.content == "-" {
			if got.ContentIncluded || got.Content != "" || !strings.Contains(got.Note, "only its metadata") {
				t.Errorf("%s: %s", tc.name, res.Content)
			}
			continue
		}
		if !got.ContentIncluded || got.Content != tc.content || got.Truncated != tc.trunc || (tc.trunc && got.Note == "") {
			t.Errorf("%s: included %v truncated %v content %.40q (%d bytes)", tc.name, got.ContentIncluded, got.Truncated, got.Content, len(got.Content))
		}
	}
	if _, err := w.exec.Execute(context.Background(), tools.Call{Operation: "nope", Args: map[string]any{}, TaskID: w.root.ID, AgentID: w.Agent.ID}); err == nil {
		t.Error("an unknown operation ran")
	}
}

func mediaCall(id string, args map[string]any) llm.ScriptToolCall {
	raw, _ := json.Marshal(args)
	return llm.ScriptToolCall{ID: id, Name: "media", Arguments: raw}
}

// TestMediaToolInTheLoop: the model searches, then reads a file; the results reach it.
func TestMediaToolInTheLoop(t *testing.T) {
	t.Parallel()
	w := newMediaWorld(t, nil)
	turns := []llm.ScriptTurn{
		{ToolCalls: []llm.ScriptToolCall{mediaCall("s", map[string]any{"action": "search", "query": "notes"})}},
		{ToolCalls: []llm.ScriptToolCall{mediaCall("g", map[string]any{"action": "get_media", "media_id": w.notes.ID})}},
		{Text: "the agenda is to ship it"},
	}
	scripted, err := llm.NewScripted(turns)
	if err != nil {
		t.Fatal(err)
	}
	w.Rec.Driver = scripted
	w.Executors(core.Deps{Media: w.Store, Files: w.files})
	w.States["core.MediaTool"] = tools.ToolState{Enabled: true}
	// Only the root chat runs: the others are settled first.
	for _, id := range []int64{w.child.ID, w.unrelated.ID} {
		if _, err := w.Store.AbortTaskChain(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	w.Drain()
	got := w.Task(w.root.ID)
	if got.Status != taskstate.Completed || got.Answer == nil || *got.Answer != "the agenda is to ship it" {
		t.Fatalf("task = %s %v %+v", got.Status, got.Answer, got.Error)
	}
	res := looptest.ToolResults(w.Rec.Requests()[2])
	if m := res["s"]; m.IsError || !strings.Contains(m.Text, w.notes.ID) || strings.Contains(m.Text, w.photo.ID) {
		t.Fatalf("search result = %+v", m)
	}
	if m := res["g"]; m.IsError || !strings.Contains(m.Text, `"content":"agenda: ship it"`) {
		t.Fatalf("get_media result = %+v", m)
	}
	offered := false
	for _, td := range w.Rec.Requests()[0].Tools {
		if td.Name == "media" {
			offered = true
			var schema struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(td.Parameters, &schema); err != nil || schema.Properties["media_id"].Type != "string" {
				t.Errorf("media_id schema (%v): %s", err, td.Parameters)
			}
		}
	}
	if !offered {
		t.Fatal("the media tool was not offered")
	}
}
