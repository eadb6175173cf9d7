package server_test

import (
	"net/http"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/store/storetest"
)

// TestChatStartStatementBudget pins what POST /agent-api/chats (no files) costs the database
// once the key and the agent are warm (issue 28, item 7): the key read, the agent read, and one
// write transaction holding the shared per-key rate-limit window (its upsert and the previous
// window's read in one round trip: on MySQL/MariaDB a multi-statement text), the task, its
// first message and their events; no budget read where no budget exists. At most one more: the
// configuration version's read, once a second. It was 8 statements in two write transactions,
// one only for the window. Every statement is logged with -v.
func TestChatStartStatementBudget(t *testing.T) {
	st, counter := storetest.NewCounted(t)
	env := apitest.NewWith(t, apitest.Options{Store: st}, "SVC_AGENT_API=true")
	owner, _ := env.UserClient("owner@example.com")
	agent := mkAgent(t, owner, map[string]any{"name": "Chatty"})
	key := mintKey(t, owner, agent.Id, "budget")
	c := env.Client()
	hdr := map[string]string{"Authorization": "Bearer " + key.Key}
	want := int64(6 + 1) // + the configuration version's read when its TTL ran out
	switch st.Dialect() {
	case store.DialectMySQL:
		want = 5 + 1 // the window, and the message with the events, each one multi-statement text
	case store.DialectPostgres:
		want = 8 // and, after the commit, the NOTIFY that wakes the other processes
	}
	for i := range 3 {
		before := counter.Counts()
		counter.Trace(func(q string) { t.Log(q) })
		c.Do(apitest.Request{Method: http.MethodPost, Path: "/agent-api/chats", Body: map[string]any{"text": "hello"}, Header: hdr}).
			Expect(t, http.StatusAccepted)
		counter.Trace(nil)
		n := counter.Counts().Sub(before)
		t.Logf("chat %d: %d statements (%d writes) in %d transactions, %d of them writing", i+1, n.Statements, n.Writes, n.Txs, n.WriteTxs)
		if i == 0 {
			continue // the first also stamps the key's last_used_at
		}
		if n.WriteTxs != 1 || n.Txs != 1 || n.Statements > want {
			t.Errorf("chat %d: %d statements in %d transactions (%d writing), want at most %d in one", i+1, n.Statements, n.Txs, n.WriteTxs, want)
		}
	}
}
