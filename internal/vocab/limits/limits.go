// Package limits holds the bounds that the contract (openapi.yaml, agent-template.schema.json)
// states and the Go code checks again (the store, the services, the template validator, the
// agent loop's tools), each written once here. contract_test.go reads both documents and fails
// when a schema that carries one of these bounds says otherwise (or is gone), so the contract
// and the code cannot drift apart. Bounds only the store knows (column sizes) stay in the
// store. A leaf package: it imports nothing of the project, so the store may use it too.
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

// The palette search's hits (limit): DefaultSearchHits when none is asked, at most
// MaxSearchHits.
const (
	DefaultSearchHits = 20
	MaxSearchHits     = 50
)

// Accounts and profiles, in characters.
const (
	EmailLen       = 254 // every address: accounts, members, mail settings (RFC 5321's path less the brackets)
	DisplayNameLen = 100
	MinPasswordLen = 8   // a new password
	MaxPasswordLen = 256 // the account service counts it in bytes, the contract in characters
	ProfileNameLen = 100 // a profile's first and last name, a location's name
	BioLen         = 5000
	LocaleLen      = 35
	TimezoneLen    = 64 // an IANA zone name: profiles, scheduled runs
	AddressLen     = 500
	SelectorLen    = 64 // the selector of a mailed link (verification, password reset)
)

// Agents and agent templates, in characters.
const (
	AgentNameLen           = 200 // an agent's, and a template's, name
	AgentDescriptionLen    = 2000
	AgentNotesLen          = 200000
	TemplateIDLen          = 130
	TemplateDescriptionLen = 1000
	TemplateMetadataLen    = 64  // a template's metadata category and icon
	ToolClassLen           = 200 // a tool class as agents and templates name it
	OperationNameLen       = 100 // a tool operation as agents and templates name it
)

// Agent memory (the memory tool, issue 25): a memory's text and a recall query in characters,
// the memories one agent keeps (all users together), and the query words recall matches.
const (
	MemoryTextLen       = 2000
	MemoryQueryLen      = 500
	MaxMemoriesPerAgent = 100_000
	MaxMemoryQueryTerms = 16
	TemplateMemories    = 1000 // the agent-wide memories an agent template carries
)

// Groups, model configurations and per-agent API keys, in characters.
const (
	GroupNameLen        = 100
	GroupDescriptionLen = 1000
	LLMConfigNameLen    = 100
	LLMModelLen         = 200
	LLMAPIKeyLen        = 4096
	APIKeyNameLen       = 100
	URLLen              = 2048 // a URL: a model configuration's base_url, a chat's callback_url, a template's $schema
)

// Numbers of a model configuration (each at least 1, the temperature at least 0).
const (
	MaxLLMTemperature   = 2
	MaxLLMTokensOutput  = 1_000_000
	MaxLLMContextWindow = 10_000_000
	// MaxLLMPriceMicros bounds a price per million tokens (1e12 micro-units: a million per
	// million tokens), so a year of tokens times a price stays far inside int64.
	MaxLLMPriceMicros    = 1_000_000_000_000
	MaxLLMTimeoutSeconds = 3600
)

// A media file's name, in characters (inline files of chats, uploads, derivatives).
const FilenameLen = 255

// The mail server's address (a DNS name's longest form) and TCP ports.
const (
	HostLen = 253
	MaxPort = 65535
)

// Media derivatives: the largest side in pixels, the encoder quality.
const (
	MaxDerivativeSide = 8192
	MinQuality        = 1
	MaxQuality        = 100
	DefaultQuality    = 85
)

// Prompt templates and scheduled runs.
const (
	PromptTemplateNameLen        = 100 // characters
	PromptTemplateDescriptionLen = 1000
	PromptTemplateTextLen        = 100000
	PromptVariables              = 50 // variables of a template, values of a run
	PromptVariableKeyLen         = 64
	PromptVariableValueLen       = 10000
	ScheduleNameLen              = 100
	CronLen                      = 200
)
