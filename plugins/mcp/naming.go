package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
)

// maxToolName is the longest model-facing name the tool registry accepts.
const maxToolName = 64

// sanitize maps an MCP name (any characters; typically [A-Za-z0-9_.-]) to the registry's
// `[a-z0-9_]` alphabet: camelCase boundaries and every other character become one underscore,
// letters are lowercased, and leading and trailing underscores are dropped. It may return "" and
// may map two names to one; callers handle both.
func sanitize(s string) string {
	var b strings.Builder
	prev := rune(0)
	underscore := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for _, r := range s {
		switch {
		case r < unicode.MaxASCII && unicode.IsUpper(r):
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				underscore()
			}
			b.WriteRune(unicode.ToLower(r))
		case r < unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			underscore()
		}
		prev = r
	}
	return strings.Trim(b.String(), "_")
}

// shortHash is a stable 6-hex-digit tag of an MCP name, used to tell apart names that sanitise
// alike or are too long.
func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:3])
}

// toolName is the registered name of an MCP tool: `<server>_<tool>`, sanitised, starting with a
// letter, at most maxToolName characters (a longer one is cut and tagged with a hash of the
// original names so that it stays unique and stable).
func toolName(server, tool string) string {
	name := sanitize(server) + "_" + sanitize(tool)
	name = strings.Trim(name, "_")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "t_" + name
	}
	if len(name) > maxToolName {
		name = strings.TrimRight(name[:maxToolName-7], "_") + "_" + shortHash(server, tool)
	}
	return name
}

// withTag appends the hash tag of an MCP name to a registered name, keeping the length limit.
func withTag(name, server, tool string) string {
	tag := "_" + shortHash(server, tool)
	if len(name)+len(tag) > maxToolName {
		name = strings.TrimRight(name[:maxToolName-len(tag)], "_")
	}
	return name + tag
}

// typeName is the TypeName part of a tool class for a registered name: `Mcp` followed by the
// name in CamelCase (`files_read_file` gives `McpFilesReadFile`).
func typeName(name string) string {
	var b strings.Builder
	b.WriteString("Mcp")
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

// assignNames gives each MCP tool of one server its registered name and class, stable across
// refreshes: a name that sanitises to one already taken (ordered by the MCP name, so the choice
// does not depend on the server's listing order) gets the hash tag of its original name.
// The result maps MCP name → [name, class].
func assignNames(slug, server string, mcpNames []string) map[string][2]string {
	sorted := append([]string(nil), mcpNames...)
	// Exact names first: a tool whose sanitised form is itself keeps the plain name.
	slices.SortFunc(sorted, func(a, b string) int {
		ea, eb := sanitize(a) == a, sanitize(b) == b
		switch {
		case ea && !eb:
			return -1
		case eb && !ea:
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make(map[string][2]string, len(sorted))
	names, classes := map[string]bool{}, map[string]bool{}
	for _, m := range sorted {
		name := toolName(server, m)
		class := slug + "." + typeName(name)
		if names[name] || classes[class] {
			name = withTag(name, server, m)
			class = slug + "." + typeName(name)
		}
		names[name], classes[class] = true, true
		out[m] = [2]string{name, class}
	}
	return out
}
