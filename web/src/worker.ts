// Client-worker mode (worker_runtime_mode "client", document 2): no daemon runs tasks, the
// signed-in browser does. Every 5 s it discovers its QUEUED tasks
// (GET /tasks?status=QUEUED&since=…), every 2 s it ticks each task it drives
// (POST /tasks/{id}/tick, one model turn), and every 5 minutes it calls
// POST /worker/housekeeping. Ticked tasks are announced to the pages (the task page listens).
import { api, type Task } from "./api";

type Listener = (t: Task) => void;
const listeners = new Set<Listener>();
const driven = new Set<number>();
let timers: number[] = [];
let running = false;
let since: string | undefined;
let ticking = false;

export function onTicked(l: Listener): () => void {
  listeners.add(l);
  return () => {
    listeners.delete(l);
  };
}

/** notice drives a task the page saw queued or running (after an approval, for example). */
export function notice(t: Task): void {
  if (running && (t.status === "QUEUED" || t.status === "RUNNING")) driven.add(t.id);
}

export function clientWorkerRunning(): boolean {
  return running;
}

async function discover(): Promise<void> {
  const r = await api.GET("/tasks", { params: { query: { status: "QUEUED", since, per_page: 100 } } });
  if (!r.data) return;
  for (const t of r.data.data.tasks) {
    driven.add(t.id);
    if (!since || t.updated_at > since) since = t.updated_at;
  }
}

async function tickAll(): Promise<void> {
  if (ticking) return;
  ticking = true;
  try {
    for (const id of [...driven]) {
      const r = await api.POST("/tasks/{taskId}/tick", { params: { path: { taskId: String(id) } } });
      if (r.data) {
        const t = r.data.data.task;
        listeners.forEach((l) => l(t));
        if (t.status !== "QUEUED" && t.status !== "RUNNING") driven.delete(id);
      } else if (r.response.status === 404 || r.response.status === 409) {
        driven.delete(id); // gone, settled, paused or ticked by another tab
      } else if (r.response.status === 429) {
        break; // the per-user tick rate: wait for the next round
      }
    }
  } finally {
    ticking = false;
  }
}

async function housekeeping(): Promise<void> {
  await api.POST("/worker/housekeeping");
}

export function startClientWorker(): void {
  if (running) return;
  running = true;
  since = undefined;
  void discover().then(tickAll);
  void housekeeping();
  timers = [window.setInterval(() => void discover(), 5000), window.setInterval(() => void tickAll(), 2000), window.setInterval(() => void housekeeping(), 5 * 60 * 1000)];
}

export function stopClientWorker(): void {
  running = false;
  timers.forEach((t) => window.clearInterval(t));
  timers = [];
  driven.clear();
}
