// Browser end-to-end tests of the console: Debian's chromium, headless, driven by
// playwright-core against the real `svc serve` (fresh SQLite database in a temporary folder,
// the scripted model driver). Run by `make e2e` (and `make screenshots`, which keeps the
// screenshots in docs/screenshots). Settings: SVC_BIN (the binary, default ../bin/svc),
// CHROMIUM (default /usr/bin/chromium), SVC_E2E_SHOTS (screenshot folder, default
// test-results/screenshots).
import { createHash } from "node:crypto";
import { createServer as createHttpServer, type Server } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page, type Request, type Route } from "playwright-core";
import { apiSession, axeCheck, bin, freePort, safeRead, signIn, startServer } from "./serve";

const shots = resolve(process.env.SVC_E2E_SHOTS ?? "test-results/screenshots");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

// Every task follows this script: ask for the calculator (which needs approval), then ask a
// question batch, then answer, streamed in six pieces 300 ms apart (past the script, a
// follow-up is answered with the driver's "The script has no more turns.").
const script = [
  { tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6*7" } }], usage: { input_tokens: 812, output_tokens: 41 } },
  {
    tool_calls: [
      {
        id: "q1",
        name: "ask_user_question",
        arguments: {
          questions: [
            { header: "Format", question: "How should I present the result?", options: ["Plain number", "Sentence"], multiple: false, allowFreeText: false },
            { header: "Extras", question: "Anything to add?", options: ["Units", "Working"], multiple: true, allowFreeText: true },
          ],
        },
      },
    ],
    usage: { input_tokens: 905, output_tokens: 66 },
  },
  {
    chunks: ["6 × 8 is 48. ", "You asked for a sentence, ", "so: the product ", "of six and eight ", "is forty-", "eight."],
    chunk_delay_ms: 300,
    reasoning: "The user approved 6*8 instead of 6*7, so the result is 48; they want a sentence.",
    usage: { input_tokens: 990, output_tokens: 28 },
  },
];

let step = "";
const a11y: string[] = []; // axe-core's serious and moderate findings, on every page checked
const hubTopics: string[] = []; // topics the console subscribed to on the push hub
const started = Date.now();
function log(s: string): void {
  step = s;
  console.log(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s  ${s}`);
}

/** shot keeps a screenshot of the page and checks it with axe-core (light and dark). */
async function shot(page: Page, name: string, keepScroll = false): Promise<void> {
  if (!keepScroll) await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(150); // let focus rings and fonts settle
  await page.screenshot({ path: join(shots, `${name}.png`) });
  a11y.push(...(await axeCheck(page, name)));
}

function expect(cond: boolean, what: string): void {
  if (!cond) throw new Error(`expectation failed: ${what}`);
}

/** watch notes when the page sends a request that match accepts, from now on; stop(ms) waits
 * until ms have passed since the watch began, stops it and returns the times (ms since then). */
function watch(page: Page, match: (r: Request) => boolean): { stop: (ms?: number) => Promise<number[]> } {
  const t0 = Date.now();
  const seen: number[] = [];
  const on = (r: Request) => void (match(r) && seen.push(Date.now() - t0));
  page.on("request", on);
  return {
    stop: async (ms = 0) => {
      const left = t0 + ms - Date.now();
      if (left > 0) await page.waitForTimeout(left);
      page.off("request", on);
      return seen;
    },
  };
}

/** taskRead: the page reads task id's resource (GET /tasks/{id}). */
const taskRead = (id: number) => (r: Request) => r.method() === "GET" && r.url().endsWith(`/api/v1/tasks/${id}`);

/** holdLists holds the page's GET requests whose URL matches until release() (a list that has
 * not loaded yet, deterministically); release() also removes the route. */
async function holdLists(page: Page, url: RegExp): Promise<{ release: () => Promise<void> }> {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const held: Promise<void>[] = [];
  const hold = (route: Route) => {
    const p = (async () => {
      if (route.request().method() === "GET") await gate;
      await route.continue();
    })();
    held.push(p);
    return p;
  };
  await page.route(url, hold);
  return {
    release: async () => {
      open();
      await Promise.all(held); // each held request goes on before the route is removed
      await page.unroute(url, hold);
    },
  };
}

/** tarGz packs files (path → text) as a gzipped ustar archive, as plugin catalogs serve them. */
function tarGz(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    const h = Buffer.alloc(512);
    h.write(name, 0, 100);
    h.write("0000644\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write(body.length.toString(8).padStart(11, "0") + "\0", 124);
    h.write(Math.floor(Date.now() / 1000).toString(8).padStart(11, "0") + "\0", 136);
    h.write("        ", 148); // the checksum counts itself as spaces
    h.write("0", 156);
    h.write("ustar\0" + "00", 257);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** startCatalog serves a plugin catalog with one package, acme/hello (an agent template), on 127.0.0.1. */
async function startCatalog(): Promise<{ server: Server; url: string }> {
  const archive = tarGz({
    "hello-1.0.0/plugin.json": JSON.stringify({ slug: "hello", class: "Acme\\Hello", name: "acme/hello", version: "1.0.0", description: "Says hello: one agent template.", templates: ["templates"] }),
    "hello-1.0.0/templates/greeter.json": JSON.stringify({ id: "hello/greeter", name: "Greeter", version: "1.0.0", agent: { system_prompt: "Greet people.", max_steps: 3 }, tools: [] }),
  });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const index = { packages: [{ package: "acme/hello", name: "Hello", description: "Says hello: one agent template.", versions: [{ version: "1.0.0", url: `${base}/acme-hello-1.0.0.tar.gz`, sha256: createHash("sha256").update(archive).digest("hex") }] }] };
  const server = createHttpServer((req, res) => {
    if (req.url === "/catalog.json") res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(index));
    else if (req.url === "/acme-hello-1.0.0.tar.gz") res.writeHead(200, { "Content-Type": "application/gzip" }).end(archive);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  return { server, url: `${base}/catalog.json` };
}

async function main(): Promise<void> {
  if (!existsSync(chromiumPath)) throw new Error(`no browser at ${chromiumPath}: install Debian's chromium (apt-get install chromium) or set CHROMIUM`);
  if (!existsSync(bin)) throw new Error(`no svc binary at ${bin}: run make build (make e2e does)`);
  mkdirSync(shots, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-"));
  const { proc, base } = await startServer(dir, {}, script);
  const catalog = await startCatalog();
  let browser: Browser | undefined;
  const problems: string[] = [];
  try {
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(base).origin });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|403|404|409|422|429|503)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("dialog", (d) => void d.accept());
    page.on("request", (r) => {
      if (r.url().includes("/.well-known/mercure?")) hubTopics.push(...new URL(r.url()).searchParams.getAll("topic"));
    });

    log("a signed-out visitor is sent to the sign-in page");
    await page.goto(`${base}/`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(page.url().includes("/svc/login"), `URL ${page.url()}`);
    const csp = (await page.request.get(`${base}/agents`)).headers()["content-security-policy"] ?? "";
    expect(csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), `CSP ${csp}`);
    await shot(page, "login");

    log("register the first account (the administrator); it signs in");
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByRole("heading", { name: "Create an account" }).waitFor();
    a11y.push(...(await axeCheck(page, "register")));
    await page.getByLabel("Email").fill("ada@example.com");
    await page.getByLabel("Display name (optional)").fill("Ada Lovelace");
    log("a short password: the rule shows before submitting, the refusal says it in words (issue 24)");
    await page.getByText("At least 8 characters (at most 256).").waitFor();
    await page.getByLabel("Password").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByText("This password is too short: it has 5 characters and needs at least 8.").waitFor();
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "No agents yet" }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    expect(stored === "{}{}", `nothing in web storage, found ${stored}`);

    log("log out, then a refused sign-in shows the API's message");
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("Email").fill("ada@example.com");
    await page.getByLabel("Password").fill("wrong password");
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/auth/login")), page.getByRole("button", { name: "Sign in" }).click()]);
    const refusal = ((await refused.json()) as { error: { message: string } }).error.message;
    expect(refused.status() === 401 || refused.status() === 422, `login refusal status ${refused.status()}`);
    expect((await page.getByRole("alert").innerText()).trim() === refusal, `the alert shows "${refusal}"`);

    log("log in");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Agents", exact: true }).waitFor();

    log("create an agent with every field");
    await page.getByRole("link", { name: "Create your first agent" }).click();
    await page.getByLabel("Name").fill("Calculator");
    await page.getByLabel("Description").fill("Does arithmetic with the calculator tool; every calculation needs approval.");
    await page.getByLabel("System prompt").fill("You compute. Use the calculator for every arithmetic question and ask when the format is unclear.");
    await page.getByLabel("Step budget").fill("12");
    await page.getByLabel("Notes").fill("Used by the finance team.");
    await page.getByLabel("Metadata (JSON object)").fill('{"team": "finance"}');
    await page.getByRole("button", { name: "Create agent" }).click();

    log("enable the calculator with approval, and the question tool");
    const calc = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "Calculator", exact: true }) });
    await calc.getByRole("switch").click();
    await calc.getByRole("switch", { checked: true }).waitFor();
    const needsApproval = calc.getByRole("checkbox", { name: "calculate: needs approval" });
    await page.waitForFunction(() => !document.querySelector('input[aria-label="calculate: needs approval"]')?.hasAttribute("disabled"));
    if (!(await needsApproval.isChecked())) {
      await needsApproval.click();
      await page.waitForFunction(() => (document.querySelector('input[aria-label="calculate: needs approval"]') as HTMLInputElement | null)?.checked === true);
    }
    const ask = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "Ask user question", exact: true }) });
    await ask.getByRole("switch").click();
    await ask.getByRole("switch", { checked: true }).waitFor();
    await page.waitForFunction(() => (document.querySelector('input[aria-label="ask: enabled"]') as HTMLInputElement | null)?.checked === true);
    log("a calculation waits at most an hour for its approval (the operation's own timeout)");
    const calcTimeout = calc.getByRole("spinbutton", { name: "calculate: approval timeout in seconds" });
    expect((await calcTimeout.getAttribute("placeholder")) === "no timeout", "an empty timeout shows the agent's (none)");
    await calcTimeout.fill("3600");
    await calcTimeout.press("Tab");
    await page.waitForFunction(() => !document.querySelector('input[aria-label="calculate: approval timeout in seconds"]')?.hasAttribute("disabled"));
    await page.reload();
    await page.waitForFunction(() => (document.querySelector('input[aria-label="calculate: approval timeout in seconds"]') as HTMLInputElement | null)?.value === "3600");
    expect(await needsApproval.isChecked(), "setting the timeout kept the approval flag");
    await shot(page, "agent-tools");

    log("the settings tab shows every saved field");
    await page.getByRole("link", { name: "Settings" }).click();
    expect((await page.getByLabel("Step budget").inputValue()) === "12", "step budget saved");
    expect((await page.getByLabel("Notes").inputValue()) === "Used by the finance team.", "notes saved");
    await shot(page, "agent-settings");

    log("start a task; it pauses for approval");
    await page.getByRole("navigation", { name: "Agent sections" }).getByRole("link", { name: "Chats" }).click();
    await page.getByLabel("Prompt").fill("What is 6*7?");
    await page.getByRole("button", { name: "Start chat" }).click();
    await page.getByRole("heading", { name: "Approval needed" }).waitFor({ timeout: 15_000 });
    const argBox = page.getByLabel("Arguments of calculator (JSON)");
    expect((await argBox.inputValue()).includes('"6*7"'), "the pending call's arguments are shown");
    await shot(page, "task-approval");

    log("edit the arguments and approve; the question batch arrives without reloading");
    await argBox.fill('{\n  "expression": "6*8"\n}');
    const [approveReq] = await Promise.all([page.waitForRequest((r) => r.url().endsWith("/approve") && r.method() === "POST"), page.getByRole("button", { name: "Approve", exact: true }).click()]);
    const sent = JSON.parse(approveReq.postData() ?? "{}") as { decisions: { arguments?: { expression?: string } }[] };
    expect(sent.decisions[0]?.arguments?.expression === "6*8", `edited arguments sent: ${approveReq.postData()}`);
    await page.getByRole("heading", { name: "The agent asks" }).waitFor({ timeout: 15_000 });
    expect((await page.getByText("Paused: a tool call needs approval").count()) === 0, "the approval's pause line is gone once decided");
    await page.locator(".status-line").filter({ hasText: "Paused: the agent asked questions" }).waitFor();
    await shot(page, "task-question", true);

    log("answer the question batch; the answer arrives without reloading");
    await page.getByRole("radio", { name: "Sentence" }).check();
    await page.getByRole("checkbox", { name: "Units" }).check();
    await page.getByLabel("Your own answer").fill("Keep it short.");
    await page.getByRole("button", { name: "Send answers" }).click();

    log("the answer streams in: partial text first, then the whole message replaces it");
    await page.waitForFunction(
      () => {
        const s = document.querySelector('[data-testid="streaming"]');
        return !!s && (s.textContent ?? "").includes("6 × 8 is 48.") && !(document.body.textContent ?? "").includes("forty-eight.");
      },
      undefined,
      { timeout: 15_000, polling: 50 },
    );
    await shot(page, "task-streaming", true);
    await page.locator(".msg.assistant:not(.streaming)").filter({ hasText: "the product of six and eight is forty-eight." }).waitFor({ timeout: 15_000 });
    await page.getByTestId("streaming").waitFor({ state: "detached" });
    await page.getByTestId("updates").filter({ hasText: "settled" }).waitFor();
    await page.locator(".page-header .badge").filter({ hasText: "completed" }).waitFor(); // the read after the last status event
    const firstTask = Number(/\/tasks\/(\d+)$/.exec(page.url())?.[1]);
    await page.waitForTimeout(300);
    const afterEnd = watch(page, taskRead(firstTask)); // checked below, after the transcript's steps

    log("the transcript: the call with asked and approved arguments, decider, result, answers, usage");
    const call = page.locator(".msg.tool").filter({ hasText: "calculator" });
    await call.getByText("Approved by you with edited arguments").waitFor();
    expect((await call.locator("pre").first().innerText()).includes('"6*7"'), "the proposed arguments are shown");
    await call.locator(".code.result").filter({ hasText: "6*8 = 48" }).waitFor();
    await page.locator(".qa dd").filter({ hasText: "Units, “Keep it short.”" }).waitFor();
    await page.getByText("812 in · 41 out").waitFor(); // the first turn's tokens
    await page.getByText("990 in · 28 out").waitFor(); // the streamed turn's tokens
    await page.getByTestId("total-usage").filter({ hasText: "2707 in · 135 out" }).waitFor();
    await page.getByText("Completed", { exact: true }).waitFor();
    expect((await page.locator(".status-line").filter({ hasText: /^Paused/ }).count()) === 0, "no pause line outlives its decision");
    log("the follow-up composer sits under the transcript, in the conversation's column");
    const [transcriptBox, composerBox, sideBox] = await Promise.all([page.getByRole("log", { name: "Transcript" }).boundingBox(), page.getByRole("form", { name: "Follow-up" }).boundingBox(), page.locator(".task-side").boundingBox()]);
    expect(!!transcriptBox && !!composerBox && !!sideBox && composerBox.y >= transcriptBox.y + transcriptBox.height - 1 && composerBox.x + composerBox.width <= sideBox.x, `composer ${JSON.stringify(composerBox)} under the transcript ${JSON.stringify(transcriptBox)}, left of ${JSON.stringify(sideBox)}`);
    await shot(page, "task-completed", true);

    log("the run has ended: the page reads the task no more (no GET /tasks/{id} for longer than the 5 s poll interval)");
    const readsAfterEnd = await afterEnd.stop(6_500);
    expect(readsAfterEnd.length === 0, `no read of the completed task, saw ${readsAfterEnd.length} at ${readsAfterEnd.join(", ")} ms`);

    log("continue: the follow-up runs on a new event stream from the last sequence");
    const [stream2] = await Promise.all([
      page.waitForRequest((r) => /\/events\?since_sequence=\d+$/.test(r.url())),
      (async () => {
        await page.getByLabel("Follow-up message").fill("Thanks! And 7*7?");
        await page.getByRole("button", { name: "Continue" }).click();
      })(),
    ]);
    expect(Number(new URL(stream2.url()).searchParams.get("since_sequence")) > 10, `resumed after the log: ${stream2.url()}`);
    await page.locator(".msg.user").filter({ hasText: "Thanks! And 7*7?" }).waitFor();
    await page.getByText("The script has no more turns.").waitFor({ timeout: 15_000 });
    await page.getByTestId("updates").filter({ hasText: "settled" }).waitFor();

    log("reloaded, the page shows both runs of the continued chat from one replay");
    await page.reload();
    await page.getByText("The script has no more turns.").waitFor({ timeout: 15_000 });
    await page.locator(".msg.user").filter({ hasText: "Thanks! And 7*7?" }).waitFor();
    await call.locator(".code.result").filter({ hasText: "6*8 = 48" }).waitFor();
    await page.getByTestId("updates").filter({ hasText: "settled" }).waitFor();

    log("a narrow screen (390 px) shows the same task");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Menu" }).waitFor();
    await shot(page, "task-mobile");
    await page.setViewportSize({ width: 1280, height: 800 });

    log("mint a key (shown once, copied) while the per-agent API is off: the tab warns, calls answer 404 AGENT_API_DISABLED");
    await page.getByRole("link", { name: "Calculator" }).first().click();
    await page.getByRole("link", { name: "API keys" }).click();
    const apiOff = page.getByRole("region", { name: "The per-agent API is off" });
    await apiOff.getByText("SVC_AGENT_API").waitFor();
    await page.getByLabel("Key name").fill("n8n workflow");
    await page.getByRole("button", { name: "Mint key" }).click();
    const keyBox = page.getByLabel("The new key");
    const key = await keyBox.inputValue();
    expect(key.startsWith("svk_"), `minted key ${key.slice(0, 8)}…`);
    const newKey = page.getByRole("region", { name: "New key" });
    await newKey.getByRole("button", { name: "Copy" }).click();
    await newKey.getByRole("button", { name: "Copied" }).waitFor();
    expect((await page.evaluate(() => navigator.clipboard.readText())) === key, "the key is on the clipboard");
    log("the MCP server URL and the A2A agent card URL, each with a copy button");
    const protocols = page.getByRole("region", { name: "MCP and A2A" });
    const mcpURL = await protocols.getByLabel("MCP server URL").inputValue();
    const cardURL = await protocols.getByLabel("A2A agent card URL").inputValue();
    expect(mcpURL === `${base}/api/v1/agent-api/mcp`, `MCP URL ${mcpURL}`);
    expect(cardURL === `${base}/api/v1/agent-api/a2a/.well-known/agent-card.json`, `agent card URL ${cardURL}`);
    await protocols.getByRole("button", { name: "Copy" }).first().click();
    await protocols.getByRole("button", { name: "Copied" }).waitFor();
    expect((await page.evaluate(() => navigator.clipboard.readText())) === mcpURL, "the MCP URL is on the clipboard");
    const offCall = await fetch(`${base}/api/v1/agent-api/chats`, { headers: { Authorization: `Bearer ${key}` } });
    const offBody = (await offCall.json()) as { error?: { code: string; message: string } };
    expect(offCall.status === 404 && offBody.error?.code === "AGENT_API_DISABLED" && offBody.error.message.includes("SVC_AGENT_API"), `a call while the API is off: ${offCall.status} ${JSON.stringify(offBody)}`);
    await shot(page, "agent-keys");

    log("the administrator turns the per-agent API on from the warning; the key works, then is revoked");
    await apiOff.getByRole("button", { name: "Turn on the per-agent API" }).click();
    await apiOff.waitFor({ state: "detached" });
    const chats = await fetch(`${base}/api/v1/agent-api/chats`, { headers: { Authorization: `Bearer ${key}` } });
    expect(chats.status === 200, `a call with the key once the API is on answered ${chats.status}`);
    await page.getByRole("button", { name: "Revoke key n8n workflow" }).click();
    await page.getByText("No keys.").waitFor();
    const after = await fetch(`${base}/api/v1/agent-api/chats`, { headers: { Authorization: `Bearer ${key}` } });
    expect(after.status === 401, `revoked key answered ${after.status}`);

    log("a refused action shows the API's message next to it");
    await page.getByRole("link", { name: "Account" }).click();
    await page.getByLabel("Current password").fill("not my password");
    await page.getByLabel("New password").fill("another long password");
    const [pw] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/auth/password")), page.getByRole("button", { name: "Change password" }).click()]);
    const pwMsg = ((await pw.json()) as { error: { message: string } }).error.message;
    expect(pw.status() === 422, `password refusal ${pw.status()}`);
    expect((await page.getByRole("alert").innerText()).trim() === pwMsg, `the alert shows "${pwMsg}"`);

    log("profile and locations (an impossible latitude is refused)");
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("Last name").fill("Lovelace");
    await page.getByLabel("Time zone").fill("Europe/London");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.getByText("Profile saved.").waitFor();
    const loc = page.locator("section").filter({ has: page.getByRole("heading", { name: "Locations" }) });
    await loc.getByLabel("Location name").fill("Office");
    await loc.getByLabel("Address").fill("12 St James's Square, London");
    await loc.getByLabel("Latitude").fill("200");
    await loc.getByLabel("Longitude").fill("-0.13");
    await expectRefusal(page, loc, /\/me\/locations$/, () => loc.getByRole("button", { name: "Add location" }).click());
    await loc.getByLabel("Latitude").fill("51.507");
    await loc.getByLabel("Default location").check();
    await loc.getByRole("button", { name: "Add location" }).click();
    await loc.getByText("(51.507, -0.13)").waitFor();
  await loc.getByRole("button", { name: "Edit location Office" }).click();
  const editLoc = loc.locator("form").filter({ has: page.getByRole("heading", { name: "Edit “Office”" }) });
  await editLoc.getByLabel("Location name").fill("Head office");
  await editLoc.getByLabel("Longitude").fill("-0.134");
  await editLoc.getByRole("button", { name: "Save location" }).click();
  await loc.getByText("(51.507, -0.134)").waitFor();
  await loc.getByRole("button", { name: "Edit location Head office" }).waitFor();
    await page.getByLabel("Upload a picture").setInputFiles({ name: "ada.png", mimeType: "image/png", buffer: png });
    await page.getByRole("img", { name: "Your picture" }).waitFor();
    await shot(page, "account");

    log("locations: what is typed into the new-location form survives the list's first load");
    const heldLocations = await holdLists(page, /\/api\/v1\/me\/locations$/);
    await page.getByRole("link", { name: "Agents" }).first().click();
    await page.getByRole("link", { name: "Account" }).click();
    await loc.getByLabel("Location name").fill("Home");
    expect((await loc.getByRole("button", { name: "Edit location Head office" }).count()) === 0, "the list is not loaded yet");
    await heldLocations.release();
    await loc.getByRole("button", { name: "Edit location Head office" }).waitFor();
    expect((await loc.getByLabel("Location name").inputValue()) === "Home", `the typed name is kept after the list loaded: "${await loc.getByLabel("Location name").inputValue()}"`);

    log("a second agent, marked favorite, is listed first");
    await page.getByRole("link", { name: "Agents" }).click();
    await page.getByRole("link", { name: "New agent" }).click();
    await page.getByLabel("Name").fill("Researcher");
    await page.getByLabel("Description").fill("Reads web pages and summarises them for the team.");
    await page.getByRole("button", { name: "Create agent" }).click();
    await page.getByRole("heading", { name: "Researcher", exact: true, level: 1 }).waitFor();
    await page.getByRole("link", { name: "Agents" }).first().click();
    await page.getByRole("button", { name: "Add Researcher to favorites" }).click();
    await page.getByRole("button", { name: "Remove Researcher from favorites" }).waitFor();
    const names = await page.locator(".agent-card h2").allInnerTexts();
    expect(names[0] === "Researcher", `favorites first: ${names.join(", ")}`);
    await shot(page, "agents");

    log("the chats list");
    await page.getByRole("link", { name: "Chats" }).click();
    await page.getByRole("cell", { name: /#1 What is 6\*7/ }).waitFor();
    await shot(page, "chats");
    const [filtered] = await Promise.all([page.waitForRequest((r) => /\/tasks\?.*agent_id=\d+/.test(r.url())), page.getByLabel("Agent", { exact: true }).selectOption({ label: "Researcher" })]);
    expect(filtered.url().includes("agent_id="), `the agent filter is the API's: ${filtered.url()}`);
    await page.getByText("No chats.").waitFor();
    await page.getByLabel("Agent", { exact: true }).selectOption({ label: "Any" });

    log("at 390 px the chats list keeps every column in view (status included), the agent tabs scroll, dark too");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("cell", { name: /#1 What is 6\*7/ }).waitFor();
    const cut = await page.evaluate(() => {
      const w = document.documentElement.clientWidth;
      return Array.from(document.querySelectorAll("main table th, main table td")).filter((c) => {
        const r = c.getBoundingClientRect();
        return !c.classList.contains("hide-narrow") && (r.right > w + 1 || r.width === 0 || getComputedStyle(c).display === "none"); // "Updated" alone gives way
      }).map((c) => c.textContent ?? "");
    });
    const statusCells = await page.locator("main table tbody tr td .badge").count();
    expect(cut.length === 0 && statusCells > 0, `every cell of the chats list within 390 px: cut ${JSON.stringify(cut.slice(0, 4))}, ${statusCells} status badges`);
    await page.emulateMedia({ colorScheme: "dark" });
    await shot(page, "chats-mobile-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.getByRole("cell", { name: /#1 What is 6\*7/ }).getByRole("link").click();
    await page.getByRole("link", { name: "Calculator" }).first().click();
    const agentTabs = page.getByRole("navigation", { name: "Agent sections" });
    await agentTabs.getByRole("link", { name: "Schedules" }).click();
    const tabs = await agentTabs.evaluate((n) => {
      const a = n.querySelector('[aria-current="page"]') as HTMLElement;
      const nr = n.getBoundingClientRect();
      const ar = a.getBoundingClientRect();
      return { scrolls: n.scrollWidth > n.clientWidth, overflowX: getComputedStyle(n).overflowX, inView: ar.left >= nr.left - 1 && ar.right <= nr.right + 1, page: document.documentElement.scrollWidth - document.documentElement.clientWidth };
    });
    expect(tabs.scrolls && tabs.overflowX === "auto" && tabs.inView && tabs.page <= 0, `the agent tabs scroll inside their bar, the current one in view: ${JSON.stringify(tabs)}`);
    await shot(page, "agent-tabs-mobile");
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Chats" }).click();
    await page.getByRole("heading", { name: "Chats", exact: true }).waitFor();

    log("keyboard: the skip link is the first stop");
    await page.reload();
    await page.getByRole("heading", { name: "Chats", exact: true }).waitFor();
    await page.keyboard.press("Tab");
    const first = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 80));
    expect(first?.includes("Skip to content") === true, `skip link first, got ${first}`);

    await adminPages(page, base, catalog.url, join(dir, "svc.log"));

    await clientMode(browser, problems);

    await agentMemory(browser, problems);

    await longChat(browser, problems);

    await approvalsInbox(browser, problems);

    await pushFallback(browser, problems);

    await firstHour(browser, problems);

    expect(problems.length === 0, `no script errors or CSP violations:\n${problems.join("\n")}`);
    expect(a11y.length === 0, `axe-core: no serious or moderate violations on any page checked:\n${a11y.join("\n")}`);
    console.log(`e2e: all flows passed in ${((Date.now() - started) / 1000).toFixed(1)}s; screenshots in ${shots}`);
  } catch (err) {
    console.error(`e2e FAILED at "${step}": ${(err as Error).message}`);
    if (problems.length) console.error(problems.join("\n"));
    if (a11y.length) console.error(`axe-core so far:\n${a11y.join("\n")}`);
    console.error(`svc log (last lines):\n${safeRead(join(dir, "svc.log"))}`);
    process.exitCode = 1;
  } finally {
    await browser?.close();
    catalog.server.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAKklEQVR42mNkYPhfz0AEYBxVSF+FjIyM/4lSOKqQvgpHo3lUIX0VkhzNAACvFx/x6Zk1OwAAAABJRU5ErkJggg==", "base64");

/** expectRefusal clicks, waits for the answer of the request whose URL matches, and checks that the
 * API's message is shown in an alert inside scope. */
async function expectRefusal(page: Page, scope: ReturnType<Page["locator"]>, url: RegExp, act: () => Promise<void>): Promise<string> {
  const [r] = await Promise.all([page.waitForResponse((x) => url.test(x.url()) && x.request().method() !== "GET"), act()]);
  expect(r.status() >= 400, `refused: ${r.url()} answered ${r.status()}`);
  const msg = ((await r.json()) as { error: { message: string } }).error.message;
  await scope.getByRole("alert").filter({ hasText: msg }).waitFor();
  return msg;
}

// adminPages: users, groups (members, model configurations, tool settings), notifications,
// server settings, plugins, media, the agent's picture, export, schedules, templates import,
// the palette and the transfer of an agent.
async function adminPages(page: Page, base: string, catalogURL: string, logPath: string): Promise<void> {
  log("users: create a user; a duplicate is refused with the API's message; grant a role");
  await page.getByRole("link", { name: "Users" }).click();
  const newUser = page.locator("form").filter({ has: page.getByRole("heading", { name: "New user" }) });
  const fillUser = async () => {
    await newUser.getByLabel("Email").fill("bob@example.com");
    await newUser.getByLabel("Display name").fill("Bob Babbage");
    await newUser.getByLabel("Initial password").fill("another good password");
  };
  await fillUser();
  await newUser.getByRole("button", { name: "Create user" }).click();
  await page.getByRole("link", { name: "Bob Babbage" }).waitFor();
  await fillUser();
  await expectRefusal(page, newUser, /\/users$/, () => newUser.getByRole("button", { name: "Create user" }).click());
  await shot(page, "users");
  await page.getByRole("link", { name: "Bob Babbage" }).click();
  await page.getByLabel("Role to grant").fill("auditor");
  await page.getByRole("button", { name: "Grant" }).click();
  await page.getByRole("button", { name: "Revoke auditor" }).waitFor();

  log("groups: create one, add a member (an unknown email is refused), change a role");
  await page.getByRole("link", { name: "Groups" }).click();
  await page.getByLabel("Group name").fill("Finance");
  await page.getByLabel("Description").fill("The finance team's agents and models.");
  await page.getByRole("button", { name: "Create group" }).click();
  await page.getByRole("heading", { name: "Finance", level: 1 }).waitFor();
  const addMember = page.locator("form").filter({ has: page.getByRole("heading", { name: "Add a member" }) });
  await addMember.getByLabel("Member's email").fill("nobody@example.com");
  await expectRefusal(page, addMember, /\/members$/, () => addMember.getByRole("button", { name: "Add member" }).click());
  await addMember.getByLabel("Member's email").fill("bob@example.com");
  await addMember.getByRole("button", { name: "Add member" }).click();
  await Promise.all([page.waitForResponse((r) => /\/members\/\d+$/.test(r.url()) && r.request().method() === "PATCH"), page.getByLabel("Role of bob@example.com").selectOption("admin")]);
  await page.getByRole("cell", { name: /Bob Babbage/ }).waitFor();
  await shot(page, "group-members");

  log("groups: a model configuration (scripted, administrators only) becomes the default; its key is write-only");
  await page.getByRole("link", { name: "Model configurations" }).click();
  await page.getByLabel("Configuration name").fill("Demo script");
  await page.getByLabel("Driver").selectOption("scripted");
  await page.getByLabel("Model", { exact: true }).fill("script");
  await page.getByLabel("Script file (on the server)").fill("script.json");
  expect((await page.getByLabel("API key").getAttribute("type")) === "password", "the API key field is masked");
  await page.getByLabel("The group's default").check();
  await page.getByRole("button", { name: "Add configuration" }).click();
  const configs = page.locator("section").filter({ has: page.getByRole("heading", { name: "Configurations" }) });
  await configs.getByRole("listitem").filter({ hasText: "Demo script" }).getByText("default").waitFor();
  expect((await page.getByLabel("Configuration name").inputValue()) === "", "the new-configuration form is empty again");

  log("groups: a model configuration is edited in place; the stored key is kept (not sent back)");
  await configs.getByRole("button", { name: "Edit configuration Demo script" }).click();
  const editLlm = configs.locator("form").filter({ has: page.getByRole("heading", { name: "Edit “Demo script”" }) });
  expect((await editLlm.getByLabel("Script file (on the server)").inputValue()) === "script.json", "the edit form holds the configuration");
  await editLlm.getByLabel("Timeout (s)").fill("30");
  const [patchLlm] = await Promise.all([page.waitForRequest((r) => /\/llm-configs\/\d+$/.test(r.url()) && r.method() === "PATCH"), editLlm.getByRole("button", { name: "Save configuration" }).click()]);
  const llmBody = JSON.parse(patchLlm.postData() ?? "{}") as { timeout?: number; api_key?: string; is_default?: boolean };
  expect(llmBody.timeout === 30 && llmBody.is_default === true && !("api_key" in llmBody), `the edit sends the form, without a key: ${patchLlm.postData()}`);
  await editLlm.waitFor({ state: "detached" });
  expect(await configs.getByRole("button", { name: "Edit configuration Demo script" }).evaluate((b) => b === document.activeElement), "focus is back on Edit");
  await configs.getByRole("listitem").filter({ hasText: "Demo script" }).getByText("default").waitFor();
  await shot(page, "group-models");

  log("groups: tool settings of the group");
  await page.getByRole("link", { name: "Tools", exact: true }).click();
  const readUrl = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "Read URL", exact: true }) });
  await readUrl.getByText(/Settings for the group/).click();
  await readUrl.getByLabel("Maximum size (bytes)").fill("500000");
  await Promise.all([page.waitForResponse((r) => /\/groups\/\d+\/tools\/core\./.test(r.url()) && r.ok()), readUrl.getByRole("button", { name: "Save settings" }).click()]);

  log("groups: the group's picture");
  await page.getByRole("navigation", { name: "Group sections" }).getByRole("link", { name: "Settings" }).click();
  await page.getByLabel("Upload a picture").setInputFiles({ name: "finance.png", mimeType: "image/png", buffer: png });
  await page.getByRole("img", { name: "Picture of Finance" }).waitFor();

  log("notifications: the approval and the question were decided, so their notifications are read; subscribe to an agent");
  const bell = page.getByRole("link", { name: "Notifications", exact: true });
  await bell.waitFor();
  await bell.click();
  await page.getByRole("heading", { name: "Notifications", level: 1 }).waitFor();
  await page.locator(".note").filter({ hasText: "needs approval" }).first().waitFor();
  expect((await page.locator(".note.unread").count()) === 0, "a decided approval's notification stays unread");
  await page.getByLabel("Follow").selectOption({ label: "Agent Calculator" });
  await page.getByRole("checkbox", { name: "chat completed" }).check();
  await page.getByRole("button", { name: "Subscribe" }).click();
  await page.getByText("agent Calculator: chat completed").waitFor();
  await shot(page, "notifications");

  log("notifications: a new one arrives through the push channel, without reloading or polling");
  expect(hubTopics.some((t) => t.endsWith("/notifications")), `the bell follows the notifications topic: ${hubTopics.join(", ")}`);
  const me = (await (await page.request.get(`${base}/api/v1/auth/me`)).json()) as { data: { csrf_token: string } };
  const agents = (await (await page.request.get(`${base}/api/v1/agents`)).json()) as { data: { agents: { id: number; name: string }[] } };
  const calcAgent = agents.data.agents.find((a) => a.name === "Calculator");
  const polls: string[] = [];
  const countPolls = (r: { url: () => string }) => void (r.url().includes("/notifications?") && polls.push(r.url()));
  page.on("request", countPolls);
  const pushed = await page.request.post(`${base}/api/v1/tasks`, { headers: { "X-CSRF-Token": me.data.csrf_token }, data: { agent_id: calcAgent?.id, prompt: "What is 2*21?" } });
  expect(pushed.status() === 201, `task created: ${pushed.status()}`);
  await page.locator(".note.unread").first().waitFor({ timeout: 15_000 }); // the open list follows too
  await page.getByRole("link", { name: /^Notifications, 1 unread$/ }).waitFor();
  page.off("request", countPolls);
  // Each pushed notification reloads the count and the list once; the bell's poll is off while the stream is open.
  expect(polls.length <= 4, `reloads after the push: ${polls.join(", ")}`);
  await page.getByRole("button", { name: "Mark all read" }).click();
  await page.getByRole("link", { name: "Notifications", exact: true }).waitFor();

  log("plugins without a catalog configured: a neutral empty state pointing to the setting, no error, nothing logged at ERROR");
  const [catResp] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/plugins/catalog")), page.getByRole("link", { name: "Plugins" }).click()]);
  expect(catResp.status() === 200, `no catalog configured answers ${catResp.status()}`);
  const emptyCatalog = page.getByTestId("catalog-empty");
  await emptyCatalog.getByText("No plugin catalog is configured").waitFor();
  await emptyCatalog.getByRole("link", { name: "Server settings" }).waitFor();
  expect((await page.getByRole("alert").count()) === 0, "no error shown for a normal state");
  await shot(page, "plugins-no-catalog");
  const errorLines = readFileSync(logPath, "utf8").split("\n").filter((l) => l.includes("/plugins/catalog") && /ERROR/.test(l));
  expect(errorLines.length === 0, `nothing logged at ERROR for the catalog: ${errorLines.join("\n")}`);

  log("server settings: mail configuration and its test message");
  await page.getByRole("link", { name: "Server", exact: true }).click();
  await page.getByLabel("Driver").selectOption("log");
  await page.getByLabel("From address").fill("svc@example.com");
  await page.getByRole("button", { name: "Save mail settings" }).click();
  await page.getByText("Saved.").waitFor();
  const test = page.locator("form").filter({ has: page.getByRole("heading", { name: "Send a test message" }) });
  await test.getByLabel("Send the test to").fill("ada@example.com");
  const [t] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/mail-config/test")), test.getByRole("button", { name: "Send test message" }).click()]);
  const outcome = (await t.json()) as { data?: { sent: boolean }; error?: { message: string } };
  if (t.ok()) await test.getByText(outcome.data?.sent ? "Sent to ada@example.com." : "Not sent to ada@example.com").waitFor();
  else await test.getByRole("alert").filter({ hasText: outcome.error?.message ?? "" }).waitFor();

  log("server settings: runtime settings (a refused value stores nothing); the catalog address and plugin install, stored");
  const runtime = page.locator("form").filter({ has: page.getByRole("heading", { name: "Runtime settings" }) });
  await runtime.getByText("plugin_install_enabled · default").waitFor();
  await runtime.getByLabel("Catalog cache (seconds)").fill("-5");
  await expectRefusal(page, runtime, /\/runtime-settings$/, () => runtime.getByRole("button", { name: "Save runtime settings" }).click());
  await runtime.getByLabel("Catalog cache (seconds)").fill("600");
  await runtime.getByLabel("Plugin catalog address").fill(catalogURL);
  await runtime.getByRole("checkbox", { name: "Plugin install" }).check();
  const [saved] = await Promise.all([page.waitForRequest((r) => r.url().endsWith("/runtime-settings") && r.method() === "PATCH"), runtime.getByRole("button", { name: "Save runtime settings" }).click()]);
  expect(Object.keys((JSON.parse(saved.postData() ?? "{}") as { settings: object }).settings).sort().join() === "plugin_catalog_ttl,plugin_catalog_url,plugin_install_enabled", `only the changed settings are sent: ${saved.postData()}`);
  await runtime.getByText("Runtime settings saved.").waitFor();
  await runtime.getByText("plugin_install_enabled · stored here").waitFor();
  await shot(page, "settings");

  log("plugins: browse the catalog, install a package (its template appears), uninstall it");
  await page.getByRole("link", { name: "Plugins" }).click();
  await page.getByRole("heading", { name: "Plugins", level: 1 }).waitFor();
  const entry = page.getByRole("row").filter({ hasText: "Says hello: one agent template." });
  await entry.getByRole("button", { name: "Install Hello" }).click();
  const card = page.getByRole("list", { name: "Installed plugins" }).getByRole("listitem").filter({ hasText: "acme/hello" });
  await card.getByText("Contributes 1 agent templates.").waitFor({ timeout: 15_000 });
  await entry.getByText("1.0.0 (installed)").waitFor();
  await shot(page, "plugins");
  const tpls = (await (await page.request.get(`${base}/api/v1/agent-templates`)).json()) as { data: { templates: { id: string }[] } };
  expect(tpls.data.templates.some((t) => t.id === "hello/greeter"), "the package's template is offered after the install");
  await card.getByRole("button", { name: "Uninstall" }).click();
  await card.waitFor({ state: "detached" });
  await entry.getByRole("button", { name: "Install Hello" }).waitFor();

  log("media: upload a picture into the archive");
  await page.getByRole("link", { name: "Media" }).click();
  await page.getByLabel("File").setInputFiles({ name: "chart.png", mimeType: "image/png", buffer: png });
  await page.getByRole("cell", { name: /chart\.png image\/png/ }).waitFor();
  await shot(page, "media");

  log("agent: tool settings for the agent, picture, export; schedules and a prompt template (undeclared placeholders and a bad cron are refused)");
  await page.getByRole("link", { name: "Agents" }).first().click();
  await page.getByRole("link", { name: "Calculator" }).click();
  await page.getByRole("navigation", { name: "Agent sections" }).getByRole("link", { name: "Tools" }).click();
  const agentReadUrl = page.getByRole("listitem").filter({ has: page.getByRole("heading", { name: "Read URL", exact: true }) });
  await agentReadUrl.getByText(/Settings for this agent/).click();
  await agentReadUrl.getByLabel("User agent").fill("svc-e2e/1.0");
  await agentReadUrl.getByRole("button", { name: "Save for this agent" }).click();
  await agentReadUrl.getByText("Saved for this agent.").waitFor();
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByLabel("Upload a picture").setInputFiles({ name: "calc.png", mimeType: "image/png", buffer: png });
  await page.getByRole("img", { name: "Picture of Calculator" }).waitFor();
  await page.getByRole("button", { name: "Export" }).click();
  const exported = await page.getByLabel("Template (JSON)").inputValue();
  expect(exported.includes("core.CalculatorTool"), "the export names the calculator");
  await page.evaluate(() => {
    document.getElementById("agent-picture-h")?.scrollIntoView({ block: "start" });
    window.scrollBy(0, -90);
  });
  await shot(page, "agent-picture-export", true);
  await page.getByRole("link", { name: "Schedules" }).click();
  await page.getByLabel("Template name").fill("Daily sum");
  await page.getByLabel("Template text").fill("Add up {{numbers}}.");
  const tplForm = page.locator("form").filter({ has: page.getByRole("heading", { name: "New prompt template" }) });
  await expectRefusal(page, tplForm, /\/templates$/, () => tplForm.getByRole("button", { name: "Add template" }).click());
  await tplForm.getByLabel("Variables").fill("numbers=1, 2, 3");
  await tplForm.getByRole("button", { name: "Add template" }).click();
  await page.getByText("Add up {{numbers}}.").waitFor();
  const sched = page.locator("form").filter({ has: page.getByRole("heading", { name: "New scheduled run" }) });
  await sched.getByLabel("Schedule name").fill("Morning check");
  await sched.getByLabel("Prompt", { exact: true }).fill("What is 2+2?");
  await sched.getByLabel("Cron expression").fill("every morning");
  await expectRefusal(page, sched, /\/scheduled-runs$/, () => sched.getByRole("button", { name: "Add schedule" }).click());
  await sched.getByLabel("Cron expression").fill("0 8 * * 1-5");
  await sched.getByRole("button", { name: "Add schedule" }).click();
  await page.getByText("cron 0 8 * * 1-5").waitFor();
  expect((await sched.getByLabel("Schedule name").inputValue()) === "", "the new-schedule form is empty again");

  log("schedules: edit a scheduled run in place (a bad cron is refused there, Escape cancels), and a prompt template");
  await page.getByRole("button", { name: "Edit schedule Morning check" }).click();
  const editRun = page.locator("form").filter({ has: page.getByRole("heading", { name: "Edit “Morning check”" }) });
  expect((await editRun.getByLabel("Cron expression").inputValue()) === "0 8 * * 1-5", "the edit form holds the schedule");
  await page.waitForFunction(() => document.activeElement?.closest("form")?.querySelector("h3")?.textContent === "Edit “Morning check”"); // focus moved into the form
  await page.keyboard.press("Escape");
  await editRun.waitFor({ state: "detached" });
  expect(await page.getByRole("button", { name: "Edit schedule Morning check" }).evaluate((b) => b === document.activeElement), "focus is back on Edit");
  await page.getByRole("button", { name: "Edit schedule Morning check" }).click();
  await editRun.getByLabel("Schedule name").fill("Weekday check");
  await editRun.getByLabel("Cron expression").fill("sometimes");
  await expectRefusal(page, editRun, /\/scheduled-runs\/\d+$/, () => editRun.getByRole("button", { name: "Save schedule" }).click());
  await editRun.getByLabel("Cron expression").fill("30 9 * * 1-5");
  await editRun.getByLabel("Step budget (optional)").fill("5");
  const [putRun] = await Promise.all([page.waitForRequest((r) => /\/scheduled-runs\/\d+$/.test(r.url()) && r.method() === "PUT"), editRun.getByRole("button", { name: "Save schedule" }).click()]);
  expect((JSON.parse(putRun.postData() ?? "{}") as { prompt?: string }).prompt === "What is 2+2?", `the prompt is kept: ${putRun.postData()}`);
  await page.getByText("cron 30 9 * * 1-5").waitFor();
  await page.getByRole("button", { name: "Edit schedule Weekday check" }).waitFor();
  await page.getByRole("button", { name: "Edit template Daily sum" }).click();
  const editTpl = page.locator("form").filter({ has: page.getByRole("heading", { name: "Edit “Daily sum”" }) });
  await editTpl.getByLabel("Template text").fill("Add up {{numbers}} and {{more}}.");
  await expectRefusal(page, editTpl, /\/templates\/\d+$/, () => editTpl.getByRole("button", { name: "Save template" }).click());
  await editTpl.getByLabel("Variables").fill("numbers=1, 2, 3\nmore=4");
  await editTpl.getByRole("button", { name: "Save template" }).click();
  await page.getByText("Add up {{numbers}} and {{more}}.").waitFor();
  await page.getByText("Variables: numbers (1, 2, 3), more (4)").waitFor();
  await shot(page, "agent-schedules");
  log("schedules at 390 px: the lists and an open edit form fit the width");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("button", { name: "Edit schedule Weekday check" }).click();
  const narrowEdit = page.locator("form").filter({ has: page.getByRole("heading", { name: "Edit “Weekday check”" }) });
  await narrowEdit.getByLabel("Cron expression").waitFor();
  const [overflow, wide] = await page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const culprits = Array.from(document.querySelectorAll("main *")).filter((e) => e.getBoundingClientRect().right > w + 1).map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
    return [document.documentElement.scrollWidth - w, culprits.slice(0, 6).join(", ")] as const;
  });
  expect(overflow <= 0, `no horizontal scrolling at 390 px (${overflow} px too wide: ${wide})`);
  await narrowEdit.getByRole("button", { name: "Cancel" }).click();
  await narrowEdit.waitFor({ state: "detached" });
  await page.setViewportSize({ width: 1280, height: 800 });

  log("schedules: what is typed into the new-schedule and new-template forms survives the lists' first load");
  const heldLists = await holdLists(page, /\/api\/v1\/agents\/\d+\/(scheduled-runs|templates)$/);
  await page.getByRole("navigation", { name: "Agent sections" }).getByRole("link", { name: "Settings" }).click();
  await page.getByRole("navigation", { name: "Agent sections" }).getByRole("link", { name: "Schedules" }).click();
  await sched.getByLabel("Schedule name").fill("Evening check");
  await tplForm.getByLabel("Template name").fill("Weekly sum");
  expect((await page.getByRole("button", { name: "Edit schedule Weekday check" }).count()) === 0, "the lists are not loaded yet");
  await heldLists.release();
  await page.getByRole("button", { name: "Edit schedule Weekday check" }).waitFor();
  await page.getByRole("button", { name: "Edit template Daily sum" }).waitFor();
  const kept = [await sched.getByLabel("Schedule name").inputValue(), await tplForm.getByLabel("Template name").inputValue()];
  expect(kept[0] === "Evening check" && kept[1] === "Weekly sum", `the typed names are kept after the lists loaded: ${JSON.stringify(kept)}`);

  log("templates: reached from the agents page; the validator's findings by code and path; import the export as a new agent");
  await page.getByRole("link", { name: "Agents" }).first().click();
  await page.getByRole("link", { name: "New from template / Import" }).click();
  await page.getByRole("heading", { name: "Import an agent template" }).waitFor();
  await page.getByLabel("Shipped templates").locator("option").nth(1).waitFor({ state: "attached" }); // the shipped templates are offered there
  await page.getByLabel("Template text").fill('{"id": "Not An Id", "agent": {"max_steps": 0}}');
  await page.getByRole("button", { name: "Validate" }).click();
  const findings = page.locator(".findings.f-bad");
  await findings.locator("td.mono").first().waitFor();
  const codes = await findings.locator("tbody tr td:first-child").allInnerTexts();
  expect(codes.length > 0 && codes.every((c) => /^[A-Z_]+$/.test(c)), `finding codes: ${codes.join(", ")}`);
  await page.getByRole("button", { name: "Validate" }).waitFor();
  await page.getByLabel("Template text").fill('{"id": "Not An Id", "name": "x", "version": "1.0.0", "agent": {"max_steps": 500}}'); // clears the findings
  const validates: string[] = [];
  const countValidates = (r: { url: () => string }) => void (r.url().includes("/agent-templates/validate") && validates.push(r.url()));
  page.on("request", countValidates);
  await expectRefusal(page, page.locator("section").filter({ has: page.getByRole("heading", { name: "Template", exact: true }) }), /\/agent-templates\/import/, () => page.getByRole("button", { name: "Import as a new agent" }).click());
  await findings.locator("tr").filter({ hasText: "MAX_STEPS_RANGE" }).filter({ hasText: "/agent/max_steps" }).waitFor();
  page.off("request", countValidates);
  expect(validates.length === 0, "the refused import's own details give the findings");
  await shot(page, "template-import");
  await page.getByLabel("Template text").fill(exported.replace(/"name": "Calculator"/, '"name": "Calculator copy"'));
  await page.getByRole("button", { name: "Import as a new agent" }).click();
  await page.getByRole("heading", { name: "Calculator copy", level: 1 }).waitFor();

  log("palette (Ctrl+K): find an agent and open it");
  await page.keyboard.press("Control+k");
  await page.getByLabel("Search pages, agents and more").fill("resea");
  await page.getByRole("option", { name: /Researcher/ }).waitFor();
  await shot(page, "palette");
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Researcher", level: 1 }).waitFor();

  log("a group administrator who is not a server administrator is refused the scripted driver");
  const bob = await page.context().browser()!.newContext({ viewport: { width: 1280, height: 800 } });
  const bp = await bob.newPage();
  bp.setDefaultTimeout(10_000);
  await bp.goto(`${base}/login`);
  await bp.getByLabel("Email").fill("bob@example.com");
  await bp.getByLabel("Password").fill("another good password");
  await bp.getByRole("button", { name: "Sign in" }).click();
  await bp.getByRole("heading", { name: "Agents", exact: true }).waitFor();
  expect((await bp.getByRole("link", { name: "Users" }).count()) === 0, "no Users page for a non-administrator");
  await bp.getByRole("link", { name: "Groups" }).click();
  await bp.getByRole("link", { name: "Finance" }).click();
  await bp.getByRole("link", { name: "Model configurations" }).click();
  const llm = bp.locator("form").filter({ has: bp.getByRole("heading", { name: "New model configuration" }) });
  await llm.getByLabel("Configuration name").fill("My script");
  await llm.getByLabel("Driver").selectOption("scripted");
  await llm.getByLabel("Model", { exact: true }).fill("script");
  await expectRefusal(bp, llm, /\/llm-configs$/, () => llm.getByRole("button", { name: "Add configuration" }).click());
  await llm.getByRole("alert").scrollIntoViewIfNeeded();
  await shot(bp, "group-models-refused", true);
  await bob.close();

  log("transfer an agent to the group");
  await page.getByRole("link", { name: "Settings" }).click();
  await page.getByLabel("New owner").selectOption({ label: "Group Finance" });
  await page.getByRole("button", { name: "Transfer agent" }).click();
  await page.getByText("Transferred to Group Finance.").waitFor();
  void base;
}


// clientMode: a second server in client-worker mode, where no daemon runs tasks: the open
// console discovers and ticks them (and calls housekeeping).
async function clientMode(browser: Browser, problems: string[]): Promise<void> {
  log("client-worker mode: the page itself ticks the task to its answer");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-client-"));
  const { proc, base } = await startServer(dir, { SVC_WORKER_RUNTIME_MODE: "client" }, script);
  try {
    // Set-up through the API: account, agent, tools (the browser part is what matters here).
    const call = await apiSession(base, "bea@example.com", "correct horse battery");
    const agent = (await call("POST", "/agents", { name: "Client calculator" })).agent as { id: number };
    for (const tool of ["core.CalculatorTool", "core.AskUserQuestionTool"]) await call("POST", `/agents/${agent.id}/tools/${tool}/enable`);
    await call("PATCH", `/agents/${agent.id}/tools/core.CalculatorTool/operations/calculate`, { enabled: true, auto_approve: false });

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`client mode page error: ${e.message}`));
    const ticks: string[] = [];
    page.on("request", (r) => {
      if (r.url().endsWith("/tick")) ticks.push(r.url());
    });
    await signIn(page, base, "bea@example.com", "correct horse battery");
    await page.getByRole("link", { name: "Client calculator", exact: true }).click();
    await page.getByLabel("Prompt").fill("What is 6*7?");
    await page.getByRole("button", { name: "Start chat" }).click();
    await page.getByRole("heading", { name: "Approval needed" }).waitFor();
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await page.getByRole("heading", { name: "The agent asks" }).waitFor();
    await page.getByRole("radio", { name: "Sentence" }).check();
    await page.getByRole("checkbox", { name: "Working" }).check();
    await page.getByRole("button", { name: "Send answers" }).click();
    await page.getByText("the product of six and eight is forty-eight").waitFor();
    expect(ticks.length >= 3, `the page ticked the task (${ticks.length} ticks)`);
    await context.close();
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

// agentMemory: a server whose model remembers a fact with the memory tool in a chat run through
// the API; the agent's Memory tab lists it with its origin, finds it by a word, edits it and
// deletes it.
async function agentMemory(browser: Browser, problems: string[]): Promise<void> {
  log("memory: a fact remembered in a chat is listed, searched, edited and deleted on the Memory tab");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-memory-"));
  const turns = [{ tool_calls: [{ id: "m1", name: "memory", arguments: { action: "remember", text: "Cleo drinks her coffee black." } }] }, { text: "Noted." }];
  const { proc, base } = await startServer(dir, {}, turns);
  try {
    const call = await apiSession(base, "cleo@example.com", "correct horse battery");
    const agent = (await call("POST", "/agents", { name: "Barista" })).agent as { id: number };
    await call("POST", `/agents/${agent.id}/tools/core.MemoryTool/enable`);
    const task = (await call("POST", "/tasks", { agent_id: agent.id, prompt: "I take my coffee black." })).task as { id: number };
    for (let i = 0; i < 100; i++) {
      const t = (await call("GET", `/tasks/${task.id}`)).task as { status: string };
      if (t.status === "COMPLETED") break;
      expect(!["FAILED", "ABORTED"].includes(t.status) && i < 99, `memory task ended ${t.status}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`memory page error: ${e.message}`));
    page.on("dialog", (d) => void d.accept());
    await signIn(page, base, "cleo@example.com", "correct horse battery");
    await page.getByRole("link", { name: "Barista" }).click();
    await page.getByRole("navigation", { name: "Agent sections" }).getByRole("link", { name: "Memory" }).click();
    const item = page.getByRole("listitem").filter({ hasText: "Cleo drinks her coffee black." });
    await item.filter({ hasText: `from task ${task.id}` }).waitFor();
    await page.getByLabel("Search memories").fill("tea");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByText("No memory matches.").waitFor();
    await page.getByLabel("Search memories").fill("Coffee");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByText("1 memory match “Coffee”").waitFor();
    await shot(page, "agent-memory");
    await item.getByRole("button", { name: /^Edit memory/ }).click();
    await page.getByLabel("Text", { exact: true }).fill("Cleo drinks her coffee with oat milk.");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const edited = page.getByRole("listitem").filter({ hasText: "Cleo drinks her coffee with oat milk." });
    await edited.waitFor();
    await edited.getByRole("button", { name: /^Delete memory/ }).click();
    await page.getByText("No memory matches.").waitFor();
    const left = (await call("GET", `/agents/${agent.id}/memories`)) as { total: number };
    expect(left.total === 0, `memories left after the delete: ${left.total}`);
    await context.close();
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

// longChat (issue 25): a chat of long follow-ups through a 2,000-token window. The scripted
// model answers each turn and writes the summaries, so the task's page shows the compaction as
// a divider that opens on the summary the model was sent in place of the earlier turns.
async function longChat(browser: Browser, problems: string[]): Promise<void> {
  log("long chat: follow-ups through a small context window are compacted; the chat shows the summary divider");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-long-"));
  const turns = Array.from({ length: 8 }, (_, i) => ({ text: `Answer ${i + 1}.`, usage: { input_tokens: 100, output_tokens: 5 } }));
  const { proc, base } = await startServer(dir, {}, turns);
  try {
    const call = await apiSession(base, "lin@example.com", "correct horse battery");
    const cfg = (await call("GET", "/llm-configs/default")).llm_config as { id: number; group_id: number };
    await call("PATCH", `/groups/${cfg.group_id}/llm-configs/${cfg.id}`, { context_window: 2000, max_tokens_output: 200 });
    const agent = (await call("POST", "/agents", { name: "Chatter", allow_followup: true })).agent as { id: number };
    const say = (i: number) => `Message ${i}: ` + "lorem ipsum ".repeat(100);
    const task = (await call("POST", "/tasks", { agent_id: agent.id, prompt: say(1) })).task as { id: number };
    const settle = async () => {
      for (let i = 0; i < 100; i++) {
        const t = (await call("GET", `/tasks/${task.id}`)).task as { status: string };
        if (t.status === "COMPLETED") return;
        expect(!["FAILED", "ABORTED"].includes(t.status) && i < 99, `long chat task ended ${t.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await settle();
    for (let i = 2; i <= 8; i++) {
      await call("POST", `/tasks/${task.id}/continue`, { prompt: say(i) });
      await settle();
    }
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`long chat page error: ${e.message}`));
    await signIn(page, base, "lin@example.com", "correct horse battery");
    await page.goto(`${base}/tasks/${task.id}`);
    await page.locator(".msg.assistant").filter({ hasText: "Answer 8." }).waitFor();
    const divider = page.getByTestId("summary-divider").first();
    await divider.waitFor();
    expect(/Earlier conversation summarised for the model \(messages \d+–\d+\)/.test(await divider.locator("summary").innerText()), "the divider names the messages it covers");
    await divider.locator("summary").click();
    await divider.getByText("The transcript keeps every message").waitFor();
    expect((await page.locator(".msg.user").filter({ hasText: "Message 1:" }).count()) === 1, "the transcript still shows the first message");
    await divider.evaluate((el) => el.scrollIntoView({ block: "center" }));
    await shot(page, "chat-summary", true);
    await context.close();
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

// approvalsInbox (issue 26): a member's agent names the managers as approvers in its form;
// the administrator (a manager of every principal) sees the member's pending calls in the
// Approvals page, counted in the navigation, approves one and rejects the others in a batch;
// the member sees who decided in the chat, and approves a call there "for the rest of this
// task". The member's policy editor shows the server's refusal of a bad rule and saves a good one.
async function approvalsInbox(browser: Browser, problems: string[]): Promise<void> {
  log("approvals: the agent form names the managers; the administrator decides a member's calls from the inbox");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-approvals-"));
  const turns = [{ tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6*7" } }] }, { text: "Done." }];
  const { proc, base } = await startServer(dir, {}, turns);
  const pw = "correct horse battery";
  const contexts: BrowserContext[] = [];
  const open = async (email: string) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`approvals page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|404|409|422)/.test(m.text())) problems.push(`approvals console: ${m.text()}`);
    });
    await signIn(page, base, email, pw);
    return page;
  };
  try {
    await apiSession(base, "root@example.com", pw); // the first account: the administrator
    const mia = await apiSession(base, "mia@example.com", pw);
    const agent = (await mia("POST", "/agents", { name: "Sums" })).agent as { id: number };
    await mia("POST", `/agents/${agent.id}/tools/core.CalculatorTool/enable`);
    await mia("PATCH", `/agents/${agent.id}/tools/core.CalculatorTool/operations/calculate`, { enabled: true, auto_approve: false });
    const member = await open("mia@example.com");

    log("approvals: the policy editor shows the server's refusal, then saves a rule");
    await member.goto(`${base}/agents/${agent.id}/tools`);
    const calc = member.getByRole("listitem").filter({ has: member.getByRole("heading", { name: "Calculator", exact: true }) });
    await calc.getByText("Approval policy for this agent").click();
    const rules = calc.getByLabel("Rules (JSON)");
    await rules.fill(JSON.stringify({ calculate: [{ when: { expression: { pattern: "(" } }, action: "allow" }] }));
    await calc.getByRole("button", { name: "Save policy" }).click();
    await calc.getByText("approval_policy.calculate[0].when.expression.pattern").waitFor();
    await rules.fill(JSON.stringify({ calculate: [{ when: { expression: { equals: "1+1" } }, action: "allow" }] }));
    await calc.getByRole("button", { name: "Save policy" }).click();
    await calc.getByText("Policy saved.").waitFor();

    log("approvals: the agent form names the managers and a timeout");
    await member.goto(`${base}/agents/${agent.id}/settings`);
    await member.getByLabel("The managers of the agent's owner (a group's owners and admins)").check();
    await member.getByLabel("Approval timeout (seconds)").fill("86400");
    await member.getByRole("button", { name: "Save changes" }).click();
    for (let i = 0; ; i++) {
      const a = (await mia("GET", `/agents/${agent.id}`)).agent as { approvers: { owner: boolean; managers: boolean }; approval_timeout_seconds: number };
      if (a.approvers.managers && a.approvers.owner && a.approval_timeout_seconds === 86400) break;
      expect(i < 50, `the form saved the approvers: ${JSON.stringify(a)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await member.getByRole("heading", { name: "Approvals", exact: true }).scrollIntoViewIfNeeded();
    await shot(member, "agent-approvers", true);

    const waiting = async (id: number) => {
      for (let i = 0; ; i++) {
        const t = (await mia("GET", `/tasks/${id}`)).task as { status: string };
        if (t.status === "PENDING_APPROVAL") return;
        expect(i < 100, `chat ${id} waits for approval, not ${t.status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const ids: number[] = [];
    for (let i = 1; i <= 4; i++) {
      ids.push(((await mia("POST", "/tasks", { agent_id: agent.id, prompt: `Sum number ${i}` })).task as { id: number }).id);
      await waiting(ids[i - 1]);
    }

    log("approvals: the member approves her fourth chat's call for the rest of the task");
    await member.goto(`${base}/tasks/${ids[3]}`);
    await member.getByRole("button", { name: "Approve for the rest of this task" }).click();
    await member.getByText(/Approved by you.*, and allowed for the rest of this task/).waitFor();

    log("approvals: the administrator's inbox counts three; one approved, two rejected in a batch");
    const admin = await open("root@example.com");
    await admin.getByRole("link", { name: /^Approvals\s*,\s*3 waiting$/ }).click();
    await admin.getByRole("heading", { name: "Approvals", exact: true }).waitFor();
    const items = admin.locator("li.approval");
    await items.nth(2).waitFor();
    expect((await items.count()) === 3, `three items, not ${await items.count()}`);
    await items.first().getByText("Sum number 1").waitFor();
    await items.first().getByText("6*7").waitFor();
    await shot(admin, "approvals");
    await items.first().getByRole("button", { name: "Approve", exact: true }).click();
    await admin.getByText("1 call approved.").waitFor();
    await admin.getByRole("link", { name: /^Approvals\s*,\s*2 waiting$/ }).waitFor();
    await admin.getByRole("button", { name: "Select all calls" }).click();
    await admin.getByLabel("Reason for rejecting the selected calls").fill("Not today.");
    await admin.getByRole("button", { name: "Reject selected (2)" }).click();
    await admin.getByText("2 calls rejected.").waitFor();
    await admin.getByText("Nothing waits for your decision.").waitFor();
    await admin.getByRole("link", { name: "Approvals", exact: true }).waitFor();

    log("approvals: the member's chat says who approved");
    await member.goto(`${base}/tasks/${ids[0]}`);
    await member.getByText(/Approved by user #1/).waitFor();
    await member.goto(`${base}/tasks/${ids[1]}`);
    await member.getByText(/Rejected by user #1/).waitFor();
  } finally {
    for (const c of contexts) await c.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

// pushFallback: a third server whose push channel is a Mercure hub at an address where nothing
// listens. The console never connects to an external hub (its Content-Security-Policy allows
// its own origin only; the bell polls instead), and the task page does not need one: the task's
// own event stream, served by svc from the event log, carries the run. With that stream refused
// as well, the page falls back to polling GET /tasks/{id} every poll_interval_seconds and still
// shows the task's progress and its answer; it stops once the task has completed and polls again
// after a follow-up. The bell polls every poll_interval_seconds too.
async function pushFallback(browser: Browser, problems: string[]): Promise<void> {
  log("push channel down (a Mercure hub where nothing listens): a task is followed live from its event stream");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-push-"));
  const hubPort = await freePort(); // free, and nothing is started on it
  const turns = [{ chunks: ["Six times seven ", "is ", "forty-two."], chunk_delay_ms: 700 }];
  const { proc, base } = await startServer(dir, { SVC_MERCURE_URL: `http://127.0.0.1:${hubPort}/.well-known/mercure`, SVC_MERCURE_JWT_KEY: "e2e-mercure-key-e2e-mercure-key!" }, turns);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const call = await apiSession(base, "cy@example.com", "correct horse battery");
    const status = (await call("GET", "/sse/status")) as { hub?: string; available?: boolean; poll_interval_seconds?: number };
    expect(status.hub === "mercure" && status.available === true, `the push channel is the Mercure hub: ${JSON.stringify(status)}`);
    const agent = (await call("POST", "/agents", { name: "Narrator" })).agent as { id: number };

    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`push fallback page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|503)/.test(m.text())) problems.push(`push fallback console: ${m.text()}`);
    });
    const toHub: string[] = [];
    const taskReads: Promise<{ url: string; status: string }>[] = []; // GET /tasks/{id}: the status each read saw
    page.on("request", (r) => {
      if (r.url().includes(`:${hubPort}/`) || r.url().includes("/.well-known/mercure")) toHub.push(r.url());
    });
    page.on("response", (r) => {
      if (r.request().method() === "GET" && /\/api\/v1\/tasks\/\d+$/.test(r.url()) && r.ok()) taskReads.push(r.json().then((j: { data: { task: { status: string } } }) => ({ url: r.url(), status: j.data.task.status })));
    });
    await signIn(page, base, "cy@example.com", "correct horse battery");
    const startTask = async (prompt: string) => {
      await page.goto(`${base}/agents/${agent.id}`);
      await page.getByLabel("Prompt").fill(prompt);
      await page.getByRole("button", { name: "Start chat" }).click();
      await page.getByRole("heading", { name: /^Chat #\d+$/ }).waitFor();
      return Number(/\/tasks\/(\d+)$/.exec(page.url())?.[1]);
    };
    const answer = page.locator(".msg.assistant:not(.streaming)").filter({ hasText: "Six times seven is forty-two." });
    await startTask("What is 6*7?");
    await answer.waitFor();
    await page.getByTestId("updates").filter({ hasText: "settled" }).waitFor();

    log("push channel down and the task's event stream refused: the page shows the task's progress and answer by polling");
    await page.route(/\/api\/v1\/tasks\/\d+\/events/, (r) => r.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "refused by the browser test" } }) }));
    const started = Date.now();
    const id = await startTask("And 6*7 again?");
    await page.getByTestId("updates").filter({ hasText: `polling every ${status.poll_interval_seconds ?? 5} s` }).waitFor();
    await page.getByText("The agent is working…").waitFor(); // the run in progress, from the first read
    await answer.waitFor();
    await page.locator(".page-header .badge").filter({ hasText: "completed" }).waitFor();
    const reads = (await Promise.all(taskReads)).filter((r) => r.url.endsWith(`/tasks/${id}`)).map((r) => r.status);
    expect(reads.length >= 2 && reads[0] !== "COMPLETED" && reads.includes("COMPLETED"), `the page polled the task to its end: ${reads.join(" → ")}`);
    console.log(`         the answer came by polling after ${((Date.now() - started) / 1000).toFixed(1)} s; the reads saw ${reads.join(" → ")}`);

    log("the run has ended: the page stops polling the task; the bell polls every poll_interval_seconds (not 20 s)");
    const poll = (status.poll_interval_seconds ?? 5) * 1000;
    await page.waitForTimeout(300); // the read that saw COMPLETED is answered (the badge above)
    const afterEnd = watch(page, taskRead(id));
    const bell = watch(page, (r) => r.method() === "GET" && /\/api\/v1\/notifications\?(.*&)?unread=true/.test(r.url()));
    const readsAfterEnd = await afterEnd.stop(poll + 1_500);
    expect(readsAfterEnd.length === 0, `no read of the completed task for ${(poll + 1_500) / 1000} s, saw ${readsAfterEnd.length} at ${readsAfterEnd.join(", ")} ms`);
    const updates = await page.getByTestId("updates").innerText();
    expect(updates === "settled", `the page says it follows the task no more: "${updates}"`);
    const bellPolls = await bell.stop(2 * poll + 1_500);
    const gaps = bellPolls.slice(1).map((t, i) => t - bellPolls[i]);
    expect(bellPolls.length >= 2 && gaps.every((g) => Math.abs(g - poll) < 1_000), `the bell polls every ${poll / 1000} s: ${bellPolls.length} reads at ${bellPolls.join(", ")} ms`);
    console.log(`         the bell read the count at ${bellPolls.map((t) => (t / 1000).toFixed(1)).join(", ")} s of an ${(2 * poll + 1_500) / 1000} s wait`);

    log("a follow-up runs the task again: the page polls it again, to the follow-up's answer");
    const resumed = watch(page, taskRead(id));
    await page.getByLabel("Follow-up message").fill("Thanks!");
    await page.getByRole("button", { name: "Continue" }).click();
    await page.locator(".msg.assistant").filter({ hasText: "The script has no more turns." }).waitFor();
    const readsResumed = await resumed.stop();
    expect(readsResumed.length >= 1, "the continued task was read again");
    expect(toHub.length === 0, `the console never called the hub: ${toHub.join(", ")}`);
  } finally {
    await context.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** fakeModel is an OpenAI-compatible /v1/chat/completions endpoint on 127.0.0.1 that answers
 * "OK" (one JSON answer, or the chunks of a streamed one). */
async function fakeModel(): Promise<{ server: Server; url: string; calls: string[] }> {
  const calls: string[] = [];
  const server = createHttpServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404).end();
        return;
      }
      const r = JSON.parse(body) as { model: string; stream?: boolean };
      calls.push(r.model);
      const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
      if (!r.stream) {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ id: "c1", object: "chat.completion", created: 1, model: r.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "OK" } }], usage }));
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const chunk = (choices: unknown[], u: unknown = null) => res.write(`data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: r.model, choices, usage: u })}\n\n`);
      chunk([{ index: 0, delta: { role: "assistant", content: "OK" }, finish_reason: null }]);
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
      chunk([], usage);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const a = server.address();
  return { server, url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`, calls };
}

// firstHour: a fresh server without SVC_LLM_*, as `make run` starts one. The administrator's home
// shows the first-run checklist; the agent form warns that no model resolves; the model step
// creates the global default from the local (Ollama) preset, admits its host in
// llm_allowed_hosts once confirmed and tests the connection with a real call; the agent form
// then names the model; after a first chat the checklist is gone.
async function firstHour(browser: Browser, problems: string[]): Promise<void> {
  log("first hour: a fresh server without a model; the home page shows the first-run checklist");
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-first-"));
  const model = await fakeModel();
  const { proc, base } = await startServer(dir, { SVC_LLM_DRIVER: "", SVC_LLM_MODEL: "", SVC_LLM_BASE_URL: "" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const call = await apiSession(base, "root@example.com", "correct horse battery");
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`first hour page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|404|422)/.test(m.text())) problems.push(`first hour console: ${m.text()}`);
    });
    await signIn(page, base, "root@example.com", "correct horse battery");
    const checklist = page.getByRole("region", { name: "Get started" });
    await checklist.getByText("NO_LLM_CONFIGURATION").waitFor();
    await shot(page, "first-run");

    log("first hour: the new-agent form warns that no model resolves");
    await checklist.getByRole("link", { name: "Create an agent" }).click();
    await page.getByTestId("agent-model").filter({ hasText: "No model configured." }).waitFor();
    await page.getByRole("link", { name: "add a model" }).click();

    log("first hour: the model step, local preset: the host is admitted once confirmed, Test connection makes a real call");
    await checklist.getByRole("button", { name: "Add a model" }).click();
    const form = checklist.locator("form");
    await form.getByLabel("Provider").selectOption({ label: "Ollama (local)" });
    expect((await form.getByLabel("Base URL").inputValue()) === "http://localhost:11434/v1", "the preset fills Ollama's endpoint");
    await form.getByLabel("Base URL").fill(model.url);
    await form.getByLabel("Model").fill("llama3.2");
    await form.getByRole("checkbox", { name: "Allow 127.0.0.1 in llm_allowed_hosts" }).check();
    await form.getByRole("button", { name: "Add model" }).click();
    const created = checklist.getByRole("region", { name: "The new model" });
    await created.getByText("is the global default").waitFor();
    const settings = (await call("GET", "/runtime-settings")).settings as { key: string; value: unknown }[];
    expect(String(settings.find((x) => x.key === "llm_allowed_hosts")?.value).split(/[\s,]+/).includes("127.0.0.1"), `llm_allowed_hosts admits the host: ${JSON.stringify(settings.find((x) => x.key === "llm_allowed_hosts"))}`);
    await created.getByRole("button", { name: /^Test connection/ }).click();
    await created.getByTestId("llm-test-result").filter({ hasText: "Connected: llama3.2 answered “OK”" }).waitFor();
    expect(model.calls.length === 1 && model.calls[0] === "llama3.2", `the test called the model once: ${model.calls.join()}`);
    await checklist.locator("li.done").filter({ hasText: "Add a model" }).waitFor();
    await shot(page, "first-run-model");

    log("first hour: the agent form names the model; after a first chat the checklist is gone");
    await checklist.getByRole("link", { name: "Create an agent" }).click();
    await page.getByTestId("agent-model").filter({ hasText: "llama3.2" }).filter({ hasText: "the global default" }).waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Helper");
    await page.getByRole("button", { name: "Create agent" }).click();
    await page.waitForURL(/\/agents\/\d+\/tools$/);
    await page.goto(`${base}/`);
    await checklist.getByRole("link", { name: "Chat with Helper" }).click();
    await page.getByLabel("Prompt").fill("Say OK");
    await page.getByRole("button", { name: "Start chat" }).click();
    await page.locator(".msg.assistant").filter({ hasText: "OK" }).first().waitFor();
    await page.goto(`${base}/`);
    await page.getByRole("heading", { name: "Agents", exact: true }).waitFor();
    await page.getByRole("link", { name: "Helper", exact: true }).waitFor();
    expect((await checklist.count()) === 0, "the checklist is gone once every step is done");
  } finally {
    await context.close();
    model.server.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
