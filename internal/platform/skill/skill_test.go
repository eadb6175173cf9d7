package skill_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

func TestParseGood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want skill.Skill
	}{
		{
			name: "minimal",
			in:   "---\nname: pdf\ndescription: Work with PDF files.\n---\n# PDF\n\nBody.\n",
			want: skill.Skill{Name: "pdf", Description: "Work with PDF files.", Body: "# PDF\n\nBody.\n"},
		},
		{
			name: "every field, allowed-tools as a string",
			in: "---\nname: pdf\ndescription: >\n  Work with\n  PDF files.\nlicense: MIT\ncompatibility: Needs python3\n" +
				"metadata:\n  author: acme\n  version: \"1.0\"\n  count: 3\nallowed-tools: Bash(git:*)  Read\n---\n\nBody",
			want: skill.Skill{
				Name: "pdf", Description: "Work with PDF files.\n", License: "MIT", Compatibility: "Needs python3",
				Metadata:     map[string]string{"author": "acme", "version": "1.0", "count": "3"},
				AllowedTools: []string{"Bash(git:*)", "Read"}, Body: "Body",
			},
		},
		{
			name: "allowed-tools as a list, CRLF line endings, BOM",
			in:   "\ufeff---\r\nname: pdf\r\ndescription: d\r\nallowed-tools:\r\n  - read_url\r\n  - time\r\n---\r\nBody\r\n",
			want: skill.Skill{Name: "pdf", Description: "d", AllowedTools: []string{"read_url", "time"}, Body: "Body\r\n"},
		},
		{
			name: "empty body, null optional fields, trailing spaces on markers",
			in:   "---  \nname: pdf\ndescription: d\nlicense:\nmetadata:\nallowed-tools:\n--- \n",
			want: skill.Skill{Name: "pdf", Description: "d"},
		},
		{
			name: "aliases resolve",
			in:   "---\nname: &n pdf\ndescription: *n\n---\n",
			want: skill.Skill{Name: "pdf", Description: "pdf"},
		},
		{
			name: "name is a YAML number that is a valid slug",
			in:   "---\nname: 123\ndescription: d\n---\n",
			want: skill.Skill{Name: "123", Description: "d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			folder := tt.want.Name
			got, err := skill.Parse(folder, []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	t.Parallel()
	fm := func(s string) string { return "---\n" + s + "\n---\nbody\n" }
	tests := []struct {
		name, folder, in, want string
	}{
		{"no front matter", "pdf", "# PDF\n", "must start with YAML front matter"},
		{"empty file", "pdf", "", "must start with YAML front matter"},
		{"unclosed front matter", "pdf", "---\nname: pdf\ndescription: d\n", "must start with YAML front matter"},
		{"marker not on the first line", "pdf", "\n---\nname: pdf\n---\n", "must start with YAML front matter"},
		{"not UTF-8", "pdf", "---\nname: pdf\ndescription: \xff\n---\n", "not UTF-8"},
		{"YAML syntax error", "pdf", fm("name: [pdf"), "front matter:"},
		{"front matter a list", "pdf", fm("- name"), "must be a YAML mapping"},
		{"front matter a scalar", "pdf", fm("pdf"), "must be a YAML mapping"},
		{"front matter empty", "pdf", fm(""), "must be a YAML mapping"},
		{"unknown key", "pdf", fm("name: pdf\ndescription: d\nversion: 1"), `unknown front matter key "version"`},
		{"repeated key", "pdf", fm("name: pdf\nname: pdf\ndescription: d"), `"name" repeated`},
		{"missing name", "pdf", fm("description: d"), "needs a name"},
		{"null name", "pdf", fm("name:\ndescription: d"), "needs a name"},
		{"name a list", "pdf", fm("name: [pdf]\ndescription: d"), "name must be a string"},
		{"name uppercase", "PDF", fm("name: PDF\ndescription: d"), "not a valid skill name"},
		{"name leading hyphen", "-pdf", fm("name: -pdf\ndescription: d"), "not a valid skill name"},
		{"name trailing hyphen", "pdf-", fm("name: pdf-\ndescription: d"), "not a valid skill name"},
		{"name double hyphen", "pdf--x", fm("name: pdf--x\ndescription: d"), "not a valid skill name"},
		{"name underscore", "pdf_x", fm("name: pdf_x\ndescription: d"), "not a valid skill name"},
		{"name too long", strings.Repeat("a", 65), fm("name: " + strings.Repeat("a", 65) + "\ndescription: d"), "not a valid skill name"},
		{"name differs from folder", "pdf-tools", fm("name: pdf\ndescription: d"), "must equal the folder name"},
		{"missing description", "pdf", fm("name: pdf"), "needs a description"},
		{"blank description", "pdf", fm("name: pdf\ndescription: '  '"), "needs a description"},
		{"description a mapping", "pdf", fm("name: pdf\ndescription: {a: b}"), "description must be a string"},
		{"description too long", "pdf", fm("name: pdf\ndescription: " + strings.Repeat("é", 1025)), "longer than 1024"},
		{"compatibility too long", "pdf", fm("name: pdf\ndescription: d\ncompatibility: " + strings.Repeat("x", 501)), "longer than 500"},
		{"license a list", "pdf", fm("name: pdf\ndescription: d\nlicense: [MIT]"), "license must be a string"},
		{"metadata a list", "pdf", fm("name: pdf\ndescription: d\nmetadata: [a]"), "metadata must be a mapping"},
		{"metadata nested", "pdf", fm("name: pdf\ndescription: d\nmetadata:\n  a:\n    b: c"), "metadata must be a mapping"},
		{"metadata repeated key", "pdf", fm("name: pdf\ndescription: d\nmetadata:\n  a: 1\n  a: 2"), `metadata key "a" repeated`},
		{"allowed-tools a mapping", "pdf", fm("name: pdf\ndescription: d\nallowed-tools: {a: b}"), "allowed-tools must be a string or a list"},
		{"allowed-tools nested list", "pdf", fm("name: pdf\ndescription: d\nallowed-tools: [[a]]"), "allowed-tools must be a string or a list"},
		{"allowed-tools empty item", "pdf", fm("name: pdf\ndescription: d\nallowed-tools: ['']"), "non-empty strings"},
		{"allowed-tools too many", "pdf", fm("name: pdf\ndescription: d\nallowed-tools: " + strings.Repeat("t ", 65)), "more than 64"},
		{"key not a string", "pdf", fm("? [a]\n: b\nname: pdf\ndescription: d"), "keys must be strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := skill.Parse(tt.folder, []byte(tt.in))
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "skill "+tt.folder) {
				t.Errorf("error %q does not name the folder", err)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", skill.MaxSkillFileBytes)
	_, err := skill.Parse("pdf", []byte("---\nname: pdf\ndescription: d\n---\n"+body))
	if !errors.Is(err, svcerr.ErrTooLarge) {
		t.Errorf("got %v, want ErrTooLarge", err)
	}
	exact := "---\nname: pdf\ndescription: d\n---\n"
	exact += strings.Repeat("x", skill.MaxSkillFileBytes-len(exact))
	if _, err := skill.Parse("pdf", []byte(exact)); err != nil {
		t.Errorf("a file of exactly the limit: %v", err)
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a": true, "web-research": true, "a1-b2-c3": true, strings.Repeat("a", 64): true,
		"": false, "-a": false, "a-": false, "a--b": false, "A": false, "a_b": false, "a.b": false,
		"a b": false, strings.Repeat("a", 65): false, "ä": false,
	} {
		if got := skill.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
}

// FuzzParse feeds arbitrary SKILL.md content to the parser. It must never panic, and whatever it
// accepts must satisfy the format's rules.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"---\nname: pdf\ndescription: d\n---\nbody",
		"---\nname: pdf\ndescription: d\nmetadata:\n  a: b\nallowed-tools: [a, b]\n---\n",
		"---\r\nname: pdf\r\ndescription: d\r\n---\r\n",
		"---\na: &a [*a, *a]\nb: *a\n---\n",
		"---\nname: &x pdf\ndescription: *x\nmetadata: {<<: {a: 1}}\n---\n",
		"---\n? [a]\n: 1\n---\n",
		"---\nname: !!binary cGRm\ndescription: d\n---\n",
		"---\n---\n",
		"",
	} {
		f.Add("pdf", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, folder string, data []byte) {
		s, err := skill.Parse(folder, data)
		if err != nil {
			return
		}
		if s.Name != folder || !skill.ValidName(s.Name) {
			t.Fatalf("accepted name %q for folder %q", s.Name, folder)
		}
		if strings.TrimSpace(s.Description) == "" || len([]rune(s.Description)) > skill.MaxDescriptionLen {
			t.Fatalf("accepted description %q", s.Description)
		}
		if len(data) > skill.MaxSkillFileBytes {
			t.Fatalf("accepted %d bytes", len(data))
		}
	})
}
