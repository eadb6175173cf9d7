package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
)

// maxSafeInteger is the largest integer a JSON number carries exactly through a float64.
const maxSafeInteger = 1<<53 - 1

// toFloat converts any Go numeric value, or a json.Number, to float64.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	case float32:
		f := float64(n)
		return f, !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	}
	return 0, false
}

// isInteger reports whether v is a whole number (3 and 3.0 both are, as JSON cannot tell them
// apart once decoded into any).
func isInteger(v any) bool {
	if n, ok := v.(json.Number); ok {
		if _, err := n.Int64(); err == nil {
			return true
		}
	}
	f, ok := toFloat(v)
	return ok && f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger
}

// valueHasType reports whether v fits the parameter type t.
func valueHasType(v any, t string) bool {
	switch t {
	case TypeString:
		_, ok := v.(string)
		return ok
	case TypeBoolean:
		_, ok := v.(bool)
		return ok
	case TypeNumber:
		_, ok := toFloat(v)
		return ok
	case TypeInteger:
		return isInteger(v)
	case TypeArray:
		if v == nil {
			return false
		}
		k := reflect.TypeOf(v).Kind()
		return (k == reflect.Slice || k == reflect.Array) && reflect.TypeOf(v) != reflect.TypeOf(json.RawMessage(nil))
	case TypeObject:
		if v == nil {
			return false
		}
		rt := reflect.TypeOf(v)
		return (rt.Kind() == reflect.Map && rt.Key().Kind() == reflect.String) || rt.Kind() == reflect.Struct
	}
	return false
}

// listElems returns the elements of a slice or array value.
func listElems(v any) ([]any, bool) {
	if v == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	if _, raw := v.(json.RawMessage); raw {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// checkSettingValue returns "" when v is a valid value of setting s, else what is wrong with it
// (a phrase to follow the key in a message). v is never nil or "" here: those mean "unset".
func checkSettingValue(s Setting, v any) string {
	switch s.Type {
	case SettingString, SettingText, SettingPassword:
		if _, ok := v.(string); !ok {
			return "must be a string"
		}
	case SettingURL:
		str, ok := v.(string)
		if !ok {
			return "must be a URL string"
		}
		u, err := url.Parse(str)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be an absolute http or https URL"
		}
	case SettingInteger:
		if !isInteger(v) {
			return "must be an integer"
		}
	case SettingNumber:
		if _, ok := toFloat(v); !ok {
			return "must be a number"
		}
	case SettingBoolean:
		if _, ok := v.(bool); !ok {
			return "must be a boolean"
		}
	case SettingSelect:
		str, ok := v.(string)
		if !ok || !slices.Contains(s.Options, str) {
			return fmt.Sprintf("must be one of %q", s.Options)
		}
	case SettingStringList:
		elems, ok := listElems(v)
		if !ok {
			return "must be a list of strings"
		}
		for i, e := range elems {
			if _, ok := e.(string); !ok {
				return fmt.Sprintf("must be a list of strings (element %d is not a string)", i)
			}
		}
	case SettingIntegerList:
		elems, ok := listElems(v)
		if !ok {
			return "must be a list of integers"
		}
		for i, e := range elems {
			if !isInteger(e) {
				return fmt.Sprintf("must be a list of integers (element %d is not an integer)", i)
			}
		}
	default:
		return fmt.Sprintf("has unknown type %q", s.Type)
	}
	return ""
}
