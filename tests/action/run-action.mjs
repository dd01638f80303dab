// Runs a composite action.yml the way the Actions runner does, for tests:
// inputs with their defaults, each step in order with `if:` (default
// success()), `${{ }}` evaluated by GitHub's own evaluator
// (@actions/expressions), `shell: bash` as `bash --noprofile --norc -eo
// pipefail FILE`, per-step GITHUB_OUTPUT / GITHUB_ENV / GITHUB_PATH files, one
// GITHUB_STEP_SUMMARY, the event payload at GITHUB_EVENT_PATH, RUNNER_TEMP.
//
//   node run-action.mjs CONFIG.json      (prints one JSON result on stdout)
//
// CONFIG: { action_dir, workspace, event_name, event, inputs, env, path,
//           github: {repository, sha, server_url, action_repository, token} }
// Node module resolution: set NODE_PATH to the node_modules holding
// @actions/expressions and yaml (scripts/install-test-deps).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const modules = process.env.NODE_PATH || "node_modules";
// @actions/expressions is ESM-only with an `import` export; load its entry file.
const { Lexer, Parser, Evaluator, data } = await import(pathToFileURL(path.join(modules, "@actions/expressions/dist/index.js")).href);
const { truthy } = await import(pathToFileURL(path.join(modules, "@actions/expressions/dist/result.js")).href);
const YAML = createRequire(path.join(modules, "..", "x.js"))("yaml");

const cfg = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const action = YAML.parse(fs.readFileSync(path.join(cfg.action_dir, "action.yml"), "utf8"));
if (action.runs?.using !== "composite") throw new Error("only composite actions are emulated");

const temp = fs.mkdtempSync(path.join(os.tmpdir(), "runner-"));
const runnerTemp = path.join(temp, "_temp");
fs.mkdirSync(runnerTemp);
const eventPath = path.join(temp, "event.json");
fs.writeFileSync(eventPath, JSON.stringify(cfg.event ?? {}));
const summaryPath = path.join(runnerTemp, "step_summary");
fs.writeFileSync(summaryPath, "");

const gh = cfg.github ?? {};
const github = {
  event_name: cfg.event_name,
  event: cfg.event ?? {},
  sha: gh.sha ?? "",
  ref: gh.ref ?? "",
  repository: gh.repository ?? "",
  server_url: gh.server_url ?? "https://github.com",
  api_url: gh.api_url ?? "https://api.github.com",
  action_path: cfg.action_dir,
  action_repository: gh.action_repository ?? "",
  workspace: cfg.workspace,
  token: gh.token ?? "",
};
const runner = { os: "Linux", arch: os.arch() === "arm64" ? "ARM64" : "X64", temp: runnerTemp };

function evaluate(expr, ctx) {
  const lr = new Lexer(expr).lex();
  const parsed = new Parser(lr.tokens, Object.keys(ctx), []).parse();
  const dict = JSON.parse(JSON.stringify(ctx), data.reviver);
  return new Evaluator(parsed, dict).evaluate();
}
// A string value with `${{ … }}` parts (or a bare `if:` condition).
function interpolate(s, ctx) {
  if (typeof s !== "string") return s == null ? "" : String(s);
  return s.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, e) => evaluate(e.trim(), ctx).coerceString());
}
function condition(s, ctx) {
  if (s === undefined || s === null || s === "") s = "success()";
  s = String(s).trim().replace(/^\$\{\{([\s\S]*)\}\}$/, "$1").trim();
  // Status functions as the runner defines them for a composite's steps.
  const failed = ctx.__failed;
  const e = s.replace(/\bsuccess\(\)/g, String(!failed)).replace(/\bfailure\(\)/g, String(failed)).replace(/\balways\(\)/g, "true").replace(/\bcancelled\(\)/g, "false");
  return truthy(evaluate(e, ctx));
}

function parseFileCommands(file) {
  const out = {};
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (!l) continue;
    const h = l.match(/^([^=<]+)<<(.+)$/);
    if (h) {
      const body = [];
      for (i++; i < lines.length && lines[i] !== h[2]; i++) body.push(lines[i]);
      if (i >= lines.length) throw new Error(`unterminated heredoc ${h[2]} in ${file}`);
      out[h[1]] = body.join("\n");
    } else {
      const eq = l.indexOf("=");
      if (eq < 0) throw new Error(`bad file command line in ${file}: ${l}`);
      out[l.slice(0, eq)] = l.slice(eq + 1);
    }
  }
  return out;
}

const inputs = {};
const ctxBase = { github, runner, env: {}, steps: {}, inputs, __failed: false };
for (const [k, spec] of Object.entries(action.inputs ?? {})) {
  const given = cfg.inputs?.[k];
  inputs[k] = given !== undefined ? String(given) : interpolate(spec?.default ?? "", { github, runner, env: {} });
}
for (const k of Object.keys(cfg.inputs ?? {})) if (!(k in (action.inputs ?? {}))) throw new Error(`unexpected input ${k}`);

const baseEnv = {
  PATH: cfg.path ?? "/usr/bin:/bin",
  HOME: process.env.HOME ?? temp,
  LANG: "C.UTF-8",
  CI: "true",
  GITHUB_ACTIONS: "true",
  GITHUB_EVENT_NAME: cfg.event_name,
  GITHUB_EVENT_PATH: eventPath,
  GITHUB_WORKSPACE: cfg.workspace,
  GITHUB_SHA: github.sha,
  GITHUB_REF: github.ref,
  GITHUB_REPOSITORY: github.repository,
  GITHUB_SERVER_URL: github.server_url,
  GITHUB_API_URL: github.api_url,
  GITHUB_ACTION_PATH: cfg.action_dir,
  GITHUB_ACTION_REPOSITORY: github.action_repository,
  GITHUB_STEP_SUMMARY: summaryPath,
  RUNNER_TEMP: runnerTemp,
  RUNNER_OS: runner.os,
  RUNNER_ARCH: runner.arch,
  ...(cfg.env ?? {}),
};
let jobEnv = {};
const extraPath = [];
const results = [];
const started = Date.now();
let failed = false;
for (const [i, step] of (action.runs.steps ?? []).entries()) {
  const id = step.id ?? `__step${i}`;
  const ctx = { ...ctxBase, env: { ...baseEnv, ...jobEnv }, __failed: failed };
  if (!condition(step.if, ctx)) {
    results.push({ id, name: step.name, outcome: "skipped" });
    continue;
  }
  if (step.uses) throw new Error(`step ${id}: uses: is not emulated`);
  if (step.shell !== "bash") throw new Error(`step ${id}: only shell: bash is emulated (composite steps must name a shell)`);
  const stepEnv = {};
  for (const [k, v] of Object.entries(step.env ?? {})) stepEnv[k] = interpolate(v, ctx);
  const script = path.join(runnerTemp, `${id}.sh`);
  fs.writeFileSync(script, interpolate(step.run, ctx));
  const files = Object.fromEntries(["OUTPUT", "ENV", "PATH"].map((n) => [n, path.join(runnerTemp, `${id}.${n.toLowerCase()}`)]));
  for (const f of Object.values(files)) fs.writeFileSync(f, "");
  const env = { ...baseEnv, ...jobEnv, ...stepEnv, GITHUB_OUTPUT: files.OUTPUT, GITHUB_ENV: files.ENV, GITHUB_PATH: files.PATH };
  env.PATH = [...extraPath, env.PATH].join(":");
  const t0 = Date.now();
  const r = spawnSync("bash", ["--noprofile", "--norc", "-eo", "pipefail", script], { cwd: step["working-directory"] ? path.resolve(cfg.workspace, interpolate(step["working-directory"], ctx)) : cfg.workspace, env, encoding: "utf8", maxBuffer: 64 << 20 });
  const outputs = parseFileCommands(files.OUTPUT);
  jobEnv = { ...jobEnv, ...parseFileCommands(files.ENV) };
  for (const p of fs.readFileSync(files.PATH, "utf8").split("\n").filter(Boolean)) extraPath.unshift(p);
  const outcome = r.status === 0 ? "success" : "failure";
  ctxBase.steps[id] = { outputs, outcome, conclusion: outcome };
  results.push({ id, name: step.name, outcome, exit: r.status, ms: Date.now() - t0, stdout: r.stdout, stderr: r.stderr, finished_at_ms: Date.now() - started });
  if (outcome === "failure") failed = true;
}
const outputs = {};
for (const [k, spec] of Object.entries(action.outputs ?? {})) outputs[k] = interpolate(spec.value, { ...ctxBase, env: { ...baseEnv, ...jobEnv } });
process.stdout.write(JSON.stringify({ conclusion: failed ? "failure" : "success", steps: results, outputs, summary: fs.readFileSync(summaryPath, "utf8"), runner_temp: runnerTemp }, null, 1) + "\n");
