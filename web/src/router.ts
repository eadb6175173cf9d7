// A small history router: paths are relative to the mount prefix ("/agents/3"); links and
// navigate() push states; the server answers index.html for every client path.
import { useEffect, useState } from "preact/hooks";
import { prefix } from "./api";

type Listener = () => void;
const listeners = new Set<Listener>();

export function currentPath(): string {
  const p = location.pathname.startsWith(prefix) ? location.pathname.slice(prefix.length) : location.pathname;
  return p === "" ? "/" : p;
}

export function href(path: string): string {
  return prefix + path;
}

export function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, "", href(path));
  else history.pushState(null, "", href(path));
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

window.addEventListener("popstate", () => listeners.forEach((l) => l()));

export function useRoute(): { path: string; query: URLSearchParams } {
  const [, force] = useState(0);
  useEffect(() => {
    const l = () => force((n) => n + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return { path: currentPath(), query: new URLSearchParams(location.search) };
}

/** match("/agents/:id", "/agents/3") → {id: "3"}; null when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split("/");
  const b = path.replace(/\/$/, "").split("/");
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(":")) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}
