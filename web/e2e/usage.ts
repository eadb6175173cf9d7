// Browser test of usage and budgets (issue 27): a priced model configuration, one chat, then the
// Usage page (a bar a day, the table by agent with the chat's cost, the CSV link), the chat's
// cost on its page, and a budget added and removed on the agent's settings. Run by `make e2e`
// after run.ts (npm run e2e); alone: `node build.mjs --e2e && node e2e-dist/usage.js`.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { apiSession, axeCheck, bin, safeRead, signIn, startServer } from "./serve";

const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const shots = resolve(process.env.SVC_E2E_SHOTS ?? "test-results/screenshots");

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Error(`expectation failed: ${what}`);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function main(): Promise<void> {
  expect(existsSync(chromiumPath), `no browser at ${chromiumPath}`);
  expect(existsSync(bin), `no svc binary at ${bin}: run make build`);
  mkdirSync(shots, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-usage-"));
  // One answer of 1,200 input and 300 output tokens.
  const { proc, base } = await startServer(dir, { SVC_CURRENCY: "EUR" }, [{ text: "Paris.", usage: { input_tokens: 1200, output_tokens: 300 } }]);
  let browser: Browser | undefined;
  const problems: string[] = [];
  try {
    const call = await apiSession(base, "ada@example.com", "correct horse battery");
    // Price the seeded default configuration: 2.00 € per million input tokens, 10.00 € per million output tokens.
    const def = (await call("GET", "/llm-configs/default")).llm_config as { id: number; group_id: number };
    await call("PATCH", `/groups/${def.group_id}/llm-configs/${def.id}`, { prices: { input: 2_000_000, output: 10_000_000 } });
    const agent = (await call("POST", "/agents", { name: "Geographer" })).agent as { id: number };
    const task = (await call("POST", "/tasks", { agent_id: agent.id, prompt: "Capital of France?" })).task as { id: number };
    for (let i = 0; i < 100; i++) {
      const t = (await call("GET", `/tasks/${task.id}`)).task as { status: string };
      if (t.status === "COMPLETED") break;
      expect(!["FAILED", "ABORTED"].includes(t.status) && i < 99, `task ended ${t.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|403|404|409|422|429)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("dialog", (d) => void d.accept());
    await signIn(page, base, "ada@example.com", "correct horse battery");

    // 1,200 × 2 + 300 × 10 = 5,400 micro-euros: €0.0054.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Usage" }).click();
    await page.getByRole("heading", { name: "Usage", exact: true }).waitFor();
    const row = page.getByRole("row").filter({ hasText: `#${agent.id}` });
    await row.filter({ hasText: "1,200" }).filter({ hasText: "0.0054" }).waitFor();
    expect((await page.locator(".usage-bar span:not(.zero)").count()) === 1, "one bar for the one day with calls");
    const csv = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
    const res = await page.request.get(new URL(csv ?? "", base).toString());
    expect(res.ok() && (await res.text()).includes(`${agent.id},1,1200,0,300,5400`), `CSV export: ${res.status()}`);
    problems.push(...(await axeCheck(page, "usage")));
    await shot(page, "usage");

    await page.goto(`${base}/tasks/${task.id}`);
    await page.getByTestId("task-cost").filter({ hasText: "0.0054" }).waitFor();

    await page.goto(`${base}/agents/${agent.id}/settings`);
    const budgets = page.getByRole("region", { name: "Budgets of this agent" });
    await budgets.getByText("No budget: model calls are not limited.").waitFor();
    await budgets.getByLabel("Token limit").fill("1000");
    await budgets.getByRole("button", { name: "Add budget" }).click();
    await budgets.getByText(/1,500 of 1,000 tokens/).waitFor();
    await budgets.getByText("used up").waitFor();
    await shot(page, "agent-budgets");
    const listed = (await call("GET", `/budgets?scope_kind=agent&scope_id=${agent.id}`)) as unknown as { exceeded: boolean }[];
    expect(listed.length === 1 && listed[0].exceeded, `budgets over the API: ${JSON.stringify(listed)}`);
    // The next chat fails BUDGET_EXCEEDED before calling the model.
    const next = (await call("POST", "/tasks", { agent_id: agent.id, prompt: "And of Italy?" })).task as { id: number };
    let failed = "";
    for (let i = 0; i < 100 && !failed; i++) {
      const t = (await call("GET", `/tasks/${next.id}`)).task as { status: string; error?: { code: string } };
      if (t.status === "FAILED") failed = t.error?.code ?? "?";
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(failed === "BUDGET_EXCEEDED", `the second chat failed with ${failed || "nothing"}`);
    await budgets.getByRole("button", { name: "Remove" }).click();
    await budgets.getByText("No budget: model calls are not limited.").waitFor();
    await context.close();
  } catch (err) {
    console.error(`svc log:\n${safeRead(join(dir, "svc.log"))}`);
    throw err;
  } finally {
    await browser?.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
  if (problems.length > 0) throw new Error(`problems:\n${problems.join("\n")}`);
  console.log("usage e2e: ok");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
