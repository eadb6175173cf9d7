// Package svc embeds the contract documents (openapi.yaml, agent-template.schema.json,
// plugin.schema.json) so the binary serves exactly what it implements, and the built web
// console (web/dist) so the binary serves it at {prefix}/.
package svc

import (
	"embed"
	"io/fs"
)

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

//go:embed all:web/dist
var consoleFiles embed.FS

// Console is the built web console (web/dist, written by `make web`), served at {prefix}/. When
// the bundle was not built it holds only the committed marker and no index.html; the server
// then answers a page saying how to build it.
var Console fs.FS = mustSub(consoleFiles, "web/dist")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
