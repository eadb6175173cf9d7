// Builds the console into dist/ (embedded in the Go binary): one hashed script and stylesheet
// under dist/assets/ and dist/index.html naming them. The server fills __SVC_PREFIX__ in at
// run time. With --e2e it compiles the browser tests (e2e/*.ts) into e2e-dist/ instead.
import { build } from "esbuild";
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { basename } from "node:path";

if (process.argv.includes("--e2e")) {
  rmSync("e2e-dist", { recursive: true, force: true });
  await build({ entryPoints: ["e2e/run.ts", "e2e/pluginpage.ts", "e2e/usage.ts", "e2e/oidc.ts"], bundle: true, platform: "node", format: "esm", target: "node20", outdir: "e2e-dist", packages: "external", logLevel: "warning" });
  process.exit(0);
}

// Empty dist/ but keep the committed marker (the Go build embeds the folder).
mkdirSync("dist", { recursive: true });
for (const f of readdirSync("dist")) if (f !== ".placeholder") rmSync(`dist/${f}`, { recursive: true, force: true });

const result = await build({
  entryPoints: { app: "src/main.tsx" },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: "esm",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: "dist/assets",
  entryNames: "[name]-[hash]",
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});
const outs = Object.keys(result.metafile.outputs);
const js = outs.find((o) => o.endsWith(".js"));
const css = outs.find((o) => o.endsWith(".css"));
if (!js || !css) throw new Error("the build made no script or stylesheet");
const html = readFileSync("src/index.html", "utf8").replace("__JS__", basename(js)).replace("__CSS__", basename(css));
writeFileSync("dist/index.html", html);
for (const o of outs) console.log(`${o}  ${(result.metafile.outputs[o].bytes / 1024).toFixed(1)} KiB`);
