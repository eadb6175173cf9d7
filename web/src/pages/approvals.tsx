// Approvals: the inbox of what the signed-in user may decide (GET /approvals: tool calls awaiting
// approval and unanswered question batches of every task whose agent names them an approver),
// with the context a decider needs, filters (agent, tool, age), paging, one decision per call or
// a batch (POST /approvals/decisions), and the count in the navigation. Both follow the push
// channel: a pushed notification (approvers are notified of each new pending call, and their
// notifications are marked read when anyone decides) reloads them; without push they reload
// every poll interval.
import { useEffect, useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api";
import { pushSettings } from "../live";
import { useRoute } from "../router";
import { ErrorNote, Field, Link, Notice, PageHeader, formatTime, useAction, useLoad } from "../ui";
import { loadAgents } from "./agents";
import { onNotificationsChanged } from "./notifications";

type Approval = Schemas["Approval"];
type Result = Schemas["ApprovalDecisionResult"];

const PER_PAGE = 25;
// The count in the navigation reads one page of this size: beyond it the link shows "99+".
const COUNT_PAGE = 100;

let waiting = 0;
const listeners = new Set<() => void>();

/** refreshApprovalCount reloads the number of items waiting for the caller's decision. */
export async function refreshApprovalCount(): Promise<void> {
  const r = await api.GET("/approvals", { params: { query: { per_page: COUNT_PAGE } } });
  if (r.data) {
    waiting = r.data.data.approvals.length;
    listeners.forEach((l) => l());
  }
}

/** useFollowed calls f on each pushed notification and, when push is down, every poll interval. */
function useFollowed(f: () => void): void {
  useEffect(() => {
    const off = onNotificationsChanged(f);
    let timer: number | undefined;
    let stopped = false;
    void pushSettings().then((p) => {
      if (stopped || (p.available && p.url && p.notifications)) return;
      timer = window.setInterval(() => document.visibilityState !== "hidden" && f(), p.poll * 1000);
    });
    return () => {
      stopped = true;
      off();
      window.clearInterval(timer);
    };
  }, [f]);
}

/** ApprovalsLink is the navigation's Approvals entry with the number waiting. */
export function ApprovalsLink(props: { current: boolean }) {
  const [n, setN] = useState(waiting);
  const { path } = useRoute();
  useEffect(() => void refreshApprovalCount(), [path]);
  useEffect(() => {
    const l = () => setN(waiting);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  useFollowed(refreshCount);
  const shown = n >= COUNT_PAGE ? "99+" : String(n);
  return (
    <Link to="/approvals" class="navlink approvals-link" aria-current={props.current ? "page" : undefined}>
      Approvals
      {n > 0 && (
        <span class="count">
          <span class="sr-only">, </span>
          {shown}
          <span class="sr-only"> waiting</span>
        </span>
      )}
    </Link>
  );
}

const refreshCount = () => void refreshApprovalCount();

const ages: { label: string; seconds: number }[] = [
  { label: "Any age", seconds: 0 },
  { label: "Waiting 5 minutes or more", seconds: 300 },
  { label: "Waiting an hour or more", seconds: 3600 },
  { label: "Waiting a day or more", seconds: 86400 },
];

const key = (a: Approval) => `${a.task_id}/${a.tool_call?.provider_call_id ?? "q/" + (a.question_batch?.tool_call_id ?? "")}`;

export function ApprovalsPage() {
  const agents = useLoad(loadAgents, []);
  const [agentId, setAgentId] = useState("");
  const [tool, setTool] = useState("");
  const [toolFilter, setToolFilter] = useState("");
  const [age, setAge] = useState(0);
  const [page, setPage] = useState(1);
  const list = useLoad(
    async () =>
      (
        await unwrap(
          api.GET("/approvals", {
            params: { query: { agent_id: agentId ? Number(agentId) : undefined, tool: toolFilter || undefined, older_than: age || undefined, page, per_page: PER_PAGE } },
          }),
        )
      ).data.approvals,
    [agentId, toolFilter, age, page],
  );
  useFollowed(list.reload);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [reason, setReason] = useState("");
  const [outcome, setOutcome] = useState<string | null>(null);
  const act = useAction();
  const items = list.data ?? [];
  const calls = items.filter((a) => a.tool_call);
  const chosen = calls.filter((a) => selected.has(key(a)));

  /** decide sends one batch and says what came of it; the list and the count reload. */
  const decide = (targets: Approval[], decision: "approve" | "reject", why: string) =>
    act.run(async () => {
      const decisions = targets.map((a) => ({ task_id: a.task_id, provider_call_id: a.tool_call!.provider_call_id, decision, reason: decision === "reject" ? why : undefined }));
      const r = await unwrap(api.POST("/approvals/decisions", { body: { decisions } }));
      const failed = r.data.results.filter((x: Result) => !x.ok);
      const done = r.data.results.length - failed.length;
      const verb = decision === "approve" ? "approved" : "rejected";
      setOutcome(
        `${done} call${done === 1 ? "" : "s"} ${verb}.` +
          (failed.length ? ` ${failed.length} could not be decided: ${failed.map((x: Result) => `chat #${x.task_id}: ${x.error?.error.message ?? "refused"}`).join("; ")}` : ""),
      );
      setSelected(new Set());
      await list.reload();
      await refreshApprovalCount();
    });

  const toggle = (a: Approval, on: boolean) =>
    setSelected((old) => {
      const next = new Set(old);
      if (on) next.add(key(a));
      else next.delete(key(a));
      return next;
    });

  return (
    <>
      <PageHeader title="Approvals">
        <button type="button" onClick={() => list.reload()} disabled={list.loading}>
          Refresh
        </button>
      </PageHeader>
      <p class="muted">Tool calls and questions waiting for you: the chats of agents that name you an approver (their owner, their group's managers or you by name).</p>
      <form
        class="toolbar filters"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setToolFilter(tool.trim());
        }}
      >
        <div class="field">
          <label for="approvals-agent">Agent</label>
          <select
            id="approvals-agent"
            value={agentId}
            onChange={(e) => {
              setPage(1);
              setAgentId((e.target as HTMLSelectElement).value);
            }}
          >
            <option value="">Any</option>
            {(agents.data ?? []).map((a) => (
              <option key={a.id} value={String(a.id)}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <Field label="Tool" value={tool} onValue={setTool} hint="As the model names it; Enter to apply." />
        <div class="field">
          <label for="approvals-age">Age</label>
          <select
            id="approvals-age"
            value={String(age)}
            onChange={(e) => {
              setPage(1);
              setAge(Number((e.target as HTMLSelectElement).value));
            }}
          >
            {ages.map((a) => (
              <option key={a.seconds} value={String(a.seconds)}>
                {a.label}
              </option>
            ))}
          </select>
        </div>
      </form>
      <ErrorNote error={list.error} />
      {outcome && <Notice>{outcome}</Notice>}
      {calls.length > 0 && (
        <form
          class="panel batch"
          aria-label="Decide the selected calls"
          onSubmit={(e) => {
            e.preventDefault();
            void decide(chosen, "reject", reason);
          }}
        >
          <div class="button-row">
            <button type="button" onClick={() => setSelected(chosen.length === calls.length ? new Set() : new Set(calls.map(key)))}>
              {chosen.length === calls.length ? "Select none" : "Select all calls"}
            </button>
            <button type="button" class="primary" disabled={act.pending || chosen.length === 0} onClick={() => void decide(chosen, "approve", "")}>
              Approve selected ({chosen.length})
            </button>
          </div>
          <div class="reject-row">
            <Field label="Reason for rejecting the selected calls" value={reason} onValue={setReason} required />
            <button class="danger" disabled={act.pending || chosen.length === 0}>
              Reject selected ({chosen.length})
            </button>
          </div>
        </form>
      )}
      <ErrorNote error={act.error} />
      {list.data && items.length === 0 && <p class="muted">{page > 1 ? "No more items." : "Nothing waits for your decision."}</p>}
      <ul class="approvals" aria-label="Waiting for a decision">
        {items.map((a) => (
          <ApprovalItem key={key(a)} a={a} selected={selected.has(key(a))} onSelect={(on) => toggle(a, on)} busy={act.pending} decide={decide} />
        ))}
      </ul>
      {(page > 1 || items.length === PER_PAGE) && (
        <div class="button-row pager">
          <button type="button" disabled={page === 1} onClick={() => setPage(page - 1)}>
            Previous page
          </button>
          <span class="muted">Page {page}</span>
          <button type="button" disabled={items.length < PER_PAGE} onClick={() => setPage(page + 1)}>
            Next page
          </button>
        </div>
      )}
    </>
  );
}

function ApprovalItem(props: { a: Approval; selected: boolean; onSelect: (on: boolean) => void; busy: boolean; decide: (t: Approval[], d: "approve" | "reject", why: string) => Promise<boolean> }) {
  const { a } = props;
  const [reason, setReason] = useState("");
  const c = a.tool_call;
  const title = a.task_title.length > 120 ? a.task_title.slice(0, 120) + "…" : a.task_title;
  return (
    <li class="panel approval">
      <header class="approval-head">
        {c && (
          <label class="select">
            <input type="checkbox" checked={props.selected} onChange={(e) => props.onSelect((e.target as HTMLInputElement).checked)} />
            <span class="sr-only">
              Select {c.name} of chat #{a.task_id}
            </span>
          </label>
        )}
        <div>
          <p>
            <strong>{a.agent_name}</strong> · <Link to={`/tasks/${a.task_id}`}>Chat #{a.task_id}</Link>: {title}
          </p>
          <p class="muted small">
            {c ? "Tool call" : "Questions"} since {formatTime(a.created_at)}
          </p>
        </div>
      </header>
      {a.last_message && (
        <blockquote class="last-message">
          <span class="muted small">The model's last message</span>
          <p class="pre">{a.last_message}</p>
        </blockquote>
      )}
      {c ? (
        <>
          <p>
            <strong class="mono">{c.name}</strong> <span class="muted">· {c.operation}</span>
            {c.description && <span class="muted"> — {c.description}</span>}
          </p>
          <pre class="code" aria-label={`Arguments of ${c.name}`}>
            {JSON.stringify(c.arguments, null, 2)}
          </pre>
          <form
            class="reject-row"
            onSubmit={(e) => {
              e.preventDefault();
              void props.decide([a], "reject", reason);
            }}
          >
            <button type="button" class="primary" disabled={props.busy} onClick={() => void props.decide([a], "approve", "")}>
              Approve
            </button>
            <Field label={`Reason for rejecting ${c.name} of chat #${a.task_id}`} value={reason} onValue={setReason} required />
            <button class="danger" disabled={props.busy}>
              Reject
            </button>
          </form>
        </>
      ) : (
        <>
          <ul>
            {(a.question_batch?.questions ?? []).map((q, i) => (
              <li key={i}>{q.question}</li>
            ))}
          </ul>
          <p>
            <Link to={`/tasks/${a.task_id}`}>Answer in the chat</Link>
          </p>
        </>
      )}
    </li>
  );
}
