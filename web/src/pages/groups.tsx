// Groups: the caller's groups (create), and one group with its members and roles, its model
// configurations (the default marked; edited in place; API keys write-only; the scripted driver
// and global configurations are the administrators'), its tool entries with their settings
// (password settings masked), its preferences and its agents.
import { Budgets } from "./usage";
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Schemas } from "../api";
import { PictureEditor } from "../picture";
import { navigate } from "../router";
import { useSession } from "../session";
import { TestConnection } from "../llmtest";
import { SettingsForm } from "../settingsform";
import { CancelButton, EditList, FormPanel } from "../crud";
import { Check, ErrorNote, Field, Link, PageHeader, Tabs, TextArea, formatTime, useAction, useId, useLoad } from "../ui";

type Group = Schemas["Group"];
type Llm = Schemas["LlmConfig"];

export async function loadGroups(): Promise<Group[]> {
  return (await unwrap(api.GET("/groups", { params: { query: { per_page: 100 } } }))).data.groups;
}

export function GroupList() {
  const groups = useLoad(loadGroups, []);
  const [name, setName] = useState("");
  const [desc, setDesc] = useState("");
  return (
    <>
      <PageHeader title="Groups" />
      <div class="split">
        <FormPanel
          title="New group"
          submit="Create group"
          note={<p class="muted">A group shares agents, model configurations and tool settings among its members.</p>}
          onSubmit={async () => navigate(`/groups/${(await unwrap(api.POST("/groups", { body: { name, description: desc } }))).data.group.id}`)}
        >
          <Field label="Group name" required value={name} onValue={setName} />
          <Field label="Description" value={desc} onValue={setDesc} />
        </FormPanel>
        <section class="panel">
          <h2>Your groups</h2>
          <ErrorNote error={groups.error} />
          {groups.data && groups.data.length === 0 && <p class="muted">You are in no group yet.</p>}
          <ul class="plain">
            {(groups.data ?? []).map((g) => (
              <li key={g.id}>
                <Link to={`/groups/${g.id}`}>{g.name}</Link> <span class="chip">{g.your_role}</span>
                <span class="muted small">{g.description}</span>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </>
  );
}

type Tab = "members" | "models" | "tools" | "settings";
const tabs: { id: Tab; label: string; suffix: string }[] = [
  { id: "members", label: "Members", suffix: "" },
  { id: "models", label: "Model configurations", suffix: "/models" },
  { id: "tools", label: "Tools", suffix: "/tools" },
  { id: "settings", label: "Settings", suffix: "/settings" },
];

export function GroupPage(props: { id: string; tab: Tab }) {
  const group = useLoad(async () => (await unwrap(api.GET("/groups/{id}", { params: { path: { id: Number(props.id) } } }))).data.group, [props.id]);
  const g = group.data;
  return (
    <>
      <PageHeader title={g ? g.name : "Group"} back={{ to: "/groups", label: "Groups" }}>
        {g && <span class="chip">your role: {g.your_role}</span>}
      </PageHeader>
      <ErrorNote error={group.error} />
      {g && (
        <>
          <Tabs label="Group sections" base={`/groups/${g.id}`} tabs={tabs} current={props.tab} />
          {props.tab === "members" && <Members group={g} />}
          {props.tab === "models" && <Models group={g} />}
          {props.tab === "tools" && <GroupTools group={g} />}
          {props.tab === "settings" && <GroupSettings group={g} onSaved={group.set} />}
          {props.tab === "settings" && <Budgets kind="group" id={String(g.id)} title="Budgets of this group" />}
        </>
      )}
    </>
  );
}

const roles = ["member", "admin", "owner"] as const;

function Members(props: { group: Group }) {
  const id = props.group.id;
  const members = useLoad(async () => (await unwrap(api.GET("/groups/{id}/members", { params: { path: { id } } }))).data.members, [id]);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<(typeof roles)[number]>("member");
  const change = useAction();
  return (
    <div class="split">
      <FormPanel
        title="Add a member"
        submit="Add member"
        onSubmit={async () => {
          await unwrap(api.POST("/groups/{id}/members", { params: { path: { id } }, body: { email, role } }));
          setEmail("");
          await members.reload();
        }}
      >
        <Field label="Member's email" type="email" required value={email} onValue={setEmail} hint="The person needs an account on this server." />
        <div class="field">
          <label for="new-member-role">Role</label>
          <select id="new-member-role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as typeof role)}>
            {roles.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </div>
      </FormPanel>
      <section class="panel">
        <h2>Members</h2>
        <ErrorNote error={members.error} />
        <ErrorNote error={change.error} />
        <table class="table">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              <th scope="col">Source</th>
              <th scope="col" class="hide-narrow">
                Joined
              </th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(members.data ?? []).map((m) => (
              <tr key={m.user_id}>
                <td>
                  {m.display_name || m.email}
                  <small class="muted block">{m.email}</small>
                </td>
                <td>
                  <select
                    aria-label={`Role of ${m.email}`}
                    value={m.role}
                    disabled={change.pending}
                    onChange={(e) => {
                      const r = (e.target as HTMLSelectElement).value as (typeof roles)[number];
                      void change.run(async () => {
                        try {
                          await unwrap(api.PATCH("/groups/{id}/members/{uid}", { params: { path: { id, uid: m.user_id } }, body: { role: r } }));
                        } finally {
                          await members.reload();
                        }
                      });
                    }}
                  >
                    {roles.map((r) => (
                      <option key={r}>{r}</option>
                    ))}
                  </select>
                </td>
                <td>
                  <span class="chip nowrap" title={m.source === "manual" ? "Added in the console or the API" : "Granted by a single sign-on provider's group mapping at each sign-in"}>
                    {m.source === "manual" ? "manual" : `provider ${m.source.replace(/^oidc:/, "")}`}
                  </span>
                </td>
                <td class="hide-narrow">{formatTime(m.joined_at)}</td>
                <td class="right">
                  <button
                    type="button"
                    class="danger small"
                    aria-label={`Remove ${m.email}`}
                    disabled={change.pending}
                    onClick={() => {
                      if (!confirm(`Remove ${m.email} from the group?`)) return;
                      void change.run(async () => {
                        await unwrap(api.DELETE("/groups/{id}/members/{uid}", { params: { path: { id, uid: m.user_id } } }));
                        await members.reload();
                      });
                    }}
                  >
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}

type LlmForm = { name: string; driver: "openai" | "anthropic" | "scripted"; model: string; base_url: string; api_key: string; temperature: string; max_tokens_output: string; context_window: string; timeout: string; is_default: boolean; is_global: boolean };
const emptyLlm: LlmForm = { name: "", driver: "openai", model: "", base_url: "", api_key: "", temperature: "", max_tokens_output: "", context_window: "", timeout: "", is_default: false, is_global: false };
const num = (s: string) => (s === "" ? undefined : Number(s));
const str = (v: number | null | undefined) => (v === null || v === undefined || v === 0 ? "" : String(v));

/** Adds a model configuration to the group, or (config set) edits it in place. */
function LlmEditor(props: { group: Group; config?: Llm; onSaved: () => Promise<unknown>; onCancel?: () => void }) {
  const { user } = useSession();
  const e = props.config;
  const [f, setF] = useState<LlmForm>(
    e
      ? { name: e.name, driver: e.driver, model: e.model, base_url: e.base_url ?? "", api_key: "", temperature: str(e.temperature), max_tokens_output: str(e.max_tokens_output), context_window: str(e.context_window), timeout: str(e.timeout), is_default: e.is_default, is_global: e.is_global }
      : emptyLlm,
  );
  const set = (k: keyof LlmForm) => (v: string | boolean) => setF((o) => ({ ...o, [k]: v }));
  const driverId = useId("llm-driver");
  const id = props.group.id;
  return (
    <FormPanel
      title={e ? `Edit “${e.name}”` : "New model configuration"}
      class={e ? "" : undefined}
      submit={e ? "Save configuration" : "Add configuration"}
      secondary={props.onCancel && <CancelButton onClick={props.onCancel} />}
      onSubmit={async () => {
        const body = {
          name: f.name,
          driver: f.driver,
          model: f.model,
          base_url: f.base_url || undefined,
          api_key: f.api_key || undefined,
          temperature: num(f.temperature),
          max_tokens_output: num(f.max_tokens_output),
          context_window: num(f.context_window),
          timeout: num(f.timeout),
          is_default: f.is_default,
          is_global: user?.is_admin ? f.is_global : undefined,
        };
        if (e) await unwrap(api.PATCH("/groups/{id}/llm-configs/{cid}", { params: { path: { id, cid: e.id } }, body }));
        else await unwrap(api.POST("/groups/{id}/llm-configs", { params: { path: { id } }, body }));
        await props.onSaved();
      }}
    >
      <Field label="Configuration name" required value={f.name} onValue={set("name")} />
      <div class="row">
        <div class="field">
          <label for={driverId}>Driver</label>
          <select id={driverId} value={f.driver} onChange={(x) => set("driver")((x.target as HTMLSelectElement).value)}>
            <option value="openai">OpenAI-compatible</option>
            <option value="anthropic">Anthropic</option>
            <option value="scripted">Scripted (administrators; tests and demos)</option>
          </select>
        </div>
        <Field label="Model" required value={f.model} onValue={set("model")} />
      </div>
      <Field label={f.driver === "scripted" ? "Script file (on the server)" : "Base URL"} value={f.base_url} onValue={set("base_url")} hint={f.driver === "scripted" ? undefined : "Empty: the provider's default endpoint."} />
      <Field label="API key" type="password" autoComplete="new-password" value={f.api_key} onValue={set("api_key")} hint={e?.api_key_set ? "A key is stored (never shown); leave empty to keep it." : "Stored encrypted, never shown again."} />
      <div class="row">
        <Field label="Temperature" type="number" value={f.temperature} onValue={set("temperature")} />
        <Field label="Max output tokens" type="number" value={f.max_tokens_output} onValue={set("max_tokens_output")} />
      </div>
      <div class="row">
        <Field label="Context window" type="number" value={f.context_window} onValue={set("context_window")} />
        <Field label="Timeout (s)" type="number" value={f.timeout} onValue={set("timeout")} />
      </div>
      <Check label="The group's default" checked={f.is_default} onChange={set("is_default")} />
      {user?.is_admin && <Check label="Global (usable by every group)" checked={f.is_global} onChange={set("is_global")} />}
    </FormPanel>
  );
}

function Models(props: { group: Group }) {
  const id = props.group.id;
  const list = useLoad(async () => (await unwrap(api.GET("/groups/{id}/llm-configs", { params: { path: { id }, query: { include_global: true } } }))).data.llm_configs, [id]);
  const act = useAction();
  const [added, setAdded] = useState(0); // a new, empty form after each add (not when the list loads)
  const path = (c: Llm) => ({ params: { path: { id, cid: c.id } } });
  return (
    <div class="split">
      <LlmEditor key={`new-${added}`} group={props.group} onSaved={async () => (await list.reload(), setAdded((n) => n + 1))} />
      <section class="panel" aria-labelledby="llm-list-h">
        <h2 id="llm-list-h">Configurations</h2>
        <p class="muted small">Agents of this group use the default unless they name another. Global configurations come from other groups.</p>
        <ErrorNote error={list.error} />
        <ErrorNote error={act.error} />
        <EditList
          items={list.data}
          keyOf={(c) => c.id}
          nameOf={(c) => c.name}
          what="configuration"
          empty="None yet; chats use the server's default model."
          itemClass="card wide"
          busy={act.pending}
          editable={(c) => c.group_id === props.group.id}
          view={(c) => (
            <>
              <strong>{c.name}</strong> {c.is_default && c.group_id === props.group.id && <span class="badge tone-ok">default</span>} {c.is_global && <span class="badge tone-info">global</span>}
              <small class="muted block mono">
                {c.driver} · {c.model}
                {c.base_url ? ` · ${c.base_url}` : ""} · key {c.api_key_set ? "stored" : "none"}
              </small>
            </>
          )}
          actions={(c) =>
            c.group_id === props.group.id && (
              <>
                {!c.is_default && (
                  <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.POST("/groups/{id}/llm-configs/{cid}/set-default", path(c))), await list.reload()))}>
                    Make default
                  </button>
                )}
                <TestConnection groupId={id} configId={c.id} name={c.name} />
              </>
            )
          }
          edit={(c, close) => <LlmEditor group={props.group} config={c} onSaved={async () => (await list.reload(), close())} onCancel={close} />}
          remove={async (c) => (await unwrap(api.DELETE("/groups/{id}/llm-configs/{cid}", path(c))), await list.reload())}
        />
      </section>
    </div>
  );
}

function GroupToolCard(props: { group: Group; tool: Schemas["RegisteredTool"]; entry?: Schemas["GroupTool"]; reload: () => Promise<void> }) {
  const id = props.group.id;
  const t = props.tool;
  const act = useAction();
  const [open, setOpen] = useState(false);
  const upsert = (body: Schemas["UpsertGroupToolRequest"]) => act.run(async () => (await unwrap(api.POST("/groups/{id}/tools/{toolClass}", { params: { path: { id, toolClass: t.tool_class } }, body })), await props.reload()));
  return (
    <li class={`card tool-card ${props.entry?.enabled ? "enabled" : ""}`}>
      <div class="card-head spread">
        <div>
          <h3>{t.display_name}</h3>
          <p class="muted small mono">{t.tool_class}</p>
        </div>
        <label class="switch">
          <input type="checkbox" role="switch" aria-label={`${t.display_name} enabled for the group`} checked={props.entry?.enabled ?? false} disabled={act.pending} onChange={(e) => upsert({ enabled: (e.target as HTMLInputElement).checked })} />
          <span>{props.entry?.enabled ? "Enabled" : "Off"}</span>
        </label>
      </div>
      {t.settings.length > 0 && (
        <details open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
          <summary>Settings for the group ({t.settings.length})</summary>
          {open && <SettingsForm decls={t.settings} values={props.entry?.settings ?? {}} pending={act.pending} error={act.error} onSave={(settings) => upsert({ enabled: props.entry?.enabled ?? false, settings })} />}
        </details>
      )}
      {!open && <ErrorNote error={act.error} />}
    </li>
  );
}

function GroupTools(props: { group: Group }) {
  const id = props.group.id;
  const data = useLoad(async () => {
    const [tools, entries] = await Promise.all([unwrap(api.GET("/tools")), unwrap(api.GET("/groups/{id}/tools", { params: { path: { id } } }))]);
    return { tools: tools.data.tools, entries: new Map(entries.data.tools.map((e) => [e.tool_class, e])) };
  }, [id]);
  return (
    <section aria-labelledby="group-tools-h">
      <h2 id="group-tools-h" class="sr-only">Tools</h2>
      <p class="muted">Tools enabled here are offered to the group's agents; their settings apply to every agent of the group (an agent can override them).</p>
      <ErrorNote error={data.error} />
      <ul class="cards tools" aria-label="Tools of the group">
        {(data.data?.tools ?? []).map((t) => (
          <GroupToolCard key={t.tool_class} group={props.group} tool={t} entry={data.data?.entries.get(t.tool_class)} reload={data.reload} />
        ))}
      </ul>
    </section>
  );
}

function GroupSettings(props: { group: Group; onSaved: (g: Group) => void }) {
  const g = props.group;
  const id = g.id;
  const [name, setName] = useState(g.name);
  const [desc, setDesc] = useState(g.description);
  const prefs = useLoad(async () => JSON.stringify((await unwrap(api.GET("/groups/{id}/preferences", { params: { path: { id } } }))).data.preferences, null, 2), [id]);
  const [prefText, setPrefText] = useState<string | null>(null);
  const del = useAction();
  const agents = useLoad(async () => (await unwrap(api.GET("/groups/{id}/agents", { params: { path: { id } } }))).data.agents, [id]);
  return (
    <div class="split">
      <div>
        <FormPanel title="Group" submit="Save" onSubmit={async () => props.onSaved((await unwrap(api.PATCH("/groups/{id}", { params: { path: { id } }, body: { name, description: desc } }))).data.group)}>
          <Field label="Group name" required value={name} onValue={setName} />
          <Field label="Description" value={desc} onValue={setDesc} />
        </FormPanel>
        <PictureEditor
          title="Group picture"
          inputId="group-picture"
          alt={`Picture of ${g.name}`}
          initial={g.name}
          src={g.picture_url ? `${prefix}/api/v1/groups/${g.id}/picture?v=${encodeURIComponent(g.updated_at)}` : null}
          upload={async (fd) => props.onSaved((await unwrap(api.POST("/groups/{id}/picture/image", { params: { path: { id } }, body: { file: "" }, bodySerializer: () => fd }))).data.group)}
          remove={async () => (await unwrap(api.DELETE("/groups/{id}/picture/image", { params: { path: { id } } })), props.onSaved({ ...g, picture_url: null }))}
        />
        <section class="panel danger-zone">
          <h2>Delete the group</h2>
          <ErrorNote error={del.error} />
          <button
            type="button"
            class="danger"
            disabled={del.pending}
            onClick={() => {
              if (!confirm(`Delete the group “${g.name}”?`)) return;
              void del.run(async () => {
                await unwrap(api.DELETE("/groups/{id}", { params: { path: { id } } }));
                navigate("/groups");
              });
            }}
          >
            Delete group
          </button>
        </section>
      </div>
      <div>
        <FormPanel
          title="Preferences"
          submit="Save preferences"
          onSubmit={async () => {
            let parsed: unknown;
            try {
              parsed = JSON.parse(prefText ?? prefs.data ?? "{}");
            } catch (err) {
              throw new Error(`Not valid JSON: ${(err as Error).message}`);
            }
            const r = await unwrap(api.PUT("/groups/{id}/preferences", { params: { path: { id } }, body: { preferences: parsed as Record<string, unknown> } }));
            prefs.set(JSON.stringify(r.data.preferences, null, 2));
            setPrefText(null);
          }}
        >
          <ErrorNote error={prefs.error} />
          <TextArea label="Preferences (JSON object)" mono rows={6} value={prefText ?? prefs.data ?? ""} onValue={setPrefText} />
        </FormPanel>
        <section class="panel">
          <h2>Agents of the group</h2>
          <ErrorNote error={agents.error} />
          {agents.data && agents.data.length === 0 && <p class="muted">None. Transfer an agent to the group from its settings.</p>}
          <ul class="plain">
            {(agents.data ?? []).map((a) => (
              <li key={a.id}>
                <Link to={`/agents/${a.id}`}>{a.name}</Link>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </div>
  );
}
