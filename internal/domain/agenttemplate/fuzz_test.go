package agenttemplate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentsvc/svc/internal/domain/agenttemplate"
)

// FuzzValidate feeds arbitrary bytes to Validate as JSON, YAML and plain text. It must never
// panic; every finding has a known code of the right severity and a JSON Pointer path; Valid
// is exactly "no errors"; and a valid document parses into a template that marshals back into
// a valid document with the same warnings.
func FuzzValidate(f *testing.F) {
	for _, tc := range codeCases {
		f.Add([]byte(tc.input(f).Raw), uint8(0))
	}
	for _, seed := range []string{
		"id: a\nname: A\nversion: 1.0.0\nagent: {system_prompt: p}\n",
		"a: &a [*a, *a]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n",
		"id: !!str 1\nname: !custom x\n",
		"? [a]\n: 1\n",
		"agent:\n  max_steps: 0x10\n  max_retries: 1_000\n",
		"{\"id\": \"a\", \"name\": \"\\ud800\", \"version\": \"1.0.0\", \"agent\": {}}",
		"%YAML 1.2\n---\nid: a\n",
		"\xef\xbb\xbf{}",
	} {
		f.Add([]byte(seed), uint8(1))
	}
	cat := testCatalog()
	f.Fuzz(func(t *testing.T, raw []byte, sel uint8) {
		ct := []string{"application/json", "application/yaml", "text/plain"}[sel%3]
		in := agenttemplate.Input{Raw: raw, ContentType: ct, Source: []string{"uploaded", "core", "acme"}[sel/3%3]}
		rep := agenttemplate.Validate(in, cat)
		checkReport(t, rep)
		bare := agenttemplate.Validate(in, nil) // Parse validates without a catalog
		checkReport(t, bare)
		tpl, prep := agenttemplate.Parse(in)
		if (tpl != nil) != prep.Valid {
			t.Fatalf("Parse: template %v, report %+v", tpl, prep)
		}
		if diff := cmp.Diff(bare, prep); diff != "" {
			t.Fatalf("Parse and Validate without catalog differ (-validate +parse):\n%s", diff)
		}
		if tpl == nil {
			return
		}
		again, err := json.Marshal(tpl)
		if err != nil {
			t.Fatalf("marshal parsed template: %v", err)
		}
		rep2 := agenttemplate.Validate(agenttemplate.Input{Raw: again, ContentType: "application/json", Source: in.Source}, cat)
		if diff := cmp.Diff(rep, rep2); diff != "" {
			t.Fatalf("warnings changed by a round trip (-first +second):\n%s\n%q\n%s", diff, raw, again)
		}
		tpl2, _ := agenttemplate.Parse(agenttemplate.Input{Raw: again, ContentType: "application/json"})
		if diff := cmp.Diff(tpl, tpl2); diff != "" {
			t.Fatalf("template changed by a round trip (-first +second):\n%s", diff)
		}
		if in.Source == "uploaded" && rep.Valid {
			_, findings := agenttemplate.Plan(tpl, cat)
			if diff := cmp.Diff(rep.Warnings, findings); diff != "" {
				t.Fatalf("Plan and Validate warnings differ (-validate +plan):\n%s", diff)
			}
		}
	})
}

func checkReport(t *testing.T, rep agenttemplate.Report) {
	t.Helper()
	if rep.Valid != (len(rep.Errors) == 0) {
		t.Fatalf("Valid %v with %d errors", rep.Valid, len(rep.Errors))
	}
	if rep.Errors == nil || rep.Warnings == nil {
		t.Fatalf("nil finding list: %+v", rep)
	}
	for _, f := range rep.Errors {
		if !agenttemplate.IsError(f.Code) {
			t.Fatalf("error with code %q", f.Code)
		}
	}
	for _, f := range rep.Warnings {
		if !agenttemplate.IsWarning(f.Code) {
			t.Fatalf("warning with code %q", f.Code)
		}
	}
	for _, f := range append(rep.Errors, rep.Warnings...) {
		if f.Path != "" && !strings.HasPrefix(f.Path, "/") {
			t.Fatalf("%s: path %q is not a JSON Pointer", f.Code, f.Path)
		}
		if f.Message == "" {
			t.Fatalf("%s without a message", f.Code)
		}
	}
}
