// Live task updates: the task resource kept current beside its event stream (events.ts), by
// polling GET /tasks/{id} every poll_interval_seconds (5) while the stream is not open and the
// run has not ended, and the push channel's settings (the embedded hub at
// {prefix}/.well-known/mercure, same origin, authenticated by the session cookie, and the poll
// interval of /sse/status) for the pages that subscribe to it or poll.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, prefix, type Task } from "./api";
import { notice, onTicked } from "./worker";

type PushInfo = { available: boolean; url: string | null; topic: string | null; notifications: string | null; poll: number };
let pushInfo: Promise<PushInfo> | null = null;

function loadPush(): Promise<PushInfo> {
  pushInfo ??= (async () => {
    const [st, auth] = await Promise.all([api.GET("/sse/status"), api.GET("/sse/auth")]);
    const poll = Math.max(1, st.data?.data.poll_interval_seconds ?? 5);
    const a = auth.data?.data;
    if (!a?.available || a.hub !== "embedded" || !a.hub_url) return { available: false, url: null, topic: null, notifications: null, poll };
    // Same origin only (the Content-Security-Policy allows nothing else): the embedded hub is
    // served by this process at {prefix}/.well-known/mercure whatever app_url says.
    const topic = a.topics.find((t) => t.endsWith("/tasks")) ?? null;
    const notifications = a.topics.find((t) => t.endsWith("/notifications")) ?? null;
    return { available: topic !== null || notifications !== null, url: `${prefix}/.well-known/mercure`, topic, notifications, poll };
  })().catch(() => ({ available: false, url: null, topic: null, notifications: null, poll: 5 }));
  return pushInfo;
}

export function forgetPush(): void {
  pushInfo = null;
}

/** The push channel's settings (cached until logout): whether the embedded hub serves this user, and the poll interval. */
export function pushSettings(): Promise<PushInfo> {
  return loadPush();
}

/**
 * useLiveTask keeps the task resource current: the initial load, the tasks this browser ticks
 * (client-worker mode), and a poll every poll_interval_seconds (5) while follow.current is true
 * (the page sets it while the task's event stream is not open and the run has not ended; the
 * stream's status events call refresh() instead, and an ended run is read again only when the
 * page acts on the task).
 */
export function useLiveTask(id: string, follow: { readonly current: boolean }): { task: Task | undefined; error: string | null; poll: number; refresh: () => Promise<void>; set: (t: Task) => void } {
  const [task, setTask] = useState<Task>();
  const [error, setError] = useState<string | null>(null);
  const [poll, setPoll] = useState(5);
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
    let timer: number | undefined;
    const unTicked = onTicked((t) => {
      if (String(t.id) === id) put(t);
    });
    void refresh();
    void loadPush().then((p) => {
      if (stopped) return;
      setPoll(p.poll);
      timer = window.setInterval(() => {
        if (document.visibilityState !== "hidden" && follow.current) void refresh();
      }, p.poll * 1000);
    });
    return () => {
      stopped = true;
      unTicked();
      window.clearInterval(timer);
    };
  }, [id]);
  return { task, error, poll, refresh, set: put };
}
