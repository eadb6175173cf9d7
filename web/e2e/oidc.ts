// Browser test of single sign-on (issue 30): the whole redirect flow in chromium against a
// real OpenID provider (scripts/oidcop: zitadel/oidc's op server) that this harness starts on
// loopback. The administrator configures the provider through the API; the sign-in page shows
// "Sign in with Corp SSO"; the provider's own login form signs ada in; the console opens
// signed in as the account the first sign-in created, a member of the mapped group. Run by
// `make e2e` after run.ts; alone: `node build.mjs --e2e && node e2e-dist/oidc.js`
// (SVC_OIDCOP_BIN: the provider, default ../bin/oidcop).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { chromium, type Browser, type Page } from "playwright-core";
import { bin, safeRead, signIn, startServer } from "./serve";

const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const opBin = resolve(process.env.SVC_OIDCOP_BIN ?? "../bin/oidcop");
const shots = resolve(process.env.SVC_E2E_SHOTS ?? "test-results/screenshots");

function expect(cond: boolean, what: string): void {
  if (!cond) throw new Error(`expectation failed: ${what}`);
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`) });
}

/** startOP starts the provider with redirect as its client's redirect URI; its first line of
 * output is the issuer. Closing its stdin stops it. */
function startOP(redirect: string): Promise<{ issuer: string; stop: () => void }> {
  return new Promise((res, rej) => {
    const proc = spawn(opBin, ["-redirect", redirect], { stdio: ["pipe", "pipe", "ignore"] });
    proc.on("error", rej);
    const lines = createInterface({ input: proc.stdout! });
    lines.once("line", (issuer) => res({ issuer: issuer.trim(), stop: () => { proc.stdin!.end(); proc.kill("SIGTERM"); } }));
    setTimeout(() => rej(new Error("oidcop did not start")), 20_000);
  });
}

async function main(): Promise<void> {
  if (!existsSync(chromiumPath)) throw new Error(`no browser at ${chromiumPath}`);
  if (!existsSync(bin)) throw new Error(`no svc binary at ${bin}: run make build (make e2e does)`);
  if (!existsSync(opBin)) throw new Error(`no provider at ${opBin}: go build -o bin/oidcop ./scripts/oidcop (make e2e does)`);
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-oidc-"));
  const { proc, base } = await startServer(dir, { SVC_OIDC_ALLOWED_HOSTS: "127.0.0.1" });
  const op = await startOP(`${base}/api/v1/auth/oidc/corp/callback`);
  let browser: Browser | undefined;
  try {
    // The administrator (the first account) configures the provider and a mapped group.
    const json = { "Content-Type": "application/json" };
    let r = await fetch(`${base}/api/v1/auth/register`, { method: "POST", headers: json, body: JSON.stringify({ email: "root@example.com", password: "correct horse battery" }) });
    expect(r.ok, `register: ${r.status}`);
    r = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: json, body: JSON.stringify({ email: "root@example.com", password: "correct horse battery" }) });
    expect(r.ok, `login: ${r.status}`);
    const cookie = (r.headers.get("set-cookie") ?? "").split(";")[0];
    const csrf = ((await r.json()) as { data: { csrf_token: string } }).data.csrf_token;
    const adm = { ...json, Cookie: cookie, "X-CSRF-Token": csrf };
    r = await fetch(`${base}/api/v1/groups`, { method: "POST", headers: adm, body: JSON.stringify({ name: "Research" }) });
    expect(r.status === 201, `create group: ${r.status}`);
    const group = ((await r.json()) as { data: { group: { id: number } } }).data.group.id;
    r = await fetch(`${base}/api/v1/oidc-providers`, {
      method: "POST",
      headers: adm,
      body: JSON.stringify({ slug: "corp", display_name: "Corp SSO", issuer_url: op.issuer, client_id: "svc-client", client_secret: "svc-secret",
        allow_registration: true, groups_claim: "groups", logout_url: `${op.issuer}/logged-out`, group_mappings: [{ claim_value: "research", group_id: group, role: "member" }] }),
    });
    expect(r.status === 201, `create provider: ${r.status} ${await r.text()}`);

    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(15_000);
    console.log("  the sign-in page offers the provider");
    await page.goto(`${base}/login`);
    const button = page.getByRole("link", { name: "Sign in with Corp SSO" });
    await button.waitFor();
    await shot(page, "sso-login");

    console.log("  the provider's own login form, then back to the console, signed in");
    await button.click();
    await page.waitForURL((u) => u.toString().startsWith(op.issuer));
    await page.locator("#username").fill("ada");
    await page.locator("#password").fill("ada-pass");
    await page.getByRole("button", { name: "Login" }).click();
    await page.getByRole("heading", { name: "Agents", exact: true }).waitFor();
    const me = await page.evaluate(async (b) => (await fetch(`${b}/api/v1/auth/me`)).json(), base);
    expect(me.data.user.email === "ada@corp.test" && me.data.user.email_verified === true, `signed in as ${JSON.stringify(me.data.user)}`);
    await shot(page, "sso-signed-in");

    console.log("  logging out offers the provider's logout");
    await page.getByRole("button", { name: "Log out" }).click();
    const out = page.getByRole("link", { name: "Sign out of Corp SSO too" });
    await out.waitFor();
    expect((await out.getAttribute("href")) === `${op.issuer}/logged-out`, `provider logout link ${await out.getAttribute("href")}`);
    await page.goto(`${base}/api/v1/auth/me`);
    expect((await page.content()).includes("UNAUTHENTICATED"), "the session ended");

    r = await fetch(`${base}/api/v1/groups/${group}/members`, { headers: adm });
    const members = ((await r.json()) as { data: { members: { email: string; source: string }[] } }).data.members;
    const ada = members.find((m) => m.email === "ada@corp.test");
    expect(ada?.source === "oidc:corp", `mapped membership ${JSON.stringify(members)}`);

    console.log("  the administrator sees the provider and where the membership came from");
    const admin = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    admin.setDefaultTimeout(15_000);
    await signIn(admin, base, "root@example.com", "correct horse battery");
    await admin.goto(`${base}/settings`);
    await admin.getByRole("heading", { name: "Single sign-on providers" }).waitFor();
    await admin.getByText(`${base}/api/v1/auth/oidc/corp/callback`).waitFor();
    await admin.getByRole("heading", { name: "Single sign-on providers" }).scrollIntoViewIfNeeded();
    await shot(admin, "sso-providers");
    await admin.goto(`${base}/groups/${group}`);
    await admin.getByText("provider corp").waitFor();
    await shot(admin, "sso-group-members");
    console.log("oidc: all checks passed");
  } catch (e) {
    console.error(`svc log (last lines):\n${safeRead(join(dir, "svc.log"))}`);
    throw e;
  } finally {
    await browser?.close();
    op.stop();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
