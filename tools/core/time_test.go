package core_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

func TestTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		deps    core.Deps
		call    tools.Call
		want    string // content prefix
		wantErr string
	}{
		{"now utc", core.Deps{}, tools.Call{Operation: "now"}, "2025-03-02T16:05:12Z (Sunday, UTC)", ""},
		{"now berlin", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"timezone": "Europe/Berlin"}}, "2025-03-02T17:05:12+01:00", ""},
		{"now owner zone", core.Deps{Users: fakeUsers{tz: "America/New_York"}}, tools.Call{Operation: "now", OwnerUserID: 7}, "2025-03-02T11:05:12-05:00", ""},
		{"argument beats owner", core.Deps{Users: fakeUsers{tz: "America/New_York"}}, tools.Call{Operation: "now", OwnerUserID: 7, Args: map[string]any{"timezone": "Asia/Tokyo"}}, "2025-03-03T01:05:12+09:00", ""},
		{"no owner, utc", core.Deps{Users: fakeUsers{tz: "America/New_York"}}, tools.Call{Operation: "now"}, "2025-03-02T16:05:12Z", ""},
		{"now human", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"layout": "human"}}, "Sunday, 2 March 2025, 16:05 UTC", ""},
		{"now unix", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"layout": "unix"}}, "1740931512", ""},
		{"format rfc3339", core.Deps{}, tools.Call{Operation: "format", Args: map[string]any{"timestamp": "2025-03-02T16:05:12Z", "timezone": "Asia/Kolkata", "layout": "datetime"}}, "2025-03-02 21:35:12", ""},
		{"format unix", core.Deps{}, tools.Call{Operation: "format", Args: map[string]any{"timestamp": "0", "layout": "date"}}, "1970-01-01", ""},
		{"format time", core.Deps{}, tools.Call{Operation: "format", Args: map[string]any{"timestamp": "2025-03-02T16:05:12.5+02:00", "layout": "time"}}, "14:05:12", ""},
		{"bad zone", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"timezone": "Mars/Olympus"}}, "", "unknown time zone"},
		{"local refused", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"timezone": "Local"}}, "", "unknown time zone"},
		{"path refused", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"timezone": "../../etc/passwd"}}, "", "unknown time zone"},
		{"zone not a string", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"timezone": 5.0}}, "", "must be a string"},
		{"bad layout", core.Deps{}, tools.Call{Operation: "now", Args: map[string]any{"layout": "iso"}}, "", "unknown layout"},
		{"missing timestamp", core.Deps{}, tools.Call{Operation: "format"}, "", "timestamp"},
		{"bad timestamp", core.Deps{}, tools.Call{Operation: "format", Args: map[string]any{"timestamp": "yesterday"}}, "", "neither RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, tt.deps, "core.TimeTool", tt.call)
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Content, tt.want) {
				t.Errorf("content %q, want prefix %q", res.Content, tt.want)
			}
			if !json.Valid(res.Data) {
				t.Errorf("data %s", res.Data)
			}
		})
	}
}
