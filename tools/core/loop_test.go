package core_test

import (
	"github.com/agentsvc/svc/agentloop"
	"github.com/agentsvc/svc/internal/domain/schedule"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools/core"
	"github.com/agentsvc/svc/tools/toolconfig"
)

// The tests that run core tools through the agent loop use the loop test kit
// (agentloop/looptest): looptest.New builds the fixture, Fixture.Executors rebuilds the core
// executors over the services a test hands them.

// The services the server hands the core executors (server/runtime.go) satisfy their interfaces.
var (
	_ core.UserInfoSource  = (*store.Store)(nil)
	_ core.MediaSource     = (*store.Store)(nil)
	_ core.ScheduleService = (*schedule.Service)(nil)
	_ core.AgentService    = (*toolconfig.Service)(nil)
	_ core.TodoStore       = (*agentloop.TodoBoard)(nil)
	_ core.SubAgents       = agentloop.SubAgents{}
)
