// Package svc embeds the contract documents so the binary serves exactly what it implements.
package svc

import _ "embed"

// OpenAPI is openapi.yaml, served at {prefix}/api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
