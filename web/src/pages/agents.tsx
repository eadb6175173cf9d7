// Agents: the list (favorites first, as the API orders it), create and edit every field of the
// contract's agent, delete, and the agent's own page with its chats, tools and API keys.
import { useEffect, useState } from "preact/hooks";
import { api, unwrap, type Agent, type Schemas } from "../api";
import { navigate } from "../router";
import { useSession } from "../session";
import { Check, ErrorNote, Field, Link, PageHeader, TextArea, formatTime, useAction, useLoad } from "../ui";
import { FirstRun } from "./firstrun";

export async function loadAgents(): Promise<Agent[]> {
  const out: Agent[] = [];
  for (let page = 1; page <= 20; page++) {
    const r = await unwrap(api.GET("/agents", { params: { query: { page, per_page: 100 } } }));
    out.push(...r.data.agents);
    if (r.data.agents.length < 100) break;
  }
  // The API lists favorites first, then by name; keep that order stable after a toggle too.
  return out.sort((a, b) => Number(b.is_favorite) - Number(a.is_favorite) || a.name.localeCompare(b.name) || a.id - b.id);
}

function FavoriteButton(props: { agent: Agent; onChange: (a: Agent) => void }) {
  const act = useAction();
  const a = props.agent;
  return (
    <span class="fav-wrap">
      <button
        type="button"
        class={`icon fav ${a.is_favorite ? "on" : ""}`}
        aria-pressed={a.is_favorite}
        aria-label={a.is_favorite ? `Remove ${a.name} from favorites` : `Add ${a.name} to favorites`}
        title={a.is_favorite ? "Favorite" : "Not a favorite"}
        disabled={act.pending}
        onClick={() =>
          act.run(async () => {
            const p = { params: { path: { id: String(a.id) } } };
            if (a.is_favorite) await unwrap(api.DELETE("/agents/{id}/favorite", p));
            else await unwrap(api.POST("/agents/{id}/favorite", p));
            props.onChange({ ...a, is_favorite: !a.is_favorite });
          })
        }
      >
        {a.is_favorite ? "★" : "☆"}
      </button>
      <ErrorNote error={act.error} />
    </span>
  );
}

export function AgentList() {
  const agents = useLoad(loadAgents, []);
  const list = agents.data ?? [];
  const replace = (a: Agent) => agents.set(list.map((x) => (x.id === a.id ? a : x)).sort((x, y) => Number(y.is_favorite) - Number(x.is_favorite) || x.name.localeCompare(y.name) || x.id - y.id));
  return (
    <>
      <PageHeader title="Agents">
        <Link to="/agents/import" class="button">
          New from template / Import
        </Link>
        <Link to="/agents/new" class="button primary">
          New agent
        </Link>
      </PageHeader>
      <ErrorNote error={agents.error} />
      <FirstRun agents={agents.data} />
      {agents.loading && !agents.data && <p role="status">Loading agents…</p>}
      {agents.data && list.length === 0 && (
        <div class="empty">
          <h2>No agents yet</h2>
          <p>An agent is a system prompt, a step budget and a set of tools. Create one, enable its tools, then start a chat.</p>
          <Link to="/agents/new" class="button primary">
            Create your first agent
          </Link>
        </div>
      )}
      {list.length > 0 && (
        <ul class="cards" aria-label="Agents">
          {list.map((a) => (
            <li class="card agent-card" key={a.id}>
              <div class="card-head">
                <FavoriteButton agent={a} onChange={replace} />
                <h2>
                  <Link to={`/agents/${a.id}`}>{a.name}</Link>
                </h2>
              </div>
              <p class="muted clamp">{a.description || "No description."}</p>
              <p class="meta">
                Up to {a.max_steps} steps · {a.allow_followup ? "follow-ups allowed" : "no follow-ups"} · updated {formatTime(a.updated_at)}
              </p>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

type Form = {
  name: string;
  description: string;
  system_prompt: string;
  notes: string;
  max_steps: string;
  allow_followup: boolean;
  retry_after_minutes: string;
  max_retries: string;
  metadata: string;
  principal_id: string;
  compaction_enabled: boolean;
  compaction_threshold_percent: string;
  compaction_answer_reserve: string;
  tool_result_max_chars: string;
  summary_llm_config_id: string;
  approver_owner: boolean;
  approver_managers: boolean;
  approver_user_ids: string;
  approval_timeout_seconds: string;
  approval_timeout_action: Schemas["ApprovalTimeoutAction"];
};

function formOf(a?: Agent): Form {
  return {
    name: a?.name ?? "",
    description: a?.description ?? "",
    system_prompt: a?.system_prompt ?? "",
    notes: a?.notes ?? "",
    max_steps: String(a?.max_steps ?? 10),
    allow_followup: a?.allow_followup ?? true,
    retry_after_minutes: String(a?.retry_after_minutes ?? 5),
    max_retries: String(a?.max_retries ?? 0),
    metadata: a ? JSON.stringify(a.metadata ?? {}, null, 2) : "{}",
    principal_id: a ? String(a.principal_id) : "",
    compaction_enabled: a?.compaction_enabled ?? true,
    compaction_threshold_percent: String(a?.compaction_threshold_percent ?? 80),
    compaction_answer_reserve: String(a?.compaction_answer_reserve ?? 0),
    tool_result_max_chars: String(a?.tool_result_max_chars ?? 0),
    summary_llm_config_id: a?.summary_llm_config_id != null ? String(a.summary_llm_config_id) : "",
    approver_owner: a?.approvers.owner ?? true,
    approver_managers: a?.approvers.managers ?? false,
    approver_user_ids: (a?.approvers.user_ids ?? []).join(", "),
    approval_timeout_seconds: String(a?.approval_timeout_seconds ?? 0),
    approval_timeout_action: a?.approval_timeout_action ?? "reject",
  };
}

/** The create and edit form; every field of the contract's agent. */
export function AgentForm(props: { agent?: Agent; onSaved: (a: Agent) => void }) {
  const { user } = useSession();
  const [f, setF] = useState<Form>(() => formOf(props.agent));
  const set = <K extends keyof Form>(k: K) => (v: Form[K]) => setF((old) => ({ ...old, [k]: v }));
  const groups = useLoad(async () => (props.agent ? [] : (await unwrap(api.GET("/groups", { params: { query: { per_page: 100 } } }))).data.groups), [props.agent?.id]);
  const act = useAction();
  const [metaError, setMetaError] = useState<string | null>(null);
  const [approverError, setApproverError] = useState<string | null>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    let metadata: Record<string, unknown>;
    try {
      const m: unknown = JSON.parse(f.metadata || "{}");
      if (typeof m !== "object" || m === null || Array.isArray(m)) throw new Error("Metadata must be a JSON object.");
      metadata = m as Record<string, unknown>;
      setMetaError(null);
    } catch (err) {
      setMetaError(err instanceof SyntaxError ? `Metadata is not valid JSON: ${err.message}` : (err as Error).message);
      return;
    }
    const ids = f.approver_user_ids.split(/[\s,]+/).filter(Boolean);
    if (ids.some((x) => !/^[1-9][0-9]*$/.test(x))) {
      setApproverError(`Approving users must be given by id (whole numbers), separated by commas: ${ids.filter((x) => !/^[1-9][0-9]*$/.test(x)).join(", ")}`);
      return;
    }
    setApproverError(null);
    const body = {
      approvers: { owner: f.approver_owner, managers: f.approver_managers, user_ids: [...new Set(ids.map(Number))] },
      approval_timeout_seconds: Number(f.approval_timeout_seconds),
      approval_timeout_action: f.approval_timeout_action,
      name: f.name,
      description: f.description,
      system_prompt: f.system_prompt,
      notes: f.notes,
      max_steps: Number(f.max_steps),
      allow_followup: f.allow_followup,
      retry_after_minutes: Number(f.retry_after_minutes),
      max_retries: Number(f.max_retries),
      metadata,
      compaction_enabled: f.compaction_enabled,
      compaction_threshold_percent: Number(f.compaction_threshold_percent),
      compaction_answer_reserve: Number(f.compaction_answer_reserve),
      tool_result_max_chars: Number(f.tool_result_max_chars),
      summary_llm_config_id: f.summary_llm_config_id ? Number(f.summary_llm_config_id) : 0,
    };
    void act.run(async () => {
      if (props.agent) {
        const r = await unwrap(api.PATCH("/agents/{id}", { params: { path: { id: String(props.agent.id) } }, body }));
        props.onSaved(r.data.agent);
      } else {
        const principal = f.principal_id ? Number(f.principal_id) : undefined;
        const r = await unwrap(api.POST("/agents", { body: { ...body, principal_id: principal } }));
        props.onSaved(r.data.agent);
      }
    });
  };
  const groupList: Schemas["Group"][] = groups.data ?? [];
  return (
    <form class="form-grid" onSubmit={submit}>
      <section class="panel">
        <h2>Identity</h2>
        <Field label="Name" required maxLength={255} value={f.name} onValue={set("name")} />
        <TextArea label="Description" rows={2} value={f.description} onValue={set("description")} />
        {!props.agent && (
          <div class="field">
            <label for="agent-owner">Owner</label>
            <select id="agent-owner" value={f.principal_id} onChange={(e) => set("principal_id")((e.target as HTMLSelectElement).value)}>
              <option value="">Me ({user?.email})</option>
              {groupList.map((g) => (
                <option value={String(g.principal_id)} key={g.id}>
                  Group: {g.name}
                </option>
              ))}
            </select>
            <small class="hint">A group's agents are shared with its members and use its model configuration.</small>
          </div>
        )}
        <AgentModel agent={props.agent} group={groupList.find((g) => String(g.principal_id) === f.principal_id)} />
      </section>
      <section class="panel">
        <h2>Behaviour</h2>
        <TextArea label="System prompt" rows={6} value={f.system_prompt} onValue={set("system_prompt")} />
        <div class="row">
          <Field label="Step budget" type="number" min={1} max={100} required value={f.max_steps} onValue={set("max_steps")} hint="Model turns per chat, 1 to 100." />
          <Field label="Retry after (minutes)" type="number" min={0} required value={f.retry_after_minutes} onValue={set("retry_after_minutes")} />
          <Field label="Automatic retries" type="number" min={0} required value={f.max_retries} onValue={set("max_retries")} hint="After transient failures." />
        </div>
        <Check label="Allow follow-up messages after a chat completes" checked={f.allow_followup} onChange={set("allow_followup")} />
      </section>
      <section class="panel">
        <h2>Long conversations</h2>
        <Check label="Compact older turns into a summary when a chat nears the model's context window" checked={f.compaction_enabled} onChange={set("compaction_enabled")} />
        <div class="row">
          <Field label="Compact at (% of the window)" type="number" min={10} max={100} required value={f.compaction_threshold_percent} onValue={set("compaction_threshold_percent")} />
          <Field label="Answer reserve (tokens)" type="number" min={0} required value={f.compaction_answer_reserve} onValue={set("compaction_answer_reserve")} hint="0: the model configuration's output limit." />
          <Field label="Tool result budget (characters)" type="number" min={0} required value={f.tool_result_max_chars} onValue={set("tool_result_max_chars")} hint="Longer results are kept whole but sent cut; 0: no budget." />
        </div>
        <Field label="Summary model configuration (id)" type="number" min={1} value={f.summary_llm_config_id} onValue={set("summary_llm_config_id")} hint="Empty: the agent's own model writes the summaries." />
      </section>
      <section class="panel">
        <h2>Approvals</h2>
        <p class="muted small">Who may approve, reject and answer what this agent's chats wait for (at least one).</p>
        <Check label="The chat's owner" checked={f.approver_owner} onChange={set("approver_owner")} />
        <Check label="The managers of the agent's owner (a group's owners and admins)" checked={f.approver_managers} onChange={set("approver_managers")} />
        <Field label="Approving users (ids)" value={f.approver_user_ids} onValue={set("approver_user_ids")} hint="Comma-separated; Users lists the ids." />
        <ErrorNote error={approverError} />
        <div class="row">
          <Field label="Approval timeout (seconds)" type="number" min={0} max={2147483647} required value={f.approval_timeout_seconds} onValue={set("approval_timeout_seconds")} hint="0: a call waits for a decision forever." />
          <div class="field">
            <label for="approval-timeout-action">When it expires</label>
            <select id="approval-timeout-action" value={f.approval_timeout_action} onChange={(e) => set("approval_timeout_action")((e.target as HTMLSelectElement).value as Form["approval_timeout_action"])}>
              <option value="reject">Reject the call</option>
              <option value="abort">Abort the chat</option>
            </select>
          </div>
        </div>
      </section>
      <section class="panel">
        <h2>Notes and metadata</h2>
        <TextArea label="Notes" rows={3} value={f.notes} onValue={set("notes")} hint="For the people managing this agent; the model never sees them." />
        <TextArea label="Metadata (JSON object)" rows={4} mono value={f.metadata} onValue={set("metadata")} />
        <ErrorNote error={metaError} />
      </section>
      <div class="form-actions">
        <ErrorNote error={act.error} />
        <button class="primary" disabled={act.pending}>
          {act.pending ? "Saving…" : props.agent ? "Save changes" : "Create agent"}
        </button>
      </div>
    </form>
  );
}

/** AgentModel says which model configuration the agent's tasks run with (its group's default,
 * else the global default; for a new agent, that of the chosen owner) and warns when none
 * resolves, since every task would then fail with NO_LLM_CONFIGURATION. */
function AgentModel(props: { agent?: Agent; group?: Schemas["Group"] }) {
  const { user } = useSession();
  const r = useLoad(async () => {
    if (props.agent) return (await unwrap(api.GET("/agents/{id}/llm-config", { params: { path: { id: String(props.agent.id) } } }))).data;
    if (props.group) {
      const own = (await unwrap(api.GET("/groups/{id}/llm-configs", { params: { path: { id: props.group.id } } }))).data.llm_configs.find((c) => c.is_default && !c.is_global);
      if (own) return { llm_config: own, source: "group" as const };
    }
    return (await unwrap(api.GET("/llm-configs/default"))).data;
  }, [props.agent?.id, props.group?.id]);
  if (!r.data) return <ErrorNote error={r.error} />;
  const c = r.data.llm_config;
  if (!c)
    return (
      <p class="callout-warn" role="alert" data-testid="agent-model">
        <strong>No model configured.</strong> This agent's chats would fail with NO_LLM_CONFIGURATION:{" "}
        {user?.is_admin ? <Link to="/">add a model</Link> : "ask an administrator to add a model"}, or give a group that owns it a default model configuration.
      </p>
    );
  return (
    <p class="muted" data-testid="agent-model">
      Model: <span class="mono">{c.model}</span> ({c.name}, {r.data.source === "group" ? "the group's default" : "the global default"}).
    </p>
  );
}

export function NewAgent() {
  return (
    <>
      <PageHeader title="New agent" back={{ to: "/agents", label: "Agents" }}>
        <Link to="/agents/import" class="button">
          From a template instead
        </Link>
      </PageHeader>
      <AgentForm onSaved={(a) => navigate(`/agents/${a.id}/tools`)} />
    </>
  );
}

export function AgentSettings(props: { agent: Agent; onSaved: (a: Agent) => void; children?: preact.ComponentChildren }) {
  const del = useAction();
  const [saved, setSaved] = useState(false);
  useEffect(() => setSaved(false), [props.agent.id]);
  return (
    <>
      {saved && (
        <p class="notice" role="status">
          Saved.
        </p>
      )}
      <AgentForm
        key={props.agent.id}
        agent={props.agent}
        onSaved={(a) => {
          setSaved(true);
          props.onSaved(a);
        }}
      />
      {props.children}
      <section class="panel danger-zone">
        <h2>Delete this agent</h2>
        <p class="muted">Deletes the agent with its tools, keys, schedules and prompt templates.</p>
        <ErrorNote error={del.error} />
        <button
          type="button"
          class="danger"
          disabled={del.pending}
          onClick={() => {
            if (!confirm(`Delete the agent “${props.agent.name}”? This cannot be undone.`)) return;
            void del.run(async () => {
              await unwrap(api.DELETE("/agents/{id}", { params: { path: { id: String(props.agent.id) } } }));
              navigate("/agents");
            });
          }}
        >
          Delete agent
        </button>
      </section>
    </>
  );
}
