package tools

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/agentsvc/svc/internal/domain/toolpolicy"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// Mask is what a set password-typed value reads as. Sent back in a write it means "keep the
// stored secret".
const Mask = "********"

// IsUnset reports whether a settings value means "no value at this layer": null or the empty
// string. In a write it deletes the key; in a stored layer it lets the lower layer show through.
func IsUnset(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && s == ""
}

// ValidateSettings checks a settings write (any layer) against the declaration: every key must be
// declared and every value must fit the setting's type (a string for string, text, password and
// url — an absolute http(s) URL for url —, a whole number for integer, a number, a boolean, one
// of the options for select, a list of strings or of whole numbers for the list types). null and
// "" are always allowed: they delete the key. The reserved key toolpolicy.Key (the operations'
// approval policies, issue 26) is accepted for every tool and checked by toolpolicy.Parse
// against the declared operations; the cascade (Cascade) never passes it to the tool. It returns
// nil or an error wrapping svcerr.ErrInvalid whose message names every offending key (and, for
// a policy, the field path), in key order.
func ValidateSettings(spec Spec, values map[string]any) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var problems []string
	for _, k := range keys {
		if k == toolpolicy.Key {
			if _, err := ParsePolicy(spec, values[k]); err != nil {
				msg, _, _ := svcerr.Public(err)
				problems = append(problems, msg)
			}
			continue
		}
		s, ok := spec.Setting(k)
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown setting %q", k))
			continue
		}
		v := values[k]
		if IsUnset(v) {
			continue
		}
		if msg := checkSettingValue(s, v); msg != "" {
			problems = append(problems, fmt.Sprintf("setting %q %s", k, msg))
		}
	}
	if len(problems) > 0 {
		return svcerr.New(svcerr.ErrInvalid, "tool %s: %s", spec.Class, strings.Join(problems, "; "))
	}
	return nil
}

// ParsePolicy reads a stored or written approval policy of spec's tool (the value of
// toolpolicy.Key): nil for an unset value. Errors: ErrInvalid naming the field path.
func ParsePolicy(spec Spec, v any) (toolpolicy.Policy, error) {
	if IsUnset(v) {
		return nil, nil
	}
	return toolpolicy.Parse(v, func(op string) bool { _, ok := spec.Operation(op); return ok })
}

// Merge applies a settings write to a stored layer and returns the new layer (stored is not
// modified): each key sent replaces its value wholesale, null or "" deletes it, keys not sent are
// unchanged, and Mask sent for a password-typed key keeps the stored secret. The write is
// validated first (ValidateSettings); nothing is merged when it fails.
func Merge(spec Spec, stored, write map[string]any) (map[string]any, error) {
	if err := ValidateSettings(spec, write); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(stored)+len(write))
	for k, v := range stored {
		out[k] = v
	}
	for k, v := range write {
		switch {
		case IsUnset(v):
			delete(out, k)
		case isMaskedSecret(spec, k, v):
			// keep whatever is stored (possibly nothing)
		default:
			out[k] = v
		}
	}
	return out, nil
}

// Replace returns the layer that a complete replacement (the agent override PUT) leaves: exactly
// the keys of next that are set, except that Mask for a password-typed key carries the stored
// secret over. next is validated first (ValidateSettings).
func Replace(spec Spec, stored, next map[string]any) (map[string]any, error) {
	if err := ValidateSettings(spec, next); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(next))
	for k, v := range next {
		switch {
		case IsUnset(v):
		case isMaskedSecret(spec, k, v):
			if old, ok := stored[k]; ok && !IsUnset(old) {
				out[k] = old
			}
		default:
			out[k] = v
		}
	}
	return out, nil
}

func isMaskedSecret(spec Spec, key string, v any) bool {
	s, ok := spec.Setting(key)
	return ok && s.Type == SettingPassword && v == Mask
}

// Cascade resolves the effective settings of a tool. The declared defaults form the lowest layer;
// layers follow lowest first (global, user, group, agent) and the last value set wins. In a layer
// null or "" means "not set here", and keys the tool does not declare, or values that no longer
// fit the declaration, are ignored. missing lists, in declaration order, the keys of required
// settings that end up without a value (keys only: it is shown to the model and the UI).
func Cascade(spec Spec, layers ...map[string]any) (effective map[string]any, missing []string) {
	effective = map[string]any{}
	for _, s := range spec.Settings {
		if !IsUnset(s.Default) {
			effective[s.Key] = s.Default
		}
		for _, layer := range layers {
			v, ok := layer[s.Key]
			if !ok || IsUnset(v) || checkSettingValue(s, v) != "" {
				continue
			}
			effective[s.Key] = v
		}
		if _, ok := effective[s.Key]; !ok && s.Required {
			missing = append(missing, s.Key)
		}
	}
	if missing == nil {
		missing = []string{}
	}
	return effective, missing
}

// MaskSettings returns a copy of values in which every set password-typed value reads as Mask, for
// any response that shows a settings layer.
func MaskSettings(spec Spec, values map[string]any) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		if s, ok := spec.Setting(k); ok && s.Type == SettingPassword && !IsUnset(v) {
			v = Mask
		}
		out[k] = v
	}
	return out
}

// PasswordKeys lists the password-typed setting keys in declaration order: the keys to encrypt at
// rest and never to export.
func PasswordKeys(spec Spec) []string {
	var out []string
	for _, s := range spec.Settings {
		if s.Type == SettingPassword {
			out = append(out, s.Key)
		}
	}
	return out
}

// SettingResultMaxChars is the setting by which a tool (core or plugin) may carry its own
// budget of one result sent to the model, in characters (issue 25): a longer result is stored
// whole and sent cut. Without it (or at 0) the agent's tool_result_max_chars applies.
const SettingResultMaxChars = "result_max_chars"

// ResultMaxChars is the effective SettingResultMaxChars of spec over the settings layers
// (Cascade); 0 when the tool does not declare it or it is unset or not a positive integer.
func ResultMaxChars(spec Spec, layers ...map[string]any) int {
	if _, ok := spec.Setting(SettingResultMaxChars); !ok {
		return 0
	}
	eff, _ := Cascade(spec, layers...)
	f, ok := toFloat(eff[SettingResultMaxChars])
	if !ok || f < 1 || f > math.MaxInt32 {
		return 0
	}
	return int(f)
}
