// More of an agent: its picture (upload, remove), transfer to another owner (the caller, or a
// group), export as an agent template; importing a template as a new agent with the validator's
// findings by code and JSON path; and the media archive. (Scheduled runs and prompt templates:
// schedules.tsx.)
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Agent, type Schemas } from "../api";
import { navigate } from "../router";
import { useSession } from "../session";
import { Check, ErrorNote, Link, PageHeader, TextArea, formatTime, useAction, useLoad } from "../ui";
import { loadGroups } from "./groups";
import { FormPanel } from "../crud";
import { PictureEditor, fileForm } from "../picture";

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
  const [done, setDone] = useState("");
  const a = props.agent;
  const owners = [...(user ? [{ id: user.principal_id, label: "Me (personal)" }] : []), ...(groups.data ?? []).map((g) => ({ id: g.principal_id, label: `Group ${g.name}` }))].filter((o) => o.id !== a.principal_id);
  return (
    <FormPanel
      title="Transfer"
      submit="Transfer agent"
      tone=""
      saved={done}
      note={<p class="muted small">Move the agent, with its chats, keys and schedules, to another owner.</p>}
      onSubmit={async () => {
        const r = await unwrap(api.POST("/agents/{id}/transfer", { params: { path: { id: String(a.id) } }, body: { principal_id: Number(to) } }));
        setDone(`Transferred to ${owners.find((o) => String(o.id) === to)?.label ?? `principal #${to}`}.`);
        props.onChange(r.data.agent);
      }}
    >
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
    </FormPanel>
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
                  // A refused import names the codes in its message and carries every finding,
                  // with its code and JSON path, in the envelope's details.
                  const env = r.error as Schemas["TemplateImportRefusedError"] | undefined;
                  if (env?.details) setResult({ valid: false, errors: env.details.errors, warnings: env.details.warnings });
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
                  const fd = fileForm(f);
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
