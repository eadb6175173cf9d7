// An agent's scheduled runs (create, edit, pause or resume, run now, delete) and prompt
// templates (create, edit, delete). One form each serves creating and editing: the edit form
// replaces the entry in its list (PUT replaces the whole resource).
import { useState } from "preact/hooks";
import { api, unwrap, type Agent, type Schemas } from "../api";
import { CancelButton, EditList, FormPanel } from "../crud";
import { navigate } from "../router";
import { Check, ErrorNote, Field, Link, TextArea, formatTime, useAction, useLoad, useId } from "../ui";

type Run = Schemas["ScheduledRun"];
type Template = Schemas["PromptTemplate"];

/** "key=value" lines ↔ the variables of a template (declared keys with defaults). */
function parseVars(text: string): Schemas["PromptTemplateVariable"][] {
  return lines(text).map(([key, value]) => (value === undefined ? { key } : { key, default_value: value }));
}
function varsText(vs: Schemas["PromptTemplateVariable"][] | null | undefined): string {
  return (vs ?? []).map((v) => (v.default_value ? `${v.key}=${v.default_value}` : v.key)).join("\n");
}
/** "key=value" lines ↔ the values a scheduled run gives its template's variables. */
function parseValues(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const [k, v] of lines(text)) out[k] = v ?? "";
  return Object.keys(out).length ? out : undefined;
}
function valuesText(vs: Record<string, string> | null | undefined): string {
  return Object.entries(vs ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}
function lines(text: string): [string, string | undefined][] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf("=");
      return i < 0 ? [l, undefined] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    });
}

/** An ISO time as the value of a datetime-local input (local time, minutes). */
function localInput(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function AgentSchedules(props: { agent: Agent }) {
  const id = String(props.agent.id);
  const runs = useLoad(async () => (await unwrap(api.GET("/agents/{id}/scheduled-runs", { params: { path: { id } } }))).data.scheduled_runs, [id]);
  const tpls = useLoad(async () => (await unwrap(api.GET("/agents/{id}/templates", { params: { path: { id } } }))).data.templates, [id]);
  const act = useAction();
  // A new, empty form after each add (not when a list loads or reloads: what is typed stays).
  const [addedRuns, setAddedRuns] = useState(0);
  const [addedTpls, setAddedTpls] = useState(0);
  const runPath = (r: Run) => ({ params: { path: { id, runId: String(r.id) } } });
  return (
    <div class="split">
      <div>
        <ScheduleForm key={`new-${addedRuns}`} agentId={id} templates={tpls.data ?? []} onSaved={async () => (await runs.reload(), setAddedRuns((n) => n + 1))} />
        <TemplateForm key={`newt-${addedTpls}`} agentId={id} onSaved={async () => (await tpls.reload(), setAddedTpls((n) => n + 1))} />
      </div>
      <div>
        <section class="panel" aria-labelledby="runs-h">
          <h2 id="runs-h">Scheduled runs</h2>
          <ErrorNote error={runs.error} />
          <ErrorNote error={act.error} />
          <EditList
            items={runs.data}
            keyOf={(r) => r.id}
            nameOf={(r) => r.name}
            what="schedule"
            itemClass="card wide"
            busy={act.pending}
            view={(r) => (
              <>
                <strong>{r.name}</strong> {!r.is_active && <span class="badge tone-neutral">paused</span>}
                <p class="muted small">
                  {r.cron_expression ? `cron ${r.cron_expression}` : `once at ${formatTime(r.run_at)}`} ({r.timezone}) · next {formatTime(r.next_run_at)} · last {formatTime(r.last_run_at)}
                  {r.last_task_id ? (
                    <>
                      {" "}
                      · <Link to={`/tasks/${r.last_task_id}`}>chat #{r.last_task_id}</Link>
                    </>
                  ) : null}
                </p>
              </>
            )}
            actions={(r) => (
              <>
                <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => navigate(`/tasks/${(await unwrap(api.POST("/agents/{id}/scheduled-runs/{runId}/trigger", runPath(r)))).data.task.id}`))}>
                  Run now
                </button>
                <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.PUT("/agents/{id}/scheduled-runs/{runId}", { ...runPath(r), body: { ...runBody(r), is_active: !r.is_active } })), await runs.reload()))}>
                  {r.is_active ? "Pause" : "Resume"}
                </button>
              </>
            )}
            edit={(r, close) => <ScheduleForm agentId={id} templates={tpls.data ?? []} run={r} onSaved={async () => (await runs.reload(), close())} onCancel={close} />}
            remove={async (r) => (await unwrap(api.DELETE("/agents/{id}/scheduled-runs/{runId}", runPath(r))), await runs.reload())}
          />
        </section>
        <section class="panel" aria-labelledby="tpls-h">
          <h2 id="tpls-h">Prompt templates</h2>
          <ErrorNote error={tpls.error} />
          <EditList
            items={tpls.data}
            keyOf={(t) => t.id}
            nameOf={(t) => t.name}
            what="template"
            itemClass="card wide"
            view={(t) => (
              <>
                <strong>{t.name}</strong> {!t.is_active && <span class="badge tone-neutral">inactive</span>} <span class="muted small">{t.description}</span>
                <pre class="code">{t.template}</pre>
                {t.variables.length > 0 && <p class="muted small">Variables: {t.variables.map((v) => (v.default_value ? `${v.key} (${v.default_value})` : v.key)).join(", ")}</p>}
              </>
            )}
            edit={(t, close) => <TemplateForm agentId={id} template={t} onSaved={async () => (await tpls.reload(), close())} onCancel={close} />}
            remove={async (t) => (await unwrap(api.DELETE("/agents/{id}/templates/{templateId}", { params: { path: { id, templateId: String(t.id) } } })), await tpls.reload())}
          />
        </section>
      </div>
    </div>
  );
}

/** The body that replaces r unchanged (PUT is a full replacement). */
function runBody(r: Run): Schemas["ScheduledRunRequest"] {
  return {
    name: r.name,
    prompt: r.template_id ? undefined : r.prompt || undefined,
    template_id: r.template_id ?? undefined,
    variables: r.template_id ? (r.variables ?? undefined) : undefined,
    cron_expression: r.cron_expression || undefined,
    run_at: r.cron_expression ? undefined : (r.run_at ?? undefined),
    timezone: r.timezone,
    max_steps_override: r.max_steps_override ?? undefined,
    is_active: r.is_active,
  };
}

/** Creates a scheduled run, or (run set) edits it. */
function ScheduleForm(props: { agentId: string; templates: Template[]; run?: Run; onSaved: () => Promise<unknown>; onCancel?: () => void }) {
  const r = props.run;
  const [f, setF] = useState({
    name: r?.name ?? "",
    prompt: r?.prompt ?? "",
    tpl: r?.template_id ? String(r.template_id) : "",
    values: valuesText(r?.variables),
    cron: r?.cron_expression ?? "",
    runAt: r && !r.cron_expression ? localInput(r.run_at) : "",
    tz: r?.timezone ?? (Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"),
    steps: r?.max_steps_override ? String(r.max_steps_override) : "",
    active: r?.is_active ?? true,
  });
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  const ids = { tpl: useId("sched-tpl"), at: useId("sched-at") };
  const body: Schemas["ScheduledRunRequest"] = {
    name: f.name,
    prompt: f.tpl ? undefined : f.prompt || undefined,
    template_id: f.tpl ? Number(f.tpl) : undefined,
    variables: f.tpl ? parseValues(f.values) : undefined,
    cron_expression: f.cron || undefined,
    run_at: !f.cron && f.runAt ? new Date(f.runAt).toISOString() : undefined,
    timezone: f.tz || undefined,
    max_steps_override: f.steps ? Number(f.steps) : undefined,
    is_active: f.active,
  };
  return (
    <FormPanel
      title={r ? `Edit “${r.name}”` : "New scheduled run"}
      class={r ? "" : undefined}
      submit={r ? "Save schedule" : "Add schedule"}
      secondary={props.onCancel && <CancelButton onClick={props.onCancel} />}
      onSubmit={async () => {
        const path = { params: { path: { id: props.agentId } } };
        if (r) await unwrap(api.PUT("/agents/{id}/scheduled-runs/{runId}", { params: { path: { id: props.agentId, runId: String(r.id) } }, body }));
        else await unwrap(api.POST("/agents/{id}/scheduled-runs", { ...path, body }));
        await props.onSaved();
      }}
    >
      <Field label="Schedule name" required value={f.name} onValue={set("name")} />
      <div class="field">
        <label for={ids.tpl}>Prompt template</label>
        <select id={ids.tpl} value={f.tpl} onChange={(e) => set("tpl")((e.target as HTMLSelectElement).value)}>
          <option value="">None (a prompt)</option>
          {props.templates.map((t) => (
            <option key={t.id} value={String(t.id)}>
              {t.name}
            </option>
          ))}
        </select>
      </div>
      {f.tpl ? <TextArea label="Template values" rows={2} value={f.values} onValue={set("values")} hint="One per line: name=value; unset ones take the template's default." /> : <TextArea label="Prompt" rows={3} value={f.prompt} onValue={set("prompt")} hint="Or choose a prompt template above." />}
      <div class="row">
        <Field label="Cron expression" value={f.cron} onValue={set("cron")} hint="e.g. 0 8 * * 1-5 (weekdays at 8:00)" />
        <div class="field">
          <label for={ids.at}>Or once at</label>
          <input id={ids.at} type="datetime-local" value={f.runAt} onInput={(e) => set("runAt")((e.target as HTMLInputElement).value)} />
        </div>
      </div>
      <div class="row">
        <Field label="Time zone" value={f.tz} onValue={set("tz")} />
        <Field label="Step budget (optional)" type="number" min={1} max={100} value={f.steps} onValue={set("steps")} />
      </div>
      <Check label="Active (dispatched automatically)" checked={f.active} onChange={(v) => setF((o) => ({ ...o, active: v }))} />
    </FormPanel>
  );
}

/** Creates a prompt template, or (template set) edits it. */
function TemplateForm(props: { agentId: string; template?: Template; onSaved: () => Promise<unknown>; onCancel?: () => void }) {
  const t = props.template;
  const [f, setF] = useState({ name: t?.name ?? "", description: t?.description ?? "", text: t?.template ?? "", vars: varsText(t?.variables), steps: t?.max_steps ? String(t.max_steps) : "", active: t?.is_active ?? true });
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  return (
    <FormPanel
      title={t ? `Edit “${t.name}”` : "New prompt template"}
      class={t ? "" : undefined}
      submit={t ? "Save template" : "Add template"}
      secondary={props.onCancel && <CancelButton onClick={props.onCancel} />}
      onSubmit={async () => {
        const body = { name: f.name, template: f.text, description: f.description || undefined, variables: parseVars(f.vars), max_steps: f.steps ? Number(f.steps) : undefined, is_active: f.active };
        if (t) await unwrap(api.PUT("/agents/{id}/templates/{templateId}", { params: { path: { id: props.agentId, templateId: String(t.id) } }, body }));
        else await unwrap(api.POST("/agents/{id}/templates", { params: { path: { id: props.agentId } }, body }));
        await props.onSaved();
      }}
    >
      <Field label="Template name" required value={f.name} onValue={set("name")} />
      <Field label="Template description" value={f.description} onValue={set("description")} />
      <TextArea label="Template text" required rows={4} value={f.text} onValue={set("text")} hint="Placeholders as {{name}}; declare each below." />
      <TextArea label="Variables" rows={2} value={f.vars} onValue={set("vars")} hint="One per line: name, or name=default value." />
      <Field label="Step budget (optional)" type="number" min={1} max={100} value={f.steps} onValue={set("steps")} />
      <Check label="Active (offered)" checked={f.active} onChange={(v) => setF((o) => ({ ...o, active: v }))} />
    </FormPanel>
  );
}
