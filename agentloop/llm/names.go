package llm

import (
	"sort"
	"strconv"
)

// maxWireName is the longest function name both OpenAI and Anthropic accept.
const maxWireName = 64

// wireSafe reports whether name is accepted as a function name by OpenAI and Anthropic
// (^[a-zA-Z0-9_-]{1,64}$).
func wireSafe(name string) bool {
	if name == "" || len(name) > maxWireName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !wireByte(name[i]) {
			return false
		}
	}
	return true
}

func wireByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// nameMap is a per-request bijection between caller tool names (plugin tools look like
// "weather:forecast") and names the provider accepts. Names that are already acceptable map
// to themselves and are reserved first, so an encoded name never shadows a real one; the
// others become "weather__forecast", with a numeric suffix should that be taken. It is built
// from every name in the request (tool definitions and earlier calls), so the model sees one
// consistent name per tool and every name it answers with decodes to the original.
type nameMap struct {
	enc map[string]string // caller name → wire name
	dec map[string]string // wire name → caller name
}

func newNameMap(req *Request) *nameMap {
	set := map[string]bool{}
	for _, t := range req.Tools {
		set[t.Name] = true
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			set[c.Name] = true
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names) // the mapping must not depend on map order
	return buildNameMap(names)
}

func buildNameMap(names []string) *nameMap {
	m := &nameMap{enc: map[string]string{}, dec: map[string]string{}}
	var rest []string
	for _, n := range names {
		if _, dup := m.enc[n]; dup {
			continue
		}
		if wireSafe(n) {
			m.enc[n], m.dec[n] = n, n
		} else {
			rest = append(rest, n)
		}
	}
	for _, n := range rest {
		if _, dup := m.enc[n]; dup {
			continue
		}
		base := sanitizeName(n)
		wire := base
		for i := 2; ; i++ {
			if _, taken := m.dec[wire]; !taken {
				break
			}
			suffix := "_" + strconv.Itoa(i)
			b := base
			if len(b)+len(suffix) > maxWireName {
				b = b[:maxWireName-len(suffix)]
			}
			wire = b + suffix
		}
		m.enc[n], m.dec[wire] = wire, n
	}
	return m
}

// sanitizeName spells ':' as "__" and every other unacceptable byte as '_', within 64 bytes.
func sanitizeName(n string) string {
	out := make([]byte, 0, len(n)+4)
	for i := 0; i < len(n); i++ {
		switch c := n[i]; {
		case wireByte(c):
			out = append(out, c)
		case c == ':':
			out = append(out, '_', '_')
		default:
			out = append(out, '_')
		}
	}
	if len(out) == 0 {
		out = append(out, "tool"...)
	}
	if len(out) > maxWireName {
		out = out[:maxWireName]
	}
	return string(out)
}

// encode returns the wire name of a caller name.
func (m *nameMap) encode(name string) string {
	if w, ok := m.enc[name]; ok {
		return w
	}
	return sanitizeName(name)
}

// decode returns the caller name of a wire name the model answered with; a name the request
// never declared comes back unchanged (the runner then reports an unknown tool).
func (m *nameMap) decode(wire string) string {
	if n, ok := m.dec[wire]; ok {
		return n
	}
	return wire
}
