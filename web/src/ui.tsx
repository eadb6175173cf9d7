// Small shared pieces: links, section tabs, form fields, refusals shown next to what caused
// them, status badges, and a hook that runs an action while tracking its pending state and error.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { errorText } from "./api";
import { href, navigate } from "./router";

export function Link(props: { to: string; class?: string; children: ComponentChildren; "aria-current"?: "page" | undefined; "aria-label"?: string; title?: string }) {
  return (
    <a
      href={href(props.to)}
      class={props.class}
      aria-current={props["aria-current"]}
      aria-label={props["aria-label"]}
      title={props.title}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.to);
      }}
    >
      {props.children}
    </a>
  );
}

/** A refusal of the API (or any failure), shown where it happened and announced. */
export function ErrorNote(props: { error: string | null | undefined; id?: string }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert" id={props.id}>
      {props.error}
    </p>
  );
}

export function Notice(props: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {props.children}
    </p>
  );
}

let fieldSeq = 0;
export function useId(prefix = "f"): string {
  const ref = useRef<string | undefined>(undefined);
  if (!ref.current) ref.current = `${prefix}-${++fieldSeq}`;
  return ref.current;
}

type InputProps = {
  label: string;
  hint?: string;
  value: string | number;
  onValue: (v: string) => void;
  type?: "text" | "email" | "password" | "number" | "search";
  required?: boolean;
  autoComplete?: string;
  min?: number;
  max?: number;
  maxLength?: number;
  name?: string;
};

export function Field({ label, hint, value, onValue, type, required, autoComplete, min, max, maxLength, name }: InputProps) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        name={name}
        // Preact 11 types each input type apart; the attributes used here are valid for all of them.
        type={(type ?? "text") as "text"}
        required={required}
        autoComplete={autoComplete}
        min={min}
        max={max}
        maxLength={maxLength}
        value={value}
        onInput={(e) => onValue((e.target as HTMLInputElement).value)}
        aria-describedby={hint ? `${id}-hint` : undefined}
      />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

export function TextArea(props: { label: string; value: string; onValue: (v: string) => void; rows?: number; hint?: string; required?: boolean; name?: string; mono?: boolean }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        name={props.name}
        class={props.mono ? "mono" : undefined}
        rows={props.rows ?? 4}
        required={props.required}
        value={props.value}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onInput={(e) => props.onValue((e.target as HTMLTextAreaElement).value)}
      />
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

export function Check(props: { label: string; checked: boolean; onChange: (v: boolean) => void; disabled?: boolean; hint?: string }) {
  const id = useId();
  return (
    <div class="check">
      <input id={id} type="checkbox" checked={props.checked} disabled={props.disabled} aria-describedby={props.hint ? `${id}-hint` : undefined} onChange={(e) => props.onChange((e.target as HTMLInputElement).checked)} />
      <label for={id}>{props.label}</label>
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

/**
 * useAction runs an async action: pending while it runs, the error's message kept for display
 * next to the control that caused it. run() resolves true on success.
 */
export function useAction(): { pending: boolean; error: string | null; setError: (e: string | null) => void; run: (f: () => Promise<unknown>) => Promise<boolean> } {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const alive = useRef(true);
  useEffect(
    () => () => {
      alive.current = false;
    },
    [],
  );
  const run = useCallback(async (f: () => Promise<unknown>) => {
    setPending(true);
    setError(null);
    try {
      await f();
      return true;
    } catch (err) {
      if (alive.current) setError(errorText(err));
      return false;
    } finally {
      if (alive.current) setPending(false);
    }
  }, []);
  return { pending, error, setError, run };
}

/** useLoad fetches on mount and whenever deps change; reload() fetches again. */
export function useLoad<T>(f: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string | null; loading: boolean; reload: () => Promise<void>; set: (v: T) => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const reload = useCallback(async () => {
    const n = ++seq.current;
    setLoading(true);
    try {
      const v = await f();
      if (n === seq.current) {
        setData(v);
        setError(null);
      }
    } catch (err) {
      if (n === seq.current) setError(errorText(err));
    } finally {
      if (n === seq.current) setLoading(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload, set: setData };
}

const statusTone: Record<string, string> = {
  QUEUED: "neutral",
  RUNNING: "info",
  PENDING_APPROVAL: "warn",
  AWAITING_INPUT: "warn",
  AWAITING_SUB_AGENTS: "info",
  COMPLETED: "ok",
  FAILED: "bad",
  ABORTED: "bad",
  CANCELLED: "neutral",
};

export function StatusBadge(props: { status: string }) {
  return <span class={`badge tone-${statusTone[props.status] ?? "neutral"}`}>{props.status.replace(/_/g, " ").toLowerCase()}</span>;
}

/** The section tabs of a resource's page (links to base + suffix), the current one marked. */
export function Tabs<T extends string>(props: { label: string; base: string; tabs: { id: T; label: string; suffix: string }[]; current: T }) {
  // On a narrow screen the tabs scroll sideways: keep the current one in view.
  const nav = useRef<HTMLElement>(null);
  useEffect(() => {
    const n = nav.current;
    const a = n?.querySelector<HTMLElement>('[aria-current="page"]');
    if (!n || !a) return;
    if (a.offsetLeft < n.scrollLeft || a.offsetLeft + a.offsetWidth > n.scrollLeft + n.clientWidth) n.scrollLeft = a.offsetLeft - 16;
  }, [props.current]);
  return (
    <nav class="tabs" aria-label={props.label} ref={nav}>
      {props.tabs.map((t) => (
        <Link key={t.id} to={`${props.base}${t.suffix}`} class={t.id === props.current ? "tab active" : "tab"} aria-current={t.id === props.current ? "page" : undefined}>
          {t.label}
        </Link>
      ))}
    </nav>
  );
}

export function PageHeader(props: { title: string; children?: ComponentChildren; back?: { to: string; label: string } }) {
  return (
    <header class="page-header">
      <div>
        {props.back && (
          <Link to={props.back.to} class="back">
            ← {props.back.label}
          </Link>
        )}
        <h1 tabIndex={-1} id="page-title">
          {props.title}
        </h1>
      </div>
      {props.children && <div class="actions">{props.children}</div>}
    </header>
  );
}

export function formatTime(s: string | null | undefined): string {
  if (!s) return "—";
  const d = new Date(s);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

// The rule of a new password (the server's limits.MinPasswordLen to MaxPasswordLen), shown under
// every new-password field so nobody learns it from a refusal.
export const PASSWORD_RULE = "At least 8 characters (at most 256).";

// checkPassword throws, in words, what is wrong with a new password before it is sent; the
// server's check stays the authority.
export function checkPassword(pw: string): void {
  const n = [...pw].length;
  if (n < 8) throw new Error(`This password is too short: it has ${n} character${n === 1 ? "" : "s"} and needs at least 8.`);
  if (n > 256) throw new Error(`This password is too long: it has ${n} characters and may have at most 256.`);
}
