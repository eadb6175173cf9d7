package server_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentsvc/svc/api/apitest"
	"github.com/agentsvc/svc/gen"
)

func runtimeSettings(t *testing.T, c *apitest.Client) map[string]gen.RuntimeSetting {
	t.Helper()
	var out gen.RuntimeSettingsResponse
	c.Get("/runtime-settings").Expect(t, 200).Decode(t, &out)
	m := make(map[string]gen.RuntimeSetting, len(out.Data.Settings))
	for _, s := range out.Data.Settings {
		m[s.Key] = s
	}
	return m
}

// TestRuntimeSettings: an administrator reads the runtime settings with their sources, stores
// some (they apply at the next request and survive a restart), clears one (the environment
// applies again), and every refusal stores nothing; others are refused.
func TestRuntimeSettings(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, "SVC_PLUGIN_CATALOG_TTL=120")
	adm, _ := env.UserClient("root@example.com")
	member, _ := env.UserClient("member@example.com")

	member.Get("/runtime-settings").Expect(t, 403, "FORBIDDEN")
	member.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"allow_registration": false}}).Expect(t, 403, "FORBIDDEN")
	env.Client().Get("/runtime-settings").Expect(t, 401, "UNAUTHENTICATED")

	s := runtimeSettings(t, adm)
	if got := s["plugin_install_enabled"]; got.Value != false || got.Default != false || got.Source != gen.RuntimeSettingSourceDefault || got.Type != gen.RuntimeSettingTypeBoolean || got.Description == "" {
		t.Fatalf("plugin_install_enabled = %+v", got)
	}
	if got := s["plugin_catalog_ttl"]; got.Value != float64(120) || got.Default != float64(3600) || got.Source != gen.RuntimeSettingSourceEnvironment || got.Type != gen.RuntimeSettingTypeInteger {
		t.Fatalf("plugin_catalog_ttl = %+v", got)
	}
	for _, k := range []string{"db_driver", "secret_key", "mail_password", "mail_host", "listen", "app_prefix"} {
		if _, ok := s[k]; ok {
			t.Errorf("%s is listed as editable", k)
		}
	}

	// Store three; they apply at once (the public flags, the registration gate).
	var put gen.RuntimeSettingsResponse
	adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{
		"plugin_install_enabled": true, "plugin_catalog_ttl": 60, "allow_registration": false}}).Expect(t, 200).Decode(t, &put)
	s = runtimeSettings(t, adm)
	if len(put.Data.Settings) != len(s) {
		t.Fatalf("PATCH answered %d settings, GET %d", len(put.Data.Settings), len(s))
	}
	for k, want := range map[string]any{"plugin_install_enabled": true, "plugin_catalog_ttl": float64(60), "allow_registration": false} {
		if got := s[k]; got.Value != want || got.Source != gen.RuntimeSettingSourceStored {
			t.Errorf("%s after PATCH = %+v, want %v stored", k, got, want)
		}
	}
	var pub gen.PublicConfigResponse
	env.Client().Get("/config").Expect(t, 200).Decode(t, &pub)
	if !pub.Data.Config.PluginInstallEnabled || pub.Data.Config.AllowRegistration {
		t.Fatalf("/config after PATCH = %+v", pub.Data)
	}
	env.Client().Post("/auth/register", map[string]any{"email": "late@example.com", "password": "a long enough password"}).Expect(t, 403, "FORBIDDEN")

	// Refusals store nothing, whichever key or value is wrong and whatever else the call holds.
	stored := func() map[string]any {
		m, err := env.App.Store.Settings(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before, beforeList := stored(), runtimeSettings(t, adm)
	for name, body := range map[string]any{
		"not editable":       map[string]any{"settings": map[string]any{"plugin_install_enabled": false, "db_driver": "mysql"}},
		"mail key":           map[string]any{"settings": map[string]any{"mail_host": "smtp.example.com"}},
		"unknown key":        map[string]any{"settings": map[string]any{"plugin_install_enabled": false, "log_levle": "debug"}},
		"secret":             map[string]any{"settings": map[string]any{"secret_key": "x"}},
		"wrong type":         map[string]any{"settings": map[string]any{"plugin_install_enabled": false, "plugin_catalog_ttl": "60"}},
		"string for boolean": map[string]any{"settings": map[string]any{"allow_registration": "true"}},
		"fraction":           map[string]any{"settings": map[string]any{"llm_timeout": 1.5}},
		"negative":           map[string]any{"settings": map[string]any{"plugin_install_enabled": false, "llm_timeout": -1}},
		"catalog not http":   map[string]any{"settings": map[string]any{"plugin_catalog_url": "ftp://catalog.example.com/index.json"}},
		"nothing":            map[string]any{"settings": map[string]any{}},
		"no settings member": map[string]any{"plugin_install_enabled": false},
	} {
		t.Run(name, func(t *testing.T) {
			adm.Patch("/runtime-settings", body).Expect(t, 422, "VALIDATION_ERROR")
		})
	}
	if after := stored(); !reflect.DeepEqual(after, before) {
		t.Fatalf("refusals changed the stored settings: %v → %v", before, after)
	}
	if after := runtimeSettings(t, adm); !reflect.DeepEqual(after, beforeList) {
		t.Fatalf("refusals changed the settings in force")
	}

	// The mail configuration, stored beside them, is kept by a runtime change and the other
	// way round.
	adm.Put("/mail-config", map[string]any{"driver": "log", "host": "", "port": 25, "encryption": "none",
		"from_address": "noreply@example.test"}).Expect(t, 200)
	adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"notifications_email_enabled": false}}).Expect(t, 200)
	if got := getMailConfig(t, adm); got.Driver != "log" || got.FromAddress != "noreply@example.test" {
		t.Fatalf("mail configuration after a runtime change = %+v", got)
	}
	if got := runtimeSettings(t, adm)["plugin_install_enabled"]; got.Value != true {
		t.Fatalf("plugin_install_enabled after a mail change = %+v", got)
	}

	// null clears the stored value: the environment applies again.
	adm.Patch("/runtime-settings", map[string]any{"settings": map[string]any{"plugin_catalog_ttl": nil}}).Expect(t, 200)
	if got := runtimeSettings(t, adm)["plugin_catalog_ttl"]; got.Value != float64(120) || got.Source != gen.RuntimeSettingSourceEnvironment {
		t.Fatalf("plugin_catalog_ttl after clearing = %+v", got)
	}
	if _, ok := stored()["plugin_catalog_ttl"]; ok {
		t.Fatal("the cleared setting is still stored")
	}

	// A restart over the same database keeps what was stored.
	app := reopen(t, env)
	c := app.Config.Current()
	if !c.PluginInstallEnabled || c.AllowRegistration || c.NotificationsEmailEnabled || c.PluginCatalogTTL != 3600 {
		t.Fatalf("after a restart: install %v, registration %v, email %v, ttl %d", c.PluginInstallEnabled, c.AllowRegistration,
			c.NotificationsEmailEnabled, c.PluginCatalogTTL)
	}
}
