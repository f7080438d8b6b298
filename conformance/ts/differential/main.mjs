// The differential harness: every scenario of scenarios.mjs runs once with the Copilot CLI
// (the reference) and once with turnstile (cross scenarios also with the two mixed), on the
// same scripted model; the model requests, the live session.event streams and the journals
// are normalised and compared. Each difference is either listed in
// conformance/expected-differences.json (with its reason) or a failure.
//
// Usage: node conformance/ts/differential/main.mjs [scenario ...]   (all when none is named)
// Writes target/conformance/differential/report.txt, summary.json (the scenarios run, the
// expected entries they used, the failures) and <scenario>/<variant>/seen.json;
// prints one line per scenario and variant; exits 1 on an unexpected difference or when a
// reference run fails, 0 otherwise. Without the reference CLI installed it says so and exits 0.

import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { OUT, withGuard } from "../harness.mjs";
import { Run, RUNTIMES, referenceAvailable } from "./run.mjs";
import { SCENARIOS } from "./scenarios.mjs";
import { compareEvents, compareKeyOrder, compareOutcomes, compareRequests, group } from "./compare.mjs";
import { normalizeValue, prepareEvents, prepareRequests, stringNormalizer } from "./normalize.mjs";
import { EXPECTED_PATH, explain, loadExpected, unusedEntries } from "./expected.mjs";
import { checkMirrored } from "./docs.mjs";

const SCENARIO_GUARD_MS = 180_000;

/** The runtime assignments a scenario runs with; the first is the reference. */
function variantsOf(scenario) {
  const { copilot, turnstile } = RUNTIMES;
  const list = [
    ["copilot", { a: copilot, b: copilot }],
    ["turnstile", { a: turnstile, b: turnstile }],
  ];
  if (scenario.cross) {
    list.push(["copilot-then-turnstile", { a: copilot, b: turnstile }]);
    list.push(["turnstile-then-copilot", { a: turnstile, b: copilot }]);
  }
  return list;
}

/** Runs one scenario with one variant; never throws: an error becomes part of what was seen. */
async function runOnce(name, variant, roles) {
  const run = new Run(name, variant, roles);
  let error = null;
  try {
    await withGuard(SCENARIOS[name](run), `scenario ${name} (${variant})`, SCENARIO_GUARD_MS);
  } catch (e) {
    error = String(e?.message ?? e);
    run.log(`error: ${e?.stack ?? e}`);
  }
  const seen = await run.finish();
  return { run, seen, error };
}

/** Everything that differs between the reference run and a subject run. */
export function differences(ref, sub) {
  const normRef = stringNormalizer(ref.run);
  const normSub = stringNormalizer(sub.run);
  const out = [];
  const labels = new Set([...Object.keys(ref.seen.events), ...Object.keys(sub.seen.events)]);
  for (const label of labels) {
    const a = prepareEvents(ref.seen.events[label] ?? [], normRef);
    const b = prepareEvents(sub.seen.events[label] ?? [], normSub);
    for (const d of compareEvents("events", a, b)) out.push({ ...d, detail: `[${label}] ${d.detail}` });
  }
  for (const label of new Set([...Object.keys(ref.seen.journals), ...Object.keys(sub.seen.journals)])) {
    const ra = ref.seen.journals[label] ?? [];
    const rb = sub.seen.journals[label] ?? [];
    const a = prepareEvents(ra, normRef);
    const b = prepareEvents(rb, normSub);
    for (const d of [...compareEvents("journal", a, b), ...compareKeyOrder(ra, rb)]) {
      out.push({ ...d, detail: `[${label}] ${d.detail}` });
    }
  }
  out.push(...compareRequests(prepareRequests(ref.seen.requests, normRef), prepareRequests(sub.seen.requests, normSub)));
  out.push(
    ...compareOutcomes(
      normalizeValue(ref.seen.outcome, normRef, { numbers: true }),
      normalizeValue(sub.seen.outcome, normSub, { numbers: true }),
    ),
  );
  if (sub.error !== null) out.push({ key: "outcome:error", detail: `turnstile run failed: ${normSub(sub.error)}` });
  return out;
}

/** A first reason for a difference nobody has explained yet (`--propose`); a person edits it. */
function proposedReason(key) {
  const [channel, kind, ...rest] = key.split(":");
  const what = rest.join(":");
  const where = { events: "in the live event stream", journal: "in the journal", requests: "in the model request", outcome: "in what the client observes" }[channel];
  switch (kind) {
    case "missing":
      return `turnstile does not yet send ${what} ${where}`;
    case "extra":
      return `turnstile sends ${what} ${where}, the Copilot CLI does not`;
    case "moved":
      return `turnstile sends ${what} at another place ${where}`;
    case "field-missing":
      return `turnstile does not yet fill ${what} ${where}`;
    case "field-extra":
      return `turnstile adds ${what} ${where}, the Copilot CLI does not`;
    case "value":
      return `turnstile's ${what} differs ${where}`;
    default:
      return `turnstile differs ${where}: ${key}`;
  }
}

async function main() {
  const args = process.argv.slice(2);
  const proposeAt = args.indexOf("--propose");
  const proposePath = proposeAt >= 0 ? args[proposeAt + 1] : null;
  if (proposeAt >= 0 && !proposePath) {
    console.error("differential: --propose needs a file to write the proposed entries to");
    process.exit(2);
  }
  const wanted = args.filter((a, i) => a !== "--propose" && (proposeAt < 0 || i !== proposeAt + 1));
  const proposals = new Map();
  for (const w of wanted) {
    if (!(w in SCENARIOS)) {
      console.error(`differential: no scenario named ${w} (known: ${Object.keys(SCENARIOS).join(", ")})`);
      process.exit(2);
    }
  }
  if (!referenceAvailable()) {
    console.log(`SKIP differential: the Copilot CLI is not installed at ${RUNTIMES.copilot.path} (conformance/run.sh installs it from npm)`);
    return 0;
  }
  const expected = loadExpected(EXPECTED_PATH);
  const unmirrored = checkMirrored();
  if (unmirrored) console.log(`FAIL ${unmirrored}`);
  const used = new Set();
  const names = wanted.length > 0 ? wanted : Object.keys(SCENARIOS);
  const report = [];
  const failures = [];
  for (const name of names) {
    const [[refVariant, refRoles], ...subjects] = variantsOf(SCENARIOS[name]);
    let ref = await runOnce(name, refVariant, refRoles);
    if (ref.error !== null) {
      // The reference is another program on a shared machine: one failed run of it says
      // nothing about turnstile, so it gets a second try before the scenario counts as failed.
      console.log(`note: ${name}: the reference run failed (${ref.error}); running it again`);
      ref = await runOnce(name, refVariant, refRoles);
    }
    if (ref.error !== null) {
      failures.push(`${name}: the reference run failed twice`);
      console.log(`ERROR ${name}: the reference run failed: ${ref.error}`);
      report.push(`## ${name}: the reference run failed\n${ref.error}\n`);
      continue;
    }
    for (const [variant, roles] of subjects) {
      const sub = await runOnce(name, variant, roles);
      const groups = group(differences(ref, sub));
      const lines = [];
      let unexpected = 0;
      for (const g of groups) {
        const why = explain(expected, name, variant, g.key);
        if (why) used.add(why.index);
        else {
          unexpected++;
          const p = proposals.get(g.key) ?? { key: g.key, scenarios: [], reason: proposedReason(g.key) };
          if (!p.scenarios.includes(name)) p.scenarios.push(name);
          proposals.set(g.key, p);
        }
        lines.push(`${why ? "  expected  " : "  UNEXPECTED"} ${g.key}${g.count > 1 ? ` (x${g.count})` : ""}${why ? ` -- ${why.reason}` : ""}`);
        for (const d of g.details) lines.push(`                ${d}`);
      }
      const verdict = unexpected > 0 ? "FAIL" : "PASS";
      const shown = lines.filter((l) => l.startsWith("  UNEXPECTED"));
      if (unexpected > 0) {
        // The keys too: the tail of a cut log then still says which difference it was.
        const keys = shown.map((l) => l.slice("  UNEXPECTED ".length)).slice(0, 4).join("; ");
        failures.push(`${name} [${variant}]: ${unexpected} unexpected difference(s): ${keys}`);
      }
      console.log(`${verdict} ${name} [${variant}]: ${groups.length} difference(s), ${unexpected} unexpected`);
      for (const l of shown.slice(0, 8)) console.log(l);
      if (shown.length > 8) console.log(`  ... ${shown.length - 8} more in the report`);
      report.push(`## ${name} [${variant} vs ${refVariant}]: ${verdict}\n${lines.join("\n") || "  identical"}\n`);
    }
  }
  if (wanted.length === 0) {
    const stale = unusedEntries(expected, used, new Set(names), names);
    if (stale.length > 0) {
      report.push(`## expected differences no longer seen\n${stale.map((e) => `  ${e.key} -- ${e.reason}`).join("\n")}\n`);
      console.log(`note: ${stale.length} expected difference(s) no longer seen (listed in the report; remove them)`);
    }
  }
  if (proposePath) {
    writeFileSync(proposePath, JSON.stringify({ differences: [...proposals.values()] }, null, 2) + "\n");
    console.log(`proposed ${proposals.size} entries: ${proposePath}`);
  }
  mkdirSync(join(OUT, "differential"), { recursive: true });
  const reportPath = join(OUT, "differential", "report.txt");
  writeFileSync(reportPath, report.join("\n"));
  console.log(`differential report: ${reportPath}`);
  if (unmirrored) failures.push(unmirrored);
  // What soak.mjs adds up over runs: the scenarios run, the entries they used, the failures.
  const summary = { scenarios: names, used: [...used].sort((a, b) => a - b), failures: [...failures] };
  writeFileSync(join(OUT, "differential", "summary.json"), JSON.stringify(summary, null, 1) + "\n");
  // Repeated last, so the tail of a long log names what failed.
  for (const f of failures) console.log(`FAILED ${f}`);
  return failures.length > 0 ? 1 : 0;
}

process.exit(await main());
