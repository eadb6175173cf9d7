// Package agenttemplates ships the built-in agent templates (ids core/<name>). The catalog
// reads them with agenttemplate.LoadDir(FS, "core").
package agenttemplates

import "embed"

// FS holds the core templates as core/<name>.json.
//
//go:embed core/*.json
var FS embed.FS
