package agenttemplate

import (
	"bytes"
	"encoding/json"

	svc "github.com/agentsvc/svc"
)

// schemaFile is the template format as a JSON Schema (draft 2020-12), the repository's
// agent-template.schema.json. Its $id is a placeholder replaced by SchemaJSON with the
// deployment's address.
var schemaFile = svc.TemplateSchema

// schemaIDPlaceholder is the $id written in the file (the address of the example deployment
// used throughout openapi.yaml).
const schemaIDPlaceholder = `"$id": "https://svc.example.com/svc/schemas/agent-template.schema.json"`

// SchemaJSON returns the JSON Schema of the template format with $id set to schemaURL, the
// address the deployment serves it at ({app_prefix}/schemas/agent-template.schema.json as an
// absolute URL: {schema_url}). An empty schemaURL keeps the placeholder. The result is a fresh
// slice.
func SchemaJSON(schemaURL string) []byte {
	if schemaURL == "" {
		return bytes.Clone(schemaFile)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(schemaURL) // a string always encodes
	id := `"$id": ` + string(bytes.TrimSpace(buf.Bytes()))
	return bytes.Replace(schemaFile, []byte(schemaIDPlaceholder), []byte(id), 1)
}
