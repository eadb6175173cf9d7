// Chats: the list of the caller's tasks, and one task watched live: the transcript from its event
// stream (turns, tool calls with their decision and result, questions and answers, token usage,
// the model output streaming in), the pending tool calls (approve with editable arguments,
// reject with a reason), question batches, and the actions the state allows (continue, retry,
// abort, cancel the retry chain); sub-agent tasks link to their parent and back.
import { TaskCost } from "./usage";
import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, unwrap, type Schemas, type Task } from "../api";
import { endsRun, runEnded, useTaskEvents, type Entry } from "../events";
import { useLiveTask } from "../live";
import { useSession } from "../session";
import { navigate } from "../router";
import { ErrorNote, Field, Link, PageHeader, StatusBadge, TextArea, formatTime, useAction, useId, useLoad } from "../ui";
import { loadTasks, TaskTable } from "./agent";
import { loadAgents } from "./agents";

const terminal = new Set(["COMPLETED", "FAILED", "ABORTED", "CANCELLED"]);
const paused = new Set(["PENDING_APPROVAL", "AWAITING_INPUT"]);

export function TaskList() {
  const [agentId, setAgentId] = useState("");
  const agents = useLoad(loadAgents, []);
  const data = useLoad(async () => ({ tasks: await loadTasks(300, agentId ? Number(agentId) : undefined) }), [agentId]);
  const names = new Map((agents.data ?? []).map((a) => [a.id, a.name]));
  const [status, setStatus] = useState("");
  const tasks = (data.data?.tasks ?? []).filter((t) => !status || t.status === status);
  return (
    <>
      <PageHeader title="Chats">
        <button type="button" onClick={() => data.reload()} disabled={data.loading}>
          Refresh
        </button>
      </PageHeader>
      <div class="toolbar filters">
        <div class="field">
          <label for="agent-filter">Agent</label>
          <select id="agent-filter" value={agentId} onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {(agents.data ?? []).map((a) => (
              <option key={a.id} value={String(a.id)}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="status-filter">Status</label>
          <select id="status-filter" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {["QUEUED", "RUNNING", "PENDING_APPROVAL", "AWAITING_INPUT", "AWAITING_SUB_AGENTS", "COMPLETED", "FAILED", "ABORTED", "CANCELLED"].map((s) => (
              <option value={s} key={s}>
                {s.replace(/_/g, " ").toLowerCase()}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ErrorNote error={data.error} />
      {data.data && tasks.length === 0 && <p class="muted">No chats{status ? " in this state" : ""}. Start one from an agent's page.</p>}
      <section class="panel flush">
        <TaskTable tasks={tasks} agents={names} />
      </section>
    </>
  );
}

function Json(props: { value: unknown }) {
  return <pre class="code">{JSON.stringify(props.value, null, 2)}</pre>;
}

function ApprovalCard(props: { task: Task; onDone: (t: Task) => void }) {
  const calls = props.task.pending?.tool_calls ?? [];
  const [args, setArgs] = useState<Record<string, string>>(() => Object.fromEntries(calls.map((c) => [c.provider_call_id, JSON.stringify(c.arguments, null, 2)])));
  const [argErr, setArgErr] = useState<string | null>(null);
  const [reason, setReason] = useState("");
  const approve = useAction();
  const reject = useAction();
  const taskId = String(props.task.id);
  const doApprove = (allowForTask: boolean) => {
    const decisions: Schemas["TaskToolCallDecision"][] = [];
    for (const c of calls) {
      const text = args[c.provider_call_id] ?? "{}";
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        setArgErr(`The arguments of ${c.name} are not valid JSON: ${(err as Error).message}`);
        return;
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        setArgErr(`The arguments of ${c.name} must be a JSON object.`);
        return;
      }
      const changed = JSON.stringify(parsed) !== JSON.stringify(c.arguments);
      decisions.push({ provider_call_id: c.provider_call_id, decision: "approve", arguments: changed ? (parsed as Record<string, unknown>) : undefined, allow_for_task: allowForTask || undefined });
    }
    setArgErr(null);
    void approve.run(async () => {
      const r = await unwrap(api.POST("/tasks/{taskId}/approve", { params: { path: { taskId } }, body: { decisions } }));
      props.onDone(r.data.task);
    });
  };
  return (
    <section class="panel attention" aria-labelledby="approval-h">
      <h2 id="approval-h">Approval needed</h2>
      <p class="muted">The agent wants to run {calls.length === 1 ? "this call" : "these calls"}. Edit the arguments if needed, then approve, or reject with a reason.</p>
      {calls.map((c) => (
        <div class="call" key={c.provider_call_id}>
          <p>
            <strong class="mono">{c.name}</strong> <span class="muted">· {c.operation}</span>
            {c.description && <span class="muted"> — {c.description}</span>}
          </p>
          <TextArea label={`Arguments of ${c.name} (JSON)`} mono rows={Math.min(10, (args[c.provider_call_id] ?? "").split("\n").length + 1)} value={args[c.provider_call_id] ?? ""} onValue={(v) => setArgs((old) => ({ ...old, [c.provider_call_id]: v }))} />
        </div>
      ))}
      <ErrorNote error={argErr ?? approve.error} />
      <div class="button-row">
        <button type="button" class="primary" disabled={approve.pending || reject.pending} onClick={() => doApprove(false)}>
          {approve.pending ? "Approving…" : "Approve"}
        </button>
        <button
          type="button"
          disabled={approve.pending || reject.pending}
          onClick={() => doApprove(true)}
          title="Also run later calls of the same operation in this task, its follow-ups included, without asking (a policy rule that asks or denies still applies)"
        >
          Approve for the rest of this task
        </button>
      </div>
      <form
        class="reject-row"
        onSubmit={(e) => {
          e.preventDefault();
          void reject.run(async () => {
            const r = await unwrap(api.POST("/tasks/{taskId}/reject", { params: { path: { taskId } }, body: { reason } }));
            props.onDone(r.data.task);
          });
        }}
      >
        <Field label="Reason for rejecting" value={reason} onValue={setReason} required />
        <button class="danger" disabled={approve.pending || reject.pending}>
          Reject
        </button>
      </form>
      <ErrorNote error={reject.error} />
    </section>
  );
}

function QuestionBatch(props: { task: Task; batch: Schemas["TaskQuestionBatch"]; onDone: (t: Task) => void }) {
  const b = props.batch;
  const [sel, setSel] = useState<Record<string, string[]>>({});
  const [free, setFree] = useState<Record<string, string>>({});
  const act = useAction();
  const base = useId("q");
  return (
    <form
      class="panel attention"
      aria-labelledby={`${base}-h`}
      onSubmit={(e) => {
        e.preventDefault();
        const answers = b.questions.map((q) => ({ header: q.header, selections: sel[q.header] ?? [], free_text: free[q.header] || undefined }));
        void act.run(async () =>
          props.onDone((await unwrap(api.POST("/tasks/{taskId}/answer", { params: { path: { taskId: String(props.task.id) } }, body: { tool_call_id: b.tool_call_id, answers } }))).data.task),
        );
      }}
    >
      <h2 id={`${base}-h`}>The agent asks</h2>
      {b.questions.map((q, i) => (
        <fieldset key={q.header} class="question">
          <legend>
            <span class="chip">{q.header}</span> {q.question}
          </legend>
          {q.options.map((o, j) => {
            const id = `${base}-${i}-${j}`;
            const chosen = (sel[q.header] ?? []).includes(o);
            return (
              <div class="check" key={o}>
                <input
                  id={id}
                  type={q.multiple ? "checkbox" : "radio"}
                  name={`${base}-${i}`}
                  checked={chosen}
                  onChange={(e) => {
                    const on = (e.target as HTMLInputElement).checked;
                    setSel((old) => {
                      const cur = old[q.header] ?? [];
                      const next = q.multiple ? (on ? [...cur, o] : cur.filter((x) => x !== o)) : [o];
                      return { ...old, [q.header]: next };
                    });
                  }}
                />
                <label for={id}>{o}</label>
              </div>
            );
          })}
          {q.allowFreeText && <Field label="Your own answer" value={free[q.header] ?? ""} onValue={(v) => setFree((old) => ({ ...old, [q.header]: v }))} />}
        </fieldset>
      ))}
      <ErrorNote error={act.error} />
      <button class="primary" disabled={act.pending}>
        {act.pending ? "Sending…" : "Send answers"}
      </button>
    </form>
  );
}

/** FollowUp: the composer of a follow-up message, under the transcript (shown while the run
 * has ended in a state a continue accepts). */
function FollowUp(props: { task: Task; allowFollowup: boolean; onDone: (t: Task) => void }) {
  const t = props.task;
  const act = useAction();
  const [prompt, setPrompt] = useState("");
  const [extra, setExtra] = useState("");
  if (!(t.status === "COMPLETED" || (t.status === "ABORTED" && t.data?.max_steps_reached === true))) return null;
  return (
    <form
      class="panel composer"
      aria-label="Follow-up"
      onSubmit={(e) => {
        e.preventDefault();
        void act.run(async () => {
          const r = await unwrap(api.POST("/tasks/{taskId}/continue", { params: { path: { taskId: String(t.id) } }, body: { prompt, additional_steps: extra ? Number(extra) : undefined } }));
          props.onDone(r.data.task);
          setPrompt("");
        });
      }}
    >
      <TextArea label="Follow-up message" rows={3} required value={prompt} onValue={setPrompt} hint={props.allowFollowup ? undefined : "This agent does not allow follow-ups; the server will refuse."} />
      <div class="composer-row">
        <Field label="Additional steps (optional)" type="number" min={1} max={100} value={extra} onValue={setExtra} />
        <button class="primary" disabled={act.pending}>
          {act.pending ? "Sending…" : "Continue"}
        </button>
      </div>
      <ErrorNote error={act.error} />
    </form>
  );
}

function Controls(props: { task: Task; onDone: (t: Task) => void }) {
  const t = props.task;
  const taskId = String(t.id);
  const act = useAction();
  const p = { params: { path: { taskId } } };
  const done = (r: { data: { task: Task } }) => props.onDone(r.data.task);
  return (
    <section class="panel" aria-labelledby="controls-h">
      <h2 id="controls-h">Actions</h2>
      <div class="button-row">
        {(t.status === "FAILED" || t.status === "ABORTED" || t.status === "CANCELLED") && (
          <button type="button" disabled={act.pending} onClick={() => act.run(async () => done(await unwrap(api.POST("/tasks/{taskId}/retry", p))))}>
            Retry
          </button>
        )}
        {!terminal.has(t.status) && !paused.has(t.status) && (
          <button type="button" class="danger" disabled={act.pending} onClick={() => act.run(async () => done(await unwrap(api.POST("/tasks/{taskId}/abort", p))))}>
            Abort
          </button>
        )}
        {t.next_retry_at && (
          <button type="button" disabled={act.pending} onClick={() => act.run(async () => done(await unwrap(api.DELETE("/tasks/{taskId}/retry-chain", p))))}>
            Cancel the retry chain
          </button>
        )}
        {t.status !== "RUNNING" && (
          <button
            type="button"
            class="danger ghost"
            disabled={act.pending}
            onClick={() => {
              if (!confirm(`Delete chat #${t.id} with its messages?`)) return;
              void act.run(async () => {
                await unwrap(api.DELETE("/tasks/{taskId}", p));
                navigate(`/agents/${t.agent_id}`);
              });
            }}
          >
            Delete
          </button>
        )}
      </div>
      <ErrorNote error={act.error} />
    </section>
  );
}

const fmtUsage = (u: Schemas["TaskUsage"]) => `${u.input_tokens} in · ${u.output_tokens} out`;

/** Who decided a call: "auto", "user:<id>" or "key:<id>". */
function decider(by: string | null, me: number | undefined): string {
  if (!by) return "";
  if (by === "auto") return "automatically (pre-approved)";
  if (by === "task") return "automatically (allowed for the rest of this task)";
  if (by === "policy") return "by the approval policy";
  if (by === "refused") return "before approval (the call could not be resolved)";
  const [kind, id] = by.split(":");
  if (kind === "user") return Number(id) === me ? "by you" : `by user #${id}`;
  if (kind === "key") return `by API key ${id}`;
  return `by ${by}`;
}

/** A tool result: its "content" text when it is the usual {content, data} JSON, the whole text otherwise. */
function Result(props: { text: string }) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(props.text);
  } catch {
    return <pre class="code result">{props.text}</pre>;
  }
  const content = (parsed as { content?: unknown } | null)?.content;
  if (typeof content !== "string") return <Json value={parsed} />;
  return (
    <>
      <pre class="code result">{content}</pre>
      <details class="small">
        <summary>Full result</summary>
        <Json value={parsed} />
      </details>
    </>
  );
}

const callTone: Record<string, string> = { PENDING: "neutral", PENDING_APPROVAL: "warn", APPROVED: "info", REJECTED: "bad", EXECUTED: "ok", FAILED: "bad" };

function CallEntry(props: { call: Schemas["TranscriptToolCall"]; me?: number }) {
  const c = props.call;
  const edited = c.approved_arguments && JSON.stringify(c.approved_arguments) !== JSON.stringify(c.arguments);
  const rule = c.policy_rule ? ` (rule ${c.policy_rule})` : "";
  const decided =
    c.decided_by === "refused"
      ? "Refused before approval"
      : c.status === "REJECTED"
        ? `${c.decided_by === "policy" ? "Denied" : "Rejected"} ${decider(c.decided_by, props.me)}${c.decided_by === "policy" ? rule : ""}`
        : c.decided_by && c.status !== "PENDING_APPROVAL"
          ? `${c.decided_by === "policy" ? "Allowed" : "Approved"} ${decider(c.decided_by, props.me)}${c.decided_by === "policy" ? rule : c.policy_rule ? ` (asked by policy rule ${c.policy_rule})` : ""}${edited ? " with edited arguments" : ""}${c.allow_for_task ? ", and allowed for the rest of this task" : ""}`
          : c.status === "PENDING_APPROVAL" && c.policy_rule
            ? `Asked by the approval policy${rule}`
            : "";
  return (
    <article class="msg tool" data-call={c.provider_call_id}>
      <h2 class="msg-who spread-line">
        <span>
          Tool call <span class="mono">{c.name}</span> · {c.operation}
        </span>
        <span class={`badge tone-${callTone[c.status] ?? "neutral"}`}>{c.status.replace(/_/g, " ").toLowerCase()}</span>
      </h2>
      {edited ? (
        <div class="args-pair">
          <div>
            <p class="small muted">Asked for</p>
            <Json value={c.arguments} />
          </div>
          <div>
            <p class="small muted">Approved</p>
            <Json value={c.approved_arguments} />
          </div>
        </div>
      ) : (
        <Json value={c.arguments} />
      )}
      {decided && (
        <p class="muted small">
          {decided}
          {c.decided_at ? ` · ${formatTime(c.decided_at)}` : ""}
          {c.reason ? `: ${c.reason}` : ""}
        </p>
      )}
      {c.result ? (
        <div class="call-result">
          <p class="small muted">
            Result{c.executed_at ? ` · ${formatTime(c.executed_at)}` : ""}
            {c.restarts > 0 ? ` · run again after ${c.restarts === 1 ? "a worker restart" : `${c.restarts} worker restarts`} (repeatable)` : ""}
          </p>
          <Result text={c.result} />
          {c.sent_chars != null && (
            <p class="small muted" data-testid="sent-chars">
              Sent to the model cut to its first {c.sent_chars.toLocaleString()} characters (over the tool result budget); the whole result is kept here.
            </p>
          )}
        </div>
      ) : null}
    </article>
  );
}

function BatchEntry(props: { batch: Schemas["TaskEventQuestionBatch"] }) {
  const b = props.batch;
  const answers = new Map((b.answers ?? []).map((a) => [a.header, a]));
  return (
    <article class="msg tool">
      <h2 class="msg-who">{b.answers ? "Questions answered" : "Questions asked"}</h2>
      <dl class="qa">
        {b.questions.map((q) => {
          const a = answers.get(q.header);
          const text = a ? [...a.selections, ...(a.free_text ? [`“${a.free_text}”`] : [])].join(", ") || "(no answer)" : "";
          return (
            <Fragment key={q.header}>
              <dt>
                <span class="chip">{q.header}</span> {q.question}
              </dt>
              <dd>{a ? text : <span class="muted">waiting for an answer</span>}</dd>
            </Fragment>
          );
        })}
      </dl>
    </article>
  );
}

const statusLine: Record<string, string> = {
  PENDING_APPROVAL: "Paused: a tool call needs approval",
  AWAITING_INPUT: "Paused: the agent asked questions",
  AWAITING_SUB_AGENTS: "Waiting for sub-agent chats",
  COMPLETED: "Completed",
  ABORTED: "Aborted",
  CANCELLED: "Cancelled",
  FAILED: "Failed",
};

/** SummaryEntry: a compaction, a divider that opens on the summary the model was sent in place of the earlier turns. */
function SummaryEntry(props: { e: Entry & { kind: "summary" } }) {
  const s = props.e.summary;
  return (
    <details class="summary-divider" data-testid="summary-divider">
      <summary>
        Earlier conversation summarised for the model (messages {s.from_sequence}–{s.through_sequence}) · {s.model} · {fmtUsage(s.usage)}
      </summary>
      <p class="pre small">{s.text}</p>
      <p class="muted small">The transcript keeps every message; from here on the model is sent this summary instead of them.</p>
    </details>
  );
}

function StatusEntry(props: { e: Entry & { kind: "status" } }) {
  const s = props.e.status;
  return (
    <p class={`status-line ${s.status === "FAILED" ? "bad" : ""}`}>
      <span>{statusLine[s.status] ?? s.status}</span>
      {s.error && (
        <span>
          : {s.error.code} — {s.error.message}
        </span>
      )}
      {s.next_retry_at && <span> · automatic retry at {formatTime(s.next_retry_at)}</span>}
      <span class="muted">
        {" "}
        · {formatTime(props.e.at)} · step {s.steps_used}
        {props.e.usage ? ` · ${fmtUsage(props.e.usage)} (a turn without a message)` : ""}
      </span>
    </p>
  );
}

function MessageEntry(props: { e: Entry & { kind: "message" }; agentName: string }) {
  const m = props.e.message;
  if (m.role === "tool") return null; // results are shown with their calls
  const calls = m.provider_call_ids.length;
  if (m.role === "assistant" && !m.text && !m.reasoning && !m.usage) return null;
  return (
    <article class={`msg ${m.role}`}>
      <h2 class="msg-who">{m.role === "user" ? "You" : props.agentName}</h2>
      {m.reasoning && (
        <details class="reasoning">
          <summary>Reasoning</summary>
          <p class="pre small">{m.reasoning}</p>
        </details>
      )}
      {m.text ? <p class="pre">{m.text}</p> : m.role === "assistant" && <p class="muted small">Asked for {calls === 1 ? "a tool call" : `${calls} tool calls`}.</p>}
      {m.attachments && m.attachments.length > 0 && <p class="muted small">{m.attachments.length} attachment(s)</p>}
      {m.usage && (m.usage.input_tokens > 0 || m.usage.output_tokens > 0) && (
        <p class="usage muted small">
          <span class="sr-only">Tokens of this turn: </span>
          {fmtUsage(m.usage)}
        </p>
      )}
    </article>
  );
}

function Streaming(props: { text: string; reasoning: string; agentName: string }) {
  return (
    <article class="msg assistant streaming" aria-busy="true" data-testid="streaming">
      <h2 class="msg-who">
        {props.agentName} <span class="muted">· writing…</span>
      </h2>
      {props.reasoning && (
        <details class="reasoning" open={!props.text}>
          <summary>Reasoning</summary>
          <p class="pre small">{props.reasoning}</p>
        </details>
      )}
      <p class="pre">
        {props.text}
        <span class="caret" aria-hidden="true" />
      </p>
    </article>
  );
}

/** The sub-agent tasks started by this task (listed from its owner's tasks since it began). */
function SubTasks(props: { task: Task }) {
  const t = props.task;
  const act = useAction();
  const kids = useLoad(async () => {
    const r = await unwrap(api.GET("/tasks", { params: { query: { since: new Date(Date.parse(t.created_at) - 1000).toISOString(), per_page: 100 } } }));
    return r.data.tasks.filter((x) => x.parent_task_id === t.id);
  }, [t.id, t.status]);
  if (!kids.data || kids.data.length === 0) return null;
  return (
    <section class="panel" aria-labelledby="subtasks-h">
      <h2 id="subtasks-h">Sub-agent chats</h2>
      <ul class="plain">
        {kids.data.map((k) => (
          <li key={k.id}>
            <Link to={`/tasks/${k.id}`}>#{k.id}</Link> <StatusBadge status={k.status} />
            {!terminal.has(k.status) && (
              <button type="button" class="danger small" disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.POST("/tasks/{taskId}/abort-sub-agent", { params: { path: { taskId: String(k.id) } } })), await kids.reload()))}>
                Abort
              </button>
            )}
          </li>
        ))}
      </ul>
      <ErrorNote error={act.error} />
    </section>
  );
}

export function TaskPage(props: { id: string }) {
  const { user } = useSession();
  const refreshRef = useRef<() => void>(() => {});
  // Set below once the task resource is known: whether its run has ended (no more polling, no
  // more tries of a refused stream), and whether to poll it (the stream is not open, the run goes on).
  const settledRef = useRef(false);
  const follow = useRef(true);
  const stream = useTaskEvents(props.id, () => refreshRef.current(), settledRef);
  const live = useLiveTask(props.id, follow);
  refreshRef.current = () => void live.refresh();
  const t = live.task;
  const agent = useLoad(async () => (t ? (await unwrap(api.GET("/agents/{id}", { params: { path: { id: String(t.agent_id) } } }))).data.agent : undefined), [t?.agent_id]);
  const settled = t !== undefined && runEnded(t, stream.transcript.status, agent.data);
  settledRef.current = settled;
  follow.current = stream.state !== "open" && stream.state !== "ended" && !settled;
  // A continued or retried task starts a new run: follow it on a new stream.
  useEffect(() => {
    if (t && !endsRun(t)) stream.reopen();
  }, [t?.status, t?.updated_at]);
  const tr = stream.transcript;
  const lastStatus = tr.entries.reduce((n, e) => (e.kind === "status" ? e.seq : n), -1);
  const name = agent.data?.name ?? "Agent";
  const mode =
    stream.state === "open"
      ? "live (event stream)"
      : stream.state === "ended" || settled
        ? "settled"
        : stream.state === "connecting"
          ? "connecting…"
          : `polling every ${live.poll} s (event stream reconnecting)`;
  const usage = tr.status && t && tr.status.usage.input_tokens > t.usage.input_tokens ? tr.status.usage : t?.usage;
  return (
    <>
      <PageHeader title={t ? `Chat #${t.id}` : "Chat"} back={t ? { to: `/agents/${t.agent_id}`, label: agent.data?.name ?? "Agent" } : { to: "/tasks", label: "Chats" }}>
        {t && <StatusBadge status={t.status} />}
      </PageHeader>
      <ErrorNote error={live.error} />
      {t?.parent_task_id && (
        <p class="notice-info">
          A sub-agent chat of <Link to={`/tasks/${t.parent_task_id}`}>chat #{t.parent_task_id}</Link>.
        </p>
      )}
      {t && (
        <div class="task-layout">
          <div class="task-main">
            <div class="conversation" aria-live="polite" aria-label="Transcript" role="log">
              {tr.entries.length === 0 && (
                <article class="msg user">
                  <h2 class="msg-who">You</h2>
                  <p class="pre">{t.prompt}</p>
                </article>
              )}
              {tr.entries.map((e) => {
                if (e.kind === "message") return <MessageEntry key={e.seq} e={e} agentName={name} />;
                if (e.kind === "call") return stream.folder.hasBatch(e.call.provider_call_id) ? null : <CallEntry key={e.seq} call={e.call} me={user?.id} />;
                if (e.kind === "questions") return t.status === "AWAITING_INPUT" && !e.batch.answers ? null : <BatchEntry key={e.seq} batch={e.batch} />;
                if (e.kind === "summary") return <SummaryEntry key={e.seq} e={e} />;
                // A pause is shown while it lasts: once decided or answered, the call's own entry says so.
                if (paused.has(e.status.status) && (e.seq !== lastStatus || t.status !== e.status.status)) return null;
                return <StatusEntry key={e.seq} e={e} />;
              })}
              {tr.streaming && <Streaming text={tr.streaming.text} reasoning={tr.streaming.reasoning} agentName={name} />}
              {t.status === "PENDING_APPROVAL" && t.pending && t.pending.tool_calls.length > 0 && <ApprovalCard key={t.updated_at} task={t} onDone={live.set} />}
              {t.status === "AWAITING_INPUT" && t.pending?.questions.map((b) => <QuestionBatch key={b.tool_call_id} task={t} batch={b} onDone={live.set} />)}
              {!tr.streaming && (t.status === "QUEUED" || t.status === "RUNNING" || t.status === "AWAITING_SUB_AGENTS") && (
                <p class="working" role="status">
                  <span class="dot" aria-hidden="true" /> {t.status === "AWAITING_SUB_AGENTS" ? "Waiting for sub-agent chats…" : "The agent is working…"}
                </p>
              )}
              {t.answer && !tr.entries.some((e) => e.kind === "message" && e.message.role === "assistant" && e.message.text === t.answer) && (
                <article class="msg assistant">
                  <h2 class="msg-who">{name}</h2>
                  <p class="pre">{t.answer}</p>
                </article>
              )}
              {t.error && !tr.entries.some((e) => e.kind === "status" && e.status.error) && (
                <div class="msg failed" role="alert">
                  <h2 class="msg-who">Failed: {t.error.code}</h2>
                  <p>{t.error.message}</p>
                </div>
              )}
            </div>
            <FollowUp task={t} allowFollowup={agent.data?.allow_followup ?? true} onDone={live.set} />
          </div>
          <aside class="task-side">
            <section class="panel">
              <h2>Details</h2>
              <dl class="facts">
                <dt>Status</dt>
                <dd>
                  <StatusBadge status={t.status} />
                </dd>
                <dt>Agent</dt>
                <dd>
                  <Link to={`/agents/${t.agent_id}`}>{agent.data?.name ?? `#${t.agent_id}`}</Link>
                </dd>
                <dt>Steps</dt>
                <dd>
                  {t.steps_used} of {t.max_steps}
                </dd>
                <dt>Tokens</dt>
                <dd data-testid="total-usage">{usage ? fmtUsage(usage) : "—"}</dd>
                <dt>Cost</dt>
                <dd>
                  <TaskCost key={`${t.id}:${t.steps_used}`} taskId={t.id} createdAt={t.created_at} />
                </dd>
                {t.retry_count > 0 && (
                  <>
                    <dt>Retries</dt>
                    <dd>{t.retry_count}</dd>
                  </>
                )}
                {t.next_retry_at && (
                  <>
                    <dt>Next retry</dt>
                    <dd>{formatTime(t.next_retry_at)}</dd>
                  </>
                )}
                {t.parent_task_id && (
                  <>
                    <dt>Parent chat</dt>
                    <dd>
                      <Link to={`/tasks/${t.parent_task_id}`}>#{t.parent_task_id}</Link>
                    </dd>
                  </>
                )}
                <dt>Started</dt>
                <dd>{formatTime(t.created_at)}</dd>
                <dt>Finished</dt>
                <dd>{formatTime(t.finished_at)}</dd>
                <dt>Updates</dt>
                <dd class="small" data-testid="updates">
                  {mode}
                </dd>
              </dl>
            </section>
            <Controls task={t} onDone={live.set} />
            <SubTasks task={t} />
          </aside>
        </div>
      )}
    </>
  );
}
