// Package svc embeds the contract documents (openapi.yaml, agent-template.schema.json,
// plugin.schema.json) so the
// binary serves exactly what it implements.
package svc

import _ "embed"

// OpenAPI is openapi.yaml, served at {prefix}/api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// TemplateSchema is agent-template.schema.json, the agent template format (JSON Schema draft
// 2020-12), served at {prefix}/schemas/agent-template.schema.json.
//
//go:embed agent-template.schema.json
var TemplateSchema []byte

// PluginSchema is plugin.schema.json, the plugin manifest format (JSON Schema draft 2020-12),
// served at {prefix}/schemas/plugin.schema.json.
//
//go:embed plugin.schema.json
var PluginSchema []byte
