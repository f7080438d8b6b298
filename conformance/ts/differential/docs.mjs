// docs/protocol.md's section "Differences from the Copilot CLI" mirrors
// conformance/expected-differences.json; this writes it (`--write`) or checks it (`--check`,
// what the differential harness does before it runs).
//
// Usage: node conformance/ts/differential/docs.mjs --write | --check

import { readFileSync, writeFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { EXPECTED_PATH, loadExpected } from "./expected.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const PROTOCOL_PATH = join(ROOT, "docs", "protocol.md");
const HEADING = "## Differences from the Copilot CLI";

/** The section's text, generated from the expected differences. */
export function section(entries) {
  const byReason = new Map();
  for (const e of entries) {
    const g = byReason.get(e.reason) ?? { reason: e.reason, keys: [], scenarios: new Set() };
    g.keys.push(e.key);
    for (const s of e.scenarios === "*" ? ["all"] : e.scenarios) g.scenarios.add(s);
    byReason.set(e.reason, g);
  }
  const lines = [
    HEADING,
    "",
    "`make conformance` runs the same client scenarios (`conformance/ts/differential/`) against",
    "the Copilot CLI 1.0.81-0 (npm `@github/copilot`, the reference) and turnstile, on the same",
    "scripted model, and compares the model requests, the live `session.event` streams, the",
    "journals and what the client observes, after normalising ids, times, paths, pids, measured",
    "numbers and the system prompt's text. Every difference it finds is listed in",
    "`conformance/expected-differences.json` with its reason, and below (generated from that",
    "file by `node conformance/ts/differential/docs.mjs --write`); any other difference fails the",
    "run. Entries saying \"does not yet\" are work in progress and go away as it lands.",
    "",
  ];
  for (const g of byReason.values()) {
    const scenarios = g.scenarios.has("all") ? "all scenarios" : [...g.scenarios].join(", ");
    lines.push(`- ${g.reason}. (${scenarios}; ${g.keys.map((k) => `\`${k}\``).join(", ")})`);
  }
  return `${lines.join("\n")}\n`;
}

/** The protocol document with the section replaced (or appended). */
export function withSection(doc, text) {
  const at = doc.indexOf(`\n${HEADING}\n`);
  if (at < 0) return `${doc.replace(/\n*$/, "")}\n\n${text}`;
  const next = doc.indexOf("\n## ", at + HEADING.length + 1);
  const tail = next >= 0 ? `\n${doc.slice(next + 1)}` : "";
  return doc.slice(0, at + 1) + text + tail;
}

/** Whether docs/protocol.md mirrors the expected differences; the message says what to do. */
export function checkMirrored() {
  const wanted = withSection(readFileSync(PROTOCOL_PATH, "utf8"), section(loadExpected(EXPECTED_PATH)));
  if (wanted === readFileSync(PROTOCOL_PATH, "utf8")) return null;
  return `${PROTOCOL_PATH}: section "${HEADING.slice(3)}" does not mirror ${EXPECTED_PATH}; run: node conformance/ts/differential/docs.mjs --write`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const mode = process.argv[2];
  if (mode === "--write") {
    const doc = readFileSync(PROTOCOL_PATH, "utf8");
    writeFileSync(PROTOCOL_PATH, withSection(doc, section(loadExpected(EXPECTED_PATH))));
    console.log(`wrote ${PROTOCOL_PATH}`);
  } else if (mode === "--check") {
    const problem = checkMirrored();
    if (problem) {
      console.error(problem);
      process.exit(1);
    }
    console.log("docs/protocol.md mirrors conformance/expected-differences.json");
  } else {
    console.error("usage: node conformance/ts/differential/docs.mjs --write | --check");
    process.exit(2);
  }
}
