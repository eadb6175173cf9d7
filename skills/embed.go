// Package skills holds the Agent Skills shipped with the service, one folder per skill, embedded
// in the binary. It is the first skill provider, so no plugin can shadow a shipped skill.
package skills

import (
	"embed"

	"github.com/agentsvc/svc/internal/platform/skill"
)

// FS holds every shipped skill folder at its root (web-research/SKILL.md, …).
//
//go:embed */*
var FS embed.FS

// Provider returns the shipped skills as the core skill provider.
func Provider() skill.Provider {
	return skill.Provider{Source: skill.CoreSource, FS: FS}
}
