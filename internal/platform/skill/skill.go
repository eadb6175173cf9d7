// Package skill reads Agent Skills: folders holding a SKILL.md (YAML front matter, then Markdown
// instructions) and optional files, as defined by the open Agent Skills format. Skills come from
// ordered providers — the shipped skills first, then plugins' skill directories — into an Index
// the skill tool and the discovery payload read. The model sees names and descriptions and loads
// bodies and files on demand.
package skill

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Limits of the format as this service applies it.
const (
	MaxSkillFileBytes   = 256 << 10 // SKILL.md
	MaxFileBytes        = 256 << 10 // a file read through ReadFile
	MaxFiles            = 100       // files listed per skill
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024 // characters
	MaxCompatibilityLen = 500  // characters
	MaxMetadataEntries  = 64
	MaxAllowedTools     = 64
)

// ManifestName is the file that makes a folder a skill.
const ManifestName = "SKILL.md"

// Skill is one parsed skill.
type Skill struct {
	// Name is the slug, equal to the folder name.
	Name string
	// Description says what the skill does and when to use it; the model chooses by it.
	Description string
	// License, Compatibility, Metadata and AllowedTools are the optional front matter fields.
	License       string
	Compatibility string
	Metadata      map[string]string
	AllowedTools  []string
	// Body is the Markdown after the front matter: the instructions.
	Body string
	// Source names the provider the skill came from (CoreSource for shipped skills); set by the
	// Index, empty after Parse.
	Source string
}

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidName reports whether s is a skill slug: lowercase letters, digits and single hyphens, 1
// to 64 characters, no leading or trailing hyphen.
func ValidName(s string) bool {
	return len(s) <= MaxNameLen && slugPattern.MatchString(s)
}

// Parse reads the SKILL.md of the folder called folder. It fails with an error wrapping
// svcerr.ErrTooLarge for a file over MaxSkillFileBytes, and svcerr.ErrInvalid for anything else
// that breaks the format: no front matter, YAML that does not parse or is not a mapping, an
// unknown or repeated key, a name that is not a valid slug or differs from the folder, a missing
// or too long description, or optional fields of the wrong shape.
func Parse(folder string, data []byte) (Skill, error) {
	if len(data) > MaxSkillFileBytes {
		return Skill{}, svcerr.New(svcerr.ErrTooLarge, "skill %s: %s is larger than %d bytes", folder, ManifestName, MaxSkillFileBytes)
	}
	s, msg := parse(folder, data)
	if msg != "" {
		return Skill{}, svcerr.New(svcerr.ErrInvalid, "skill %s: %s", folder, msg)
	}
	return s, nil
}

func parse(folder string, data []byte) (Skill, string) {
	if !utf8.Valid(data) {
		return Skill{}, ManifestName + " is not UTF-8 text"
	}
	front, body, ok := splitFrontMatter(data)
	if !ok {
		return Skill{}, ManifestName + " must start with YAML front matter between --- lines"
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return Skill{}, fmt.Sprintf("front matter: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return Skill{}, "front matter must be a YAML mapping"
	}
	root := doc.Content[0]
	s := Skill{Body: body}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return Skill{}, "front matter keys must be strings"
		}
		key := k.Value
		if seen[key] {
			return Skill{}, fmt.Sprintf("front matter key %q repeated", key)
		}
		seen[key] = true
		var msg string
		switch key {
		case "name":
			s.Name, msg = scalar(key, v)
		case "description":
			s.Description, msg = scalar(key, v)
		case "license":
			s.License, msg = scalar(key, v)
		case "compatibility":
			s.Compatibility, msg = scalar(key, v)
		case "metadata":
			s.Metadata, msg = stringMap(key, v)
		case "allowed-tools":
			s.AllowedTools, msg = toolList(key, v)
		default:
			msg = fmt.Sprintf("unknown front matter key %q (allowed: name, description, license, compatibility, metadata, allowed-tools)", key)
		}
		if msg != "" {
			return Skill{}, msg
		}
	}
	switch {
	case s.Name == "":
		return Skill{}, "front matter needs a name"
	case !ValidName(s.Name):
		return Skill{}, fmt.Sprintf("name %q is not a valid skill name (lowercase letters, digits and single hyphens, at most %d characters, no leading or trailing hyphen)", s.Name, MaxNameLen)
	case s.Name != folder:
		return Skill{}, fmt.Sprintf("name %q must equal the folder name", s.Name)
	case strings.TrimSpace(s.Description) == "":
		return Skill{}, "front matter needs a description"
	case utf8.RuneCountInString(s.Description) > MaxDescriptionLen:
		return Skill{}, fmt.Sprintf("description is longer than %d characters", MaxDescriptionLen)
	case utf8.RuneCountInString(s.Compatibility) > MaxCompatibilityLen:
		return Skill{}, fmt.Sprintf("compatibility is longer than %d characters", MaxCompatibilityLen)
	}
	return s, ""
}

// splitFrontMatter separates the YAML between the opening and closing `---` lines from the body.
func splitFrontMatter(data []byte) (front []byte, body string, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, found := cutLine(data)
	if !found || strings.TrimRight(string(first), " \t") != "---" {
		return nil, "", false
	}
	start := len(data) - len(rest)
	for len(rest) > 0 {
		var line []byte
		before := len(data) - len(rest)
		line, rest, _ = cutLine(rest)
		if strings.TrimRight(string(line), " \t") == "---" {
			return data[start:before], strings.TrimLeft(string(rest), "\r\n"), true
		}
	}
	return nil, "", false
}

// cutLine returns the first line of b without its line ending, and what follows it.
func cutLine(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func scalar(key string, v *yaml.Node) (string, string) {
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", fmt.Sprintf("%s must be a string", key)
	}
	if v.Tag == "!!null" {
		return "", ""
	}
	return v.Value, ""
}

func stringMap(key string, v *yaml.Node) (map[string]string, string) {
	if v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, ""
	}
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, fmt.Sprintf("%s must be a mapping of strings", key)
	}
	if len(v.Content)/2 > MaxMetadataEntries {
		return nil, fmt.Sprintf("%s has more than %d entries", key, MaxMetadataEntries)
	}
	m := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := resolve(v.Content[i]), resolve(v.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || val == nil || val.Kind != yaml.ScalarNode {
			return nil, fmt.Sprintf("%s must be a mapping of strings", key)
		}
		if _, dup := m[k.Value]; dup {
			return nil, fmt.Sprintf("%s key %q repeated", key, k.Value)
		}
		m[k.Value] = val.Value
	}
	return m, ""
}

// toolList accepts the space-separated string of the format ("Bash(git:*) Read") or a list.
func toolList(key string, v *yaml.Node) ([]string, string) {
	var out []string
	switch {
	case v == nil:
		return nil, fmt.Sprintf("%s must be a string or a list of strings", key)
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, ""
	case v.Kind == yaml.ScalarNode:
		out = strings.Fields(v.Value)
	case v.Kind == yaml.SequenceNode:
		for _, item := range v.Content {
			item = resolve(item)
			if item == nil || item.Kind != yaml.ScalarNode || strings.TrimSpace(item.Value) == "" {
				return nil, fmt.Sprintf("%s must be a string or a list of non-empty strings", key)
			}
			out = append(out, strings.TrimSpace(item.Value))
		}
	default:
		return nil, fmt.Sprintf("%s must be a string or a list of strings", key)
	}
	if len(out) > MaxAllowedTools {
		return nil, fmt.Sprintf("%s lists more than %d tools", key, MaxAllowedTools)
	}
	return out, ""
}
