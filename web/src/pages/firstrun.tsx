// The first-run checklist on the console's home, for administrators: add a model, create an
// agent, start a chat; each step is ticked from the server's state and the list disappears when
// all three are done. The model step creates a global (or a group's) default model
// configuration from a preset, may admit a local server's host in llm_allowed_hosts when the
// administrator confirms, and tests the connection with a real call.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { api, unwrap, type Agent, type Schemas } from "../api";
import { TestConnection } from "../llmtest";
import { useSession } from "../session";
import { Check, ErrorNote, Field, Link, useId, useLoad } from "../ui";
import { FormPanel } from "../crud";
import { loadGroups } from "./groups";

type Llm = Schemas["LlmConfig"];

/** A provider preset: the driver, a model to start from and the endpoint; local servers speak
 * the OpenAI wire format on the machine's network and need no key. */
type Preset = { id: string; label: string; driver: "openai" | "anthropic"; model: string; base_url: string; local: boolean };
export const presets: Preset[] = [
  { id: "openai", label: "OpenAI", driver: "openai", model: "gpt-4o-mini", base_url: "", local: false },
  { id: "anthropic", label: "Anthropic", driver: "anthropic", model: "claude-3-5-haiku-latest", base_url: "", local: false },
  { id: "openrouter", label: "OpenRouter", driver: "openai", model: "openai/gpt-4o-mini", base_url: "https://openrouter.ai/api/v1", local: false },
  { id: "ollama", label: "Ollama (local)", driver: "openai", model: "llama3.2", base_url: "http://localhost:11434/v1", local: true },
  { id: "lmstudio", label: "LM Studio (local)", driver: "openai", model: "", base_url: "http://localhost:1234/v1", local: true },
  { id: "vllm", label: "vLLM (local)", driver: "openai", model: "", base_url: "http://localhost:8000/v1", local: true },
];

/** The default model configuration of the installation, or undefined when there is none. */
async function loadDefault(): Promise<Llm | undefined> {
  return (await unwrap(api.GET("/llm-configs/default"))).data.llm_config;
}

export function FirstRun(props: { agents: Agent[] | undefined }) {
  const { user } = useSession();
  const model = useLoad(async () => (user?.is_admin ? { config: await loadDefault() } : null), [user?.is_admin]);
  const chats = useLoad(async () => (user?.is_admin ? (await unwrap(api.GET("/tasks", { params: { query: { per_page: 1 } } }))).data.tasks.length > 0 : true), [user?.is_admin]);
  const [setup, setSetup] = useState(false);
  const [created, setCreated] = useState<Llm | null>(null);
  if (!user?.is_admin || !model.data || chats.data === undefined || !props.agents) return null;
  const steps = { model: !!model.data.config, agent: props.agents.length > 0, chat: chats.data };
  if (steps.model && steps.agent && steps.chat) return null;
  const first = props.agents[0];
  return (
    <section class="panel checklist" aria-labelledby="firstrun-h">
      <h2 id="firstrun-h">Get started</h2>
      <p class="muted">Three steps to a first chat. This list disappears when they are done.</p>
      <ErrorNote error={model.error ?? chats.error} />
      <ol>
        <Step n={1} done={steps.model} title="Add a model">
          <p class="muted small">
            {steps.model ? (
              <>
                Agents without a group default use <span class="mono">{model.data.config?.model}</span> ({model.data.config?.name}).
              </>
            ) : (
              <>Every chat calls a language model; without one it fails with NO_LLM_CONFIGURATION. Add a model for every agent (a global default), or start the server with SVC_LLM_DRIVER, SVC_LLM_MODEL and SVC_LLM_API_KEY.</>
            )}
          </p>
          {!steps.model && !setup && (
            <button type="button" class="primary" onClick={() => setSetup(true)}>
              Add a model
            </button>
          )}
        </Step>
        <Step n={2} done={steps.agent} title="Create an agent">
          <p class="muted small">A system prompt, a step budget and a set of tools.</p>
          {!steps.agent && (
            <Link to="/agents/new" class="button">
              Create an agent
            </Link>
          )}
        </Step>
        <Step n={3} done={steps.chat} title="Start a chat">
          <p class="muted small">Give an agent a prompt and follow its run.</p>
          {!steps.chat && first && (
            <Link to={`/agents/${first.id}`} class="button">
              Chat with {first.name}
            </Link>
          )}
        </Step>
      </ol>
      {(setup || created) && (
        <ModelSetup
          created={created}
          onCreated={async (c) => {
            setCreated(c);
            setSetup(false);
            await model.reload();
          }}
        />
      )}
    </section>
  );
}

/** One step of the checklist: its number, or a tick once done. */
function Step(props: { n: number; done: boolean; title: string; children: ComponentChildren }) {
  return (
    <li class={props.done ? "done" : ""}>
      <span class="tick" aria-hidden="true">
        {props.done ? "✓" : String(props.n)}
      </span>
      <div>
        <strong>{props.title}</strong> {props.done && <span class="sr-only">(done)</span>}
        {props.children}
      </div>
    </li>
  );
}

/** ModelSetup creates a default model configuration from a preset: global (every agent without
 * a group default) or a group's; once created, its connection can be tested. */
function ModelSetup(props: { created: Llm | null; onCreated: (c: Llm) => Promise<void> }) {
  const groups = useLoad(loadGroups, []);
  const [preset, setPreset] = useState(presets[0]);
  const [model, setModel] = useState(presets[0].model);
  const [base, setBase] = useState(presets[0].base_url);
  const [key, setKey] = useState("");
  const [scope, setScope] = useState("global");
  const [allowHost, setAllowHost] = useState(false);
  const presetId = useId("preset");
  const scopeId = useId("scope");
  const c = props.created;
  if (c) {
    return (
      <div class="model-created" role="region" aria-label="The new model">
        <p>
          <strong>{c.name}</strong> is the {c.is_global ? "global" : "group's"} default: <span class="mono">{c.model}</span>
          {c.base_url ? ` at ${c.base_url}` : ""}.
        </p>
        <TestConnection groupId={c.group_id} configId={c.id} name={c.name} />
      </div>
    );
  }
  const host = hostOf(base);
  return (
    <FormPanel
      title="Add a model"
      class=""
      submit="Add model"
      onSubmit={async () => {
        if (preset.local && allowHost && host) await allowLLMHost(host);
        let groupId = Number(scope);
        if (scope === "global") groupId = groups.data?.[0]?.id ?? (await unwrap(api.POST("/groups", { body: { name: "Models", description: "Holds the installation's model configurations." } }))).data.group.id;
        const r = await unwrap(
          api.POST("/groups/{id}/llm-configs", {
            params: { path: { id: groupId } },
            body: { name: `${preset.label} ${model}`.slice(0, 100), driver: preset.driver, model, base_url: base || undefined, api_key: key || undefined, is_default: true, is_global: scope === "global" },
          }),
        );
        await props.onCreated(r.data.llm_config);
      }}
    >
      <div class="row">
        <div class="field">
          <label for={presetId}>Provider</label>
          <select
            id={presetId}
            value={preset.id}
            onChange={(e) => {
              const p = presets.find((x) => x.id === (e.target as HTMLSelectElement).value) ?? presets[0];
              setPreset(p);
              setModel(p.model);
              setBase(p.base_url);
            }}
          >
            {presets.map((p) => (
              <option key={p.id} value={p.id}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for={scopeId}>Used by</label>
          <select id={scopeId} value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value)}>
            <option value="global">Every agent (global default)</option>
            {(groups.data ?? []).map((g) => (
              <option key={g.id} value={String(g.id)}>
                Agents of the group {g.name}
              </option>
            ))}
          </select>
        </div>
      </div>
      <Field label="Model" required value={model} onValue={setModel} hint={preset.local ? "The name the server lists for the model you loaded." : undefined} />
      <Field label="Base URL" value={base} onValue={setBase} hint="Empty: the provider's default endpoint." />
      {!preset.local && <Field label="API key" type="password" autoComplete="new-password" value={key} onValue={setKey} hint="Stored encrypted, never shown again." />}
      {preset.local && host && (
        <Check
          label={`Allow ${host} in llm_allowed_hosts`}
          checked={allowHost}
          onChange={setAllowHost}
          hint="A local server has a private or loopback address, which group model configurations may reach only when its host is listed in the setting llm_allowed_hosts."
        />
      )}
      <ErrorNote error={groups.error} />
    </FormPanel>
  );
}

function hostOf(u: string): string {
  try {
    return new URL(u).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return "";
  }
}

/** allowLLMHost adds host to the runtime setting llm_allowed_hosts unless it is listed. */
async function allowLLMHost(host: string): Promise<void> {
  const settings = (await unwrap(api.GET("/runtime-settings"))).data.settings;
  const cur = String(settings.find((s) => s.key === "llm_allowed_hosts")?.value ?? "");
  if (cur.split(/[\s,]+/).includes(host)) return;
  await unwrap(api.PATCH("/runtime-settings", { body: { settings: { llm_allowed_hosts: `${cur} ${host}`.trim() } } }));
}
