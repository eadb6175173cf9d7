package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/store"
)

func TestChatStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newTaskFixture(t)
	exp := t0.Add(time.Hour)
	asset := func(id string) {
		t.Helper()
		if _, err := f.s.CreateMediaAsset(ctx, store.MediaAsset{ID: id, PrincipalID: f.agent.PrincipalID, Filename: "a.txt",
			MimeType: "text/plain", Kind: store.MediaKindDocument, Size: 1, SHA256: strings.Repeat("0", 64),
			StorageKey: "k/" + id, ExpiresAt: &exp}); err != nil {
			t.Fatal(err)
		}
	}
	asset("med_a")
	asset("med_b")

	// A message's media ids become task_media rows.
	chat, err := f.s.CreateTask(ctx, store.NewTask{AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID,
		Prompt: "look", MaxSteps: 3, Source: store.TaskSourceAgentAPI, MediaIDs: []string{"med_a", "med_a"}})
	if err != nil {
		t.Fatal(err)
	}
	// Past the uploads' expiry the attached asset lives on through its chat; the other is gone.
	later := exp.Add(time.Hour)
	if a, err := f.s.MediaAssetAt(ctx, "med_a", later); err != nil || a.ID != "med_a" {
		t.Fatalf("attached asset = %+v, %v", a, err)
	}
	if _, err := f.s.MediaAssetAt(ctx, "med_b", later); !errors.Is(err, svcerr.ErrNotFound) {
		t.Fatalf("unattached asset after expiry: %v", err)
	}
	if _, err := f.s.MediaReadableByAgent(ctx, f.agent.ID, "med_a"); err != nil {
		t.Fatalf("attached asset not in the agent's scope: %v", err)
	}
	// An unknown asset refuses the whole message.
	_, err = f.s.CreateTask(ctx, store.NewTask{AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID,
		Prompt: "x", MaxSteps: 3, MediaIDs: []string{"med_b", "med_nope"}})
	if !errors.Is(err, svcerr.ErrInvalid) {
		t.Fatalf("unknown media id: %v", err)
	}
	if b, _ := f.s.MediaAsset(ctx, "med_b"); b.Keep {
		t.Fatal("a refused message kept an asset")
	}

	// ListChats: agent_api top-level tasks of the agent only.
	f.clock.Advance(time.Second)
	session := f.create(t, "session")
	parent := chat.ID
	if _, err := f.s.CreateTask(ctx, store.NewTask{AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID,
		Prompt: "sub", MaxSteps: 3, Source: store.TaskSourceAgentAPI, ParentTaskID: &parent}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	chat2, err := f.s.CreateTask(ctx, store.NewTask{AgentID: f.agent.ID, PrincipalID: f.agent.PrincipalID, UserID: f.user.ID,
		Prompt: "again", MaxSteps: 3, Source: store.TaskSourceAgentAPI})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.s.ListChats(ctx, store.ChatQuery{AgentID: f.agent.ID})
	if err != nil || len(got) != 2 || got[0].ID != chat2.ID || got[1].ID != chat.ID {
		t.Fatalf("ListChats = %+v, %v (session task %d)", got, err, session.ID)
	}
	since := chat.UpdatedAt
	if got, _ := f.s.ListChats(ctx, store.ChatQuery{AgentID: f.agent.ID, Since: &since}); len(got) != 1 || got[0].ID != chat2.ID {
		t.Fatalf("ListChats since = %+v", got)
	}
	if got, _ := f.s.ListChats(ctx, store.ChatQuery{AgentID: f.agent.ID, PerPage: 1, Page: 2}); len(got) != 1 || got[0].ID != chat.ID {
		t.Fatalf("ListChats page 2 = %+v", got)
	}
	if got, _ := f.s.ListChats(ctx, store.ChatQuery{AgentID: f.agent.ID + 1000}); len(got) != 0 {
		t.Fatalf("another agent's chats = %+v", got)
	}

	// LastAssistantText skips turns without text.
	if s, err := f.s.LastAssistantText(ctx, chat.ID); s != nil || err != nil {
		t.Fatalf("LastAssistantText without turns = %v, %v", s, err)
	}
	claimed, err := f.s.ClaimQueued(ctx, "w", time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	_ = claimed
	if _, err := f.s.AppendMessages(ctx, chat.ID, "w", []store.NewTaskMessage{
		{Role: store.RoleAssistant, Text: "first words"},
		{Role: store.RoleAssistant, ToolCalls: []store.MessageToolCall{{ProviderCallID: "c1", Name: "x", Arguments: []byte("{}")}}},
	}); err != nil {
		t.Fatal(err)
	}
	if s, err := f.s.LastAssistantText(ctx, chat.ID); err != nil || s == nil || *s != "first words" {
		t.Fatalf("LastAssistantText = %v, %v", s, err)
	}
}
