// `make bench-sdk`: what a user of the official TypeScript client waits for.
//
// 1. create + 3 turns + stop, from `new CopilotClient` to `client.stop()` returning, through
//    the TypeScript client: turnstile and the Copilot CLI, N runs each (median, min, max).
// 2. 50 concurrent sessions on one turnstile server (one client, one runtime process), each
//    20 turns with a tool call (view): turns/s, the server's peak RSS (VmHWM) and per session;
//    then `turnstile audit` on every journal, which must come out clean.
//
// Usage: node conformance/ts/bench/sdk_bench.mjs [--runs N] [--sessions N] [--turns N]
// Environment: TURNSTILE_BIN (default target/release/turnstile), COPILOT_REFERENCE_CLI.
// Prints the tables; exits 1 when a journal does not audit clean or a run fails.

import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, OUT, sdk, withGuard, SCRIPTED_MODEL } from "../harness.mjs";

const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const RUNS = arg("--runs", 5);
const SESSIONS = arg("--sessions", 50);
const TURNS = arg("--turns", 20);
// Absolute: the client spawns the runtime in the project directory.
const TURNSTILE = resolve(process.env.TURNSTILE_BIN ?? join(ROOT, "target", "release", "turnstile"));
const COPILOT = resolve(
  process.env.COPILOT_REFERENCE_CLI ?? join(OUT, "node", "node_modules", "@github", "copilot-linux-x64", "copilot"),
);
const GUARD = 120_000;

/** Starts the scripted model on a script written to `dir`; resolves to {url, stop}. */
async function startModel(dir, responses) {
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify({ model: "scripted-model", responses }));
  const child = spawn(SCRIPTED_MODEL, ["--script", script], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const url = await withGuard(
    new Promise((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`scripted-model exited with ${code}`)));
      lines.on("line", (line) => {
        const m = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/);
        if (m) resolve(m[1]);
      });
    }),
    "scripted-model did not start",
  );
  return { url, stop: () => child.exitCode === null && child.kill("SIGTERM") };
}

function client(runtime, home, project) {
  return new sdk.CopilotClient({
    connection: sdk.RuntimeConnection.forStdio({ path: runtime }),
    baseDirectory: home,
    workingDirectory: project,
    logLevel: "error",
  });
}

function dirs(name) {
  const base = mkdtempSync(join(tmpdir(), `bench-sdk-${name}-`));
  const home = join(base, "home");
  const project = join(base, "project");
  mkdirSync(home);
  mkdirSync(project);
  writeFileSync(join(project, "notes.txt"), "first line\nsecond line\n");
  return { base, home, project };
}

/** One create + 3 turns + stop; returns milliseconds. */
async function lifecycle(runtime) {
  const d = dirs("lifecycle");
  const model = await startModel(d.base, [{ content: "one" }, { content: "two" }, { content: "three" }]);
  try {
    const started = performance.now();
    const c = client(runtime, d.home, d.project);
    const session = await c.createSession({
      model: "scripted-model",
      provider: { type: "openai", baseUrl: model.url, apiKey: "bench" },
      onPermissionRequest: sdk.approveAll,
    });
    for (const prompt of ["first", "second", "third"]) {
      const answer = await session.sendAndWait(prompt, GUARD);
      if (!answer?.data?.content) throw new Error(`${runtime}: no answer to ${prompt}`);
    }
    await session.disconnect();
    await c.stop();
    return performance.now() - started;
  } finally {
    model.stop();
    rmSync(d.base, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Peak resident set (VmHWM) of a process in KiB, from /proc. */
function peakRssKiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = status.match(/^VmHWM:\s+(\d+) kB/m);
  return m ? Number(m[1]) : NaN;
}

/** N concurrent sessions on one turnstile server, each TURNS turns with a tool call. */
async function concurrent() {
  const d = dirs("concurrent");
  // Every turn takes one tool call and one answer; which session gets which response does
  // not matter: each turn ends at its first text, and there are exactly enough of both.
  const responses = [];
  for (let i = 0; i < SESSIONS * TURNS; i++) {
    responses.push({ toolCalls: [{ name: "view", arguments: { path: "notes.txt" } }] });
    responses.push({ content: `answer ${i}` });
  }
  const model = await startModel(d.base, responses);
  const c = client(TURNSTILE, d.home, d.project);
  try {
    await c.start();
    const pid = c.cliProcess.pid;
    const idleRss = peakRssKiB(pid);
    const started = performance.now();
    const ids = await Promise.all(
      Array.from({ length: SESSIONS }, async () => {
        const session = await c.createSession({
          model: "scripted-model",
          provider: { type: "openai", baseUrl: model.url, apiKey: "bench" },
          onPermissionRequest: sdk.approveAll,
        });
        for (let t = 0; t < TURNS; t++) {
          const answer = await session.sendAndWait(`turn ${t}`, GUARD);
          if (!answer?.data?.content) throw new Error(`session ${session.sessionId}: no answer to turn ${t}`);
        }
        return session.sessionId;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const peak = peakRssKiB(pid);
    await c.stop();
    let clean = 0;
    const dirty = [];
    for (const id of ids) {
      const journal = join(d.home, "session-state", id, "events.jsonl");
      const audit = spawnSync(TURNSTILE, ["audit", journal], { encoding: "utf8" });
      if (audit.status === 0) clean++;
      else dirty.push(`${id}: exit ${audit.status}: ${(audit.stdout + audit.stderr).trim().split("\n").slice(-3).join(" | ")}`);
    }
    return { seconds, turns: SESSIONS * TURNS, idleRss, peak, clean, dirty };
  } finally {
    model.stop();
    if (!process.env.BENCH_KEEP) rmSync(d.base, { recursive: true, force: true });
  }
}

async function main() {
  if (!existsSync(TURNSTILE)) {
    console.error(`bench-sdk: no turnstile binary at ${TURNSTILE} (make release builds it)`);
    return 2;
  }
  const runtimes = [["turnstile", TURNSTILE]];
  if (existsSync(COPILOT)) runtimes.push(["Copilot CLI 1.0.81-0", COPILOT]);
  else console.log(`note: the Copilot CLI is not installed at ${COPILOT}; run make conformance once to install it`);
  console.log(`== create + 3 turns + stop through @github/copilot-sdk (${RUNS} runs each, interleaved)`);
  const times = Object.fromEntries(runtimes.map(([name]) => [name, []]));
  for (let r = 0; r < RUNS; r++) {
    for (const [name, path] of runtimes) times[name].push(await lifecycle(path));
  }
  console.log("| runtime | median ms | min ms | max ms |");
  console.log("|---|---:|---:|---:|");
  for (const [name] of runtimes) {
    const xs = times[name];
    console.log(`| ${name} | ${median(xs).toFixed(0)} | ${Math.min(...xs).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`);
  }
  console.log(`\n== ${SESSIONS} concurrent sessions on one turnstile server, ${TURNS} turns each with a tool call`);
  const r = await concurrent();
  console.log("| turns | seconds | turns/s | server RSS before | server peak RSS | peak RSS per session | journals audit clean |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  const perSession = (r.peak - r.idleRss) / SESSIONS;
  console.log(
    `| ${r.turns} | ${r.seconds.toFixed(1)} | ${(r.turns / r.seconds).toFixed(1)} | ${(r.idleRss / 1024).toFixed(1)} MiB | ${(r.peak / 1024).toFixed(1)} MiB | ${perSession.toFixed(0)} KiB | ${r.clean}/${SESSIONS} |`,
  );
  for (const line of r.dirty) console.log(`audit not clean: ${line}`);
  return r.clean === SESSIONS ? 0 : 1;
}

process.exit(await main());
