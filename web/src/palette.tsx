// The palette (Ctrl+K or ⌘K, or the Search button): jump to a page or an agent, and the hits of
// the server's search providers (GET /search, grouped by type; the core ships none, plugins do).
// Arrow keys move, Enter opens, Escape closes.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, unwrap, type Agent, type Schemas } from "./api";
import { href, navigate } from "./router";
import { useSession } from "./session";
import { loadAgents } from "./pages/agents";

type Item = { group: string; title: string; subtitle?: string; url: string };

const pages = (admin: boolean): Item[] =>
  [
    ["Agents", "/agents"],
    ["New agent", "/agents/new"],
    ["Import an agent template", "/agents/import"],
    ["Chats", "/tasks"],
    ["Groups", "/groups"],
    ["Media", "/media"],
    ["Plugins", "/plugins"],
    ["Notifications", "/notifications"],
    ["Account", "/account"],
    ...(admin
      ? [
          ["Users", "/users"],
          ["Server settings", "/settings"],
        ]
      : []),
  ].map(([title, url]) => ({ group: "Pages", title, url }));

function go(url: string): void {
  if (/^https?:\/\//.test(url)) {
    location.href = url;
    return;
  }
  // Hits name paths relative to app_url; the console's own paths are below {prefix}.
  const p = url.startsWith(href("/")) ? url.slice(href("").length) : url.startsWith("/") ? url : `/${url}`;
  navigate(p);
}

export function Palette() {
  const { user } = useSession();
  const dlg = useRef<HTMLDialogElement>(null);
  const input = useRef<HTMLInputElement>(null);
  const [q, setQ] = useState("");
  const [agents, setAgents] = useState<Agent[]>([]);
  const [hits, setHits] = useState<Schemas["SearchHit"][]>([]);
  const [error, setError] = useState<string | null>(null);
  const [active, setActive] = useState(0);
  const open = () => {
    setQ("");
    setHits([]);
    setError(null);
    setActive(0);
    dlg.current?.showModal();
    input.current?.focus();
    loadAgents().then(setAgents, () => setAgents([]));
  };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") {
        e.preventDefault();
        if (dlg.current?.open) dlg.current.close();
        else open();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  useEffect(() => {
    const text = q.trim();
    if (!text) {
      setHits([]);
      return;
    }
    const t = window.setTimeout(() => {
      unwrap(api.GET("/search", { params: { query: { q: text, limit: 20 } } })).then(
        (r) => {
          setHits(r.data.hits);
          setError(null);
        },
        (err: Error) => setError(err.message),
      );
    }, 150);
    return () => window.clearTimeout(t);
  }, [q]);
  const needle = q.trim().toLowerCase();
  const local = [...pages(user?.is_admin ?? false), ...agents.map((a) => ({ group: "Agents", title: a.name, subtitle: a.description || undefined, url: `/agents/${a.id}` }))].filter((i) => !needle || i.title.toLowerCase().includes(needle));
  const items: Item[] = [...local.slice(0, needle ? 12 : 8), ...hits.map((h) => ({ group: h.type, title: h.title, subtitle: h.subtitle ?? undefined, url: h.url }))];
  const pick = (i: Item | undefined) => {
    if (!i) return;
    dlg.current?.close();
    go(i.url);
  };
  let last = "";
  return (
    <>
      <button type="button" class="ghost palette-open" onClick={open} aria-keyshortcuts="Control+K" title="Search (Ctrl+K)">
        Search <kbd>Ctrl K</kbd>
      </button>
      <dialog ref={dlg} class="palette" aria-label="Search">
        <input
          ref={input}
          type="text"
          aria-label="Search pages, agents and more"
          placeholder="Search pages, agents and more…"
          value={q}
          role="combobox"
          aria-expanded="true"
          aria-controls="palette-list"
          aria-activedescendant={items[active] ? `pal-${active}` : undefined}
          onInput={(e) => {
            setQ((e.target as HTMLInputElement).value);
            setActive(0);
          }}
          onKeyDown={(e) => {
            if (e.key === "ArrowDown") (e.preventDefault(), setActive((a) => Math.min(a + 1, items.length - 1)));
            else if (e.key === "ArrowUp") (e.preventDefault(), setActive((a) => Math.max(a - 1, 0)));
            else if (e.key === "Enter") (e.preventDefault(), pick(items[active]));
          }}
        />
        {error && (
          <p class="error small" role="alert">
            {error}
          </p>
        )}
        <ul id="palette-list" role="listbox" aria-label="Results">
          {items.map((i, n) => {
            const head = i.group !== last ? ((last = i.group), i.group) : null;
            return (
              <li key={`${i.group}-${i.url}-${n}`} id={`pal-${n}`} role="option" aria-selected={n === active} class={n === active ? "active" : ""} onMouseEnter={() => setActive(n)} onClick={() => pick(i)}>
                {head && <span class="pal-group">{head}</span>}
                <span class="pal-title">{i.title}</span>
                {i.subtitle && <span class="pal-sub">{i.subtitle}</span>}
              </li>
            );
          })}
          {items.length === 0 && <li class="muted">Nothing matches “{q}”.</li>}
        </ul>
      </dialog>
    </>
  );
}
