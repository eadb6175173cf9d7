package server_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/domain/media"
	"github.com/agentsvc/svc/store"
)

// agentMediaWorld: the per-agent API switched on, an owner with two agents (main, with a key,
// and helper, a sub-agent target), and a stranger with an agent of their own.
type agentMediaWorld struct {
	*mediaWorld
	main, helper, alien gen.Agent
	key                 gen.AgentApiKeyWithSecret
}

func newAgentMediaWorld(t *testing.T) *agentMediaWorld {
	t.Helper()
	w := &agentMediaWorld{mediaWorld: newMediaWorld(t, "SVC_AGENT_API=true")}
	w.main = mkAgent(t, w.owner, map[string]any{"name": "Main"})
	w.helper = mkAgent(t, w.owner, map[string]any{"name": "Helper"})
	w.alien = mkAgent(t, w.stranger, map[string]any{"name": "Alien"})
	w.key = mintKey(t, w.owner, w.main.Id, "media")
	return w
}

func (w *agentMediaWorld) upload(t *testing.T, auth string, parts ...mediaPart) *apitest.Response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	r := apitest.Request{Method: http.MethodPost, Path: "/agent-api/media", Body: body, ContentType: ct}
	if auth != "" {
		r.Header = map[string]string{"Authorization": auth}
	}
	return w.env.Client().Do(r)
}

func (w *agentMediaWorld) get(id, auth string) *apitest.Response {
	return agentAPI(w.env, nil, http.MethodGet, "/agent-api/media/"+id, auth)
}

// task creates a chat of agent directly in the store (parent: a sub-agent task below it).
func (w *agentMediaWorld) task(t *testing.T, agent gen.Agent, user gen.User, parent *int64) *store.Task {
	t.Helper()
	tk, err := w.env.App.Store.CreateTask(context.Background(), store.NewTask{AgentID: agent.Id, PrincipalID: agent.PrincipalId,
		UserID: user.Id, ParentTaskID: parent, Prompt: "go", MaxSteps: 3})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestUploadAgentMedia(t *testing.T) {
	t.Parallel()
	w := newAgentMediaWorld(t)
	bearer := "Bearer " + w.key.Key
	img := mediaPNG(t, 5, 6)
	var r gen.AgentMediaResponse
	w.upload(t, bearer, mediaPart{name: "file", filename: "scan.png", data: img}).Expect(t, http.StatusCreated).Decode(t, &r)
	a := r.Data
	if !strings.HasPrefix(a.Id, "med_") || a.PrincipalId != w.main.PrincipalId || a.Keep || a.ExpiresAt == nil ||
		a.MimeType != "image/png" || a.Filename != "scan.png" || *a.Width != 5 {
		t.Fatalf("uploaded = %+v", a)
	}
	stored, err := w.env.App.Media.Asset(context.Background(), a.Id)
	if err != nil || stored.AgentID == nil || *stored.AgentID != w.main.Id || stored.UploadedBy != nil {
		t.Fatalf("stored = %+v, %v", stored, err)
	}
	// The key reads back what it uploaded.
	res := w.get(a.Id, bearer).Expect(t, http.StatusOK)
	if !bytes.Equal(res.Body, img) || res.Header.Get("Content-Type") != "image/png" ||
		res.Header.Get("Content-Disposition") != `inline; filename="scan.png"` || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("streamed %d bytes, headers %v", len(res.Body), res.Header)
	}

	over := bytes.Repeat([]byte("a"), media.MaxAgentUploadBytes+1)
	for _, tc := range []struct {
		name   string
		auth   string
		parts  []mediaPart
		status int
		code   string
	}{
		{"no file part", bearer, []mediaPart{{name: "note", data: []byte("x")}}, 400, "BAD_REQUEST"},
		{"empty form", bearer, nil, 400, "BAD_REQUEST"},
		{"outside the accept list", bearer, []mediaPart{{name: "file", filename: "x.png", data: []byte("<html><script>1</script></html>")}}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"over 16 MiB", bearer, []mediaPart{{name: "file", filename: "big.txt", data: over}}, 413, "PAYLOAD_TOO_LARGE"},
		{"over the body limit", bearer, []mediaPart{{name: "file", filename: "big.txt", data: append(over, over[:1<<20]...)}}, 413, "PAYLOAD_TOO_LARGE"},
		{"no key", "", []mediaPart{{name: "file", filename: "a", data: []byte("x")}}, 401, "UNAUTHENTICATED"},
		{"wrong key", "Bearer svk_nope_nope", []mediaPart{{name: "file", filename: "a", data: []byte("x")}}, 401, "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.upload(t, tc.auth, tc.parts...).Expect(t, tc.status, tc.code)
		})
	}
	// No body: 400; not multipart: 415.
	agentAPI(w.env, nil, http.MethodPost, "/agent-api/media", bearer).Expect(t, 400, "BAD_REQUEST")
	w.env.Client().Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/media", Body: map[string]any{"file": "x"},
		Header: map[string]string{"Authorization": bearer}}).Expect(t, 415, "UNSUPPORTED_MEDIA_TYPE")
}

func TestGetAgentMedia(t *testing.T) {
	t.Parallel()
	w := newAgentMediaWorld(t)
	bearer := "Bearer " + w.key.Key
	ctx := context.Background()
	chat := w.task(t, w.main, w.ownerU, nil)
	sub := w.task(t, w.helper, w.ownerU, &chat.ID)
	helperOwn := w.task(t, w.helper, w.ownerU, nil)
	alienChat := w.task(t, w.alien, w.strangerU, nil)
	save := func(name string, data []byte, agent *gen.Agent, task *store.Task) *store.MediaAsset {
		return w.save(t, w.ownerU.PrincipalId, name, data, func(na *media.NewAsset) {
			if agent != nil {
				na.AgentID = &agent.Id
			}
			if task != nil {
				na.TaskID = &task.ID
			}
		})
	}
	produced := save("out.txt", []byte("made by main"), &w.main, chat)
	inSub := save("sub.txt", []byte("made by a sub-agent"), &w.helper, sub)
	attached := w.save(t, w.strangerU.PrincipalId, "ref.txt", []byte("attached"), nil)
	if err := w.env.App.Store.AttachTaskMedia(ctx, chat.ID, 1, []string{attached.ID}); err != nil {
		t.Fatal(err)
	}
	helperAsset := save("helper.txt", []byte("helper's own chat"), &w.helper, helperOwn)
	alienAsset := w.save(t, w.strangerU.PrincipalId, "alien.txt", []byte("alien"), func(na *media.NewAsset) {
		na.AgentID, na.TaskID = &w.alien.Id, &alienChat.ID
	})
	unicode := save("résumé \"v2\".txt", []byte("unicode name"), &w.main, nil)
	expiring := save("old.txt", []byte("soon gone"), &w.main, nil)

	for _, tc := range []struct {
		name string
		a    *store.MediaAsset
		body string
	}{
		{"produced by the agent in its chat", produced, "made by main"},
		{"in a sub-agent task of its chat", inSub, "made by a sub-agent"},
		{"attached to its chat", attached, "attached"},
	} {
		res := w.get(tc.a.ID, bearer).Expect(t, http.StatusOK)
		if string(res.Body) != tc.body || res.Header.Get("Content-Type") != "text/plain" ||
			res.Header.Get("Content-Disposition") != `inline; filename="`+tc.a.Filename+`"` {
			t.Errorf("%s: %q %v", tc.name, res.Body, res.Header)
		}
	}
	res := w.get(unicode.ID, bearer).Expect(t, http.StatusOK)
	if got := res.Header.Get("Content-Disposition"); got != `inline; filename="r_sum_ v2.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20v2.txt` {
		t.Errorf("unicode disposition = %s", got)
	}

	missing := w.get("med_doesnotexist", bearer).Expect(t, http.StatusNotFound, "NOT_FOUND")
	w.env.Clock.Advance(25 * time.Hour) // expiring expires; the attached one lives through its chat
	w.get(attached.ID, bearer).Expect(t, http.StatusOK)
	for _, tc := range []struct {
		name string
		id   string
	}{
		{"another agent's chat", alienAsset.ID},
		{"the sub agent's own chat", helperAsset.ID},
		{"expired", expiring.ID},
	} {
		res := w.get(tc.id, bearer).Expect(t, http.StatusNotFound, "NOT_FOUND")
		if string(res.Body) != string(missing.Body) {
			t.Errorf("%s: %s differs from the missing-id answer %s", tc.name, res.Body, missing.Body)
		}
	}
	w.get(attached.ID, "").Expect(t, http.StatusUnauthorized, "UNAUTHENTICATED")

	// A file gone from disk is an internal error.
	if err := removeMediaFile(w.env, attached); err != nil {
		t.Fatal(err)
	}
	w.get(attached.ID, bearer).Expect(t, http.StatusInternalServerError, "INTERNAL")
}

func removeMediaFile(env *apitest.Env, a *store.MediaAsset) error {
	return os.Remove(filepath.Join(env.App.Media.Dir(), filepath.FromSlash(a.StorageKey)))
}
