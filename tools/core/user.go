package core

import (
	"context"
	"errors"
	"strings"

	"github.com/agentsvc/svc/internal/vocab/svcerr"
	"github.com/agentsvc/svc/tools"
)

// UserInfoTool tells the agent about the user it works for: name, locale, time zone and saved
// locations. The user is the owner of the agent, never the signed-in session user.
type UserInfoTool struct{}

// Spec declares the tool.
func (UserInfoTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.UserInfoTool",
		Name:        "user_info",
		DisplayName: "User info",
		Description: "Information about the user the agent works for: name, email, locale, time zone and saved locations.",
		Category:    tools.CategoryGeneral,
		Icon:        "user",
		Operations: []tools.Operation{
			readOp("get_base_data", "Return the user's name, email, locale, time zone and profile text."),
			readOp("get_locations", "Return the user's saved locations (name, address, coordinates, default flag)."),
		},
		Params: []tools.Param{{
			Name: "default_only", Type: tools.TypeBoolean, Default: false,
			Description: "get_locations: return only the default location.",
		}},
	}
}

type userInfoExec struct{ users UserInfoSource }

// Execute answers get_base_data and get_locations about the agent's owner (Call.OwnerUserID, never
// the session user). No owner (group agents) and an owner that no longer exists are ToolErrors;
// other store failures are returned as errors.
func (e *userInfoExec) Execute(ctx context.Context, call tools.Call) (tools.Result, error) {
	if call.OwnerUserID == 0 {
		return tools.Result{}, toolErr("no user owns this agent")
	}
	if e.users == nil {
		return tools.Result{}, toolErr("user information is not available")
	}
	switch call.Operation {
	case "get_base_data":
		u, err := e.users.UserByID(ctx, call.OwnerUserID)
		if err != nil {
			return tools.Result{}, userErr(err)
		}
		p, err := e.users.Profile(ctx, call.OwnerUserID)
		if err != nil {
			return tools.Result{}, userErr(err)
		}
		name := strings.TrimSpace(p.FirstName + " " + p.LastName)
		if name == "" {
			name = u.DisplayName
		}
		data := map[string]any{
			"name": name, "display_name": u.DisplayName, "first_name": p.FirstName, "last_name": p.LastName,
			"email": u.Email, "locale": p.Locale, "timezone": p.Timezone, "bio": p.Bio,
		}
		var b strings.Builder
		line := func(label, v string) {
			if v != "" {
				b.WriteString(label + ": " + v + "\n")
			}
		}
		line("Name", name)
		line("Email", u.Email)
		line("Locale", p.Locale)
		line("Time zone", p.Timezone)
		line("About", p.Bio)
		return tools.Result{Content: strings.TrimSuffix(b.String(), "\n"), Data: jsonData(data)}, nil
	case "get_locations":
		defaultOnly, err := boolArg(call.Args, "default_only", false)
		if err != nil {
			return tools.Result{}, err
		}
		locs, err := e.users.ListLocations(ctx, call.OwnerUserID)
		if err != nil {
			return tools.Result{}, userErr(err)
		}
		out := []map[string]any{}
		var b strings.Builder
		for _, l := range locs {
			if defaultOnly && !l.IsDefault {
				continue
			}
			out = append(out, map[string]any{
				"id": l.ID, "name": l.Name, "address": l.Address,
				"latitude": l.Latitude, "longitude": l.Longitude, "is_default": l.IsDefault,
			})
			b.WriteString("- " + l.Name)
			if l.IsDefault {
				b.WriteString(" (default)")
			}
			if l.Address != "" {
				b.WriteString(": " + l.Address)
			}
			if l.Latitude != nil && l.Longitude != nil {
				b.WriteString(" [" + formatNumber(*l.Latitude, 6) + ", " + formatNumber(*l.Longitude, 6) + "]")
			}
			b.WriteByte('\n')
		}
		content := strings.TrimSuffix(b.String(), "\n")
		if len(out) == 0 {
			content = "The user has no saved locations."
			if defaultOnly {
				content = "The user has no default location."
			}
		}
		return tools.Result{Content: content, Data: jsonData(map[string]any{"locations": out})}, nil
	}
	return tools.Result{}, unknownOp(call.Operation)
}

func userErr(err error) error {
	if errors.Is(err, svcerr.ErrNotFound) {
		return toolErr("the user who owns this agent no longer exists")
	}
	return err
}
