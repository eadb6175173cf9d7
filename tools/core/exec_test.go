package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentsvc/svc/internal/netguard"
	"github.com/agentsvc/svc/internal/skill"
	"github.com/agentsvc/svc/internal/svcerr"
	"github.com/agentsvc/svc/store"
	"github.com/agentsvc/svc/tools"
	"github.com/agentsvc/svc/tools/core"
)

var fixedNow = time.Date(2025, 3, 2, 16, 5, 12, 0, time.UTC)

func exec(t *testing.T, deps core.Deps, class string, call tools.Call) (tools.Result, error) {
	t.Helper()
	if deps.Clock == nil {
		deps.Clock = func() time.Time { return fixedNow }
	}
	e, ok := core.Executors(deps)[class]
	if !ok {
		t.Fatalf("no executor for %s", class)
	}
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	return e.Execute(context.Background(), call)
}

// toolErr fails unless err is a *tools.ToolError containing want.
func wantToolErr(t *testing.T, err error, want string) {
	t.Helper()
	var te *tools.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a ToolError containing %q", err, err, want)
	}
	if !strings.Contains(te.Msg, want) {
		t.Errorf("ToolError %q, want it to contain %q", te.Msg, want)
	}
}

// TestExecutorsCoverDeclarations checks that every executor belongs to a core tool and handles
// every operation that tool declares (no "unknown operation"), and that every core tool has one.
func TestExecutorsCoverDeclarations(t *testing.T) {
	t.Parallel()
	execs := core.Executors(core.Deps{})
	specs := map[string]tools.Spec{}
	for _, tool := range core.All() {
		specs[tool.Spec().Class] = tool.Spec()
	}
	for class, e := range execs {
		spec, ok := specs[class]
		if !ok {
			t.Errorf("executor for unknown class %s", class)
			continue
		}
		for _, op := range spec.Operations {
			_, err := e.Execute(context.Background(), tools.Call{Operation: op.Name, Args: map[string]any{}, OwnerUserID: 1, TaskID: 1})
			var te *tools.ToolError
			if errors.As(err, &te) && strings.Contains(te.Msg, "unknown operation") {
				t.Errorf("%s does not handle %s", class, op.Name)
			}
		}
		if _, err := e.Execute(context.Background(), tools.Call{Operation: "nope", Args: map[string]any{}, OwnerUserID: 1, TaskID: 1}); err == nil {
			t.Errorf("%s accepted an unknown operation", class)
		}
	}
	for class := range specs {
		if _, ok := execs[class]; !ok {
			t.Errorf("%s has no executor", class)
		}
	}
}

type fakeUsers struct {
	tz      string
	missing bool
	fail    bool
}

func (f fakeUsers) UserByID(_ context.Context, id int64) (*store.User, error) {
	if f.fail {
		return nil, errors.New("database down")
	}
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	return &store.User{ID: id, Email: "ada@example.com", DisplayName: "ada"}, nil
}

func (f fakeUsers) Profile(_ context.Context, id int64) (*store.Profile, error) {
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	return &store.Profile{UserID: id, FirstName: "Ada", LastName: "Lovelace", Locale: "en-GB", Timezone: f.tz, Bio: "Mathematician"}, nil
}

func (f fakeUsers) ListLocations(_ context.Context, id int64) ([]store.Location, error) {
	if f.missing {
		return nil, svcerr.New(svcerr.ErrNotFound, "no user %d", id)
	}
	lat, lon := 51.5074, -0.1278
	return []store.Location{
		{ID: 1, UserID: id, Name: "Home", Address: "12 St James's Square, London", Latitude: &lat, Longitude: &lon, IsDefault: true},
		{ID: 2, UserID: id, Name: "Office"},
	}, nil
}

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

func TestCalculator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr    string
		want    string
		wantErr string
	}{
		{"(17.5 * 3) / 4", "13.125", ""},
		{"1 + 2 * 3", "7", ""},
		{"(1 + 2) * 3", "9", ""},
		{"10 - 4 - 3", "3", ""},
		{"100 / 10 / 5", "2", ""},
		{"2 ^ 3 ^ 2", "512", ""},
		{"-2 ^ 2", "-4", ""},
		{"(-2) ^ 2", "4", ""},
		{"2 ^ -1", "0.5", ""},
		{"--3", "3", ""},
		{"+3 - -3", "6", ""},
		{"7 % 3", "1", ""},
		{"-7 % 3", "-1", ""},
		{"sqrt(16) + abs(-2)", "6", ""},
		{"min(3, 1, 2) + max(4, 9)", "10", ""},
		{"round(2.5)", "3", ""},
		{"round(3.14159, 2)", "3.14", ""},
		{"floor(-1.5) + ceil(1.2)", "0", ""},
		{"ln(e)", "1", ""},
		{"log10(1000)", "3", ""},
		{"log(100)", "2", ""},
		{"log(8, 2)", "3", ""},
		{"sin(pi / 2) + cos(0) + tan(0)", "2", ""},
		{"PI", "3.1415926536", ""},
		{"1e3 + .5", "1000.5", ""},
		{"0.1 + 0.2", "0.3", ""},
		{"2 × 3 ÷ 4", "1.5", ""},
		{"1e25", "1e+25", ""},
		{"1 / 3", "0.3333333333", ""},

		{"", "", "required"},
		{"1 / 0", "", "division by zero"},
		{"5 % 0", "", "division by zero"},
		{"sqrt(-1)", "", "not defined"},
		{"ln(0)", "", "not defined"},
		{"log(8, 1)", "", "log base"},
		{"10 ^ 400", "", "not a finite number"},
		{"1 +", "", "unexpected end"},
		{"(1 + 2", "", "missing )"},
		{"1 + 2)", "", "unexpected"},
		{"2 3", "", "unexpected"},
		{"x + 1", "", "unknown name"},
		{"exp(1)", "", "unknown name"},
		{"os.exit(1)", "", "unknown name"},
		{"sqrt", "", "needs (arguments)"},
		{"sqrt(1, 2)", "", "takes 1"},
		{"min()", "", "takes at least 1"},
		{"round(1, 0.5)", "", "round digits"},
		{"1.2.3", "", "unexpected"},
		{"0x10", "", "unexpected"},
		{"1 = 1", "", "unexpected"},
		{"\"a\"", "", "unexpected"},
		{"1;2", "", "unexpected"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "", "nested too deeply"},
		{strings.Repeat("-", 100) + "1", "", "nested too deeply"},
		{strings.Repeat("1+", 600) + "1", "", "longer than 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": tt.expr}})
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var data struct{ Result string }
			if err := json.Unmarshal(res.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Result != tt.want {
				t.Errorf("%s = %s, want %s", tt.expr, data.Result, tt.want)
			}
		})
	}
	res, err := exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "2/3", "precision": 2.0}})
	if err != nil || res.Content != "2/3 = 0.67" {
		t.Errorf("precision 2: %q, %v", res.Content, err)
	}
	_, err = exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "1", "precision": 21.0}})
	wantToolErr(t, err, "precision")
	_, err = exec(t, core.Deps{}, "core.CalculatorTool", tools.Call{Operation: "calculate", Args: map[string]any{"expression": "1", "precision": 1.5}})
	wantToolErr(t, err, "integer")
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"1+2*3", "-2^2", "sqrt(16)", "min(1,2,3)", "((1))", "1e308*10", "log(8,2)", "2^-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := core.Evaluate(s)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q = %v accepted", s, v)
		}
		var ce *core.CalcError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("%q: error %T", s, err)
		}
	})
}

func question(header string, options ...any) map[string]any {
	return map[string]any{"header": header, "question": "Which " + header + "?", "options": options}
}

func TestAskUserQuestion(t *testing.T) {
	t.Parallel()
	q1 := question(" Colour ", "Red", "Blue ")
	q1["multiple"] = true
	q2 := question("Size", "S", "M", "L", "XL")
	q2["allowFreeText"] = true
	res, err := exec(t, core.Deps{}, "core.AskUserQuestionTool", tools.Call{Operation: "ask", Args: map[string]any{"questions": []any{q1, q2}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pause == nil || res.Pause.Kind != tools.PauseQuestion {
		t.Fatalf("pause %+v", res.Pause)
	}
	want := `[{"header":"Colour","question":"Which  Colour ?","options":["Red","Blue"],"multiple":true,"allowFreeText":false},` +
		`{"header":"Size","question":"Which Size?","options":["S","M","L","XL"],"multiple":false,"allowFreeText":true}]`
	if string(res.Pause.Questions) != want {
		t.Errorf("batch\n got %s\nwant %s", res.Pause.Questions, want)
	}

	five := []any{question("a", "1", "2"), question("b", "1", "2"), question("c", "1", "2"), question("d", "1", "2"), question("e", "1", "2")}
	badMultiple := question("a", "1", "2")
	badMultiple["multiple"] = "yes"
	extra := question("a", "1", "2")
	extra["default"] = "1"
	noQuestion := question("a", "1", "2")
	delete(noQuestion, "question")
	tests := []struct {
		name    string
		args    map[string]any
		wantErr string
	}{
		{"missing", map[string]any{}, "required"},
		{"not a list", map[string]any{"questions": "Which?"}, "must be a list"},
		{"empty", map[string]any{"questions": []any{}}, "ask 1 to 4"},
		{"five", map[string]any{"questions": five}, "ask 1 to 4"},
		{"not an object", map[string]any{"questions": []any{"Which?"}}, "must be an object"},
		{"one option", map[string]any{"questions": []any{question("a", "1")}}, "give 2 to 4 options"},
		{"five options", map[string]any{"questions": []any{question("a", "1", "2", "3", "4", "5")}}, "give 2 to 4 options"},
		{"options not a list", map[string]any{"questions": []any{map[string]any{"header": "a", "question": "q", "options": "1,2"}}}, "options must be a list"},
		{"blank option", map[string]any{"questions": []any{question("a", "1", " ")}}, "non-empty string"},
		{"number option", map[string]any{"questions": []any{question("a", "1", 2.0)}}, "non-empty string"},
		{"duplicate option", map[string]any{"questions": []any{question("a", "1", "1 ")}}, "given twice"},
		{"long option", map[string]any{"questions": []any{question("a", "1", strings.Repeat("x", 201))}}, "longer than 200"},
		{"duplicate header", map[string]any{"questions": []any{question("Size", "1", "2"), question("size", "1", "2")}}, "used twice"},
		{"long header", map[string]any{"questions": []any{question(strings.Repeat("h", 31), "1", "2")}}, "longer than 30"},
		{"blank header", map[string]any{"questions": []any{question("  ", "1", "2")}}, "header is required"},
		{"no question", map[string]any{"questions": []any{noQuestion}}, "question is required"},
		{"multiple not bool", map[string]any{"questions": []any{badMultiple}}, "multiple must be a boolean"},
		{"unknown key", map[string]any{"questions": []any{extra}}, "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, core.Deps{}, "core.AskUserQuestionTool", tools.Call{Operation: "ask", Args: tt.args})
			wantToolErr(t, err, tt.wantErr)
			if res.Pause != nil {
				t.Error("refused batch paused the task")
			}
		})
	}
}

func skillIndex(t *testing.T) *skill.Index {
	t.Helper()
	manifest := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("---\nname: " + name + "\ndescription: The " + name + " skill.\n---\n# " + name + "\n\nDo it well.\n")}
	}
	idx, problems := skill.NewIndex(skill.Provider{Source: skill.CoreSource, FS: fstest.MapFS{
		"web-research/SKILL.md":            manifest("web-research"),
		"web-research/reference/guide.md":  {Data: []byte("Guide text")},
		"web-research/reference/logo.png":  {Data: []byte{0x89, 'P', 'N', 'G', 0, 0xff}},
		"scheduling/SKILL.md":              manifest("scheduling"),
		"secret-skill/SKILL.md":            manifest("secret-skill"),
		"secret-skill/reference/secret.md": {Data: []byte("hidden")},
	}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return idx
}

func TestSkill(t *testing.T) {
	t.Parallel()
	deps := core.Deps{Skills: skillIndex(t)}
	allowed := map[string]any{"allowed_skills": []any{"web-research", "scheduling", "not-installed"}}
	tests := []struct {
		name     string
		deps     core.Deps
		op       string
		args     map[string]any
		settings map[string]any
		want     string
		wantErr  string
	}{
		{"read", deps, "read", map[string]any{"name": "web-research"}, allowed, "# Skill: web-research\n\n# web-research\n\nDo it well.", ""},
		{"list files", deps, "files", map[string]any{"name": "web-research"}, allowed, "Files of skill web-research:\n- reference/guide.md\n- reference/logo.png", ""},
		{"no files", deps, "files", map[string]any{"name": "scheduling"}, allowed, "Skill scheduling has no files", ""},
		{"read file", deps, "files", map[string]any{"name": "web-research", "path": "reference/guide.md"}, allowed, "Guide text", ""},
		{"string list setting", deps, "read", map[string]any{"name": "scheduling"}, map[string]any{"allowed_skills": []string{"scheduling"}}, "# Skill: scheduling", ""},
		{"binary file", deps, "files", map[string]any{"name": "web-research", "path": "reference/logo.png"}, allowed, "", "binary"},
		{"missing file", deps, "files", map[string]any{"name": "web-research", "path": "reference/none.md"}, allowed, "", "has no file"},
		{"dot dot", deps, "files", map[string]any{"name": "web-research", "path": "../secret-skill/reference/secret.md"}, allowed, "", "invalid file path"},
		{"manifest as file", deps, "files", map[string]any{"name": "web-research", "path": "SKILL.md"}, allowed, "", "has no file"},
		{"not allowed", deps, "read", map[string]any{"name": "secret-skill"}, allowed, "", "not allowed"},
		{"not allowed files", deps, "files", map[string]any{"name": "secret-skill", "path": "reference/secret.md"}, allowed, "", "not allowed"},
		{"nothing allowed", deps, "read", map[string]any{"name": "web-research"}, nil, "", "no skills are allowed"},
		{"not installed", deps, "read", map[string]any{"name": "not-installed"}, allowed, "", "not installed"},
		{"no index", core.Deps{}, "read", map[string]any{"name": "web-research"}, allowed, "", "not installed"},
		{"missing name", deps, "read", map[string]any{}, allowed, "", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, tt.deps, "core.SkillTool", tools.Call{Operation: tt.op, Args: tt.args, Settings: tt.settings})
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
		})
	}
}

func TestUserInfo(t *testing.T) {
	t.Parallel()
	deps := core.Deps{Users: fakeUsers{tz: "Europe/London"}}
	res, err := exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_base_data", OwnerUserID: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := "Name: Ada Lovelace\nEmail: ada@example.com\nLocale: en-GB\nTime zone: Europe/London\nAbout: Mathematician"
	if res.Content != want {
		t.Errorf("content %q", res.Content)
	}
	res, err = exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_locations", OwnerUserID: 3})
	if err != nil || res.Content != "- Home (default): 12 St James's Square, London [51.5074, -0.1278]\n- Office" {
		t.Errorf("locations %q, %v", res.Content, err)
	}
	res, err = exec(t, deps, "core.UserInfoTool", tools.Call{Operation: "get_locations", OwnerUserID: 3, Args: map[string]any{"default_only": true}})
	var data struct{ Locations []map[string]any }
	if err != nil || json.Unmarshal(res.Data, &data) != nil || len(data.Locations) != 1 || data.Locations[0]["name"] != "Home" {
		t.Errorf("default only %s, %v", res.Data, err)
	}

	tests := []struct {
		name    string
		deps    core.Deps
		call    tools.Call
		wantErr string
	}{
		{"no owner", deps, tools.Call{Operation: "get_base_data"}, "no user owns this agent"},
		{"no owner locations", deps, tools.Call{Operation: "get_locations"}, "no user owns this agent"},
		{"owner gone", core.Deps{Users: fakeUsers{missing: true}}, tools.Call{Operation: "get_base_data", OwnerUserID: 3}, "no longer exists"},
		{"owner gone locations", core.Deps{Users: fakeUsers{missing: true}}, tools.Call{Operation: "get_locations", OwnerUserID: 3}, "no longer exists"},
		{"no source", core.Deps{}, tools.Call{Operation: "get_base_data", OwnerUserID: 3}, "not available"},
		{"bad default_only", deps, tools.Call{Operation: "get_locations", OwnerUserID: 3, Args: map[string]any{"default_only": "yes"}}, "boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := exec(t, tt.deps, "core.UserInfoTool", tt.call)
			wantToolErr(t, err, tt.wantErr)
		})
	}
	// A store failure is not the model's business: it fails the task.
	_, err = exec(t, core.Deps{Users: fakeUsers{fail: true}}, "core.UserInfoTool", tools.Call{Operation: "get_base_data", OwnerUserID: 3})
	var te *tools.ToolError
	if err == nil || errors.As(err, &te) {
		t.Errorf("store failure: %v", err)
	}
}

type memTodos struct {
	mu    sync.Mutex
	lists map[int64][]core.Todo
	saves int
}

func (m *memTodos) Todos(_ context.Context, taskID int64) ([]core.Todo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]core.Todo(nil), m.lists[taskID]...), nil
}

func (m *memTodos) SaveTodos(_ context.Context, taskID int64, todos []core.Todo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists[taskID] = append([]core.Todo(nil), todos...)
	m.saves++
	return nil
}

func TestTodo(t *testing.T) {
	t.Parallel()
	store := &memTodos{lists: map[int64][]core.Todo{}}
	deps := core.Deps{Todos: store}
	run := func(op string, args map[string]any) (tools.Result, error) {
		return exec(t, deps, "core.TodoTool", tools.Call{Operation: op, Args: args, TaskID: 9})
	}
	res, err := run("read", nil)
	if err != nil || res.Content != "The to-do list is empty." {
		t.Fatalf("empty read %q, %v", res.Content, err)
	}
	_, err = run("write", map[string]any{"todos": []any{
		map[string]any{"content": "Find sources", "status": "in_progress"},
		map[string]any{"content": " Summarise ", "status": "pending"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = run("add", map[string]any{"content": "Send the report"}); err != nil {
		t.Fatal(err)
	}
	res, err = run("set_status", map[string]any{"id": 1.0, "status": "completed"})
	if err != nil {
		t.Fatal(err)
	}
	want := "1. [x] Find sources\n2. [ ] Summarise\n3. [ ] Send the report"
	if res.Content != want {
		t.Errorf("list\n%s\nwant\n%s", res.Content, want)
	}
	if res, _ := run("read", nil); res.Content != want {
		t.Errorf("read %q", res.Content)
	}
	saves := store.saves

	many := make([]any, 101)
	for i := range many {
		many[i] = map[string]any{"content": fmt.Sprint("item ", i), "status": "pending"}
	}
	tests := []struct {
		op      string
		args    map[string]any
		wantErr string
	}{
		{"write", map[string]any{}, "must be a list"},
		{"write", map[string]any{"todos": many}, "at most 100"},
		{"write", map[string]any{"todos": []any{"Find sources"}}, "must be an object"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": "", "status": "pending"}}}, "content is required"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": "x", "status": "done"}}}, "status must be"},
		{"write", map[string]any{"todos": []any{map[string]any{"content": strings.Repeat("x", 501), "status": "pending"}}}, "longer than 500"},
		{"add", map[string]any{}, "required"},
		{"set_status", map[string]any{"id": 4.0, "status": "completed"}, "no item 4"},
		{"set_status", map[string]any{"id": 0.0, "status": "completed"}, "no item 0"},
		{"set_status", map[string]any{"status": "completed"}, "no item"},
		{"set_status", map[string]any{"id": 1.0, "status": "done"}, "status must be"},
		{"set_status", map[string]any{"id": "1", "status": "completed"}, "integer"},
	}
	for _, tt := range tests {
		_, err := run(tt.op, tt.args)
		wantToolErr(t, err, tt.wantErr)
	}
	if store.saves != saves {
		t.Errorf("refused calls saved %d times", store.saves-saves)
	}
	if res, _ := run("read", nil); res.Content != want {
		t.Errorf("list changed by refused calls: %q", res.Content)
	}
	_, err = exec(t, core.Deps{}, "core.TodoTool", tools.Call{Operation: "read", TaskID: 9})
	wantToolErr(t, err, "not available")
	_, err = exec(t, deps, "core.TodoTool", tools.Call{Operation: "read"})
	wantToolErr(t, err, "not available")
}

// --- read_url ---

func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><script>alert(1)</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p></body></html>`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		_, _ = w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1,"b":[true,null]}`)
	})
	mux.HandleFunc("/rss", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>News</title><description>Daily news</description>
<item><title>First</title><link>https://example.com/1</link><description>&lt;p&gt;One &amp; only&lt;/p&gt;</description><pubDate>Sun, 02 Mar 2025 10:00:00 GMT</pubDate></item>
<item><title>Second</title><link>https://example.com/2</link></item></channel></rss>`)
	})
	mux.HandleFunc("/atom", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title>
<entry><title>Post</title><link rel="alternate" href="https://example.com/post"/><updated>2025-03-02T10:00:00Z</updated><summary>Summary text</summary></entry></feed>`)
	})
	mux.HandleFunc("/xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<config><a>1</a></config>`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain text\nline 2")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("a", 5000))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte{0x89, 'P', 'N', 'G'})
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	})
	mux.HandleFunc("/ua", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, r.UserAgent())
	})
	mux.HandleFunc("/to-private", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/to-page", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestReadURL(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	deps := core.Deps{Net: netguard.Options{AllowLoopback: true}, HTTPTimeout: 5 * time.Second}
	tests := []struct {
		name     string
		deps     core.Deps
		args     map[string]any
		settings map[string]any
		want     []string
		not      []string
		wantErr  string
	}{
		{"html markdown", deps, map[string]any{"url": srv.URL + "/page"}, nil,
			[]string{"URL: " + srv.URL + "/page\nContent-Type: text/html\n", "# Hello", "Some **bold** text and a [link](" + srv.URL + "/next)."}, []string{"alert", "<p>"}, ""},
		{"html text", deps, map[string]any{"url": srv.URL + "/page", "format": "text"}, nil,
			[]string{"Hello\n", "Some bold text and a link ."}, []string{"alert", "**", "<"}, ""},
		{"html raw", deps, map[string]any{"url": srv.URL + "/page", "format": "raw"}, nil, []string{"<h1>Hello</h1>"}, nil, ""},
		{"json", deps, map[string]any{"url": srv.URL + "/json"}, nil, []string{"```json\n{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}\n```"}, nil, ""},
		{"rss", deps, map[string]any{"url": srv.URL + "/rss"}, nil,
			[]string{"# News\n\nDaily news\n\n- [First](https://example.com/1) — Sun, 02 Mar 2025 10:00:00 GMT\n  One & only\n- [Second](https://example.com/2)\n"}, nil, ""},
		{"atom", deps, map[string]any{"url": srv.URL + "/atom"}, nil,
			[]string{"# Blog\n\n- [Post](https://example.com/post) — 2025-03-02T10:00:00Z\n  Summary text\n"}, nil, ""},
		{"plain xml", deps, map[string]any{"url": srv.URL + "/xml"}, nil, []string{"```xml\n<config><a>1</a></config>\n```"}, nil, ""},
		{"text", deps, map[string]any{"url": srv.URL + "/text"}, nil, []string{"\n\nplain text\nline 2"}, nil, ""},
		{"latin1", deps, map[string]any{"url": srv.URL + "/latin1"}, nil, []string{"café"}, nil, ""},
		{"redirect followed", deps, map[string]any{"url": srv.URL + "/to-page"}, nil, []string{"URL: " + srv.URL + "/text\n", "plain text"}, nil, ""},
		{"truncated", deps, map[string]any{"url": srv.URL + "/big"}, map[string]any{"max_bytes": 100.0},
			[]string{"cut off after 100 bytes", "\n\n" + strings.Repeat("a", 100)}, []string{strings.Repeat("a", 101)}, ""},
		{"user agent setting", deps, map[string]any{"url": srv.URL + "/ua"}, map[string]any{"user_agent": "TestBot/2"}, []string{"\n\nTestBot/2"}, nil, ""},
		{"user agent default", deps, map[string]any{"url": srv.URL + "/ua"}, nil, []string{"\n\nagentsvc-read-url/"}, nil, ""},
		{"allowed domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"allowed_domains": []any{"127.0.0.1"}}, []string{"plain text"}, nil, ""},

		{"404", deps, map[string]any{"url": srv.URL + "/missing"}, nil, nil, nil, "HTTP 404 Not Found"},
		{"image", deps, map[string]any{"url": srv.URL + "/image"}, nil, nil, nil, "content type image/png"},
		{"redirect to metadata", deps, map[string]any{"url": srv.URL + "/to-private"}, nil, nil, nil, "private"},
		{"loopback without the test option", core.Deps{}, map[string]any{"url": srv.URL + "/text"}, nil, nil, nil, "refused: host 127.0.0.1 does not resolve to a public address"},
		{"decimal loopback", deps, map[string]any{"url": "http://2130706433/"}, nil, nil, nil, "refused"},
		{"metadata literal", deps, map[string]any{"url": "http://169.254.169.254/"}, nil, nil, nil, "refused"},
		{"user info", deps, map[string]any{"url": "http://user:pw@example.com/"}, nil, nil, nil, "user information"},
		{"file scheme", deps, map[string]any{"url": "file:///etc/passwd"}, nil, nil, nil, "http or https"},
		{"missing url", deps, map[string]any{}, nil, nil, nil, "required"},
		{"bad format", deps, map[string]any{"url": srv.URL + "/text", "format": "pdf"}, nil, nil, nil, "format must be"},
		{"blocked domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"blocked_domains": []any{"127.0.0.1"}}, nil, nil, "domain 127.0.0.1 is blocked"},
		{"not allowed domain", deps, map[string]any{"url": srv.URL + "/text"}, map[string]any{"allowed_domains": []any{"example.com"}}, nil, nil, "not in the allowed domains"},
		{"timeout", core.Deps{Net: netguard.Options{AllowLoopback: true}}, map[string]any{"url": srv.URL + "/slow"}, map[string]any{"tool_http_timeout": 0.2}, nil, nil, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := exec(t, tt.deps, "core.ReadURLTool", tools.Call{Operation: "fetch", Args: tt.args, Settings: tt.settings})
			if tt.wantErr != "" {
				wantToolErr(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content lacks %q:\n%s", w, res.Content)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.Content, n) {
					t.Errorf("content has %q:\n%s", n, res.Content)
				}
			}
			if !json.Valid(res.Data) {
				t.Errorf("data %s", res.Data)
			}
		})
	}
}

// TestReadURLCanceled checks that the caller's cancellation is returned as is, not as a ToolError.
func TestReadURLCanceled(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	e := core.Executors(core.Deps{Net: netguard.Options{AllowLoopback: true}})["core.ReadURLTool"]
	_, err := e.Execute(ctx, tools.Call{Operation: "fetch", Args: map[string]any{"url": srv.URL + "/slow"}})
	var te *tools.ToolError
	if err == nil || errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled fetch: %v", err)
	}
}
