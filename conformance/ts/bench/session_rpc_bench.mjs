// `make bench-session-rpc`: two session-state calls a client makes on a long session, through
// the official TypeScript client, turnstile next to the Copilot CLI in one run.
//
// The session is fixtures/long-session (10,014 events, 2,002 turns, in the runtime's format),
// copied into each runtime's own fresh home. Each runtime then answers, N times each:
//   - `sessions.fork` of the whole session (a new session whose journal is the source's);
//   - `session.eventLog.read` of the whole journal after a resume, page by page (1,000 events a
//     page, the most a read may ask for, persisted events only) until `hasMore` is false.
// Medians, minimum and maximum in milliseconds; the events read are counted and must be the
// journal's, the fork's journal must hold as many lines as the source's.
//
// Usage: node conformance/ts/bench/session_rpc_bench.mjs [--runs N]
// Environment: TURNSTILE_BIN (default target/release/turnstile), COPILOT_REFERENCE_CLI.

import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, OUT, sdk } from "../harness.mjs";

const args = process.argv.slice(2);
const at = args.indexOf("--runs");
const RUNS = at >= 0 ? Number(args[at + 1]) : 5;
const TURNSTILE = resolve(process.env.TURNSTILE_BIN ?? join(ROOT, "target", "release", "turnstile"));
const COPILOT = resolve(
  process.env.COPILOT_REFERENCE_CLI ?? join(OUT, "node", "node_modules", "@github", "copilot-linux-x64", "copilot"),
);
const FIXTURE = join(ROOT, "fixtures", "long-session", "events.jsonl");
const SOURCE_ID = JSON.parse(readFileSync(FIXTURE, "utf8").split("\n", 1)[0]).data.sessionId;
const LINES = readFileSync(FIXTURE, "utf8").split("\n").filter((l) => l.length > 0).length;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const summary = (xs) =>
  `${median(xs).toFixed(1).padStart(8)} ms  (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;

/** A fresh home holding the fixture as session SOURCE_ID, and a project directory. */
function dirs(name) {
  const base = mkdtempSync(join(tmpdir(), `bench-session-rpc-${name}-`));
  const home = join(base, "home");
  const project = join(base, "project");
  mkdirSync(join(home, "session-state", SOURCE_ID), { recursive: true });
  mkdirSync(project);
  copyFileSync(FIXTURE, join(home, "session-state", SOURCE_ID, "events.jsonl"));
  return { base, home, project };
}

function lineCount(path) {
  return readFileSync(path, "utf8").split("\n").filter((l) => l.length > 0).length;
}

async function measure(name, runtime) {
  const d = dirs(name);
  const client = new sdk.CopilotClient({
    connection: sdk.RuntimeConnection.forStdio({ path: runtime }),
    baseDirectory: d.home,
    workingDirectory: d.project,
    logLevel: "error",
  });
  try {
    await client.start();
    const fork = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      const forked = await client.rpc.sessions.fork({ sessionId: SOURCE_ID });
      fork.push(performance.now() - started);
      const copy = join(d.home, "session-state", forked.sessionId, "events.jsonl");
      // The fork's journal: the source's lines (a runtime may add its own start records).
      if (!existsSync(copy) || lineCount(copy) < LINES) {
        throw new Error(`${name}: the fork ${forked.sessionId} does not hold the source's ${LINES} lines`);
      }
    }
    const session = await client.resumeSession(SOURCE_ID, { onPermissionRequest: sdk.approveAll });
    const read = [];
    let events = 0;
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      let cursor;
      events = 0;
      for (;;) {
        const page = await session.rpc.eventLog.read({ cursor, max: 1000, includeEphemeral: false });
        events += page.events.length;
        cursor = page.cursor;
        if (!page.hasMore) break;
      }
      read.push(performance.now() - started);
    }
    if (events < LINES) throw new Error(`${name}: eventLog.read gave ${events} events of ${LINES}`);
    await session.disconnect();
    return { fork, read, events };
  } finally {
    await client.stop().catch(() => {});
    rmSync(d.base, { recursive: true, force: true });
  }
}

console.log(`session of ${LINES} events (fixtures/long-session), ${RUNS} runs each; load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`);
const rows = [["turnstile", TURNSTILE]];
if (existsSync(COPILOT)) rows.push(["copilot", COPILOT]);
else console.log(`(the Copilot CLI is not installed at ${COPILOT}: turnstile only)`);
for (const [name, runtime] of rows) {
  const r = await measure(name, runtime);
  console.log(`${name.padEnd(10)} sessions.fork          ${summary(r.fork)}`);
  console.log(`${name.padEnd(10)} session.eventLog.read  ${summary(r.read)}  ${r.events} events`);
}
