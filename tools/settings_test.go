package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

func settingsSpec() tools.Spec {
	return tools.Spec{
		Class: "weather.ForecastTool", Name: "forecast", PluginSlug: "weather",
		Operations: []tools.Operation{{Name: "forecast"}},
		Settings: []tools.Setting{
			{Key: "units", Type: tools.SettingSelect, Options: []string{"metric", "imperial"}, Default: "metric"},
			{Key: "api_key", Type: tools.SettingPassword, Required: true},
			{Key: "endpoint", Type: tools.SettingURL, Default: "https://api.example.com"},
			{Key: "city", Type: tools.SettingString, Required: true},
			{Key: "notes", Type: tools.SettingText},
			{Key: "days", Type: tools.SettingInteger, Default: 3},
			{Key: "threshold", Type: tools.SettingNumber},
			{Key: "alerts", Type: tools.SettingBoolean, Default: false},
			{Key: "allowed_skills", Type: tools.SettingStringList},
			{Key: "allowed_target_agents", Type: tools.SettingIntegerList},
		},
	}
}

func TestValidateSettings(t *testing.T) {
	t.Parallel()
	spec := settingsSpec()
	if err := tools.Validate(spec); err != nil {
		t.Fatal(err)
	}
	decoded := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		key   string
		value any
		ok    bool
	}{
		{"units", "imperial", true},
		{"units", "kelvin", false},
		{"units", 1, false},
		{"api_key", "sk-123", true},
		{"api_key", tools.Mask, true},
		{"api_key", 123, false},
		{"endpoint", "http://x.example/path?q=1", true},
		{"endpoint", "ftp://x.example", false},
		{"endpoint", "/relative", false},
		{"endpoint", "https://", false},
		{"endpoint", true, false},
		{"city", "Berlin", true},
		{"city", []any{"Berlin"}, false},
		{"notes", "line\nline", true},
		{"notes", map[string]any{}, false},
		{"days", decoded("7"), true},
		{"days", decoded("7.0"), true},
		{"days", 7, true},
		{"days", int64(-2), true},
		{"days", json.Number("12"), true},
		{"days", decoded("7.5"), false},
		{"days", "7", false},
		{"days", 1e300, false},
		{"threshold", 0.25, true},
		{"threshold", 3, true},
		{"threshold", json.Number("1e3"), true},
		{"threshold", "0.25", false},
		{"alerts", true, true},
		{"alerts", "true", false},
		{"alerts", 1, false},
		{"allowed_skills", decoded(`["web-research","scheduling"]`), true},
		{"allowed_skills", []string{"a"}, true},
		{"allowed_skills", decoded(`[]`), true},
		{"allowed_skills", decoded(`["a",1]`), false},
		{"allowed_skills", "web-research", false},
		{"allowed_target_agents", decoded(`[43,44]`), true},
		{"allowed_target_agents", []int{1}, true},
		{"allowed_target_agents", decoded(`[43,"44"]`), false},
		{"allowed_target_agents", decoded(`[4.5]`), false},
		{"allowed_target_agents", 43, false},
		// null and "" delete the key and are allowed for every type.
		{"days", nil, true},
		{"days", "", true},
		{"allowed_target_agents", nil, true},
		{"units", "", true},
		{"unknown", "x", false},
		{"unknown", nil, false},
	}
	for _, tt := range tests {
		err := tools.ValidateSettings(spec, map[string]any{tt.key: tt.value})
		if tt.ok && err != nil {
			t.Errorf("%s = %#v: %v", tt.key, tt.value, err)
		}
		if !tt.ok {
			if !errors.Is(err, svcerr.ErrInvalid) {
				t.Errorf("%s = %#v: got %v, want ErrInvalid", tt.key, tt.value, err)
			} else if !strings.Contains(err.Error(), `"`+tt.key+`"`) {
				t.Errorf("%s = %#v: message %q does not name the key", tt.key, tt.value, err)
			}
		}
	}
}

func TestValidateSettingsNamesEveryKey(t *testing.T) {
	t.Parallel()
	err := tools.ValidateSettings(settingsSpec(), map[string]any{"zeta": 1, "days": "x", "city": "ok", "alpha": nil})
	msg, kind, _ := svcerr.Public(err)
	if kind != svcerr.ErrInvalid {
		t.Fatalf("got %v", err)
	}
	want := `tool weather.ForecastTool: unknown setting "alpha"; setting "days" must be an integer; unknown setting "zeta"`
	if msg != want {
		t.Errorf("message %q\nwant %q", msg, want)
	}
	if err := tools.ValidateSettings(settingsSpec(), nil); err != nil {
		t.Errorf("empty write: %v", err)
	}
}

func TestCascade(t *testing.T) {
	t.Parallel()
	spec := settingsSpec()
	global := map[string]any{"units": "imperial", "api_key": "global-key", "days": 5, "unknown": "ignored"}
	user := map[string]any{"api_key": "user-key", "days": nil, "threshold": 0.5}
	group := map[string]any{"units": "", "city": "Paris", "threshold": "not a number"}
	agent := map[string]any{"days": 1, "allowed_skills": []any{}, "city": nil}

	tests := []struct {
		name        string
		layers      []map[string]any
		want        map[string]any
		wantMissing []string
	}{
		{
			name:        "defaults only",
			want:        map[string]any{"units": "metric", "endpoint": "https://api.example.com", "days": 3, "alerts": false},
			wantMissing: []string{"api_key", "city"},
		},
		{
			name:   "last layer wins; null and empty string mean not set; unknown keys and bad values are ignored",
			layers: []map[string]any{global, user, group, agent},
			want: map[string]any{
				"units": "imperial", "api_key": "user-key", "endpoint": "https://api.example.com",
				"city": "Paris", "days": 1, "threshold": 0.5, "alerts": false, "allowed_skills": []any{},
			},
			wantMissing: []string{},
		},
		{
			name:        "agent over global",
			layers:      []map[string]any{{"city": "Rome", "api_key": "k"}, nil, nil, {"city": "Oslo"}},
			want:        map[string]any{"units": "metric", "api_key": "k", "endpoint": "https://api.example.com", "city": "Oslo", "days": 3, "alerts": false},
			wantMissing: []string{},
		},
		{
			name:        "a required key set only to null is missing",
			layers:      []map[string]any{{"api_key": nil, "city": ""}, {"city": "Rome"}, nil, {"city": nil}},
			want:        map[string]any{"units": "metric", "endpoint": "https://api.example.com", "city": "Rome", "days": 3, "alerts": false},
			wantMissing: []string{"api_key"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, missing := tools.Cascade(spec, tt.layers...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("effective %v\nwant      %v", got, tt.want)
			}
			if !reflect.DeepEqual(missing, tt.wantMissing) {
				t.Errorf("missing %#v, want %#v", missing, tt.wantMissing)
			}
		})
	}
}

func TestMaskSettings(t *testing.T) {
	t.Parallel()
	spec := settingsSpec()
	in := map[string]any{"api_key": "sk-secret", "city": "Berlin", "unknown": "x"}
	got := tools.MaskSettings(spec, in)
	want := map[string]any{"api_key": tools.Mask, "city": "Berlin", "unknown": "x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if in["api_key"] != "sk-secret" {
		t.Errorf("MaskSettings modified its input")
	}
	// Unset password values are not shown as set.
	got = tools.MaskSettings(spec, map[string]any{"api_key": ""})
	if got["api_key"] != "" {
		t.Errorf("empty password masked: %v", got)
	}
	if tools.Mask != "********" {
		t.Errorf("Mask = %q", tools.Mask)
	}
	if got := tools.PasswordKeys(spec); !reflect.DeepEqual(got, []string{"api_key"}) {
		t.Errorf("PasswordKeys = %v", got)
	}
	if got := tools.PasswordKeys(tools.Spec{}); len(got) != 0 {
		t.Errorf("PasswordKeys of none = %v", got)
	}
}

func TestMergeAndReplace(t *testing.T) {
	t.Parallel()
	spec := settingsSpec()
	stored := map[string]any{"api_key": "sk-old", "city": "Berlin", "days": 4, "allowed_skills": []any{"a", "b"}}

	merged, err := tools.Merge(spec, stored, map[string]any{
		"api_key": tools.Mask, "city": "", "days": nil, "allowed_skills": []any{"c"}, "units": "imperial",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"api_key": "sk-old", "allowed_skills": []any{"c"}, "units": "imperial"}
	if !reflect.DeepEqual(merged, want) {
		t.Errorf("Merge = %v, want %v", merged, want)
	}
	if stored["city"] != "Berlin" {
		t.Errorf("Merge modified the stored layer")
	}
	merged, err = tools.Merge(spec, stored, map[string]any{"api_key": "sk-new"})
	if err != nil || merged["api_key"] != "sk-new" || merged["city"] != "Berlin" {
		t.Errorf("Merge new secret = %v, %v", merged, err)
	}
	// The mask with no stored secret stores nothing.
	merged, err = tools.Merge(spec, nil, map[string]any{"api_key": tools.Mask})
	if err != nil || len(merged) != 0 {
		t.Errorf("Merge mask over nothing = %v, %v", merged, err)
	}
	if _, err := tools.Merge(spec, stored, map[string]any{"days": "x", "city": "Rome"}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("Merge bad write: %v", err)
	}

	replaced, err := tools.Replace(spec, stored, map[string]any{"api_key": tools.Mask, "units": "metric", "city": nil})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"api_key": "sk-old", "units": "metric"}; !reflect.DeepEqual(replaced, want) {
		t.Errorf("Replace = %v, want %v", replaced, want)
	}
	replaced, err = tools.Replace(spec, map[string]any{}, map[string]any{"api_key": tools.Mask})
	if err != nil || len(replaced) != 0 {
		t.Errorf("Replace mask over nothing = %v, %v", replaced, err)
	}
	if _, err := tools.Replace(spec, stored, map[string]any{"nope": 1}); !errors.Is(err, svcerr.ErrInvalid) {
		t.Errorf("Replace unknown key: %v", err)
	}
	// The mask is an ordinary value for a key that is not a password.
	merged, err = tools.Merge(spec, stored, map[string]any{"city": tools.Mask})
	if err != nil || merged["city"] != tools.Mask {
		t.Errorf("mask on a string key = %v, %v", merged, err)
	}
}

func TestIsUnset(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]bool{nil: true, "": true, " ": false, 0: false, false: false, "x": false} {
		if got := tools.IsUnset(v); got != want {
			t.Errorf("IsUnset(%#v) = %v", v, got)
		}
	}
}
