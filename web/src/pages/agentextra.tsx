// More of an agent: its picture (upload, remove), transfer to another owner (the caller, or a
// group), export as an agent template; importing a template as a new agent with the validator's
// findings by code and JSON path; scheduled runs and prompt templates; and the media archive.
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Agent, type Schemas } from "../api";
import { navigate } from "../router";
import { useSession } from "../session";
import { Check, ErrorNote, Field, Link, PageHeader, TextArea, formatTime, useAction, useLoad } from "../ui";
import { loadGroups } from "./groups";

function form(file: File): FormData {
  const fd = new FormData();
  fd.append("file", file);
  return fd;
}

/** A picture with upload and remove; src is null when there is none. */
export function PictureEditor(props: { title: string; alt: string; initial: string; src: string | null; upload: (fd: FormData) => Promise<unknown>; remove: () => Promise<unknown>; inputId: string }) {
  const act = useAction();
  return (
    <section class="panel" aria-labelledby={`${props.inputId}-h`}>
      <h2 id={`${props.inputId}-h`}>{props.title}</h2>
      <div class="picture-row">
        {props.src ? <img class="avatar" src={props.src} alt={props.alt} /> : <span class="avatar empty" aria-hidden="true">{props.initial.slice(0, 1).toUpperCase()}</span>}
        <div>
          <label class="button" for={props.inputId}>
            Upload a picture
          </label>
          <input
            id={props.inputId}
            class="sr-only"
            type="file"
            accept="image/png,image/jpeg,image/webp,image/gif"
            onChange={(e) => {
              const f = (e.target as HTMLInputElement).files?.[0];
              (e.target as HTMLInputElement).value = "";
              if (f) void act.run(() => props.upload(form(f)));
            }}
          />
          {props.src && (
            <button type="button" class="link" disabled={act.pending} onClick={() => act.run(props.remove)}>
              Remove
            </button>
          )}
          <p class="hint">PNG, JPEG, WebP or GIF.</p>
        </div>
      </div>
      {act.pending && <p role="status">Uploading…</p>}
      <ErrorNote error={act.error} />
    </section>
  );
}

export function AgentPicture(props: { agent: Agent; onChange: (a: Agent) => void }) {
  const a = props.agent;
  const id = String(a.id);
  return (
    <PictureEditor
      title="Picture"
      inputId="agent-picture"
      alt={`Picture of ${a.name}`}
      initial={a.name}
      src={a.picture_url ? `${prefix}/api/v1/agents/${a.id}/picture?v=${encodeURIComponent(a.updated_at)}` : null}
      upload={async (fd) => props.onChange((await unwrap(api.POST("/agents/{id}/picture/image", { params: { path: { id } }, body: { file: "" }, bodySerializer: () => fd }))).data.agent)}
      remove={async () => (await unwrap(api.DELETE("/agents/{id}/picture/image", { params: { path: { id } } })), props.onChange({ ...a, picture_url: null }))}
    />
  );
}

export function AgentTransfer(props: { agent: Agent; onChange: (a: Agent) => void }) {
  const { user } = useSession();
  const groups = useLoad(loadGroups, []);
  const [to, setTo] = useState("");
  const act = useAction();
  const [done, setDone] = useState("");
  const a = props.agent;
  const owners = [...(user ? [{ id: user.principal_id, label: "Me (personal)" }] : []), ...(groups.data ?? []).map((g) => ({ id: g.principal_id, label: `Group ${g.name}` }))].filter((o) => o.id !== a.principal_id);
  return (
    <form
      class="panel"
      aria-labelledby="transfer-h"
      onSubmit={(e) => {
        e.preventDefault();
        setDone("");
        void act.run(async () => {
          const r = await unwrap(api.POST("/agents/{id}/transfer", { params: { path: { id: String(a.id) } }, body: { principal_id: Number(to) } }));
          props.onChange(r.data.agent);
          setDone(`Transferred to ${owners.find((o) => String(o.id) === to)?.label ?? `principal #${to}`}.`);
        });
      }}
    >
      <h2 id="transfer-h">Transfer</h2>
      <p class="muted small">Move the agent, with its tasks, keys and schedules, to another owner.</p>
      <div class="field">
        <label for="transfer-to">New owner</label>
        <select id="transfer-to" required value={to} onChange={(e) => setTo((e.target as HTMLSelectElement).value)}>
          <option value="">Choose…</option>
          {owners.map((o) => (
            <option key={o.id} value={String(o.id)}>
              {o.label}
            </option>
          ))}
        </select>
      </div>
      <ErrorNote error={act.error} />
      {done && <p class="notice">{done}</p>}
      <button disabled={act.pending}>Transfer agent</button>
    </form>
  );
}

export function AgentExport(props: { agent: Agent }) {
  const [withSettings, setWithSettings] = useState(false);
  const act = useAction();
  const [text, setText] = useState("");
  return (
    <section class="panel" aria-labelledby="export-h">
      <h2 id="export-h">Export as a template</h2>
      <Check label="Include tool settings (never passwords)" checked={withSettings} onChange={setWithSettings} />
      <div class="button-row">
        <button
          type="button"
          disabled={act.pending}
          onClick={() =>
            act.run(async () => {
              const r = await unwrap(api.GET("/agents/{id}/export", { params: { path: { id: String(props.agent.id) }, query: { include_settings: withSettings } } }));
              setText(JSON.stringify(r.data.template, null, 2));
            })
          }
        >
          Export
        </button>
        {text && (
          <a class="button" download={`${props.agent.name.replace(/[^\w.-]+/g, "-").toLowerCase()}.agent.json`} href={URL.createObjectURL(new Blob([text], { type: "application/json" }))}>
            Download
          </a>
        )}
      </div>
      <ErrorNote error={act.error} />
      {text && <TextArea label="Template (JSON)" mono rows={10} value={text} onValue={setText} />}
    </section>
  );
}

type Finding = Schemas["AgentTemplateFinding"];

function Findings(props: { title: string; items: Finding[]; tone: "bad" | "warn" }) {
  if (props.items.length === 0) return null;
  return (
    <div class={`findings f-${props.tone}`} role={props.tone === "bad" ? "alert" : "status"}>
      <h3>{props.title}</h3>
      <table class="table">
        <thead>
          <tr>
            <th scope="col">Code</th>
            <th scope="col">Path</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((f, i) => (
            <tr key={i}>
              <td class="mono small">{f.code}</td>
              <td class="mono small">{f.path || "(document)"}</td>
              <td>{f.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ImportTemplate() {
  const { user } = useSession();
  const groups = useLoad(loadGroups, []);
  const catalog = useLoad(async () => (await unwrap(api.GET("/agent-templates"))).data, []);
  const [text, setText] = useState("");
  const [owner, setOwner] = useState("");
  const [result, setResult] = useState<{ valid: boolean; errors: Finding[]; warnings: Finding[] } | null>(null);
  const [imported, setImported] = useState<Agent | null>(null);
  const check = useAction();
  const imp = useAction();
  const asText = { bodySerializer: (b: unknown) => String(b), headers: { "Content-Type": "text/plain" } };
  return (
    <>
      <PageHeader title="Import an agent template" back={{ to: "/agents", label: "Agents" }} />
      <div class="split">
        <section class="panel">
          <h2>Template</h2>
          <p class="muted small">Paste a template (JSON or YAML, as exported), load a file, or start from a shipped one.</p>
          <ErrorNote error={catalog.error} />
          {catalog.data && catalog.data.templates.length > 0 && (
            <div class="field">
              <label for="tpl-shipped">Shipped templates</label>
              <select
                id="tpl-shipped"
                onChange={(e) => {
                  const id = (e.target as HTMLSelectElement).value;
                  if (id)
                    void check.run(async () => {
                      const r = await unwrap(api.GET("/agent-templates/{id}", { params: { path: { id } } }));
                      setText(JSON.stringify(r.data.template, null, 2));
                      setResult(null);
                    });
                }}
              >
                <option value="">Choose…</option>
                {catalog.data.templates.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name} ({t.id})
                  </option>
                ))}
              </select>
            </div>
          )}
          <div class="field">
            <label for="tpl-file">Template file</label>
            <input id="tpl-file" type="file" accept=".json,.yaml,.yml,application/json,text/yaml" onChange={async (e) => (setText(await ((e.target as HTMLInputElement).files?.[0]?.text() ?? Promise.resolve(""))), setResult(null))} />
          </div>
          <TextArea label="Template text" mono rows={14} value={text} onValue={(v) => (setText(v), setResult(null))} />
          <div class="field">
            <label for="tpl-owner">Owner of the new agent</label>
            <select id="tpl-owner" value={owner} onChange={(e) => setOwner((e.target as HTMLSelectElement).value)}>
              <option value="">Me (personal)</option>
              {(groups.data ?? []).map((g) => (
                <option key={g.id} value={String(g.principal_id)}>
                  Group {g.name}
                </option>
              ))}
            </select>
          </div>
          <div class="button-row">
            <button type="button" disabled={check.pending || !text} onClick={() => check.run(async () => setResult((await unwrap(api.POST("/agent-templates/validate", { body: text, ...asText }))).data))}>
              Validate
            </button>
            <button
              type="button"
              class="primary"
              disabled={imp.pending || !text}
              onClick={() =>
                imp.run(async () => {
                  const r = await api.POST("/agent-templates/import", { params: { query: { principal_id: owner ? Number(owner) : user?.principal_id } }, body: text, ...asText });
                  if (r.data) {
                    const { agent, warnings } = r.data.data;
                    if (warnings.length === 0) navigate(`/agents/${agent.id}`);
                    else {
                      setResult({ valid: true, errors: [], warnings });
                      setImported(agent);
                    }
                    return;
                  }
                  // A refused import names the codes in its message; the validator gives each
                  // finding with its path.
                  const env = r.error as { error?: { message?: string } } | undefined;
                  if (r.response.status === 422) {
                    const v = await api.POST("/agent-templates/validate", { body: text, ...asText });
                    if (v.data) setResult(v.data.data);
                  }
                  throw new Error(env?.error?.message ?? `The server answered ${r.response.status}`);
                })
              }
            >
              Import as a new agent
            </button>
          </div>
          <ErrorNote error={check.error ?? imp.error} />
        </section>
        <section class="panel" aria-labelledby="findings-h">
          <h2 id="findings-h">Validation</h2>
          {!result && <p class="muted">Validate to see the findings: each with its code and the JSON path it concerns.</p>}
          {imported && (
            <p class="notice">
              Imported as <Link to={`/agents/${imported.id}`}>{imported.name}</Link>, with the warnings below.
            </p>
          )}
          {result && !imported && result.valid && result.errors.length === 0 && <p class="notice">The template is valid{result.warnings.length ? ", with warnings" : ""}.</p>}
          {result && <Findings title={`${result.errors.length} error(s)`} items={result.errors} tone="bad" />}
          {result && <Findings title={`${result.warnings.length} warning(s)`} items={result.warnings} tone="warn" />}
        </section>
      </div>
    </>
  );
}

function vars(text: string): Schemas["PromptTemplateVariable"][] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const i = l.indexOf("=");
      return i < 0 ? { key: l } : { key: l.slice(0, i).trim(), default_value: l.slice(i + 1).trim() };
    });
}

export function AgentSchedules(props: { agent: Agent }) {
  const id = String(props.agent.id);
  const runs = useLoad(async () => (await unwrap(api.GET("/agents/{id}/scheduled-runs", { params: { path: { id } } }))).data.scheduled_runs, [id]);
  const tpls = useLoad(async () => (await unwrap(api.GET("/agents/{id}/templates", { params: { path: { id } } }))).data.templates, [id]);
  const [name, setName] = useState("");
  const [prompt, setPrompt] = useState("");
  const [tpl, setTpl] = useState("");
  const [cron, setCron] = useState("");
  const [runAt, setRunAt] = useState("");
  const [tz, setTz] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  const add = useAction();
  const act = useAction();
  const [tName, setTName] = useState("");
  const [tText, setTText] = useState("");
  const [tDesc, setTDesc] = useState("");
  const [tVars, setTVars] = useState("");
  const addT = useAction();
  return (
    <div class="split">
      <div>
        <form
          class="panel"
          aria-labelledby="sched-h"
          onSubmit={(e) => {
            e.preventDefault();
            void add.run(async () => {
              await unwrap(
                api.POST("/agents/{id}/scheduled-runs", {
                  params: { path: { id } },
                  body: { name, prompt: prompt || undefined, template_id: tpl ? Number(tpl) : undefined, cron_expression: cron || undefined, run_at: runAt ? new Date(runAt).toISOString() : undefined, timezone: tz || undefined, is_active: true },
                }),
              );
              setName("");
              setPrompt("");
              setCron("");
              setRunAt("");
              await runs.reload();
            });
          }}
        >
          <h2 id="sched-h">New scheduled run</h2>
          <Field label="Schedule name" required value={name} onValue={setName} />
          <TextArea label="Prompt" rows={3} value={prompt} onValue={setPrompt} hint="Or choose a prompt template below." />
          <div class="field">
            <label for="sched-tpl">Prompt template</label>
            <select id="sched-tpl" value={tpl} onChange={(e) => setTpl((e.target as HTMLSelectElement).value)}>
              <option value="">None</option>
              {(tpls.data ?? []).map((t) => (
                <option key={t.id} value={String(t.id)}>
                  {t.name}
                </option>
              ))}
            </select>
          </div>
          <div class="row">
            <Field label="Cron expression" value={cron} onValue={setCron} hint="e.g. 0 8 * * 1-5 (weekdays at 8:00)" />
            <div class="field">
              <label for="sched-at">Or once at</label>
              <input id="sched-at" type="datetime-local" value={runAt} onInput={(e) => setRunAt((e.target as HTMLInputElement).value)} />
            </div>
          </div>
          <Field label="Time zone" value={tz} onValue={setTz} />
          <ErrorNote error={add.error} />
          <button class="primary" disabled={add.pending}>
            Add schedule
          </button>
        </form>
        <form
          class="panel"
          aria-labelledby="tpl-h"
          onSubmit={(e) => {
            e.preventDefault();
            void addT.run(async () => {
              await unwrap(api.POST("/agents/{id}/templates", { params: { path: { id } }, body: { name: tName, template: tText, description: tDesc || undefined, variables: vars(tVars) } }));
              setTVars("");
              setTName("");
              setTText("");
              setTDesc("");
              await tpls.reload();
            });
          }}
        >
          <h2 id="tpl-h">New prompt template</h2>
          <Field label="Template name" required value={tName} onValue={setTName} />
          <Field label="Template description" value={tDesc} onValue={setTDesc} />
          <TextArea label="Template text" required rows={4} value={tText} onValue={setTText} hint="Placeholders as {{name}}; declare each below." />
          <TextArea label="Variables" rows={2} value={tVars} onValue={setTVars} hint="One per line: name, or name=default value." />
          <ErrorNote error={addT.error} />
          <button class="primary" disabled={addT.pending}>
            Add template
          </button>
        </form>
      </div>
      <div>
        <section class="panel">
          <h2>Scheduled runs</h2>
          <ErrorNote error={runs.error} />
          <ErrorNote error={act.error} />
          {runs.data && runs.data.length === 0 && <p class="muted">None.</p>}
          <ul class="plain">
            {(runs.data ?? []).map((r) => (
              <li key={r.id} class="card wide">
                <div class="wide">
                  <strong>{r.name}</strong> {!r.is_active && <span class="badge tone-neutral">paused</span>}
                  <p class="muted small">
                    {r.cron_expression ? `cron ${r.cron_expression}` : `once at ${formatTime(r.run_at)}`} ({r.timezone}) · next {formatTime(r.next_run_at)} · last {formatTime(r.last_run_at)}
                    {r.last_task_id ? (
                      <>
                        {" "}
                        · <Link to={`/tasks/${r.last_task_id}`}>task #{r.last_task_id}</Link>
                      </>
                    ) : null}
                  </p>
                </div>
                <div class="button-row">
                  <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => navigate(`/tasks/${(await unwrap(api.POST("/agents/{id}/scheduled-runs/{runId}/trigger", { params: { path: { id, runId: String(r.id) } } }))).data.task.id}`))}>
                    Run now
                  </button>
                  <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.PUT("/agents/{id}/scheduled-runs/{runId}", { params: { path: { id, runId: String(r.id) } }, body: { name: r.name, prompt: r.prompt || undefined, template_id: r.template_id ?? undefined, variables: r.variables ?? undefined, cron_expression: r.cron_expression || undefined, run_at: r.run_at ?? undefined, timezone: r.timezone, max_steps_override: r.max_steps_override ?? undefined, is_active: !r.is_active } })), await runs.reload()))}>
                    {r.is_active ? "Pause" : "Resume"}
                  </button>
                  <button type="button" class="small danger" aria-label={`Delete schedule ${r.name}`} disabled={act.pending} onClick={() => confirm(`Delete the schedule “${r.name}”?`) && act.run(async () => (await unwrap(api.DELETE("/agents/{id}/scheduled-runs/{runId}", { params: { path: { id, runId: String(r.id) } } })), await runs.reload()))}>
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        </section>
        <section class="panel">
          <h2>Prompt templates</h2>
          <ErrorNote error={tpls.error} />
          {tpls.data && tpls.data.length === 0 && <p class="muted">None.</p>}
          <ul class="plain">
            {(tpls.data ?? []).map((t) => (
              <li key={t.id} class="card wide">
                <div class="wide">
                  <strong>{t.name}</strong> <span class="muted small">{t.description}</span>
                  <pre class="code">{t.template}</pre>
                </div>
                <button type="button" class="small danger" aria-label={`Delete template ${t.name}`} disabled={act.pending} onClick={() => confirm(`Delete the template “${t.name}”?`) && act.run(async () => (await unwrap(api.DELETE("/agents/{id}/templates/{templateId}", { params: { path: { id, templateId: String(t.id) } } })), await tpls.reload()))}>
                  Delete
                </button>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </div>
  );
}

const size = (n: number) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`);

export function MediaPage() {
  const [kind, setKind] = useState("");
  const list = useLoad(async () => (await unwrap(api.GET("/media", { params: { query: { kind: (kind || undefined) as Schemas["MediaAsset"]["kind"] | undefined, per_page: 100 } } }))).data.media, [kind]);
  const types = useLoad(async () => (await unwrap(api.GET("/media/allowed-types"))).data, []);
  const [keep, setKeep] = useState(false);
  const up = useAction();
  const act = useAction();
  return (
    <>
      <PageHeader title="Media" />
      <div class="split">
        <section class="panel" aria-labelledby="upload-h">
          <h2 id="upload-h">Upload</h2>
          <div class="field">
            <label for="media-file">File</label>
            <input
              id="media-file"
              type="file"
              onChange={(e) => {
                const f = (e.target as HTMLInputElement).files?.[0];
                (e.target as HTMLInputElement).value = "";
                if (!f) return;
                void up.run(async () => {
                  const fd = form(f);
                  if (keep) fd.append("keep", "true");
                  await unwrap(api.POST("/media", { body: {}, bodySerializer: () => fd }));
                  await list.reload();
                });
              }}
            />
            {types.data && <small class="hint">Accepted: {types.data.kinds.map((k) => `${k.kind} (up to ${size(k.max_size)})`).join(", ")}</small>}
          </div>
          <Check label="Keep (never expires)" checked={keep} onChange={setKeep} />
          {up.pending && <p role="status">Uploading…</p>}
          <ErrorNote error={up.error} />
        </section>
        <section class="panel flush">
          <div class="toolbar pad">
            <div class="field">
              <label for="media-kind">Kind</label>
              <select id="media-kind" value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
                <option value="">Any</option>
                {["image", "audio", "video", "document", "other"].map((k) => (
                  <option key={k}>{k}</option>
                ))}
              </select>
            </div>
          </div>
          <ErrorNote error={list.error} />
          <ErrorNote error={act.error} />
          {list.data && list.data.length === 0 && <p class="muted pad">The archive is empty.</p>}
          {list.data && list.data.length > 0 && (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">File</th>
                  <th scope="col">Kind</th>
                  <th scope="col" class="hide-narrow">
                    Size
                  </th>
                  <th scope="col">Kept</th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((m) => (
                  <tr key={m.id}>
                    <td>
                      {m.filename}
                      <small class="muted block">
                        {m.mime_type}
                        {m.width ? ` · ${m.width}×${m.height}` : ""} · {formatTime(m.created_at)}
                        {!m.keep && m.expires_at ? ` · expires ${formatTime(m.expires_at)}` : ""}
                      </small>
                    </td>
                    <td>{m.kind}</td>
                    <td class="hide-narrow">{size(m.size)}</td>
                    <td>
                      <input type="checkbox" aria-label={`Keep ${m.filename}`} checked={m.keep} disabled={act.pending} onChange={(e) => act.run(async () => (await unwrap(api.POST("/media/{id}/keep", { params: { path: { id: m.id } }, body: { keep: (e.target as HTMLInputElement).checked } })), await list.reload()))} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </div>
    </>
  );
}
