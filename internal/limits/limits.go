// Package limits holds the bounds that the contract (openapi.yaml, agent-template.schema.json)
// states and the Go code checks again (the store, the services, the template validator, the
// agent loop's tools), each written once here. limits_test.go reads both documents and fails
// when a schema property that carries one of these bounds says otherwise, so the contract and
// the code cannot drift apart. A leaf package: it imports nothing of the project, so the store
// may use it too.
package limits

// Step budgets of a task (document 1: 1 to 100, default 10): an agent's max_steps (agents,
// templates, the agent tools), a task's max_steps, a continuation's additional_steps, a prompt
// template's max_steps and a scheduled run's max_steps_override.
const (
	MinSteps     = 1
	MaxSteps     = 100
	DefaultSteps = 10 // an agent's max_steps when none is given
)

// Paging of list operations (per_page): at most MaxPerPage entries a page, DefaultPerPage when
// none is asked (or a value below 1).
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
)
