// Chats: the list of the caller's tasks, and one task watched live with its pending tool calls
// (approve with editable arguments, reject with a reason), question batches, the answer, token
// usage and the actions the state allows (continue, retry, abort, cancel the retry chain).
import { useMemo, useState } from "preact/hooks";
import { api, unwrap, type Schemas, type Task } from "../api";
import { useLiveTask } from "../live";
import { navigate } from "../router";
import { ErrorNote, Field, Link, PageHeader, StatusBadge, TextArea, formatTime, useAction, useId, useLoad } from "../ui";
import { loadTasks, TaskTable } from "./agent";
import { loadAgents } from "./agents";

const terminal = new Set(["COMPLETED", "FAILED", "ABORTED", "CANCELLED"]);
const paused = new Set(["PENDING_APPROVAL", "AWAITING_INPUT"]);

export function TaskList() {
  const data = useLoad(async () => {
    const [tasks, agents] = await Promise.all([loadTasks(), loadAgents()]);
    return { tasks, agents: new Map(agents.map((a) => [a.id, a.name])) };
  }, []);
  const [status, setStatus] = useState("");
  const tasks = (data.data?.tasks ?? []).filter((t) => !status || t.status === status);
  return (
    <>
      <PageHeader title="Chats">
        <button type="button" onClick={() => data.reload()} disabled={data.loading}>
          Refresh
        </button>
      </PageHeader>
      <div class="toolbar">
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
        <TaskTable tasks={tasks} agents={data.data?.agents} />
      </section>
    </>
  );
}

function Json(props: { value: unknown }) {
  return <pre class="code">{JSON.stringify(props.value, null, 2)}</pre>;
}

type Decision = { approved: boolean; arguments?: Record<string, unknown>; reason?: string };

function ApprovalCard(props: { task: Task; onDone: (t: Task) => void; onDecided: (d: Map<string, Decision>) => void }) {
  const calls = props.task.pending?.tool_calls ?? [];
  const [args, setArgs] = useState<Record<string, string>>(() => Object.fromEntries(calls.map((c) => [c.provider_call_id, JSON.stringify(c.arguments, null, 2)])));
  const [argErr, setArgErr] = useState<string | null>(null);
  const [reason, setReason] = useState("");
  const approve = useAction();
  const reject = useAction();
  const taskId = String(props.task.id);
  const doApprove = () => {
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
      decisions.push({ provider_call_id: c.provider_call_id, decision: "approve", arguments: changed ? (parsed as Record<string, unknown>) : undefined });
    }
    setArgErr(null);
    void approve.run(async () => {
      const r = await unwrap(api.POST("/tasks/{taskId}/approve", { params: { path: { taskId } }, body: { decisions } }));
      props.onDecided(new Map(decisions.map((d) => [d.provider_call_id, { approved: true, arguments: d.arguments }])));
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
        <button type="button" class="primary" disabled={approve.pending || reject.pending} onClick={doApprove}>
          {approve.pending ? "Approving…" : "Approve"}
        </button>
      </div>
      <form
        class="reject-row"
        onSubmit={(e) => {
          e.preventDefault();
          void reject.run(async () => {
            const r = await unwrap(api.POST("/tasks/{taskId}/reject", { params: { path: { taskId } }, body: { reason } }));
            props.onDecided(new Map(calls.map((c) => [c.provider_call_id, { approved: false, reason }])));
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

function Controls(props: { task: Task; allowFollowup: boolean; onDone: (t: Task) => void }) {
  const t = props.task;
  const taskId = String(t.id);
  const act = useAction();
  const [prompt, setPrompt] = useState("");
  const [extra, setExtra] = useState("");
  const p = { params: { path: { taskId } } };
  const done = (r: { data: { task: Task } }) => props.onDone(r.data.task);
  const canContinue = t.status === "COMPLETED" || (t.status === "ABORTED" && t.data?.max_steps_reached === true);
  return (
    <section class="panel" aria-labelledby="controls-h">
      <h2 id="controls-h">Actions</h2>
      {canContinue && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              done(await unwrap(api.POST("/tasks/{taskId}/continue", { ...p, body: { prompt, additional_steps: extra ? Number(extra) : undefined } })));
              setPrompt("");
            });
          }}
        >
          <TextArea label="Follow-up message" rows={3} required value={prompt} onValue={setPrompt} hint={props.allowFollowup ? undefined : "This agent does not allow follow-ups; the server will refuse."} />
          <Field label="Additional steps (optional)" type="number" min={1} max={100} value={extra} onValue={setExtra} />
          <button class="primary">Continue</button>
        </form>
      )}
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
              if (!confirm(`Delete task #${t.id} with its messages?`)) return;
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

/** What this page saw of the task's tool calls and questions while it was open. */
type Seen = { calls: Map<string, Schemas["TaskPendingToolCall"]>; batches: Map<string, Schemas["TaskQuestionBatch"]>; decisions: Map<string, Decision> };

export function TaskPage(props: { id: string }) {
  const live = useLiveTask(props.id);
  const t = live.task;
  const agent = useLoad(async () => (t ? (await unwrap(api.GET("/agents/{id}", { params: { path: { id: String(t.agent_id) } } }))).data.agent : undefined), [t?.agent_id]);
  const seen = useMemo<Seen>(() => ({ calls: new Map(), batches: new Map(), decisions: new Map() }), [props.id]);
  t?.pending?.tool_calls.forEach((c) => seen.calls.set(c.provider_call_id, c));
  t?.pending?.questions.forEach((b) => seen.batches.set(b.tool_call_id, b));
  const pendingIds = new Set(t?.pending?.tool_calls.map((c) => c.provider_call_id) ?? []);
  const decided = [...seen.calls.values()].filter((c) => !pendingIds.has(c.provider_call_id));
  return (
    <>
      <PageHeader title={t ? `Task #${t.id}` : "Task"} back={t ? { to: `/agents/${t.agent_id}`, label: agent.data?.name ?? "Agent" } : { to: "/tasks", label: "Chats" }}>
        {t && <StatusBadge status={t.status} />}
      </PageHeader>
      <ErrorNote error={live.error} />
      {t && (
        <div class="task-layout">
          <div class="conversation" aria-live="polite">
            <article class="msg user">
              <h2 class="msg-who">You</h2>
              <p class="pre">{t.prompt}</p>
            </article>
            {decided.map((c) => {
              const d = seen.decisions.get(c.provider_call_id);
              return (
                <article class="msg tool" key={c.provider_call_id}>
                  <h2 class="msg-who">
                    Tool call <span class="mono">{c.name}</span> · {c.operation}
                  </h2>
                  <Json value={d?.arguments ?? c.arguments} />
                  <p class="muted small">
                    {!d ? "Decided; the agent continued." : d.approved ? (d.arguments ? "Approved with edited arguments (asked for: " + JSON.stringify(c.arguments) + ")." : "Approved.") : `Rejected: ${d.reason}`}
                  </p>
                </article>
              );
            })}
            {[...seen.batches.values()]
              .filter((b) => !t.pending?.questions.some((q) => q.tool_call_id === b.tool_call_id))
              .map((b) => (
                <article class="msg tool" key={b.tool_call_id}>
                  <h2 class="msg-who">Questions answered</h2>
                  <ul>
                    {b.questions.map((q) => (
                      <li key={q.header}>{q.question}</li>
                    ))}
                  </ul>
                </article>
              ))}
            {t.status === "PENDING_APPROVAL" && t.pending && t.pending.tool_calls.length > 0 && <ApprovalCard key={t.updated_at} task={t} onDone={live.set} onDecided={(m) => m.forEach((v, k) => seen.decisions.set(k, v))} />}
            {t.status === "AWAITING_INPUT" && t.pending?.questions.map((b) => <QuestionBatch key={b.tool_call_id} task={t} batch={b} onDone={live.set} />)}
            {(t.status === "QUEUED" || t.status === "RUNNING" || t.status === "AWAITING_SUB_AGENTS") && (
              <p class="working" role="status">
                <span class="dot" aria-hidden="true" /> {t.status === "AWAITING_SUB_AGENTS" ? "Waiting for sub-agent tasks…" : "The agent is working…"}
              </p>
            )}
            {t.answer && (
              <article class="msg assistant">
                <h2 class="msg-who">{agent.data?.name ?? "Agent"}</h2>
                <p class="pre" data-testid="answer">
                  {t.answer}
                </p>
              </article>
            )}
            {t.error && (
              <div class="msg failed" role="alert">
                <h2 class="msg-who">Failed: {t.error.code}</h2>
                <p>{t.error.message}</p>
              </div>
            )}
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
                <dd>
                  {t.usage.input_tokens} in · {t.usage.output_tokens} out
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
                    <dt>Parent task</dt>
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
                <dd class="small">{terminal.has(t.status) ? "settled" : live.mode}</dd>
              </dl>
            </section>
            <Controls task={t} allowFollowup={agent.data?.allow_followup ?? true} onDone={live.set} />
          </aside>
        </div>
      )}
    </>
  );
}
