// A form over a tool's declared settings (the contract's RegisteredToolSetting): one input per
// declaration, typed; password settings are masked: the server answers "********" for a stored
// secret, and sending that value back keeps it. Lists are edited one item per line.
import { useState } from "preact/hooks";
import type { Schemas } from "./api";
import { Check, ErrorNote, Field, TextArea, useId } from "./ui";

export const MASK = "********";
type Decl = Schemas["RegisteredToolSetting"];
type Values = Record<string, unknown>;

function toText(d: Decl, v: unknown): string {
  if (v === undefined || v === null) return "";
  if (Array.isArray(v)) return v.join("\n");
  return String(v);
}

/** fromText converts the inputs back to typed values; "" deletes a setting. */
function fromText(d: Decl, s: string): unknown {
  if (s === "") return "";
  switch (d.type) {
    case "integer":
    case "number":
      return Number(s);
    case "string_list":
      return s.split("\n").map((x) => x.trim()).filter(Boolean);
    case "integer_list":
      return s.split(/[\n,]/).map((x) => x.trim()).filter(Boolean).map(Number);
    default:
      return s;
  }
}

export function SettingsForm(props: { decls: Decl[]; values: Values; onSave: (v: Values) => Promise<unknown>; saveLabel?: string; pending?: boolean; error?: string | null }) {
  const [text, setText] = useState<Record<string, string>>(() => Object.fromEntries(props.decls.filter((d) => d.type !== "boolean").map((d) => [d.key, toText(d, props.values[d.key])])));
  const [bools, setBools] = useState<Record<string, boolean>>(() => Object.fromEntries(props.decls.filter((d) => d.type === "boolean").map((d) => [d.key, props.values[d.key] === true])));
  const base = useId("set");
  if (props.decls.length === 0) return <p class="muted small">This tool has no settings.</p>;
  return (
    <form
      class="settings-form"
      onSubmit={(e) => {
        e.preventDefault();
        const out: Values = {};
        for (const d of props.decls) out[d.key] = d.type === "boolean" ? bools[d.key] : fromText(d, text[d.key] ?? "");
        void props.onSave(out);
      }}
    >
      {props.decls.map((d) => {
        const label = `${d.label || d.key}${d.required ? " (required)" : ""}`;
        const set = (v: string) => setText((o) => ({ ...o, [d.key]: v }));
        if (d.type === "boolean") return <Check key={d.key} label={label} checked={bools[d.key] ?? false} onChange={(v) => setBools((o) => ({ ...o, [d.key]: v }))} hint={d.description} />;
        if (d.type === "select")
          return (
            <div class="field" key={d.key}>
              <label for={`${base}-${d.key}`}>{label}</label>
              <select id={`${base}-${d.key}`} value={text[d.key] ?? ""} onChange={(e) => set((e.target as HTMLSelectElement).value)}>
                <option value="">(not set)</option>
                {(d.options ?? []).map((o) => (
                  <option key={o}>{o}</option>
                ))}
              </select>
              <small class="hint">{d.description}</small>
            </div>
          );
        if (d.type === "text" || d.type === "string_list" || d.type === "integer_list")
          return <TextArea key={d.key} label={label} rows={3} value={text[d.key] ?? ""} onValue={set} hint={d.description + (d.type.endsWith("_list") ? " One per line." : "")} />;
        if (d.type === "password")
          return (
            <Field
              key={d.key}
              label={label}
              type="password"
              autoComplete="new-password"
              value={text[d.key] === MASK ? "" : (text[d.key] ?? "")}
              onValue={(v) => set(v === "" && props.values[d.key] === MASK ? MASK : v)}
              hint={`${d.description}${props.values[d.key] === MASK ? " A secret is stored; leave empty to keep it." : ""}`}
            />
          );
        return <Field key={d.key} label={label} type={d.type === "integer" || d.type === "number" ? "number" : "text"} value={text[d.key] ?? ""} onValue={set} hint={d.description} />;
      })}
      <ErrorNote error={props.error} />
      <button class="primary" disabled={props.pending}>
        {props.saveLabel ?? "Save settings"}
      </button>
    </form>
  );
}
