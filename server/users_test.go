package server_test

import (
	"fmt"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

func TestUserAdministration(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	adm, admUser := env.UserClient("root@example.com")
	member, memberUser := env.UserClient("member@example.com")

	member.Get("/users").Expect(t, 403, "FORBIDDEN")
	member.Get(fmt.Sprintf("/users/%d", admUser.Id)).Expect(t, 403, "FORBIDDEN")
	member.Post("/users", map[string]any{"email": "x@example.com", "password": "password-x"}).Expect(t, 403, "FORBIDDEN")
	member.Get(fmt.Sprintf("/users/%d/roles", memberUser.Id)).Expect(t, 403, "FORBIDDEN")

	var list gen.UserListResponse
	adm.Get("/users?per_page=1&page=2").Expect(t, 200).Decode(t, &list)
	if len(list.Data.Users) != 1 || list.Data.Users[0].Id != memberUser.Id {
		t.Fatalf("page 2 of 1 = %+v", list.Data.Users)
	}
	adm.Get("/users?per_page=101").Expect(t, 422, "VALIDATION_ERROR")
	adm.Get("/users/abc").Expect(t, 422, "VALIDATION_ERROR")
	adm.Get("/users/99999").Expect(t, 404, "NOT_FOUND")

	var created gen.UserResponse
	adm.Post("/users", map[string]any{"email": "Grace@example.com", "password": "password-g", "display_name": "Grace", "email_verified": true}).
		Expect(t, 201).Decode(t, &created)
	g := created.Data.User
	if g.Email != "grace@example.com" || g.IsAdmin || !g.EmailVerified || g.DisplayName != "Grace" {
		t.Fatalf("created = %+v", g)
	}
	adm.Post("/users", map[string]any{"email": "grace@example.com", "password": "password-g"}).Expect(t, 409, "CONFLICT")
	gp := fmt.Sprintf("/users/%d", g.Id)

	var upd gen.UserResponse
	adm.Patch(gp, map[string]any{"is_admin": true}).Expect(t, 200).Decode(t, &upd)
	if !upd.Data.User.IsAdmin || len(upd.Data.User.Roles) != 1 || upd.Data.User.Roles[0] != "admin" {
		t.Fatalf("after granting admin: %+v", upd.Data.User)
	}
	adm.Patch(gp, map[string]any{"email": "member@example.com"}).Expect(t, 409, "CONFLICT")
	adm.Put(gp, map[string]any{"email": "grace@example.com", "display_name": "Grace H."}).Expect(t, 422, "VALIDATION_ERROR")
	adm.Put(gp, map[string]any{"email": "grace.h@example.com", "display_name": "Grace H.", "is_admin": false, "email_verified": false, "password": "new password"}).
		Expect(t, 200).Decode(t, &upd)
	if upd.Data.User.IsAdmin || upd.Data.User.EmailVerified || upd.Data.User.Email != "grace.h@example.com" {
		t.Fatalf("after replace: %+v", upd.Data.User)
	}
	env.Client().Login("grace.h@example.com", "new password")

	var roles gen.RoleListResponse
	adm.Post(gp+"/roles", map[string]any{"role": "auditor"}).Expect(t, 200).Decode(t, &roles)
	adm.Post(gp+"/roles", map[string]any{"role": "auditor"}).Expect(t, 200).Decode(t, &roles)
	if len(roles.Data.Roles) != 1 || roles.Data.Roles[0] != "auditor" {
		t.Fatalf("roles = %v", roles.Data.Roles)
	}
	adm.Post(gp+"/roles", map[string]any{"role": "Bad Role"}).Expect(t, 422, "VALIDATION_ERROR")
	adm.Delete(gp+"/roles/auditor").Expect(t, 200).Decode(t, &roles)
	if len(roles.Data.Roles) != 0 {
		t.Fatalf("roles after revoke = %v", roles.Data.Roles)
	}
	adm.Delete(gp+"/roles/auditor").Expect(t, 404, "NOT_FOUND")

	// The last administrator can neither lose the role nor be deleted.
	ap := fmt.Sprintf("/users/%d", admUser.Id)
	adm.Delete(ap+"/roles/admin").Expect(t, 409, "CONFLICT")
	adm.Patch(ap, map[string]any{"is_admin": false, "display_name": "changed"}).Expect(t, 409, "CONFLICT")
	adm.Delete(ap).Expect(t, 409, "CONFLICT")
	var me gen.SessionResponse
	adm.Get("/auth/me").Expect(t, 200).Decode(t, &me)
	if me.Data.User.DisplayName == "changed" || !me.Data.User.IsAdmin {
		t.Fatalf("a refused request wrote: %+v", me.Data.User)
	}

	adm.Delete(gp).Expect(t, 200)
	adm.Get(gp).Expect(t, 404, "NOT_FOUND")
	adm.Delete(gp).Expect(t, 404, "NOT_FOUND")
}

func TestProfileAndLocations(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	c, _ := env.UserClient("ada@example.com")
	other, _ := env.UserClient("bob@example.com")

	var p gen.ProfileResponse
	c.Get("/me/profile").Expect(t, 200).Decode(t, &p)
	if p.Data.Profile.FirstName != "" || p.Data.Profile.UpdatedAt != nil {
		t.Fatalf("fresh profile = %+v", p.Data.Profile)
	}
	c.Put("/me/profile", map[string]any{"timezone": "Mars/Olympus"}).Expect(t, 422, "VALIDATION_ERROR")
	c.Put("/me/profile", map[string]any{"locale": "not a locale!"}).Expect(t, 422, "VALIDATION_ERROR")
	c.Put("/me/profile", map[string]any{"first_name": "Ada", "timezone": "Europe/London", "locale": "en-GB"}).Expect(t, 200)
	c.Get("/me/profile").Expect(t, 200).Decode(t, &p)
	if p.Data.Profile.FirstName != "Ada" || p.Data.Profile.Timezone != "Europe/London" || p.Data.Profile.UpdatedAt == nil {
		t.Fatalf("stored profile = %+v", p.Data.Profile)
	}
	var op gen.ProfileResponse
	other.Get("/me/profile").Expect(t, 200).Decode(t, &op)
	if op.Data.Profile.FirstName != "" {
		t.Fatal("profiles leak between users")
	}

	var home, office gen.LocationResponse
	c.Post("/me/locations", map[string]any{"name": "Home", "latitude": 51.5, "longitude": -0.12, "is_default": true}).Expect(t, 201).Decode(t, &home)
	c.Post("/me/locations", map[string]any{"name": "Office", "is_default": true}).Expect(t, 201).Decode(t, &office)
	c.Post("/me/locations", map[string]any{"name": "Nowhere", "latitude": 91, "longitude": 0}).Expect(t, 422)
	c.Post("/me/locations", map[string]any{"address": "no name"}).Expect(t, 422)
	var ls gen.LocationListResponse
	c.Get("/me/locations").Expect(t, 200).Decode(t, &ls)
	defaults := 0
	for _, l := range ls.Data.Locations {
		if l.IsDefault {
			defaults++
			if l.Id != office.Data.Location.Id {
				t.Fatalf("default is %d, want the office", l.Id)
			}
		}
	}
	if len(ls.Data.Locations) != 2 || defaults != 1 {
		t.Fatalf("locations = %+v", ls.Data.Locations)
	}
	hp := fmt.Sprintf("/me/locations/%d", home.Data.Location.Id)
	other.Put(hp, map[string]any{"name": "Mine now"}).Expect(t, 404, "NOT_FOUND")
	other.Delete(hp).Expect(t, 404, "NOT_FOUND")
	var upd gen.LocationResponse
	c.Put(hp, map[string]any{"name": "Home sweet home", "address": "1 Main St"}).Expect(t, 200).Decode(t, &upd)
	if upd.Data.Location.Name != "Home sweet home" || upd.Data.Location.Latitude != nil {
		t.Fatalf("replaced location = %+v", upd.Data.Location)
	}
	c.Delete(hp).Expect(t, 200)
	c.Delete(hp).Expect(t, 404)
}

// TestDeleteLastGroupOwner: an account that is the only owner of a group cannot be deleted
// until someone else owns it.
func TestDeleteLastGroupOwner(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	adm, _ := env.UserClient("root@example.com")
	owner, ownerUser := env.UserClient("owner@example.com")
	_, memberUser := env.UserClient("member@example.com")
	var g struct {
		Data struct {
			Group struct {
				Id int64 `json:"id"`
			} `json:"group"`
		} `json:"data"`
	}
	owner.Post("/groups", map[string]any{"name": "Team"}).Expect(t, 201).Decode(t, &g)
	gp := fmt.Sprintf("/groups/%d", g.Data.Group.Id)
	owner.Post(gp+"/members", map[string]any{"user_id": fmt.Sprint(memberUser.Id), "role": "member"}).Expect(t, 201)
	up := fmt.Sprintf("/users/%d", ownerUser.Id)
	adm.Delete(up).Expect(t, 409, "CONFLICT")
	owner.Get(gp).Expect(t, 200) // nothing was deleted
	owner.Patch(fmt.Sprintf("%s/members/%d", gp, memberUser.Id), map[string]any{"role": "owner"}).Expect(t, 200)
	adm.Delete(up).Expect(t, 200)
}
