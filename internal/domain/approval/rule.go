// Package approval holds who may decide a task's pending tool calls and questions (issue 26):
// the one rule (MayDecide) the task actions, the approvals inbox and the notification fan-out
// apply. The inbox, batch decisions and the approval timeout are package inbox's.
package approval

import (
	"slices"

	"github.com/agentsvc/svc/internal/domain/access"
	"github.com/agentsvc/svc/store"
)

// MayDecide reports whether the user whose scope is sc may approve, reject or answer what task
// t of agent a waits for. The agent's approvers name who may: the task's owner (Owner), the
// managers of the agent's principal (Managers: what access.Scope.CanManage grants — the
// personal principal's user, the group's owners and admins, administrators), named users
// (Users). A per-agent API chat (t.APIKeyID set) is decided by its key holders through the
// chat API (document 2); through a session only its owner may, as before approvers existed.
func MayDecide(sc *access.Scope, a *store.Agent, t *store.Task) bool {
	if sc == nil || a == nil || t == nil || a.ID != t.AgentID {
		return false
	}
	if t.APIKeyID != nil {
		return t.UserID == sc.UserID
	}
	ap := a.Approvers
	switch {
	case ap.Owner && t.UserID == sc.UserID:
		return true
	case ap.Managers && sc.CanManage(a.PrincipalID):
		return true
	}
	return slices.Contains(ap.Users, sc.UserID)
}
