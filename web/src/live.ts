// Live task updates: the push channel when this server's embedded hub serves it (an
// EventSource on {prefix}/.well-known/mercure, same origin, authenticated by the session
// cookie), and polling GET /tasks/{id} every poll_interval_seconds (5) in any case, so a lost
// event or an unavailable hub only delays an update.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, prefix, type Task } from "./api";
import { clientWorkerRunning, notice, onTicked } from "./worker";

type PushInfo = { available: boolean; url: string | null; topic: string | null; poll: number };
let pushInfo: Promise<PushInfo> | null = null;

function loadPush(): Promise<PushInfo> {
  pushInfo ??= (async () => {
    const [st, auth] = await Promise.all([api.GET("/sse/status"), api.GET("/sse/auth")]);
    const poll = st.data?.data.poll_interval_seconds ?? 5;
    const a = auth.data?.data;
    if (!a?.available || a.hub !== "embedded" || !a.hub_url) return { available: false, url: null, topic: null, poll };
    // Same origin only (the Content-Security-Policy allows nothing else): the embedded hub is
    // served by this process at {prefix}/.well-known/mercure whatever app_url says.
    const topic = a.topics.find((t) => t.endsWith("/tasks")) ?? null;
    return { available: topic !== null, url: `${prefix}/.well-known/mercure`, topic, poll };
  })().catch(() => ({ available: false, url: null, topic: null, poll: 5 }));
  return pushInfo;
}

export function forgetPush(): void {
  pushInfo = null;
}

/**
 * useLiveTask follows a task: initial load, push events for it, and a poll while it is not
 * settled. Returns the task, the load error and how it is followed.
 */
export function useLiveTask(id: string): { task: Task | undefined; error: string | null; mode: string; refresh: () => Promise<void>; set: (t: Task) => void } {
  const [task, setTask] = useState<Task>();
  const [error, setError] = useState<string | null>(null);
  const [mode, setMode] = useState("connecting");
  const latest = useRef<Task | undefined>(undefined);
  const put = (t: Task) => {
    if (latest.current && latest.current.id === t.id && latest.current.updated_at > t.updated_at) return; // an older snapshot
    latest.current = t;
    setTask(t);
    notice(t);
  };
  const refresh = async () => {
    const r = await api.GET("/tasks/{taskId}", { params: { path: { taskId: id } } });
    if (r.data) {
      put(r.data.data.task);
      setError(null);
    } else setError(r.error?.error?.message ?? `The server answered ${r.response.status}`);
  };
  useEffect(() => {
    latest.current = undefined;
    setTask(undefined);
    let stopped = false;
    let es: EventSource | null = null;
    let timer: number | undefined;
    const unTicked = onTicked((t) => {
      if (String(t.id) === id) put(t);
    });
    void refresh();
    void loadPush().then((p) => {
      if (stopped) return;
      if (clientWorkerRunning()) setMode(`ticked by this browser (client-worker mode), and polling every ${p.poll} s`);
      else if (p.available && p.url && p.topic) {
        es = new EventSource(`${p.url}?topic=${encodeURIComponent(p.topic)}`, { withCredentials: true });
        es.onopen = () => setMode(`push, and polling every ${p.poll} s`);
        es.onerror = () => setMode(`polling every ${p.poll} s (push reconnecting)`);
        es.onmessage = (ev: MessageEvent<string>) => {
          try {
            const t = JSON.parse(ev.data) as Task;
            if (String(t.id) === id) put(t);
          } catch {
            /* not a task event */
          }
        };
      } else setMode(`polling every ${p.poll} s`);
      timer = window.setInterval(() => {
        if (document.visibilityState !== "hidden") void refresh();
      }, p.poll * 1000);
    });
    return () => {
      stopped = true;
      unTicked();
      es?.close();
      window.clearInterval(timer);
    };
  }, [id]);
  return { task, error, mode, refresh, set: put };
}
