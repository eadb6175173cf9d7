// Browser test of a plugin's frontend bundle (issue 22, item 9): the page of a plugin placed in
// plugins_dir runs its own scripts (classic and module) in the console's sandboxed frame and
// when opened directly, and in both it has an opaque origin: no access to the console's
// cookies, no session on its API requests, no inline script. Run by `make e2e` after run.ts
// (npm run e2e); alone: `node build.mjs --e2e && node e2e-dist/pluginpage.js`.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium, type Browser, type FrameLocator, type Page } from "playwright-core";
import { bin, safeRead, signIn, startServer } from "./serve";

const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

// The bundle: each script writes what it could do into the page.
const bundle: Record<string, string> = {
  "hello/plugin.json": JSON.stringify({ slug: "hello", class: "Acme\\Hello", name: "acme/hello-page", version: "1.0.0", frontendEntry: "dist/index.html" }),
  "hello/dist/index.html": `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hello plugin</title>
<link rel="stylesheet" href="style.css">
<script src="app.js" defer></script>
<script type="module" src="mod.js"></script>
</head><body>
<h1>Hello plugin</h1>
<p id="classic">classic script did not run</p>
<p id="module">module script did not run</p>
<p id="inline">inline script did not run</p>
<p id="cookie">cookie not tried</p>
<p id="parent">parent not tried</p>
<p id="api">api not tried</p>
<script>document.getElementById("inline").textContent = "inline script ran";</script>
</body></html>
`,
  "hello/dist/style.css": "h1 { color: rgb(0, 128, 0); }\n",
  "hello/dist/app.js": `const say = (id, text) => { document.getElementById(id).textContent = text; };
say("classic", "classic script ran");
try { say("cookie", "cookie read: [" + document.cookie + "]"); } catch (e) { say("cookie", "cookie blocked: " + e.name); }
try { say("parent", "parent read: " + window.parent.document.title); } catch (e) { say("parent", "parent blocked: " + e.name); }
fetch("../../api/v1/auth/me", { credentials: "include" })
  .then((r) => say("api", "api answered " + r.status))
  .catch((e) => say("api", "api refused: " + e.name));
`,
  "hello/dist/mod.js": `document.getElementById("module").textContent = "module script ran";\n`,
};

function expect(cond: boolean, what: string): void {
  if (!cond) throw new Error(`expectation failed: ${what}`);
}

/** check reads what the bundle's scripts reported in scope (the frame or the page). */
async function check(scope: FrameLocator | Page, where: string): Promise<void> {
  await scope.getByText("classic script ran").waitFor();
  await scope.getByText("module script ran").waitFor();
  await scope.locator("#api").filter({ hasNotText: "not tried" }).waitFor();
  const text = async (id: string) => (await scope.locator(`#${id}`).innerText()).trim();
  expect((await text("inline")) === "inline script did not run", `${where}: no inline script runs (${await text("inline")})`);
  expect((await text("cookie")).startsWith("cookie blocked"), `${where}: the console's cookies are out of reach (${await text("cookie")})`);
  const parent = await text("parent");
  expect(parent.startsWith("parent blocked") || parent === "parent read: Hello plugin", `${where}: the console's page is out of reach (${parent})`);
  const api = await text("api");
  expect(!api.includes("200"), `${where}: the API answers the page without the session (${api})`);
  console.log(`         ${where}: classic and module scripts ran; inline script, cookies and the console refused; ${api}`);
}

async function main(): Promise<void> {
  if (!existsSync(chromiumPath)) throw new Error(`no browser at ${chromiumPath}: install Debian's chromium (apt-get install chromium) or set CHROMIUM`);
  if (!existsSync(bin)) throw new Error(`no svc binary at ${bin}: run make build (make e2e does)`);
  const dir = mkdtempSync(join(tmpdir(), "svc-e2e-plugin-"));
  const plugins = join(dir, "plugins");
  for (const [p, body] of Object.entries(bundle)) {
    mkdirSync(dirname(join(plugins, p)), { recursive: true });
    writeFileSync(join(plugins, p), body);
  }
  const { proc, base } = await startServer(dir, { SVC_PLUGINS_DIR: plugins });
  let browser: Browser | undefined;
  try {
    const r = await fetch(`${base}/api/v1/auth/register`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ email: "ada@example.com", password: "correct horse battery" }) });
    expect(r.ok, `register: ${r.status}`);
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
    const page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    await signIn(page, base, "ada@example.com", "correct horse battery");

    console.log("  the plugin's page, from the Plugins list, in the console's sandboxed frame");
    await page.goto(`${base}/plugins`);
    await page.getByRole("link", { name: "Open its page" }).click();
    await page.getByRole("heading", { name: "Plugin hello" }).waitFor();
    const frame = page.frameLocator("iframe.plugin-frame");
    await frame.getByRole("heading", { name: "Hello plugin" }).waitFor();
    const color = await frame.getByRole("heading", { name: "Hello plugin" }).evaluate((h) => getComputedStyle(h).color);
    expect(color === "rgb(0, 128, 0)", `the bundle's stylesheet applies (${color})`);
    await check(frame, "framed");

    console.log("  the plugin's page opened directly: sandboxed all the same");
    await page.goto(`${base}/plugins/hello/`);
    await check(page, "direct");
    console.log("plugin page: all checks passed");
  } catch (e) {
    console.error(`svc log (last lines):\n${safeRead(join(dir, "svc.log"))}`);
    throw e;
  } finally {
    await browser?.close();
    proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
