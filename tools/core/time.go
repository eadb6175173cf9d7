package core

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/agentsvc/svc/tools"
)

// TimeTool tells the current time and formats or converts timestamps between time zones.
type TimeTool struct{}

// Spec declares the tool.
func (TimeTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.TimeTool",
		Name:        "time",
		DisplayName: "Time",
		Description: "Current date and time, and formatting or time-zone conversion of timestamps.",
		Category:    tools.CategoryGeneral,
		Icon:        "clock",
		Base:        &timezoneBase,
		Operations: []tools.Operation{
			readOp("now", "Return the current date and time in the time zone."),
			readOp("format", "Format a timestamp in the time zone and layout."),
		},
		Params: []tools.Param{
			{
				Name: "timestamp", Type: tools.TypeString,
				Description: "RFC 3339 timestamp (2025-03-02T16:05:12Z) or Unix seconds as a string.",
				Required:    tools.RequiredFor("format"),
			},
			{
				Name: "layout", Type: tools.TypeString, Description: "Output layout.",
				Enum:    []string{"rfc3339", "date", "time", "datetime", "human", "unix"},
				Default: "rfc3339",
			},
		},
	}
}

type timeExec struct{ deps Deps }

var timeLayouts = map[string]string{
	"rfc3339":  time.RFC3339,
	"date":     "2006-01-02",
	"time":     "15:04:05",
	"datetime": "2006-01-02 15:04:05",
	"human":    "Monday, 2 January 2006, 15:04 MST",
}

// Execute runs now and format. The time zone is the timezone argument, else the owner's profile
// time zone, else UTC; an unknown zone, layout or unparsable timestamp is a ToolError.
func (e *timeExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	loc, err := e.location(ctx, call)
	if err != nil {
		return tools.Result{}, err
	}
	layout, present, err := stringArg(call.Args, "layout")
	if err != nil {
		return tools.Result{}, err
	}
	if !present || layout == "" {
		layout = "rfc3339"
	}
	if _, ok := timeLayouts[layout]; !ok && layout != "unix" {
		return tools.Result{}, toolErr("unknown layout %q: one of rfc3339, date, time, datetime, human, unix", layout)
	}
	var t time.Time
	switch call.Operation {
	case "now":
		t = e.deps.Clock()
	case "format":
		raw, err := requiredString(call.Args, "timestamp")
		if err != nil {
			return tools.Result{}, err
		}
		if t, err = parseTimestamp(raw); err != nil {
			return tools.Result{}, err
		}
	default:
		return tools.Result{}, unknownOp(call.Operation)
	}
	t = t.In(loc)
	out := strconv.FormatInt(t.Unix(), 10)
	if layout != "unix" {
		out = t.Format(timeLayouts[layout])
	}
	_, offset := t.Zone()
	data := map[string]any{
		"result":     out,
		"rfc3339":    t.Format(time.RFC3339),
		"unix":       t.Unix(),
		"timezone":   loc.String(),
		"weekday":    t.Weekday().String(),
		"utc_offset": offset,
	}
	content := out
	if layout != "human" {
		content += " (" + t.Weekday().String() + ", " + loc.String() + ")"
	}
	return tools.Result{Content: content, Data: jsonData(data)}, nil
}

func (e *timeExec) location(ctx context.Context, call tools.Call) (*time.Location, error) {
	name, _, err := stringArg(call.Args, "timezone")
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if name == "" && e.deps.Users != nil && call.OwnerUserID != 0 {
		if p, err := e.deps.Users.Profile(ctx, call.OwnerUserID); err == nil && p != nil {
			name = p.Timezone
		}
	}
	if name == "" {
		return time.UTC, nil
	}
	// time.LoadLocation also accepts "Local" (the server's zone); only IANA names are asked for.
	if name == "Local" || len(name) > 64 {
		return nil, toolErr("unknown time zone %q: give an IANA name such as Europe/Berlin", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, toolErr("unknown time zone %q: give an IANA name such as Europe/Berlin", name)
	}
	return loc, nil
}

// parseTimestamp accepts RFC 3339 (with or without fractional seconds) or Unix seconds.
func parseTimestamp(raw string) (time.Time, error) {
	raw = strings.TrimSpace(raw)
	if t, err := time.Parse(time.RFC3339Nano, raw); err == nil {
		return t, nil
	}
	if n, err := strconv.ParseInt(raw, 10, 64); err == nil && n > -62135596800 && n < 253402300800 {
		return time.Unix(n, 0), nil
	}
	return time.Time{}, toolErr("timestamp %q is neither RFC 3339 (2025-03-02T16:05:12Z) nor Unix seconds", raw)
}
