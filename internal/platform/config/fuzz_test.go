package config

import (
	"reflect"
	"testing"
)

// FuzzLoadFile feeds arbitrary bytes to the file parser, as YAML and as JSON. It must never
// panic (the fuzz target calls the parser without parseFile's safety recover), and whatever it
// accepts must be known keys with values of the right Go type.
func FuzzLoadFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"db_driver: mysql\ndb:\n  port: 3307\n",
		"SVC_AGENT_API: true\nSVC_AGENT_API_RATE_LIMIT_MAX: 10\n",
		"mail:\n  from:\n    name: x\n  port: 465\n",
		"a: &a [*a]\n",
		"base: &b {x: 1}\n<<: *b\n",
		"{\"db\": {\"driver\": \"mysql\"}, \"max_workers\": 1e3}",
		"[1, 2]",
		"? [a]\n: 1\n",
		"log_level: !!binary aGVsbG8=\n",
		"db_port: 0x10\nallow_registration: yes\n",
		"- &x a\n- *x\n",
		"%YAML 1.2\n---\ndb_port: 1\n",
		"x: &x\n  y: *x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"config.yaml", "config.json"} {
			layer, _, err := parseFileUnguarded(name, data)
			if err != nil {
				continue
			}
			for k, v := range layer.values {
				f, ok := byKey[k]
				if !ok {
					t.Fatalf("%s: unknown key %q accepted", name, k)
				}
				if reflect.TypeOf(v).Kind() != f.kind {
					t.Fatalf("%s: %s has %T", name, k, v)
				}
			}
		}
	})
}
