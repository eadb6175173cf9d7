// The two shapes most administration pages repeat: a form in a panel that sends one request
// (its refusal shown inside it, what was typed kept; an optional "saved" notice), and a list of
// resources each with its own actions, a confirmed Delete (or Revoke) and an inline edit form
// that replaces the entry while it is open (Escape or Cancel closes it, focus goes back to the
// entry's Edit button); entries the caller may not change are only shown.
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { ErrorNote, useAction, useId } from "./ui";

type FormPanelProps = {
  title: string;
  /** The submit button's label. */
  submit: string;
  /** The submit button's label while the request runs (default: unchanged). */
  submitting?: string;
  /** Sends the request; a thrown error (a refusal) is shown in the form and nothing typed is lost. */
  onSubmit: () => Promise<unknown>;
  /** Shown (role status) after a successful submit until the next one. */
  saved?: string;
  children: ComponentChildren;
  /** Beside the submit button (a Cancel of an inline edit). */
  secondary?: ComponentChildren;
  /** "panel" (default) or "" inside another panel; the heading is then an h3. */
  class?: string;
  /** Extra class of the submit button ("primary" by default). */
  tone?: string;
  note?: ComponentChildren;
};

export function FormPanel(props: FormPanelProps) {
  const act = useAction();
  const [done, setDone] = useState(false);
  const id = useId("form");
  const inPanel = props.class !== undefined && props.class !== "panel";
  return (
    <form
      class={props.class ?? "panel"}
      aria-labelledby={id}
      onSubmit={(e) => {
        e.preventDefault();
        setDone(false);
        void act.run(async () => {
          await props.onSubmit();
          setDone(true);
        });
      }}
    >
      {inPanel ? <h3 id={id}>{props.title}</h3> : <h2 id={id}>{props.title}</h2>}
      {props.note}
      {props.children}
      <ErrorNote error={act.error} />
      {done && props.saved && (
        <p class="notice" role="status">
          {props.saved}
        </p>
      )}
      <div class="button-row">
        <button class={props.tone ?? "primary"} disabled={act.pending}>
          {act.pending && props.submitting ? props.submitting : props.submit}
        </button>
        {props.secondary}
      </div>
    </form>
  );
}

type EditListProps<T> = {
  items: T[] | undefined;
  keyOf: (t: T) => string | number;
  /** The entry's name, in the buttons' accessible names ("Edit schedule Morning check"). */
  nameOf: (t: T) => string;
  /** What an entry is ("schedule"), in the buttons' accessible names and the confirmation. */
  what: string;
  empty?: string;
  view: (t: T) => ComponentChildren;
  /** Buttons before Edit and Delete. */
  actions?: (t: T) => ComponentChildren;
  /** The inline edit form; close() ends editing (after a save, or Cancel). */
  edit?: (t: T, close: () => void) => ComponentChildren;
  remove?: (t: T) => Promise<unknown>;
  /** The remove button's label ("Delete" by default; "Revoke" for a key). */
  removeLabel?: string;
  /** The question asked before remove (default: “Delete the {what} “{name}”?”). */
  confirmRemove?: (t: T) => string;
  /** Whether an entry offers Edit and the remove button (default: every entry); the others are only shown. */
  editable?: (t: T) => boolean;
  /** Set when an action of the page ran for this list (shown above it). */
  busy?: boolean;
  itemClass?: string;
};

export function EditList<T>(props: EditListProps<T>) {
  const [editing, setEditing] = useState<string | number | null>(null);
  const act = useAction();
  const list = useRef<HTMLUListElement>(null);
  const close = (k: string | number) => {
    setEditing(null);
    // Back to the Edit button of the entry just closed.
    window.setTimeout(() => list.current?.querySelector<HTMLButtonElement>(`[data-edit="${CSS.escape(String(k))}"]`)?.focus(), 0);
  };
  return (
    <>
      <ErrorNote error={act.error} />
      {props.items && props.items.length === 0 && <p class="muted">{props.empty ?? "None."}</p>}
      <ul class="plain" ref={list}>
        {(props.items ?? []).map((t) => {
          const k = props.keyOf(t);
          const name = props.nameOf(t);
          const own = props.editable?.(t) ?? true;
          const removeLabel = props.removeLabel ?? "Delete";
          if (editing === k && props.edit)
            return (
              <li key={k} class={`${props.itemClass ?? ""} editing`}>
                <EditSlot onEscape={() => close(k)}>{props.edit(t, () => close(k))}</EditSlot>
              </li>
            );
          return (
            <li key={k} class={props.itemClass}>
              <div class="wide">{props.view(t)}</div>
              <div class="button-row">
                {props.actions?.(t)}
                {own && props.edit && (
                  <button type="button" class="small" data-edit={String(k)} aria-label={`Edit ${props.what} ${name}`} disabled={act.pending || props.busy} onClick={() => setEditing(k)}>
                    Edit
                  </button>
                )}
                {own && props.remove && (
                  <button
                    type="button"
                    class="small danger"
                    aria-label={`${removeLabel} ${props.what} ${name}`}
                    disabled={act.pending || props.busy}
                    onClick={() => {
                      if (confirm(props.confirmRemove?.(t) ?? `Delete the ${props.what} “${name}”?`)) void act.run(() => props.remove!(t));
                    }}
                  >
                    {removeLabel}
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
    </>
  );
}

/** EditSlot focuses the first field of an inline form when it opens and closes it on Escape. */
function EditSlot(props: { children: ComponentChildren; onEscape: () => void }) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    ref.current?.querySelector<HTMLElement>("input, textarea, select")?.focus();
  }, []);
  return (
    <div
      class="wide"
      ref={ref}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          props.onEscape();
        }
      }}
    >
      {props.children}
    </div>
  );
}

/** The Cancel button of an inline edit form. */
export function CancelButton(props: { onClick: () => void }) {
  return (
    <button type="button" onClick={props.onClick}>
      Cancel
    </button>
  );
}
