package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/platform/push"
	"github.com/agentsvc/svc/internal/vocab/taskstate"
)

// listNotifications returns the caller's notifications (query q) and the unread count.
func listNotifications(t *testing.T, c *apitest.Client, q string) ([]gen.Notification, int64) {
	t.Helper()
	var r gen.NotificationListResponse
	c.Get("/notifications"+q).Expect(t, http.StatusOK).Decode(t, &r)
	return r.Data.Notifications, r.Data.UnreadCount
}

// TestNotifications is issue 12's walkthrough for in-app notifications: the owner of a task is
// notified when it pauses for approval and, following completions, when it completes (pushed
// on their notification topic as well), the approval's notification read once decided; a group
// member subscribed to the agent is notified of the owner's task too,
// and stops being notified once the agent is no longer visible to them; a subscription to an
// invisible agent is 404; read, read-all, delete and delete-all act on the caller's own only.
// Not parallel: the scripted driver reads its script from the working directory.
func TestNotifications(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	turns := `[
	  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}}]},
	  {"text": "42."}
	]`
	if err := os.WriteFile(filepath.Join(work, "script.json"), []byte(turns+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.New(t)
	owner, ownerU := env.UserClient("owner@example.com")
	member, memberU := env.UserClient("member@example.com")
	outsider, _ := env.UserClient("outsider@example.com")

	var g struct {
		Data struct{ Group gen.Group } `json:"data"`
	}
	owner.Post("/groups", map[string]any{"name": "Lab"}).Expect(t, 201).Decode(t, &g)
	owner.Post(fmt.Sprintf("/groups/%d/members", g.Data.Group.Id), map[string]any{"user_id": fmt.Sprint(memberU.Id), "role": "member"}).Expect(t, 201)
	owner.Post(fmt.Sprintf("/groups/%d/llm-configs", g.Data.Group.Id), map[string]any{
		"name": "script", "driver": "scripted", "model": "script", "base_url": "script.json", "is_default": true,
	}).Expect(t, 201)
	var a gen.AgentResponse
	owner.Post("/agents", map[string]any{"name": "Calc", "system_prompt": "Compute.", "principal_id": g.Data.Group.PrincipalId}).
		Expect(t, 201).Decode(t, &a)
	agentID := a.Data.Agent.Id
	tp := fmt.Sprintf("/agents/%d/tools/core.CalculatorTool", agentID)
	owner.Post(tp+"/enable", nil).Expect(t, 200)
	owner.Patch(tp+"/operations/calculate", map[string]any{"enabled": true, "auto_approve": false}).Expect(t, 200)

	// Subscriptions: the member follows the agent (pending approvals only, then every kind);
	// the outsider cannot see it.
	var sub gen.NotificationSubscriptionResponse
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": agentID, "kinds": []string{"pending_approval"}}).
		Expect(t, http.StatusCreated).Decode(t, &sub)
	if sub.Data.Subscription.Id == "" || len(sub.Data.Subscription.Kinds) != 1 || sub.Data.Subscription.Email {
		t.Fatalf("subscription = %+v", sub.Data.Subscription)
	}
	outsider.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": agentID}).Expect(t, http.StatusNotFound, "NOT_FOUND")
	outsider.Post("/notifications/subscriptions", map[string]any{"target_type": "principal", "target_id": g.Data.Group.PrincipalId}).Expect(t, http.StatusNotFound, "NOT_FOUND")
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": agentID, "kinds": []string{"nope"}}).Expect(t, http.StatusUnprocessableEntity)

	// The owner is told of approvals without a subscription; of completions when they follow
	// them (here through the group's principal).
	owner.Post("/notifications/subscriptions", map[string]any{"target_type": "principal", "target_id": g.Data.Group.PrincipalId,
		"kinds": []string{"task_completed"}}).Expect(t, http.StatusCreated)
	events := followTopic(t, env, owner, push.NotificationTopic(ownerU.Id))

	var created gen.TaskResponse
	owner.Post("/tasks", map[string]any{"agent_id": agentID, "prompt": "What is 6*7?"}).Expect(t, 201).Decode(t, &created)
	if tk := runQueued(t, env.App); tk.Status != taskstate.PendingApproval {
		t.Fatalf("task is %s", tk.Status)
	}
	var pushed gen.Notification
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &pushed); err != nil || pushed.Kind != "pending_approval" || pushed.TaskId == nil || *pushed.TaskId != created.Data.Task.Id {
		t.Fatalf("pushed %+v, %v", pushed, err)
	}
	for _, c := range []*apitest.Client{owner, member} {
		ns, unread := listNotifications(t, c, "")
		if len(ns) != 1 || unread != 1 || ns[0].Kind != "pending_approval" || ns[0].Title != "Calc needs approval" || *ns[0].AgentId != agentID {
			t.Fatalf("notifications = %+v (unread %d)", ns, unread)
		}
	}
	if ns, _ := listNotifications(t, outsider, ""); len(ns) != 0 {
		t.Fatalf("the outsider was notified: %+v", ns)
	}

	env.Clock.Advance(time.Second) // notifications of one instant have no order among themselves
	owner.Post(fmt.Sprintf("/tasks/%d/approve", created.Data.Task.Id), map[string]any{"decisions": []map[string]any{
		{"provider_call_id": "c1", "decision": "approve"}}}).Expect(t, 200)
	if tk := runQueued(t, env.App); tk.Status != taskstate.Completed {
		t.Fatalf("task is %s", tk.Status)
	}
	if err := json.Unmarshal([]byte(nextEvent(t, events)), &pushed); err != nil || pushed.Kind != "task_completed" {
		t.Fatalf("pushed %+v, %v", pushed, err)
	}
	// The approval was decided: its notification is read, the owner's and the member's.
	ns, unread := listNotifications(t, owner, "")
	if len(ns) != 2 || unread != 1 || ns[0].Kind != "task_completed" || ns[1].Kind != "pending_approval" || ns[1].ReadAt == nil {
		t.Fatalf("owner's notifications = %+v", ns)
	}
	if ms, _ := listNotifications(t, member, ""); len(ms) != 1 || ms[0].ReadAt == nil {
		t.Fatalf("the member's pending_approval subscription delivered %+v", ms)
	}

	// Read, read all, filters, delete; another user's id is 404.
	var read gen.NotificationResponse
	owner.Post("/notifications/"+ns[1].Id+"/read", nil).Expect(t, http.StatusOK).Decode(t, &read)
	if read.Data.Notification.ReadAt == nil {
		t.Fatal("not read")
	}
	env.Clock.Advance(1)
	var again gen.NotificationResponse
	owner.Post("/notifications/"+ns[1].Id+"/read", nil).Expect(t, http.StatusOK).Decode(t, &again)
	if !again.Data.Notification.ReadAt.Equal(*read.Data.Notification.ReadAt) {
		t.Fatal("a second read moved read_at")
	}
	member.Post("/notifications/"+ns[1].Id+"/read", nil).Expect(t, http.StatusNotFound, "NOT_FOUND")
	member.Delete("/notifications/"+ns[1].Id).Expect(t, http.StatusNotFound, "NOT_FOUND")
	if un, unread := listNotifications(t, owner, "?unread=true"); len(un) != 1 || unread != 1 || un[0].Id != ns[0].Id {
		t.Fatalf("unread = %+v (%d)", un, unread)
	}
	if rd, _ := listNotifications(t, owner, "?unread=false"); len(rd) != 1 || rd[0].Id != ns[1].Id {
		t.Fatalf("read = %+v", rd)
	}
	var all gen.NotificationsMarkedReadResponse
	owner.Post("/notifications/read-all", nil).Expect(t, http.StatusOK).Decode(t, &all)
	if all.Data.Updated != 1 {
		t.Fatalf("read-all updated %d", all.Data.Updated)
	}
	owner.Delete("/notifications/"+ns[0].Id).Expect(t, http.StatusOK)
	owner.Delete("/notifications").Expect(t, http.StatusOK)
	if left, _ := listNotifications(t, owner, ""); len(left) != 0 {
		t.Fatalf("left after delete all: %+v", left)
	}
	if ms, _ := listNotifications(t, member, ""); len(ms) != 1 {
		t.Fatal("the owner's delete-all touched the member's notifications")
	}

	// Re-subscribing replaces the kinds (200); once the member leaves the group the agent is
	// invisible to them and the subscription stops delivering.
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": agentID, "email": true}).
		Expect(t, http.StatusOK).Decode(t, &sub)
	if len(sub.Data.Subscription.Kinds) != 0 || !sub.Data.Subscription.Email {
		t.Fatalf("replaced subscription = %+v", sub.Data.Subscription)
	}
	owner.Delete(fmt.Sprintf("/groups/%d/members/%d", g.Data.Group.Id, memberU.Id)).Expect(t, http.StatusOK)
	// The owner opts into email for approvals on the agent.
	owner.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": agentID,
		"kinds": []string{"pending_approval"}, "email": true}).Expect(t, http.StatusCreated)
	owner.Post("/tasks", map[string]any{"agent_id": agentID, "prompt": "Again?"}).Expect(t, 201)
	runQueued(t, env.App)
	if ms, _ := listNotifications(t, member, ""); len(ms) != 1 {
		t.Fatalf("a subscription to an invisible agent delivered: %+v", ms)
	}
	mailed := 0
	for _, m := range env.Mails() {
		if m.Subject == "Calc needs approval" {
			if len(m.To) != 1 || m.To[0] != string(ownerU.Email) {
				t.Fatalf("notification mail to %v", m.To)
			}
			mailed++
		}
	}
	if mailed != 1 {
		t.Fatalf("%d notification mails, want 1 (the owner's email subscription)", mailed)
	}

	// Unsubscribe by id, by target, idempotent; naming neither is 422.
	var list gen.NotificationSubscriptionListResponse
	member.Get("/notifications/subscriptions").Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Data.Subscriptions) != 1 {
		t.Fatalf("subscriptions = %+v", list.Data.Subscriptions)
	}
	var del gen.DeletedResponse
	member.Delete("/notifications/subscriptions?id="+list.Data.Subscriptions[0].Id).Expect(t, http.StatusOK).Decode(t, &del)
	if !del.Data.Deleted {
		t.Fatal("not deleted")
	}
	member.Delete(fmt.Sprintf("/notifications/subscriptions?target_type=agent&target_id=%d", agentID)).Expect(t, http.StatusOK).Decode(t, &del)
	if del.Data.Deleted {
		t.Fatal("deleted twice")
	}
	member.Delete("/notifications/subscriptions").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	member.Delete(fmt.Sprintf("/notifications/subscriptions?id=nsb_x&target_type=agent&target_id=%d", agentID)).
		Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR") // both forms
	member.Delete("/notifications/subscriptions?target_type=agent").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	member.Post("/notifications/ntf_unknown/read", nil).Expect(t, http.StatusNotFound, "NOT_FOUND")
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": 999999}).Expect(t, http.StatusNotFound, "NOT_FOUND")
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "group", "target_id": agentID}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	member.Post("/notifications/subscriptions", map[string]any{"target_type": "agent", "target_id": "7"}).Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	member.Get("/notifications?unread=maybe").Expect(t, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
}
