package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentsvc/svc/internal/platform/skill"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// SkillTool loads Agent Skills on demand: the model sees the names and descriptions of its
// allowed skills and reads a skill's instructions and files when a task calls for them.
type SkillTool struct{}

// Spec declares the tool.
func (SkillTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.SkillTool",
		Name:        "skill",
		DisplayName: "Skills",
		Description: "Load an allowed skill: read returns its instructions, files lists or reads the files that come with it.",
		Category:    tools.CategoryGeneral,
		Icon:        "book-open",
		Operations: []tools.Operation{
			readOp("read", "Return the skill's instructions (SKILL.md)."),
			readOp("files", "List the skill's files, or read one when path is given."),
		},
		Params: []tools.Param{
			{Name: "name", Type: tools.TypeString, Description: "Skill name, one of skills.allowed."},
			{Name: "path", Type: tools.TypeString, Description: "files: relative path of a file to read; omit to list the files.", Required: tools.Optional()},
		},
		Settings: []tools.Setting{{
			Key: "allowed_skills", Label: "Allowed skills", Type: tools.SettingStringList,
			Description: "Names of the skills this agent may load; none when empty.",
		}},
	}
}

type skillExec struct{ idx *skill.Index }

// Execute runs read (the skill's instructions) and files (list, or read one with path). Only
// names in the allowed_skills setting may be loaded; unknown or disallowed names, bad paths and
// binary files are ToolErrors.
func (e *skillExec) Execute(_ context.Context, call tools.Call) (tools.Result, error) {
	name, err := requiredString(call.Args, "name")
	if err != nil {
		return tools.Result{}, err
	}
	name = strings.TrimSpace(name)
	allowed := stringList(call.Settings["allowed_skills"])
	if !slices.Contains(allowed, name) {
		if len(allowed) == 0 {
			return tools.Result{}, toolErr("no skills are allowed for this agent")
		}
		return tools.Result{}, toolErr("skill %q is not allowed; allowed skills: %s", name, strings.Join(allowed, ", "))
	}
	if e.idx == nil || !e.idx.Exists(name) {
		return tools.Result{}, toolErr("skill %q is not installed", name)
	}
	switch call.Operation {
	case "read":
		body, err := e.idx.Body(name)
		if err != nil {
			return tools.Result{}, skillErr(err)
		}
		s, _ := e.idx.Get(name)
		return tools.Result{
			Content: "# Skill: " + name + "\n\n" + body,
			Data:    jsonData(map[string]any{"name": name, "description": s.Description, "source": s.Source}),
		}, nil
	case "files":
		path, _, err := stringArg(call.Args, "path")
		if err != nil {
			return tools.Result{}, err
		}
		path = strings.TrimSpace(path)
		if path == "" {
			files, err := e.idx.Files(name)
			if err != nil {
				return tools.Result{}, skillErr(err)
			}
			content := "Skill " + name + " has no files besides its instructions."
			if len(files) > 0 {
				content = "Files of skill " + name + ":\n- " + strings.Join(files, "\n- ")
			}
			return tools.Result{Content: content, Data: jsonData(map[string]any{"name": name, "files": files})}, nil
		}
		b, err := e.idx.ReadFile(name, path)
		if err != nil {
			return tools.Result{}, skillErr(err)
		}
		if !utf8.Valid(b) || slices.Contains(b, 0) {
			return tools.Result{}, toolErr("file %s of skill %s is binary and cannot be shown", path, name)
		}
		return tools.Result{
			Content: string(b),
			Data:    jsonData(map[string]any{"name": name, "path": path, "bytes": len(b)}),
		}, nil
	}
	return tools.Result{}, unknownOp(call.Operation)
}

// skillErr turns the index's categorised refusals into ToolErrors; I/O failures stay errors.
func skillErr(err error) error {
	if msg, kind, ok := svcerr.Public(err); ok && (errors.Is(kind, svcerr.ErrNotFound) || errors.Is(kind, svcerr.ErrInvalid) || errors.Is(kind, svcerr.ErrTooLarge)) {
		return &tools.ToolError{Msg: msg}
	}
	return err
}
