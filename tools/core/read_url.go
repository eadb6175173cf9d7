package core

import "github.com/agentsvc/svc/tools"

// ReadURLTool fetches a public web address (HTML, JSON, XML, RSS) and returns it as Markdown or
// text. Addresses that resolve to private networks are refused (SSRF screen); requests time out
// after tool_http_timeout.
type ReadURLTool struct{}

// Spec declares the tool.
func (ReadURLTool) Spec() tools.Spec {
	return tools.Spec{
		Class:            "core.ReadURLTool",
		Name:             "read_url",
		DisplayName:      "Read URL",
		Description:      "Fetch a public web page or feed (HTML, JSON, XML, RSS) and return its content as Markdown.",
		Category:         tools.CategoryResearch,
		Icon:             "globe",
		RecommendsSkills: []string{"web-research"},
		Operations:       []tools.Operation{op("fetch", "Fetch the URL and convert the content.")},
		Params: []tools.Param{
			{Name: "url", Type: tools.TypeString, Format: "uri", Description: "Absolute http or https URL."},
			{
				Name: "format", Type: tools.TypeString, Description: "Output: markdown (readable page), text (plain text) or raw (body as received).",
				Enum: []string{"markdown", "text", "raw"}, Default: "markdown",
			},
		},
		Settings: []tools.Setting{
			{
				Key: "allowed_domains", Label: "Allowed domains", Type: tools.SettingStringList,
				Description: "Only these domains (and their subdomains) may be fetched. Empty allows every public address.",
			},
			{
				Key: "blocked_domains", Label: "Blocked domains", Type: tools.SettingStringList,
				Description: "These domains (and their subdomains) are never fetched.",
			},
			{
				Key: "max_bytes", Label: "Maximum size (bytes)", Type: tools.SettingInteger,
				Description: "Responses larger than this are cut off.", Default: 1048576,
			},
			{
				Key: "user_agent", Label: "User agent", Type: tools.SettingString,
				Description: "User-Agent header sent with each request; empty uses the service's own.",
			},
		},
	}
}
