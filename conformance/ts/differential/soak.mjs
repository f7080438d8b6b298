// The differential harness run again and again on a busy machine: the Copilot CLI answers some
// things by timing (where a notice lands, whether a stopped server still says connected), and
// one run on an idle machine does not show them. Each run starts `--load` processes that spin
// on the CPU for as long as it lasts, then runs main.mjs with the scenarios named (all when
// none), and keeps its log and report under target/conformance/differential/soak/.
//
// Usage: node conformance/ts/differential/soak.mjs [--runs N] [--load L] [scenario ...]
//        (defaults: 3 runs, 2 spinning processes; `make conformance-soak SOAK_RUNS=N SOAK_LOAD=L`)
// Prints, over all runs: each failure with the runs it showed in, and the expected entries no
// run used among those whose scenarios all ran (candidates for removal: one whose reason is
// timing may just not have fallen that way). Exits 1 when any run failed, 0 otherwise, 2 on bad arguments.

import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { OUT, ROOT } from "../harness.mjs";
import { RUNTIMES, referenceAvailable } from "./run.mjs";
import { SCENARIOS } from "./scenarios.mjs";
import { EXPECTED_PATH, loadExpected, unusedEntries } from "./expected.mjs";

const SOAK_DIR = join(OUT, "differential", "soak");
const SUMMARY = join(OUT, "differential", "summary.json");
const REPORT = join(OUT, "differential", "report.txt");
// Spins, and now and then looks whether soak.mjs is still its parent: a soak killed any way
// leaves no process spinning behind it.
const SPIN = "const p = Number(process.argv[1]); for (let i = 1; ; i++) if (i % 1e8 === 0 && process.ppid !== p) process.exit(0);";

/** `--runs N --load L scenario...`, or an error naming the bad argument. */
export function parseArgs(args) {
  const out = { runs: 3, load: 2, scenarios: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--runs" || a === "--load") {
      const n = Number(args[i + 1]);
      if (!Number.isInteger(n) || n < (a === "--runs" ? 1 : 0)) {
        throw new Error(`${a} needs a whole number${a === "--runs" ? " of at least 1" : ""}, got ${JSON.stringify(args[i + 1] ?? null)}`);
      }
      out[a.slice(2)] = n;
      i++;
    } else if (a in SCENARIOS) {
      out.scenarios.push(a);
    } else {
      throw new Error(`no scenario or option named ${a} (scenarios: ${Object.keys(SCENARIOS).join(", ")})`);
    }
  }
  return out;
}

/** Adds up the runs' summaries: failures with the runs they showed in, and the entries no run
 * used that the scenarios run could have used ([`unusedEntries`]). `summaries[i]` is run
 * i+1's summary, or null if it wrote none. */
export function tally(summaries, expected, all = Object.keys(SCENARIOS)) {
  const failures = new Map();
  const used = new Set();
  const ran = new Set();
  summaries.forEach((s, i) => {
    const lines = s === null ? ["the run ended without a summary (see its log)"] : s.failures;
    for (const f of lines) failures.set(f, [...(failures.get(f) ?? []), i + 1]);
    for (const index of s?.used ?? []) used.add(index);
    for (const name of s?.scenarios ?? []) ran.add(name);
  });
  return { failures, unused: unusedEntries(expected, used, ran, all) };
}

/** Runs main.mjs once with `load` spinning processes beside it; its summary, or null. */
async function runOnce(n, load, scenarios) {
  rmSync(SUMMARY, { force: true });
  const spinners = Array.from({ length: load }, () =>
    spawn(process.execPath, ["-e", SPIN, String(process.pid)], { stdio: "ignore" }),
  );
  const log = [];
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "conformance/ts/differential/main.mjs"), ...scenarios], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (chunk) => log.push(chunk);
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("close", (c) => resolve(c));
  });
  for (const s of spinners) s.kill("SIGKILL");
  writeFileSync(join(SOAK_DIR, `run-${n}.log`), Buffer.concat(log));
  if (existsSync(REPORT)) copyFileSync(REPORT, join(SOAK_DIR, `report-${n}.txt`));
  if (!existsSync(SUMMARY)) return null;
  const summary = JSON.parse(readFileSync(SUMMARY, "utf8"));
  if (code !== 0 && summary.failures.length === 0) summary.failures.push(`main.mjs exited with ${code}`);
  return summary;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`soak: ${e.message}`);
    return 2;
  }
  if (!referenceAvailable()) {
    console.error(`soak: the Copilot CLI is not installed at ${RUNTIMES.copilot.path} (make conformance installs it)`);
    return 2;
  }
  const expected = loadExpected(EXPECTED_PATH);
  mkdirSync(SOAK_DIR, { recursive: true });
  const summaries = [];
  for (let n = 1; n <= opts.runs; n++) {
    const started = Date.now();
    const summary = await runOnce(n, opts.load, opts.scenarios);
    summaries.push(summary);
    const verdict = summary === null ? "no summary" : summary.failures.length === 0 ? "passed" : `${summary.failures.length} failure(s)`;
    console.log(`run ${n}/${opts.runs} (${opts.load} spinning): ${verdict}, ${((Date.now() - started) / 1000).toFixed(0)} s; log ${join(SOAK_DIR, `run-${n}.log`)}`);
  }
  const { failures, unused } = tally(summaries, expected);
  for (const [line, runs] of failures) console.log(`FAILED in run(s) ${runs.join(", ")}: ${line}`);
  if (unused.length > 0) {
    console.log(`${unused.length} expected difference(s) used by no run (candidates for removal; one whose reason is timing may still show):`);
    for (const e of unused) console.log(`  ${e.key} [${e.scenarios === "*" ? "*" : e.scenarios.join(", ")}] -- ${e.reason}`);
  }
  console.log(failures.size === 0 ? `soak: ${opts.runs} run(s) passed` : `soak: FAILED (${failures.size} distinct failure(s))`);
  return failures.size === 0 ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(await main());
