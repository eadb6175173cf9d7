// Administration: the outgoing mail configuration with a test message, the runtime settings
// (stored over the file and the environment), the global settings of each tool (password settings masked), and the plugins
// (inventory; catalog, install, update and uninstall when the server enables them).
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Schemas } from "../api";
import { FormPanel } from "../crud";
import { reloadConfig, useSession } from "../session";
import { SettingsForm } from "../settingsform";
import { SSOProviders } from "./ssoproviders";
import { Check, ErrorNote, Field, Link, PageHeader, formatTime, useAction, useLoad } from "../ui";

export function SettingsPage() {
  const { config } = useSession();
  return (
    <>
      <PageHeader title="Server settings" />
      <div class="split">
        <MailSettings />
        <div>
          <RuntimeSettings />
          <section class="panel" aria-labelledby="facts-h">
            <h2 id="facts-h">Set at start</h2>
            <p class="muted small">From the configuration file and the environment; a change needs a restart.</p>
            {config && (
              <dl class="facts">
                <dt>Mount prefix</dt>
                <dd class="mono">{config.app_prefix || "/"}</dd>
                <dt>Worker</dt>
                <dd>{config.worker_runtime_mode === "client" ? "client (browsers run the chats)" : "server"}</dd>
                <dt>Push hub</dt>
                <dd>{config.push}</dd>
              </dl>
            )}
          </section>
          <GlobalToolSettings />
        </div>
      </div>
      <SSOProviders />
    </>
  );
}

type RuntimeSetting = Schemas["RuntimeSetting"];

// Friendly names of the runtime settings (the key is shown beside each).
const settingLabel: Record<string, string> = {
  allow_registration: "Open registration",
  SVC_AGENT_API: "Per-agent API",
  SVC_AGENT_API_RATE_LIMIT_MAX: "Per-agent API requests per minute",
  notifications_email_enabled: "Email when a scheduled run completes",
  plugin_catalog_enabled: "Plugin catalog",
  plugin_catalog_url: "Plugin catalog address",
  plugin_catalog_public_key: "Plugin catalog signing key",
  plugin_catalog_ttl: "Catalog cache (seconds)",
  plugin_install_enabled: "Plugin install",
  llm_timeout: "Model call timeout (seconds)",
  llm_allowed_hosts: "Private hosts for model configurations",
  password_login_enabled: "Password sign-in (administrators always keep it)",
  oidc_allowed_hosts: "Private hosts for single sign-on issuers",
  retention_task_days: "Keep finished chats (days)",
  retention_task_events_days: "Keep event logs of finished tasks (days)",
  retention_outbox_days: "Keep delivered webhooks and mails (days)",
  retention_notifications_days: "Keep read notifications (days)",
  retention_usage_ledger_days: "Keep the per-call usage ledger (days)",
};

const sourceText: Record<RuntimeSetting["source"], string> = { default: "default", file: "from the file", environment: "from the environment", stored: "stored here" };

const shownValue = (s: RuntimeSetting) => (s.type === "boolean" ? (s.value ? "on" : "off") : String(s.value ?? "") || "(empty)");

/** The runtime settings an administrator may change (GET/PATCH /runtime-settings): only the changed ones are sent; "Use default" clears a stored value. */
function RuntimeSettings() {
  const list = useLoad(async () => (await unwrap(api.GET("/runtime-settings"))).data.settings, []);
  const [draft, setDraft] = useState<Record<string, unknown>>({});
  const reset = useAction();
  const patch = async (settings: Record<string, unknown>) => {
    list.set((await unwrap(api.PATCH("/runtime-settings", { body: { settings } }))).data.settings);
    setDraft({});
    await reloadConfig();
  };
  const value = (s: RuntimeSetting) => (s.key in draft ? draft[s.key] : s.value);
  const changed = Object.keys(draft).filter((k) => list.data?.find((s) => s.key === k)?.value !== draft[k]);
  return (
    <FormPanel
      title="Runtime settings"
      submit="Save runtime settings"
      saved="Runtime settings saved."
      note={<p class="muted small">Stored settings override the configuration file and the environment, and apply at the next request.</p>}
      onSubmit={async () => {
        const settings: Record<string, unknown> = {};
        for (const k of changed) settings[k] = draft[k];
        if (changed.length === 0) throw new Error("Nothing changed.");
        await patch(settings);
      }}
    >
      <ErrorNote error={list.error} />
      <ErrorNote error={reset.error} />
      {(list.data ?? []).map((s) => (
        <div key={s.key} class="setting">
          {s.type === "boolean" ? (
            <Check label={settingLabel[s.key] ?? s.key} checked={value(s) === true} onChange={(v) => setDraft((d) => ({ ...d, [s.key]: v }))} hint={s.description} />
          ) : (
            <Field
              label={settingLabel[s.key] ?? s.key}
              type={s.type === "integer" ? "number" : "text"}
              value={String(value(s) ?? "")}
              onValue={(v) => setDraft((d) => ({ ...d, [s.key]: s.type === "integer" ? (v === "" ? v : Number(v)) : v }))}
              hint={s.description}
            />
          )}
          <p class="muted small setting-source">
            <span class="mono">{s.key}</span> · {sourceText[s.source]}
            {s.source !== "default" && ` · default ${shownValue({ ...s, value: s.default })}`}
            {s.source === "stored" && (
              <>
                {" · "}
                <button type="button" class="link" aria-label={`stop overriding ${settingLabel[s.key] ?? s.key} (use the default)`} disabled={reset.pending} onClick={() => reset.run(() => patch({ [s.key]: null }))}>
                  stop overriding
                </button>
              </>
            )}
          </p>
        </div>
      ))}
    </FormPanel>
  );
}

function MailSettings() {
  const cfg = useLoad(async () => (await unwrap(api.GET("/mail-config"))).data.mail_config, []);
  return (
    <div>
      <ErrorNote error={cfg.error} />
      {cfg.data && <MailForm cfg={cfg.data} onSaved={cfg.set} />}
      <MailTest />
    </div>
  );
}

function MailForm(props: { cfg: Schemas["MailConfig"]; onSaved: (c: Schemas["MailConfig"]) => void }) {
  const c = props.cfg;
  const [f, setF] = useState({ driver: c.driver, host: c.host, port: String(c.port || ""), username: c.username ?? "", password: "", encryption: c.encryption, from_address: c.from_address, from_name: c.from_name ?? "" });
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  return (
    <FormPanel
      title="Outgoing mail"
      submit="Save mail settings"
      saved="Saved."
      onSubmit={async () => {
        const r = await unwrap(
          api.PUT("/mail-config", {
            body: { driver: f.driver, host: f.host, port: Number(f.port || 0), username: f.username || undefined, password: f.password || undefined, encryption: f.encryption, from_address: f.from_address, from_name: f.from_name || undefined },
          }),
        );
        props.onSaved(r.data.mail_config);
      }}
    >
      <div class="row">
        <div class="field">
          <label for="mail-driver">Driver</label>
          <select id="mail-driver" value={f.driver} onChange={(e) => set("driver")((e.target as HTMLSelectElement).value)}>
            <option value="smtp">SMTP</option>
            <option value="log">Log only (development)</option>
          </select>
        </div>
        <div class="field">
          <label for="mail-enc">Encryption</label>
          <select id="mail-enc" value={f.encryption} onChange={(e) => set("encryption")((e.target as HTMLSelectElement).value)}>
            <option value="none">none</option>
            <option value="tls">STARTTLS</option>
            <option value="ssl">SSL/TLS</option>
          </select>
        </div>
      </div>
      <div class="row">
        <Field label="SMTP host" value={f.host} onValue={set("host")} />
        <Field label="Port" type="number" value={f.port} onValue={set("port")} />
      </div>
      <div class="row">
        <Field label="SMTP user" value={f.username} onValue={set("username")} />
        <Field label="SMTP password" type="password" autoComplete="new-password" value={f.password} onValue={set("password")} hint={c.password_set ? "Stored (never shown); leave empty to keep it." : undefined} />
      </div>
      <div class="row">
        <Field label="From address" type="email" value={f.from_address} onValue={set("from_address")} />
        <Field label="From name" value={f.from_name} onValue={set("from_name")} />
      </div>
    </FormPanel>
  );
}

function MailTest() {
  const { user } = useSession();
  const [to, setTo] = useState(user?.email ?? "");
  const act = useAction();
  const [outcome, setOutcome] = useState<Schemas["TestMailOutcomeResponse"]["data"] | null>(null);
  return (
    <form
      class="panel"
      aria-labelledby="mailtest-h"
      onSubmit={(e) => {
        e.preventDefault();
        setOutcome(null);
        void act.run(async () => setOutcome((await unwrap(api.POST("/mail-config/test", { body: { to } }))).data));
      }}
    >
      <h2 id="mailtest-h">Send a test message</h2>
      <Field label="Send the test to" type="email" required value={to} onValue={setTo} />
      <ErrorNote error={act.error} />
      {outcome && (outcome.sent ? <p class="notice">Sent to {outcome.to}.</p> : <ErrorNote error={`Not sent to ${outcome.to}: ${outcome.error}`} />)}
      <button disabled={act.pending}>{act.pending ? "Sending…" : "Send test message"}</button>
    </form>
  );
}

function GlobalToolSettings() {
  const tools = useLoad(async () => (await unwrap(api.GET("/tools"))).data.tools.filter((t) => t.settings.length > 0), []);
  const [sel, setSel] = useState("");
  const tool = tools.data?.find((t) => t.tool_class === sel);
  const values = useLoad(async () => (sel ? (await unwrap(api.GET("/tools/{toolId}/settings", { params: { path: { toolId: sel } } }))).data.settings.settings : {}), [sel]);
  const act = useAction();
  const [saved, setSaved] = useState(false);
  return (
    <section class="panel" aria-labelledby="gtools-h">
      <h2 id="gtools-h">Tool settings for everyone</h2>
      <p class="muted small">The lowest layer: groups, users and agents can override them.</p>
      <ErrorNote error={tools.error} />
      <div class="field">
        <label for="gtool">Tool</label>
        <select id="gtool" value={sel} onChange={(e) => (setSel((e.target as HTMLSelectElement).value), setSaved(false))}>
          <option value="">Choose a tool…</option>
          {(tools.data ?? []).map((t) => (
            <option key={t.tool_class} value={t.tool_class}>
              {t.display_name}
            </option>
          ))}
        </select>
      </div>
      <ErrorNote error={values.error} />
      {tool && values.data && !values.loading && (
        <SettingsForm
          key={sel}
          decls={tool.settings}
          values={values.data}
          pending={act.pending}
          error={act.error}
          onSave={(settings) =>
            act.run(async () => {
              values.set((await unwrap(api.PUT("/tools/{toolId}/settings", { params: { path: { toolId: sel } }, body: { settings } }))).data.settings.settings);
              setSaved(true);
            })
          }
        />
      )}
      {saved && <p class="notice">Saved.</p>}
    </section>
  );
}

export function PluginsPage() {
  const { config, user } = useSession();
  const list = useLoad(async () => (await unwrap(api.GET("/plugins"))).data.plugins, []);
  const act = useAction();
  const [uninstalled, setUninstalled] = useState(0); // the catalog's installed versions change too
  return (
    <>
      <PageHeader title="Plugins" />
      <p class="muted">Plugins live in folders below the server's plugins directory; they contribute tools, agent templates, skills and more.</p>
      <ErrorNote error={list.error} />
      <ErrorNote error={act.error} />
      {list.data && list.data.length === 0 && <p class="muted">No plugins installed.</p>}
      <ul class="cards" aria-label="Installed plugins">
        {(list.data ?? []).map((p) => {
          const c = p.contributes;
          const parts = Object.entries(c)
            .filter(([, n]) => n > 0)
            .map(([k, n]) => `${n} ${k.replace(/_/g, " ")}`);
          return (
            <li key={p.package} class="card">
              <div class="spread-line">
                <h2 class="card-title">{p.name}</h2>
                <span>
                  <span class={`badge tone-${p.enabled ? "ok" : "neutral"}`}>{p.enabled ? "enabled" : "disabled"}</span> <span class="badge tone-neutral">{p.source}</span>
                </span>
              </div>
              <p class="muted small mono">
                {p.package} · v{p.version}
              </p>
              <p class="small">{p.description}</p>
              {parts.length > 0 && <p class="muted small">Contributes {parts.join(", ")}.</p>}
              {p.enabled && c.apps > 0 && (
                <p class="small">
                  <Link to={`/apps/${encodeURIComponent(p.slug)}`}>Open its page</Link>
                </p>
              )}
              {p.required_by.length > 0 && <p class="muted small">Required by {p.required_by.join(", ")}.</p>}
              {p.error && <p class="error small">{p.error}</p>}
              {user?.is_admin && config?.plugin_install_enabled && p.source === "installed" && !p.required && (
                <button
                  type="button"
                  class="small danger"
                  disabled={act.pending}
                  onClick={() => {
                    if (confirm(`Uninstall ${p.name}?`)) void act.run(async () => (await unwrap(api.DELETE("/plugins/{package}", { params: { path: { package: p.package } } })), await list.reload(), setUninstalled((n) => n + 1)));
                  }}
                >
                  Uninstall
                </button>
              )}
            </li>
          );
        })}
      </ul>
      {user?.is_admin && config?.plugin_catalog_enabled && <Catalog key={uninstalled} installable={config.plugin_install_enabled} onChange={list.reload} />}
    </>
  );
}

function Catalog(props: { installable: boolean; onChange: () => Promise<void> }) {
  const cat = useLoad(async () => (await unwrap(api.GET("/plugins/catalog"))).data, []);
  const act = useAction();
  const [busy, setBusy] = useState("");
  return (
    <section class="panel" aria-labelledby="catalog-h">
      <h2 id="catalog-h">Catalog</h2>
      <ErrorNote error={cat.error} />
      <ErrorNote error={act.error} />
      {cat.data && !cat.data.configured && (
        <div class="empty" data-testid="catalog-empty">
          <p>No plugin catalog is configured, so there is nothing to browse here yet.</p>
          <p class="muted small">
            A catalog is a JSON index of plugin packages. An administrator sets its address as <span class="mono">plugin_catalog_url</span> in the runtime settings of <Link to="/settings">Server settings</Link>; the index format is in the
            README's Configuration section and in the API description of <a href={`${prefix}/api/v1/openapi.yaml`}>GET /plugins/catalog</a>.
          </p>
        </div>
      )}
      {cat.data?.configured && (
        <p class="muted small">
          Fetched {formatTime(cat.data.fetched_at)}
          {cat.data.stale ? " (stale: the catalog could not be reached)" : ""}.
        </p>
      )}
      {cat.data?.configured && (
        <table class="table">
          <tbody>
            {(cat.data?.entries ?? []).map((e) => (
              <tr key={e.package}>
                <td>
                  <strong>{e.name}</strong>
                  <small class="muted block">{e.description}</small>
                </td>
                <td class="mono small">{!e.installed_version ? e.latest_version : e.installed_version === e.latest_version ? `${e.latest_version} (installed)` : `${e.installed_version} → ${e.latest_version}`}</td>
                <td class="right">
                  {props.installable && (!e.installed_version || e.installed_version !== e.latest_version) && (
                    <button
                      type="button"
                      class="small"
                      aria-label={`${e.installed_version ? "Update" : "Install"} ${e.name}`}
                      disabled={act.pending}
                      onClick={() => {
                        setBusy(e.package);
                        void act.run(async () => {
                          if (e.installed_version) await unwrap(api.PATCH("/plugins/{package}", { params: { path: { package: e.package } }, body: { version: e.latest_version } }));
                          else await unwrap(api.POST("/plugins", { body: { package: e.package } }));
                          await cat.reload();
                          await props.onChange();
                        }).finally(() => setBusy(""));
                      }}
                    >
                      {busy === e.package ? "Working…" : e.installed_version ? "Update" : "Install"}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cat.data?.configured && !props.installable && <p class="muted small">Installing is disabled on this server (plugin_install_enabled).</p>}
    </section>
  );
}
