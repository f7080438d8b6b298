// The expected differences (conformance/expected-differences.json): every difference between
// the Copilot CLI and turnstile is either listed there, with its reason, or a failure.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** conformance/expected-differences.json. */
export const EXPECTED_PATH = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "expected-differences.json");

/** Loads and checks the list; throws naming the file and the entry when one is malformed. */
export function loadExpected(path) {
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`${path}: cannot read the expected differences: ${e.message}`);
  }
  const entries = parsed?.differences;
  if (!Array.isArray(entries)) throw new Error(`${path}: expected {"differences": [...]}`);
  return entries.map((entry, i) => {
    const where = `${path}: differences[${i}]`;
    if (typeof entry.key !== "string" || entry.key.length === 0) throw new Error(`${where}: "key" must be a non-empty string`);
    if (typeof entry.reason !== "string" || entry.reason.length < 10) throw new Error(`${where} (${entry.key}): "reason" must say why`);
    const scenarios = entry.scenarios ?? "*";
    if (scenarios !== "*" && !(Array.isArray(scenarios) && scenarios.every((s) => typeof s === "string"))) {
      throw new Error(`${where} (${entry.key}): "scenarios" must be "*" or a list of scenario names`);
    }
    const variants = entry.variants ?? "*";
    return { ...entry, index: i, scenarios, variants, pattern: globToRegExp(entry.key) };
  });
}

/** `*` matches any run of characters; everything else is literal. */
export function globToRegExp(glob) {
  const escaped = glob.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`);
}

/** The first entry explaining difference `key` of `scenario` in `variant`, or null. */
export function explain(entries, scenario, variant, key) {
  return (
    entries.find(
      (e) =>
        (e.scenarios === "*" || e.scenarios.includes(scenario)) &&
        (e.variants === "*" || e.variants.includes(variant)) &&
        e.pattern.test(key),
    ) ?? null
  );
}

/** The entries not in `used` (a set of entry indexes) that the scenarios in `ran` could have
 * used: an entry of every scenario (`*`) only when all of `all` ran, a listed one when each
 * scenario it names ran or is none of `all` (a misspelt name never matches, so it is reported).
 * When every scenario ran, that is every entry not used. */
export function unusedEntries(entries, used, ran, all) {
  const everyOne = all.every((n) => ran.has(n));
  return entries.filter(
    (e) =>
      !used.has(e.index) &&
      (e.scenarios === "*" ? everyOne : e.scenarios.every((n) => ran.has(n) || !all.includes(n))),
  );
}
