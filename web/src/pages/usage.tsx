// Usage and budgets (issue 27): the Usage page (a month's cost or tokens per day as a chart, and
// a table by agent, user or key, with the CSV export), the budgets panel shown where the
// principal is (user, group, agent and its keys), and a chat's cost on its page.
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Schemas } from "../api";
import { ErrorNote, Field, PageHeader, formatTime, useAction, useLoad } from "../ui";

type Row = Schemas["UsageRow"];
type Budget = Schemas["Budget"];
type By = "agent" | "user" | "key" | "model";

/** money formats micro-units of currency (a display only: amounts stay integers elsewhere). */
export function money(micros: number, currency: string): string {
  const v = micros / 1_000_000;
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency, maximumFractionDigits: v < 1 ? 4 : 2 }).format(v);
  } catch {
    return `${v.toFixed(4)} ${currency}`;
  }
}

function monthBounds(month: string): { from: string; to: string } {
  const [y, m] = month.split("-").map(Number);
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return { from: `${month}-01`, to: `${month}-${String(last).padStart(2, "0")}` };
}

async function loadUsage(from: string, to: string, by: string) {
  const r = await unwrap(api.GET("/usage", { params: { query: { from, to, group_by: [by as Schemas["UsageGroupBy"]] } } }));
  return (r as Schemas["UsageResponse"]).data; // JSON: no format=csv
}

export function UsagePage() {
  const now = new Date();
  const [month, setMonth] = useState(`${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, "0")}`);
  const [by, setBy] = useState<By>("agent");
  const [measure, setMeasure] = useState<"cost" | "tokens">("cost");
  const { from, to } = monthBounds(month);
  const days = useLoad(() => loadUsage(from, to, "day"), [from, to]);
  const table = useLoad(() => loadUsage(from, to, by), [from, to, by]);
  const currency = days.data?.currency ?? "USD";
  const value = (r: Row) => (measure === "cost" ? r.cost : r.input_tokens + r.output_tokens);
  const rows = days.data?.rows ?? [];
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const allDays: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) allDays.push(d);
  const max = Math.max(1, ...rows.map(value));
  const total = rows.reduce((s, r) => s + r.cost, 0);
  const tokens = rows.reduce((s, r) => s + r.input_tokens + r.output_tokens, 0);
  const csv = `${prefix}/api/v1/usage?from=${from}&to=${to}&group_by=${by}&format=csv`;
  return (
    <>
      <PageHeader title="Usage" />
      <div class="toolbar">
        <label>
          Month <input type="month" value={month} onInput={(e) => (e.currentTarget.value ? setMonth(e.currentTarget.value) : undefined)} />
        </label>
        <label>
          Chart{" "}
          <select value={measure} onChange={(e) => setMeasure(e.currentTarget.value as "cost" | "tokens")}>
            <option value="cost">cost</option>
            <option value="tokens">tokens</option>
          </select>
        </label>
        <span class="muted">
          {money(total, currency)} · {tokens.toLocaleString()} tokens · days in {days.data?.time_zone ?? "UTC"}
        </span>
      </div>
      <ErrorNote error={days.error} />
      <section class="panel" aria-labelledby="usage-chart-h">
        <h2 id="usage-chart-h">Per day</h2>
        {rows.length === 0 ? (
          <p class="muted">No model calls this month.</p>
        ) : (
          <div class="usage-chart" role="img" aria-label={`${measure} per day, ${from} to ${to}`}>
            {allDays.map((d) => {
              const r = byDay.get(d);
              const v = r ? value(r) : 0;
              return (
                <div key={d} class="usage-bar" title={`${d}: ${measure === "cost" ? money(r?.cost ?? 0, currency) : `${v} tokens`}, ${r?.calls ?? 0} calls`}>
                  <span class={r ? "" : "zero"} style={{ height: r ? `${Math.max(2, (v / max) * 100)}%` : "0" }} />
                  <small>{d.slice(8)}</small>
                </div>
              );
            })}
          </div>
        )}
      </section>
      <section class="panel" aria-labelledby="usage-table-h">
        <h2 id="usage-table-h">
          By{" "}
          <select class="inline" aria-label="Group by" value={by} onChange={(e) => setBy(e.currentTarget.value as By)}>
            <option value="agent">agent</option>
            <option value="user">user</option>
            <option value="key">key</option>
            <option value="model">model</option>
          </select>{" "}
          <a href={csv} download={`usage-${month}-${by}.csv`} class="button ghost">
            Export CSV
          </a>
        </h2>
        <ErrorNote error={table.error} />
        <table class="table">
          <thead>
            <tr>
              <th scope="col">{by}</th>
              <th scope="col">Calls</th>
              <th scope="col">Input tokens</th>
              <th scope="col">Output tokens</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {(table.data?.rows ?? []).map((r, i) => (
              <tr key={i}>
                <td>{by === "agent" ? `#${r.agent_id}` : by === "user" ? `#${r.user_id}` : by === "key" ? (r.key_id ?? "session chats") : r.model}</td>
                <td>{r.calls}</td>
                <td>{r.input_tokens.toLocaleString()}</td>
                <td>{r.output_tokens.toLocaleString()}</td>
                <td>{money(r.cost, currency)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </>
  );
}

/** TaskCost shows what a chat's model calls cost (its ledger rows). */
export function TaskCost(props: { taskId: number; createdAt: string }) {
  const day = props.createdAt.slice(0, 10);
  const today = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.parse(day) - 86_400_000).toISOString().slice(0, 10); // the zone may put its first call a day earlier
  const to = today < day ? day : today;
  const cost = useLoad(
    async () => ((await unwrap(api.GET("/usage", { params: { query: { from, to: to > addDays(from, 365) ? addDays(from, 365) : to, task_id: props.taskId } } }))) as Schemas["UsageResponse"]).data,
    [props.taskId],
  );
  const r = cost.data?.rows[0];
  return (
    <span class="muted" data-testid="task-cost">
      {r ? `${money(r.cost, cost.data!.currency)} (${r.calls} model calls)` : cost.data ? "no model calls" : ""}
    </span>
  );
}

function addDays(d: string, n: number): string {
  return new Date(Date.parse(d) + n * 86_400_000).toISOString().slice(0, 10);
}

/** Budgets lists and edits the budgets of one principal (scope kind and id). */
export function Budgets(props: { kind: Schemas["BudgetScopeKind"]; id: string; title?: string }) {
  const list = useLoad(async () => (await unwrap(api.GET("/budgets", { params: { query: { scope_kind: props.kind, scope_id: props.id } } }))).data, [props.kind, props.id]);
  const [period, setPeriod] = useState<Schemas["BudgetPeriod"]>("month");
  const [tokens, setTokens] = useState("");
  const [cost, setCost] = useState("");
  const [soft, setSoft] = useState("80");
  const add = useAction();
  const del = useAction();
  const currency = "";
  return (
    <section class="panel" aria-label={props.title ?? "Budgets"}>
      <h2>{props.title ?? "Budgets"}</h2>
      <ErrorNote error={list.error ?? del.error} />
      {(list.data ?? []).length === 0 && <p class="muted">No budget: model calls are not limited.</p>}
      <ul class="plain">
        {(list.data ?? []).map((b: Budget) => (
          <li key={b.id} class="card wide">
            <strong>
              {b.period}ly {b.exceeded && <span class="chip bad">used up</span>}
            </strong>
            <small class="muted block">
              {b.limit_tokens != null && `${b.spent_tokens.toLocaleString()} of ${b.limit_tokens.toLocaleString()} tokens`}
              {b.limit_tokens != null && b.limit_cost != null && " · "}
              {b.limit_cost != null && `${money(b.spent_cost, currency || "USD")} of ${money(b.limit_cost, currency || "USD")}`}
              {b.soft_percent != null && ` · notify at ${b.soft_percent} %`} · resets {formatTime(b.resets_at)}
            </small>
            <button
              type="button"
              class="ghost"
              disabled={del.pending}
              onClick={() => del.run(async () => (await unwrap(api.DELETE("/budgets/{budgetId}", { params: { path: { budgetId: b.id } } })), await list.reload()))}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void add.run(async () => {
            await unwrap(
              api.POST("/budgets", {
                body: {
                  scope_kind: props.kind,
                  scope_id: props.id,
                  period,
                  limit_tokens: tokens ? Number(tokens) : undefined,
                  limit_cost: cost ? Math.round(Number(cost) * 1_000_000) : undefined,
                  soft_percent: soft ? Number(soft) : undefined,
                },
              }),
            );
            setTokens("");
            setCost("");
            await list.reload();
          });
        }}
      >
        <label>
          Period{" "}
          <select value={period} onChange={(e) => setPeriod(e.currentTarget.value as Schemas["BudgetPeriod"])}>
            <option value="day">day</option>
            <option value="week">week</option>
            <option value="month">month</option>
          </select>
        </label>
        <Field label="Token limit" type="number" min={1} value={tokens} onValue={setTokens} />
        <Field label="Cost limit (currency units)" value={cost} onValue={setCost} hint="For example 50 or 12.5" />
        <Field label="Notify at (%)" type="number" min={1} max={99} value={soft} onValue={setSoft} />
        <ErrorNote error={add.error} />
        <button class="primary" disabled={add.pending}>
          Add budget
        </button>
      </form>
    </section>
  );
}
