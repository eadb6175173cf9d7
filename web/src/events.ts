// A task's event log (GET /tasks/{id}/events, Server-Sent Events) folded into a transcript:
// user and assistant turns, tool calls with their decision and result, question batches with
// their answers, the status changes that matter to a reader, and the model output streaming in
// (delta events, replaced by the turn's message). The browser resumes an EventSource with
// Last-Event-ID by itself; a replay delivers every run of the task, and the server ends the
// stream after a status that ends a run when nothing follows it. reopen() starts a new stream
// after the last sequence seen when a continue or retry starts a new run after that.
import { useEffect, useRef, useState } from "preact/hooks";
import { prefix, type Schemas, type Task } from "./api";

type Ev = Schemas["TaskEvent"];
type Usage = Schemas["TaskUsage"];

export type Entry =
  | { kind: "message"; seq: number; message: Schemas["TranscriptMessage"] }
  | { kind: "call"; seq: number; call: Schemas["TranscriptToolCall"] }
  | { kind: "questions"; seq: number; batch: Schemas["TaskEventQuestionBatch"] }
  | { kind: "status"; seq: number; at: string; status: Schemas["TaskEventStatus"]; usage?: Usage }
  | { kind: "summary"; seq: number; at: string; summary: Schemas["TaskEventSummary"] };

export type Transcript = {
  entries: Entry[];
  lastSeq: number;
  /** The model output of the turn that is streaming now, or null. */
  streaming: { text: string; reasoning: string } | null;
  /** The last status event. */
  status: Schemas["TaskEventStatus"] | null;
};

/** endsRun: the status that ends a run (the stream ends after it), as the contract defines it. */
export function endsRun(s: { status: string; next_retry_at?: string | null; retrying?: boolean }): boolean {
  if (s.status === "FAILED") return !s.retrying && !s.next_retry_at;
  return s.status === "COMPLETED" || s.status === "CANCELLED" || s.status === "ABORTED";
}

/** The error codes an automatic retry applies to (the agent's retry_after_minutes and max_retries). */
const transient = new Set(["RATE_LIMIT", "SERVER_OVERLOADED", "SERVER_ERROR", "GATEWAY_ERROR", "LLM_TIMEOUT", "ORPHANED", "WORKER_DISCONNECTED"]);

/**
 * runEnded: the task resource's run has ended and nothing changes it unless someone acts on it
 * (a continue or a retry). A FAILED task is not ended while its automatic retry is pending
 * (next_retry_at) or about to be scheduled: the FAILED status is written before the retry is,
 * so the task's fields can show neither yet; the status event's `retrying` flag tells, and so
 * does the rule behind it (a transient error code, fewer retries than the agent's max_retries).
 * Without the agent (not loaded yet) such a failure is not taken as ended.
 */
export function runEnded(t: Task, last: Schemas["TaskEventStatus"] | null, agent: { max_retries: number } | undefined): boolean {
  if (!endsRun(t)) return false;
  if (t.status !== "FAILED") return true;
  if (last?.status === "FAILED" && last.retrying) return false;
  if (!t.error || !transient.has(t.error.code)) return true;
  return agent !== undefined && t.retry_count >= agent.max_retries;
}

const sub = (a: Usage, b: Usage): Usage => ({ input_tokens: a.input_tokens - b.input_tokens, output_tokens: a.output_tokens - b.output_tokens });

/** Folds events into a transcript, in order; an event at or before lastSeq is ignored. */
export class Folder {
  t: Transcript = { entries: [], lastSeq: 0, streaming: null, status: null };
  private calls = new Map<string, Entry & { kind: "call" }>();
  private batches = new Map<string, Entry & { kind: "questions" }>();
  // Tokens accounted for: each assistant turn carries its own (message.usage); what a status
  // event reports beyond them was spent by a call that left no message (a failed turn).
  private billed: Usage = { input_tokens: 0, output_tokens: 0 };

  apply(ev: Ev): boolean {
    if (ev.sequence <= this.t.lastSeq) return false;
    const t = this.t;
    t.lastSeq = ev.sequence;
    switch (ev.type) {
      case "message": {
        const m = ev.message;
        if (!m) break;
        const e = { kind: "message" as const, seq: ev.sequence, message: m };
        t.entries.push(e);
        if (m.role === "assistant") {
          t.streaming = null;
          if (m.usage) this.billed = { input_tokens: this.billed.input_tokens + m.usage.input_tokens, output_tokens: this.billed.output_tokens + m.usage.output_tokens };
        }
        break;
      }
      case "tool_call.proposed":
      case "tool_call.decided":
      case "tool_call.executed": {
        const c = ev.tool_call;
        if (!c) break;
        const old = this.calls.get(c.provider_call_id);
        if (old) old.call = c;
        else {
          const e = { kind: "call" as const, seq: ev.sequence, call: c };
          this.calls.set(c.provider_call_id, e);
          t.entries.push(e);
        }
        break;
      }
      case "question.asked":
      case "question.answered": {
        const b = ev.question_batch;
        if (!b) break;
        const old = this.batches.get(b.tool_call_id);
        if (old) old.batch = b;
        else {
          const e = { kind: "questions" as const, seq: ev.sequence, batch: b };
          this.batches.set(b.tool_call_id, e);
          t.entries.push(e);
        }
        break;
      }
      case "summary": {
        // A compaction: shown where the messages it replaces end (before the first later turn).
        const sm = ev.summary;
        if (!sm) break;
        const e = { kind: "summary" as const, seq: ev.sequence, at: ev.at, summary: sm };
        const after = t.entries.findIndex((x) => (x.kind === "message" && x.message.sequence > sm.through_sequence) || (x.kind === "call" && x.call.sequence > sm.through_sequence));
        if (after < 0) t.entries.push(e);
        else t.entries.splice(after, 0, e);
        // Its tokens are in the task's usage, not in any turn's.
        this.billed = { input_tokens: this.billed.input_tokens + sm.usage.input_tokens, output_tokens: this.billed.output_tokens + sm.usage.output_tokens };
        break;
      }
      case "delta": {
        const d = ev.delta;
        if (!d) break;
        const s = t.streaming ?? { text: "", reasoning: "" };
        t.streaming = { text: s.text + d.text, reasoning: s.reasoning + d.reasoning };
        break;
      }
      case "status": {
        const s = ev.status;
        if (!s) break;
        t.status = s;
        if (s.status !== "RUNNING") t.streaming = null; // a turn that failed leaves no message
        const spent = sub(s.usage, this.billed);
        let usage: Usage | undefined;
        if (spent.input_tokens >= 0 && spent.output_tokens >= 0 && spent.input_tokens + spent.output_tokens > 0) {
          usage = spent; // tokens of a call that left no message (a failed turn)
          this.billed = s.usage;
        }
        if (s.status !== "QUEUED" && s.status !== "RUNNING") t.entries.push({ kind: "status", seq: ev.sequence, at: ev.at, status: s, usage });
        break;
      }
    }
    return true;
  }

  /** The call whose provider id is given (ask_user_question calls are shown as their batch). */
  hasBatch(providerCallId: string): boolean {
    return this.batches.has(providerCallId);
  }
}

export type StreamState = "connecting" | "open" | "reconnecting" | "ended" | "failed";

/**
 * useTaskEvents follows task id's event stream. onStatus is called after each status event (the
 * page reloads the task resource then). reopen() opens a new stream after the last sequence
 * seen, when the previous one ended (a continued or retried task). While settled.current is
 * true (the task resource says the run has ended: runEnded) a refused stream is not tried again.
 */
export function useTaskEvents(id: string, onStatus: () => void, settled: { readonly current: boolean }): { transcript: Transcript; folder: Folder; state: StreamState; reopen: () => void } {
  const folder = useRef(new Folder());
  const [, force] = useState(0);
  const [state, setState] = useState<StreamState>("connecting");
  const [run, setRun] = useState(0);
  const cb = useRef(onStatus);
  cb.current = onStatus;
  const stateRef = useRef(state);
  stateRef.current = state;
  useEffect(() => {
    folder.current = new Folder();
    force((n) => n + 1);
  }, [id]);
  useEffect(() => {
    const f = folder.current;
    const since = f.t.lastSeq;
    const es = new EventSource(`${prefix}/api/v1/tasks/${encodeURIComponent(id)}/events${since ? `?since_sequence=${since}` : ""}`, { withCredentials: true });
    setState("connecting");
    let ended = false;
    let frame = 0;
    const render = () => {
      // Coalesce a replay of many events into one render.
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), force((n) => n + 1)));
    };
    const handle = (m: MessageEvent<string>) => {
      let ev: Ev;
      try {
        ev = JSON.parse(m.data) as Ev;
      } catch {
        return;
      }
      if (!f.apply(ev)) return;
      render();
      // A status that ends a run does not close the stream: a replay of a continued or retried
      // task goes on with the next run, and the server closes the stream when nothing follows
      // (onerror below then stops there).
      if (ev.type === "status" && ev.status) cb.current();
    };
    for (const type of ["status", "message", "tool_call.proposed", "tool_call.decided", "tool_call.executed", "question.asked", "question.answered", "delta", "summary"]) es.addEventListener(type, handle as EventListener);
    es.onopen = () => setState("open");
    es.onerror = () => {
      if (ended) return;
      // The server ends a stream whose run had ended with nothing after the cursor: stop there.
      if (f.t.status && endsRun(f.t.status)) {
        ended = true;
        es.close();
        setState("ended");
        return;
      }
      setState(es.readyState === EventSource.CLOSED ? "failed" : "reconnecting");
    };
    // A refused stream (401, 404) is not retried by the browser: try again from the last
    // sequence every 15 s (the page polls the task meanwhile), until the run has ended.
    const retry = window.setInterval(() => {
      if (es.readyState === EventSource.CLOSED && !ended && !settled.current) setRun((n) => n + 1);
    }, 15_000);
    return () => {
      es.close();
      window.clearInterval(retry);
      cancelAnimationFrame(frame);
    };
  }, [id, run]);
  return {
    transcript: folder.current.t,
    folder: folder.current,
    state,
    reopen: () => {
      if (stateRef.current === "ended" || stateRef.current === "failed") setRun((n) => n + 1);
    },
  };
}
