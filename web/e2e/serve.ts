// Starting the real `svc serve` for the browser tests: a fresh SQLite database in dir, the
// scripted model driver reading turns, a free loopback port. Settings: SVC_BIN (the binary,
// default ../bin/svc).
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";

export const bin = resolve(process.env.SVC_BIN ?? "../bin/svc");

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? res(a.port) : rej(new Error("no port"))));
    });
  });
}

export async function startServer(dir: string, extraEnv: Record<string, string> = {}, turns: unknown[] = []): Promise<{ proc: ChildProcess; base: string }> {
  writeFileSync(join(dir, "script.json"), JSON.stringify(turns));
  const port = await freePort();
  const proc = spawn(bin, ["serve"], {
    cwd: dir,
    stdio: "ignore",
    env: {
      ...process.env,
      SVC_LISTEN: `127.0.0.1:${port}`,
      SVC_APP_URL: `http://127.0.0.1:${port}/svc`,
      SVC_LLM_DRIVER: "scripted",
      SVC_LLM_MODEL: "script",
      SVC_LLM_BASE_URL: "script.json",
      SVC_LOG_PATH: join(dir, "svc.log"),
      SVC_MAIL_DRIVER: "",
      ...extraEnv,
    },
  });
  const base = `http://127.0.0.1:${port}/svc`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return { proc, base };
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`svc did not start; log:\n${safeRead(join(dir, "svc.log"))}`);
}

export function safeRead(p: string): string {
  try {
    return readFileSync(p, "utf8").split("\n").slice(-30).join("\n");
  } catch {
    return "(none)";
  }
}

/** signIn signs an existing account in through the console's form. */
export async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Agents", exact: true }).waitFor();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axeCheck runs axe-core on the page as it stands, in the light and the dark colour scheme,
 * and returns its serious, critical and moderate violations, each as one line naming the page
 * (name), the rule and the first elements it found. The script is evaluated through the
 * browser's debugging channel, so the console's Content-Security-Policy stays as it is. */
export async function axeCheck(page: Page, name: string): Promise<string[]> {
  const found: string[] = [];
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => {
      const r = await (window as unknown as { axe: { run: (c: Document, o: object) => Promise<{ violations: { id: string; impact?: string; nodes: { target: string[]; failureSummary?: string }[] }[] }> } }).axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact ?? "", nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")), why: (v.nodes[0]?.failureSummary ?? "").split("\n").slice(0, 2).join(" ") }));
    });
    for (const v of violations) if (["critical", "serious", "moderate"].includes(v.impact)) found.push(`${name} (${scheme}): ${v.impact} ${v.id} at ${v.nodes.join(" | ")}: ${v.why}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}

/** apiSession signs up and in through the API of a scenario's own server (the set-up the browser
 * part does not need to see) and returns a caller for that API. */
export async function apiSession(base: string, email: string, password: string): Promise<(method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>> {
  const api = `${base}/api/v1`;
  let cookie = "";
  let csrf = "";
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(api + path, {
      method,
      headers: { "Content-Type": "application/json", Cookie: cookie, "X-CSRF-Token": csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const set = r.headers.get("set-cookie");
    if (set) cookie = set.split(";")[0];
    const j = (await r.json()) as { data: Record<string, unknown> };
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(j)}`);
    return j.data;
  };
  await call("POST", "/auth/register", { email, password });
  csrf = (await call("POST", "/auth/login", { email, password })).csrf_token as string;
  return call;
}
