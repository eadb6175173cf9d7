// Notifications: the bell of the top bar (unread count, refreshed on each navigation, when the
// push channel brings a notification, every poll_interval_seconds of /sse/status while it
// cannot, and after each change), the list (mark read, mark all read, delete, delete all) and
// the subscriptions (an agent, or every agent of a principal; kinds; also by email).
import { useEffect, useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api";
import { pushSettings } from "../live";
import { useRoute } from "../router";
import { useSession } from "../session";
import { Check, ErrorNote, Link, PageHeader, formatTime, useAction, useLoad } from "../ui";
import { loadAgents } from "./agents";
import { loadGroups } from "./groups";

let unread = 0;
const listeners = new Set<() => void>();
const changes = new Set<() => void>();

/** refreshUnread reloads the unread count shown by the bell. */
export async function refreshUnread(): Promise<void> {
  const r = await api.GET("/notifications", { params: { query: { unread: true, per_page: 1 } } });
  if (r.data) {
    unread = r.data.data.unread_count;
    listeners.forEach((l) => l());
  }
}

/**
 * followNotifications keeps the count (and an open notifications page) current: through the
 * push channel's user/{id}/notifications topic when the embedded hub serves this user (each
 * pushed notification reloads them), and by polling every poll_interval_seconds of /sse/status
 * (5 by default) while that stream is not open (no hub, connecting, or dropped: the browser
 * reconnects by itself). Returns the stop function.
 */
function followNotifications(): () => void {
  let stopped = false;
  let source: EventSource | null = null;
  let timer: number | undefined;
  const changed = () => {
    void refreshUnread();
    changes.forEach((c) => c());
  };
  void pushSettings().then((p) => {
    if (stopped) return;
    timer = window.setInterval(() => {
      if (document.visibilityState !== "hidden" && source?.readyState !== EventSource.OPEN) void refreshUnread();
    }, p.poll * 1000);
    if (!p.available || !p.url || !p.notifications) return;
    source = new EventSource(`${p.url}?topic=${encodeURIComponent(p.notifications)}`, { withCredentials: true });
    source.onopen = changed; // catch up with what arrived while it was closed
    source.onmessage = changed;
  });
  return () => {
    stopped = true;
    source?.close();
    window.clearInterval(timer);
  };
}

/** onNotificationsChanged calls f each time the push channel brings a notification (while the
 * bell follows them); returns the unsubscribe function. */
export function onNotificationsChanged(f: () => void): () => void {
  changes.add(f);
  return () => void changes.delete(f);
}

export function Bell() {
  const [n, setN] = useState(unread);
  const { path } = useRoute();
  useEffect(() => void refreshUnread(), [path]);
  useEffect(() => {
    const l = () => setN(unread);
    listeners.add(l);
    void refreshUnread();
    const stop = followNotifications();
    return () => {
      listeners.delete(l);
      stop();
    };
  }, []);
  return (
    <Link to="/notifications" class="navlink bell" aria-label={n ? `Notifications, ${n} unread` : "Notifications"}>
      <svg class="bell-icon" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
        <path fill="currentColor" d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1l-2-2Z" />
      </svg>
      {n > 0 && (
        <span class="count" aria-hidden="true">
          {n > 99 ? "99+" : n}
        </span>
      )}
    </Link>
  );
}

const kinds: Schemas["NotificationKind"][] = ["task_completed", "task_failed", "pending_approval", "awaiting_input", "scheduled_run_completed", "task_orphaned", "task_retry_queued"];
/** A kind in the console's words: the API's tasks are chats here. */
const kindLabel = (k: string) => k.replace(/^task_/, "chat_").replace(/_/g, " ");

export function NotificationsPage() {
  const list = useLoad(async () => (await unwrap(api.GET("/notifications", { params: { query: { per_page: 100 } } }))).data, []);
  useEffect(() => {
    const c = () => void list.reload();
    changes.add(c);
    return () => void changes.delete(c);
  }, [list.reload]);
  const act = useAction();
  const after = async () => {
    await list.reload();
    await refreshUnread();
  };
  const items = list.data?.notifications ?? [];
  return (
    <>
      <PageHeader title="Notifications">
        <button type="button" disabled={act.pending || !list.data?.unread_count} onClick={() => act.run(async () => (await unwrap(api.POST("/notifications/read-all")), await after()))}>
          Mark all read
        </button>
        <button
          type="button"
          class="danger"
          disabled={act.pending || items.length === 0}
          onClick={() => {
            if (confirm("Delete every notification?")) void act.run(async () => (await unwrap(api.DELETE("/notifications")), await after()));
          }}
        >
          Delete all
        </button>
      </PageHeader>
      <ErrorNote error={list.error} />
      <ErrorNote error={act.error} />
      <div class="split reverse">
        <section class="panel">
          <h2>
            Inbox {list.data ? <span class="chip">{list.data.unread_count} unread</span> : null}
          </h2>
          {list.data && items.length === 0 && <p class="muted">Nothing yet. You are notified when your chats finish, fail or wait for you.</p>}
          <ul class="plain notes">
            {items.map((n) => (
              <li key={n.id} class={n.read_at ? "note" : "note unread"}>
                <div class="wide">
                  <strong>{n.title}</strong> <span class="muted small">· {kindLabel(n.kind)} · {formatTime(n.created_at)}</span>
                  {n.body && <p class="small pre">{n.body}</p>}
                  {n.task_id ? <Link to={`/tasks/${n.task_id}`}>Open chat #{n.task_id}</Link> : null}
                </div>
                <div class="button-row">
                  {!n.read_at && (
                    <button type="button" class="small" aria-label={`Mark read: “${n.title}”`} disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.POST("/notifications/{id}/read", { params: { path: { id: n.id } } })), await after()))}>
                      Mark read
                    </button>
                  )}
                  <button type="button" class="small danger" aria-label={`Delete “${n.title}”`} disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.DELETE("/notifications/{id}", { params: { path: { id: n.id } } })), await after()))}>
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        </section>
        <Subscriptions />
      </div>
    </>
  );
}

function Subscriptions() {
  const { user } = useSession();
  const subs = useLoad(async () => (await unwrap(api.GET("/notifications/subscriptions"))).data.subscriptions, []);
  const targets = useLoad(async () => {
    const [agents, groups] = await Promise.all([loadAgents(), loadGroups()]);
    return { agents, groups };
  }, []);
  const [target, setTarget] = useState("");
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [email, setEmail] = useState(false);
  const act = useAction();
  const remove = useAction();
  const nameOf = (s: Schemas["NotificationSubscription"]) => {
    if (s.target_type === "agent") return `agent ${targets.data?.agents.find((a) => a.id === s.target_id)?.name ?? `#${s.target_id}`}`;
    if (s.target_id === user?.principal_id) return "all my agents";
    const g = targets.data?.groups.find((x) => x.principal_id === s.target_id);
    return g ? `every agent of the group ${g.name}` : `principal #${s.target_id}`;
  };
  return (
    <section class="panel">
      <h2>Subscriptions</h2>
      <p class="muted small">Your own chats notify you when they need you. Subscribe to follow every chat of an agent or of a group's agents, whoever starts them.</p>
      <ErrorNote error={subs.error} />
      <ErrorNote error={remove.error} />
      <ul class="plain">
        {(subs.data ?? []).map((s) => (
          <li key={s.id}>
            <span>
              {nameOf(s)}: {s.kinds.length ? s.kinds.map(kindLabel).join(", ") : "every kind"}
              {s.email ? ", also by email" : ""}
            </span>
            <button type="button" class="small danger" aria-label={`Unsubscribe from ${nameOf(s)}`} disabled={remove.pending} onClick={() => remove.run(async () => (await unwrap(api.DELETE("/notifications/subscriptions", { params: { query: { id: s.id } } })), await subs.reload()))}>
              Unsubscribe
            </button>
          </li>
        ))}
      </ul>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const [type, id] = target.split(":");
          void act.run(async () => {
            await unwrap(api.POST("/notifications/subscriptions", { body: { target_type: type as "agent" | "principal", target_id: Number(id), kinds: [...chosen] as Schemas["NotificationKind"][], email } }));
            await subs.reload();
          });
        }}
      >
        <div class="field">
          <label for="sub-target">Follow</label>
          <select id="sub-target" required value={target} onChange={(e) => setTarget((e.target as HTMLSelectElement).value)}>
            <option value="">Choose…</option>
            {user && <option value={`principal:${user.principal_id}`}>All my agents</option>}
            {(targets.data?.groups ?? []).map((g) => (
              <option key={`g${g.id}`} value={`principal:${g.principal_id}`}>
                Every agent of the group {g.name}
              </option>
            ))}
            {(targets.data?.agents ?? []).map((a) => (
              <option key={`a${a.id}`} value={`agent:${a.id}`}>
                Agent {a.name}
              </option>
            ))}
          </select>
        </div>
        <fieldset class="question">
          <legend>Kinds (none chosen: every kind)</legend>
          {kinds.map((k) => (
            <Check key={k} label={kindLabel(k)} checked={chosen.has(k)} onChange={(on) => setChosen((o) => (on ? new Set([...o, k]) : new Set([...o].filter((x) => x !== k))))} />
          ))}
        </fieldset>
        <Check label="Also send them by email" checked={email} onChange={setEmail} />
        <ErrorNote error={act.error} />
        <button class="primary" disabled={act.pending}>
          Subscribe
        </button>
      </form>
    </section>
  );
}
