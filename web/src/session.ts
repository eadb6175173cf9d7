// The signed-in user, shared by the pages. Loaded from /auth/me (which also gives the CSRF
// token) at start and after login; cleared on logout or when the API answers 401.
import { useEffect, useState } from "preact/hooks";
import { api, setCsrf, type Schemas, type User } from "./api";

type State = { user: User | null | undefined; config: Schemas["PublicConfig"] | null };
let state: State = { user: undefined, config: null };
const listeners = new Set<() => void>();

function set(next: Partial<State>): void {
  state = { ...state, ...next };
  listeners.forEach((l) => l());
}

export function useSession(): State {
  const [, force] = useState(0);
  useEffect(() => {
    const l = () => force((n) => n + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return state;
}

export async function loadSession(): Promise<void> {
  const [me, cfg] = await Promise.all([api.GET("/auth/me"), api.GET("/config")]);
  if (cfg.data) set({ config: cfg.data.data.config });
  if (me.data) {
    setCsrf(me.data.data.csrf_token);
    set({ user: me.data.data.user });
  } else {
    setCsrf("");
    set({ user: null });
  }
}

export function signedIn(user: User, csrf: string): void {
  setCsrf(csrf);
  set({ user });
}

export function signedOut(): void {
  setCsrf("");
  set({ user: null });
}

export function updateUser(user: User): void {
  set({ user });
}

/** reloadConfig reads the public flags of /config again (after an administrator changed them). */
export async function reloadConfig(): Promise<void> {
  const cfg = await api.GET("/config");
  if (cfg.data) set({ config: cfg.data.data.config });
}
