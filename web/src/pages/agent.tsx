// One agent: its chats (start a task), settings, tools (enable, per-operation enablement and
// approval), per-agent API keys (minted secret shown once, revoke) and memory (agentmemory.tsx).
// The forms and the key list are crud.tsx's FormPanel and EditList.
import { Budgets } from "./usage";
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Agent, type Schemas, type Task } from "../api";
import { navigate } from "../router";
import { reloadConfig, useSession } from "../session";
import { ErrorNote, Field, Link, PageHeader, StatusBadge, Tabs, TextArea, formatTime, useAction, useLoad } from "../ui";
import { EditList, FormPanel } from "../crud";
import { SettingsForm } from "../settingsform";
import { AgentSettings } from "./agents";
import { AgentExport, AgentPicture, AgentTransfer } from "./agentextra";
import { AgentMemory } from "./agentmemory";
import { AgentSchedules } from "./schedules";

type Tab = "chats" | "settings" | "tools" | "keys" | "schedules" | "memory";
const tabs: { id: Tab; label: string; suffix: string }[] = [
  { id: "chats", label: "Chats", suffix: "" },
  { id: "settings", label: "Settings", suffix: "/settings" },
  { id: "tools", label: "Tools", suffix: "/tools" },
  { id: "keys", label: "API keys", suffix: "/keys" },
  { id: "schedules", label: "Schedules", suffix: "/schedules" },
  { id: "memory", label: "Memory", suffix: "/memory" },
];

export function AgentPage(props: { id: string; tab: Tab }) {
  const agent = useLoad(async () => (await unwrap(api.GET("/agents/{id}", { params: { path: { id: props.id } } }))).data.agent, [props.id]);
  const a = agent.data;
  return (
    <>
      <PageHeader title={a ? a.name : "Agent"} back={{ to: "/agents", label: "Agents" }} />
      <ErrorNote error={agent.error} />
      {a && (
        <>
          <Tabs label="Agent sections" base={`/agents/${a.id}`} tabs={tabs} current={props.tab} />
          {props.tab === "chats" && <AgentChats agent={a} />}
          {props.tab === "settings" && (
            <AgentSettings agent={a} onSaved={(x) => agent.set(x)}>
              <div class="form-grid extras">
                <AgentPicture agent={a} onChange={agent.set} />
                <AgentTransfer agent={a} onChange={agent.set} />
                <AgentExport agent={a} />
              </div>
              <Budgets kind="agent" id={String(a.id)} title="Budgets of this agent" />
            </AgentSettings>
          )}
          {props.tab === "schedules" && <AgentSchedules agent={a} />}
          {props.tab === "tools" && <AgentTools agent={a} />}
          {props.tab === "keys" && <AgentKeys agent={a} />}
          {props.tab === "memory" && <AgentMemory agent={a} />}
        </>
      )}
    </>
  );
}

export async function loadTasks(max = 300, agentId?: number): Promise<Task[]> {
  const out: Task[] = [];
  for (let page = 1; out.length < max; page++) {
    const r = await unwrap(api.GET("/tasks", { params: { query: { page, per_page: 100, agent_id: agentId } } }));
    out.push(...r.data.tasks);
    if (r.data.tasks.length < 100) break;
  }
  return out;
}

function AgentChats(props: { agent: Agent }) {
  const [prompt, setPrompt] = useState("");
  const [steps, setSteps] = useState("");
  const tasks = useLoad(() => loadTasks(300, props.agent.id), [props.agent.id]);
  const mine = tasks.data ?? [];
  return (
    <div class="split">
      <FormPanel
        title="Start a chat"
        submit="Start chat"
        submitting="Starting…"
        onSubmit={async () => {
          const r = await unwrap(
            api.POST("/tasks", {
              params: { header: { "Idempotency-Key": crypto.randomUUID() } },
              body: { agent_id: props.agent.id, prompt, max_steps: steps ? Number(steps) : undefined },
            }),
          );
          navigate(`/tasks/${r.data.task.id}`);
        }}
      >
        <TextArea label="Prompt" required rows={5} value={prompt} onValue={setPrompt} />
        <Field label="Step budget for this chat (optional)" type="number" min={1} max={100} value={steps} onValue={setSteps} hint={`Default: the agent's ${props.agent.max_steps}.`} />
      </FormPanel>
      <section class="panel">
        <h2>Chats with {props.agent.name}</h2>
        <ErrorNote error={tasks.error} />
        {tasks.data && mine.length === 0 && <p class="muted">No chats yet.</p>}
        <TaskTable tasks={mine} />
      </section>
    </div>
  );
}

export function TaskTable(props: { tasks: Task[]; agents?: Map<number, string> }) {
  if (props.tasks.length === 0) return null;
  return (
    <table class="table">
      <thead>
        <tr>
          <th scope="col">Chat</th>
          {props.agents && <th scope="col">Agent</th>}
          <th scope="col">Status</th>
          <th scope="col" class="hide-narrow">
            Updated
          </th>
        </tr>
      </thead>
      <tbody>
        {props.tasks.map((t) => (
          <tr key={t.id}>
            <td>
              <Link to={`/tasks/${t.id}`}>
                #{t.id} {t.prompt.length > 60 ? t.prompt.slice(0, 60) + "…" : t.prompt}
              </Link>
              {t.parent_task_id && <span class="muted"> (sub-agent chat of #{t.parent_task_id})</span>}
            </td>
            {props.agents && <td>{props.agents.get(t.agent_id) ?? `#${t.agent_id}`}</td>}
            <td>
              <StatusBadge status={t.status} />
            </td>
            <td class="hide-narrow">{formatTime(t.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The agent-level settings of a tool (the last layer of the cascade), loaded when opened. */
function AgentToolSettings(props: { agent: Agent; toolClass: string; decls: Schemas["RegisteredToolSetting"][]; onSaved: () => Promise<void> }) {
  const p = { params: { path: { id: String(props.agent.id), toolId: props.toolClass } } };
  const cur = useLoad(async () => (await unwrap(api.GET("/agents/{id}/tools/{toolId}/override", p))).data.override.settings, [props.agent.id, props.toolClass]);
  const act = useAction();
  const [saved, setSaved] = useState(false);
  return (
    <>
      <ErrorNote error={cur.error} />
      {cur.data && props.decls.length > 0 && (
        <SettingsForm
          decls={props.decls}
          values={cur.data}
          pending={act.pending}
          error={act.error}
          saveLabel="Save for this agent"
          onSave={(settings) =>
            act.run(async () => {
              setSaved(false);
              // The PUT replaces the whole agent layer: carry the approval policy over.
              const body = { settings: withPolicy(settings, cur.data?.approval_policy) };
              cur.set((await unwrap(api.PUT("/agents/{id}/tools/{toolId}/override", { ...p, body }))).data.override.settings);
              setSaved(true);
              await props.onSaved();
            })
          }
        />
      )}
      {saved && <p class="notice small">Saved for this agent.</p>}
      {cur.data && (
        <PolicyEditor
          value={cur.data.approval_policy}
          onSave={async (policy) => {
            const body = { settings: withPolicy(cur.data ?? {}, policy) };
            cur.set((await unwrap(api.PUT("/agents/{id}/tools/{toolId}/override", { ...p, body }))).data.override.settings);
            await props.onSaved();
          }}
        />
      )}
    </>
  );
}

type LayerSettings = Schemas["ReplaceAgentToolOverrideRequest"]["settings"];

/** An agent layer's settings with the approval policy set (null or absent: none; the PUT replaces the whole layer). */
function withPolicy(settings: Record<string, unknown>, policy: unknown): LayerSettings {
  const out: Record<string, unknown> = { ...settings };
  delete out.approval_policy;
  if (policy) out.approval_policy = policy;
  return out as LayerSettings;
}

const policyExample = `{
  "operation_name": [
    { "when": { "url": { "host_in": ["example.com"] } }, "action": "allow" },
    { "when": { "path": { "prefix": "/etc/" } }, "action": "deny", "reason": "Not there." },
    { "action": "ask" }
  ]
}`;

/** The approval policy of a tool's operations at the agent layer: a JSON editor (ApprovalPolicy in the contract). */
function PolicyEditor(props: { value: unknown; onSave: (policy: Record<string, unknown> | null) => Promise<void> }) {
  const [text, setText] = useState(props.value ? JSON.stringify(props.value, null, 2) : "");
  const [err, setErr] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    setSaved(false);
    let policy: Record<string, unknown> | null = null;
    if (text.trim() !== "") {
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("it must be an object mapping operation names to rule lists");
        policy = parsed as Record<string, unknown>;
      } catch (x) {
        setErr(`The policy is not valid: ${(x as Error).message}`);
        return;
      }
    }
    setErr(null);
    void act.run(async () => {
      await props.onSave(policy);
      setSaved(true);
    });
  };
  return (
    <form class="policy-editor" onSubmit={save}>
      <h4>Approval policy</h4>
      <p class="small muted">
        Per operation, rules over the call&apos;s arguments decided before anyone is asked: the first rule whose conditions all match allows, denies (its reason is told to the model) or asks. Conditions: equals, in, prefix, pattern, min, max, host_in. No match: the operation&apos;s approval setting decides. Rules here replace the group&apos;s for the same operation. Leave empty for none.
      </p>
      <TextArea label="Rules (JSON)" mono rows={Math.min(16, Math.max(4, text.split("\n").length + 1))} value={text} onValue={setText} />
      <details class="small">
        <summary>Example</summary>
        <pre class="code">{policyExample}</pre>
      </details>
      <ErrorNote error={err ?? act.error} />
      <div class="button-row">
        <button type="submit" disabled={act.pending}>
          {act.pending ? "Saving…" : "Save policy"}
        </button>
      </div>
      {saved && <p class="notice small">Policy saved.</p>}
    </form>
  );
}

function ToolCard(props: { agent: Agent; tool: Schemas["AgentToolStatus"]; ops: Schemas["AgentToolOperation"][]; decls: Schemas["RegisteredToolSetting"][]; reload: () => Promise<void> }) {
  const [open, setOpen] = useState(false);
  const t = props.tool;
  const act = useAction();
  const id = String(props.agent.id);
  const toggle = () =>
    act.run(async () => {
      const p = { params: { path: { id, toolId: t.tool_class } } };
      if (t.enabled) await unwrap(api.DELETE("/agents/{id}/tools/{toolId}/enable", p));
      else await unwrap(api.POST("/agents/{id}/tools/{toolId}/enable", p));
      await props.reload();
    });
  const patchOp = (op: Schemas["AgentToolOperation"], body: Schemas["UpdateAgentToolOperationRequest"]) =>
    act.run(async () => {
      await unwrap(api.PATCH("/agents/{id}/tools/{toolId}/operations/{operation}", { params: { path: { id, toolId: t.tool_class, operation: op.operation } }, body }));
      await props.reload();
    });
  const headId = `tool-${t.tool_class.replace(/[^a-zA-Z0-9]/g, "-")}`;
  const agentTimeout = props.agent.approval_timeout_seconds;
  // An empty timeout shows what it inherits: the agent's timeout, or none (a call waits forever).
  const inheritedTimeout = agentTimeout > 0 ? `timeout ${agentTimeout}s` : "no timeout";
  return (
    <li class={`card tool-card ${t.enabled ? "enabled" : ""}`} aria-labelledby={headId}>
      <div class="card-head spread">
        <div>
          <h3 id={headId}>{t.display_name}</h3>
          <p class="muted small mono">{t.tool_class}</p>
        </div>
        <label class="switch">
          <input type="checkbox" role="switch" checked={t.enabled} disabled={act.pending || (!t.enabled && !t.ready_to_enable)} onChange={toggle} aria-describedby={`${headId}-d`} />
          <span>{t.enabled ? "Enabled" : "Disabled"}</span>
        </label>
      </div>
      <p class="muted" id={`${headId}-d`}>
        {t.description}
      </p>
      {!t.ready_to_enable && !t.enabled && <p class="warn small">Needs settings first: {t.missing_required.join(", ")}.</p>}
      {props.ops.length > 0 && (
        <table class="table ops">
          <caption class="sr-only">Operations of {t.display_name}</caption>
          <thead>
            <tr>
              <th scope="col">Operation</th>
              <th scope="col">Enabled</th>
              <th scope="col" title="A call waits for a decision at most the timeout's seconds (empty: the agent's timeout)">Needs approval</th>
            </tr>
          </thead>
          <tbody>
            {props.ops.map((op) => (
              <tr key={op.operation}>
                <th scope="row">
                  <span class="mono">{op.operation}</span>
                  <small class="muted block">{op.description}</small>
                </th>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`${op.operation}: enabled`}
                    checked={op.effective_enabled}
                    disabled={act.pending || !t.enabled}
                    onChange={(e) => patchOp(op, { enabled: (e.target as HTMLInputElement).checked, auto_approve: op.auto_approve, approval_timeout_seconds: op.approval_timeout_seconds })}
                  />
                </td>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`${op.operation}: needs approval`}
                    checked={op.requires_approval}
                    disabled={act.pending || !t.enabled}
                    onChange={(e) => patchOp(op, { enabled: op.enabled, auto_approve: !(e.target as HTMLInputElement).checked, approval_timeout_seconds: op.approval_timeout_seconds })}
                  />
                  {op.requires_approval && (
                    <input
                      type="number"
                      class="timeout"
                      min={0}
                      max={2147483647}
                      aria-label={`${op.operation}: approval timeout in seconds`}
                      placeholder={inheritedTimeout}
                      title="Seconds a call waits for a decision; 0 waits forever; empty uses the agent's timeout."
                      value={op.approval_timeout_seconds ?? ""}
                      disabled={act.pending || !t.enabled}
                      onChange={(e) => {
                        const v = (e.target as HTMLInputElement).value.trim();
                        patchOp(op, { enabled: op.enabled, auto_approve: op.auto_approve, approval_timeout_seconds: v === "" ? null : Number(v) });
                      }}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(props.decls.length > 0 || props.ops.length > 0) && (
        <details onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
          <summary>{props.decls.length > 0 ? `Settings for this agent (${props.decls.length})` : "Approval policy for this agent"}</summary>
          {open && <AgentToolSettings agent={props.agent} toolClass={t.tool_class} decls={props.decls} onSaved={props.reload} />}
        </details>
      )}
      <ErrorNote error={act.error} />
    </li>
  );
}

function AgentTools(props: { agent: Agent }) {
  const id = String(props.agent.id);
  const data = useLoad(async () => {
    const [st, ops, reg] = await Promise.all([
      unwrap(api.GET("/agents/{id}/tools/status", { params: { path: { id } } })),
      unwrap(api.GET("/agents/{id}/tools/operations", { params: { path: { id } } })),
      unwrap(api.GET("/tools")),
    ]);
    return { tools: st.data.tools, ops: ops.data.operations, decls: new Map(reg.data.tools.map((t) => [t.tool_class, t.settings])) };
  }, [id]);
  const [filter, setFilter] = useState("");
  const tools = (data.data?.tools ?? []).filter((t) => !filter || `${t.display_name} ${t.tool_class} ${t.description}`.toLowerCase().includes(filter.toLowerCase()));
  return (
    <section aria-labelledby="agent-tools-h">
      <h2 id="agent-tools-h" class="sr-only">Tools</h2>
      <div class="toolbar">
        <p class="muted">Enable the tools this agent may call. Operations that need approval pause the chat until someone approves or rejects the call.</p>
        <Field label="Filter tools" type="search" value={filter} onValue={setFilter} />
      </div>
      <ErrorNote error={data.error} />
      {data.loading && !data.data && <p role="status">Loading tools…</p>}
      <ul class="cards tools" aria-label="Tools">
        {tools.map((t) => (
          <ToolCard key={t.tool_class} agent={props.agent} tool={t} ops={(data.data?.ops ?? []).filter((o) => o.tool_class === t.tool_class)} decls={data.data?.decls.get(t.tool_class) ?? []} reload={data.reload} />
        ))}
      </ul>
    </section>
  );
}

function AgentKeys(props: { agent: Agent }) {
  const agentId = String(props.agent.id);
  const keys = useLoad(async () => (await unwrap(api.GET("/agents/{id}/api-keys", { params: { path: { id: agentId } } }))).data.api_keys, [agentId]);
  const [name, setName] = useState("");
  const [minted, setMinted] = useState<Schemas["AgentApiKeyWithSecret"] | null>(null);
  return (
    <div class="split">
      <div>
        <AgentAPIOff />
        <FormPanel
          title="Mint a key"
          submit="Mint key"
          note={
            <p class="muted">
              Scripts and other services use a key as <code>Authorization: Bearer …</code> on the per-agent API. The full key is shown once.
            </p>
          }
          onSubmit={async () => {
            const r = await unwrap(api.POST("/agents/{id}/api-keys", { params: { path: { id: agentId } }, body: { name } }));
            setMinted(r.data);
            setName("");
            await keys.reload();
          }}
        >
          <Field label="Key name" required value={name} onValue={setName} hint="What uses it, e.g. “n8n workflow”." />
        </FormPanel>
        {minted && <MintedKey key={minted.id} minted={minted} onHide={() => setMinted(null)} />}
        <ProtocolURLs />
        {(keys.data ?? []).map((k) => (
          <Budgets key={k.id} kind="key" id={k.id} title={`Budgets of the key “${k.name}”`} />
        ))}
      </div>
      <section class="panel" aria-labelledby="keys-h">
        <h2 id="keys-h">Keys</h2>
        <ErrorNote error={keys.error} />
        <EditList
          items={keys.data}
          keyOf={(k) => k.id}
          nameOf={(k) => k.name}
          what="key"
          empty="No keys."
          itemClass="card wide"
          view={(k) => (
            <>
              <strong>{k.name}</strong>
              <small class="muted block">
                <span class="mono">{k.id}</span> · last used {k.last_used_at ? formatTime(k.last_used_at) : "never"}
              </small>
            </>
          )}
          removeLabel="Revoke"
          confirmRemove={(k) => `Revoke the key “${k.name}”? Callers using it are refused at once.`}
          remove={async (k) => (await unwrap(api.DELETE("/agents/{id}/api-keys/{keyId}", { params: { path: { id: agentId, keyId: k.id } } })), await keys.reload())}
        />
      </section>
    </div>
  );
}

/** AgentAPIOff warns, while the per-agent API is not served, that keys answer 404
 * AGENT_API_DISABLED; an administrator can turn the setting SVC_AGENT_API on from here. */
function AgentAPIOff() {
  const { user, config } = useSession();
  const act = useAction();
  if (!config || (config.agent_api && config.worker_runtime_mode === "server")) return null;
  const clientMode = config.worker_runtime_mode !== "server";
  return (
    <div class="callout-warn" role="region" aria-label="The per-agent API is off">
      <p>
        <strong>The per-agent API is off.</strong> Keys can be minted, but every call with them answers 404 <code>AGENT_API_DISABLED</code>{" "}
        {clientMode ? (
          <>until this service runs with the worker runtime mode <code>server</code> (<code>SVC_WORKER_RUNTIME_MODE</code>).</>
        ) : (
          <>until an administrator turns on the setting <code>SVC_AGENT_API</code>.</>
        )}
      </p>
      {user?.is_admin && !clientMode && (
        <button
          type="button"
          disabled={act.pending}
          onClick={() =>
            act.run(async () => {
              await unwrap(api.PATCH("/runtime-settings", { body: { settings: { SVC_AGENT_API: true } } }));
              await reloadConfig();
            })
          }
        >
          Turn on the per-agent API
        </button>
      )}
      <ErrorNote error={act.error} />
    </div>
  );
}

/** CopyRow is a read-only value with a copy button (the clipboard may refuse: then it says nothing). */
function CopyRow(props: { value: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="copy-row">
      <input readOnly class="mono" aria-label={props.label} value={props.value} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(props.value);
            setCopied(true);
          } catch {
            setCopied(false);
          }
        }}
      >
        {copied ? "Copied" : "Copy"}
      </button>
    </div>
  );
}

/** A key just minted: its secret, shown this once, with a copy button. It stands outside the
 * mint form, so Enter in its field cannot mint another key. */
function MintedKey(props: { minted: Schemas["AgentApiKeyWithSecret"]; onHide: () => void }) {
  const m = props.minted;
  return (
    <div class="secret" role="region" aria-label="New key">
      <p>
        <strong>Copy the key “{m.name}” now.</strong> It is not shown again.
      </p>
      <CopyRow value={m.key} label="The new key" />
      <button type="button" class="link" onClick={props.onHide}>
        I have stored it, hide the key
      </button>
    </div>
  );
}

/** ProtocolURLs shows where MCP clients and A2A clients reach the agent, with the same keys. */
function ProtocolURLs() {
  const base = new URL(`${prefix}/api/v1/agent-api`, location.href).href;
  return (
    <section class="panel" aria-labelledby="protocols-h">
      <h2 id="protocols-h">MCP and A2A</h2>
      <p class="muted">
        The agent also answers MCP clients (IDEs, desktop assistants) and A2A agents, with a key above as <code>Authorization: Bearer …</code> and the
        per-agent API's rules.
      </p>
      <p>
        <strong>MCP server URL</strong> (streamable HTTP)
      </p>
      <CopyRow value={`${base}/mcp`} label="MCP server URL" />
      <p>
        <strong>A2A agent card URL</strong>
      </p>
      <CopyRow value={`${base}/a2a/.well-known/agent-card.json`} label="A2A agent card URL" />
    </section>
  );
}
