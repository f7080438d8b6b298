// Tests of the differential harness's own logic (no runtime needed):
// node --test conformance/ts/differential/selftest.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { align, compareEvents, compareRequests } from "./compare.mjs";
import { prepareEvents, prepareRequests, stringNormalizer } from "./normalize.mjs";
import { explain, globToRegExp, loadExpected, unusedEntries } from "./expected.mjs";
import { section, withSection } from "./docs.mjs";
import { parseArgs, tally } from "./soak.mjs";

const norm = stringNormalizer({ home: "/h", project: "/h/p", base: "/b", scratch: "/s" });
const ev = (type, data = {}, extra = {}) => ({ type, data, id: `${type}-${Math.random()}`, parentId: null, ...extra });

test("align pairs the longest common subsequence", () => {
  const pairs = align(["a", "b", "c"], ["a", "c", "d"]);
  assert.deepEqual(pairs, [[0, 0], [1, null], [2, 1], [null, 2]]);
});

test("normalisation hides ids, times, paths and datetime tags but keeps words", () => {
  const text = norm("at /h/p/x.txt 2026-12-01T07:25:53.442Z id 6bf5e9c0-caf7-499e-b3e4-fc2adf0daa16 <current_datetime>x</current_datetime>");
  assert.equal(text, "at <project>/x.txt <time> id <uuid> <current_datetime/>");
});

test("identical streams have no differences; a missing, an extra and a moved event are named", () => {
  const a = prepareEvents([ev("session.start"), ev("user.message", { content: "hi" }), ev("system.message", { content: "prompt A" })], norm);
  const same = prepareEvents([ev("session.start"), ev("user.message", { content: "hi" }), ev("system.message", { content: "prompt B" })], norm);
  assert.deepEqual(compareEvents("events", a, same), []);
  const b = prepareEvents([ev("system.message"), ev("session.start"), ev("user.message", { content: "hi" }), ev("abort")], norm);
  const keys = compareEvents("events", a, b).map((d) => d.key);
  assert.ok(keys.includes("events:moved:system.message"), keys.join(" "));
  assert.ok(keys.includes("events:extra:abort"), keys.join(" "));
  const c = prepareEvents([ev("session.start")], norm);
  assert.ok(compareEvents("events", a, c).some((d) => d.key === "events:missing:user.message"));
});

test("field differences: missing, extra and changed values have their own keys", () => {
  const a = prepareEvents([ev("user.message", { content: "hi", delivery: "idle" })], norm);
  const b = prepareEvents([ev("user.message", { content: "ho", messageId: "x" })], norm);
  const keys = compareEvents("events", a, b).map((d) => d.key).sort();
  assert.deepEqual(keys, [
    "events:field-extra:user.message.data.messageId",
    "events:field-missing:user.message.data.delivery",
    "events:value:user.message.data.content",
  ]);
});

test("chunk runs count each type once; timing-dependent types compare by presence", () => {
  const a = prepareEvents(
    [ev("assistant.streaming_delta", {}, { ephemeral: true }), ev("assistant.message_delta", { deltaContent: "a" }, { ephemeral: true }), ev("assistant.streaming_delta", {}, { ephemeral: true }), ev("assistant.message_delta", { deltaContent: "b" }, { ephemeral: true }), ev("session.title_changed", {}, { ephemeral: true })],
    norm,
  );
  assert.deepEqual(a.sequence.map((e) => e.type), ["assistant.streaming_delta", "assistant.message_delta"]);
  const b = prepareEvents([ev("assistant.message_delta", { deltaContent: "a" }, { ephemeral: true })], norm);
  const keys = compareEvents("events", a, b).map((d) => d.key);
  assert.deepEqual(keys.sort(), ["events:missing:assistant.streaming_delta~", "events:missing:session.title_changed~"]);
});

test("requests: message roles align, system prompt text is ignored, tools compared by name", () => {
  const req = (messages, tools) => ({ method: "POST", path: "/v1/chat/completions", headers: {}, body: { model: "m", messages, tools } });
  const tool = (name) => ({ type: "function", function: { name } });
  const a = prepareRequests([req([{ role: "system", content: "A" }, { role: "user", content: "hi" }], [tool("bash")])], norm);
  const b = prepareRequests([req([{ role: "system", content: "B" }, { role: "user", content: "hi" }], [tool("bash")])], norm);
  assert.deepEqual(compareRequests(a, b), []);
  const c = prepareRequests([req([{ role: "user", content: "hi" }], [tool("view")])], norm);
  const keys = compareRequests(a, c).map((d) => d.key);
  assert.deepEqual(keys.sort(), ["requests:missing:message.system", "requests:value:tools"]);
});

test("expected entries match by glob, scenario and variant; a bad file is named", () => {
  assert.ok(globToRegExp("events:missing:*~").test("events:missing:session.idle~"));
  assert.ok(!globToRegExp("events:missing:*~").test("events:missing:session.idle"));
  const dir = mkdtempSync(join(tmpdir(), "expected-"));
  const path = join(dir, "expected.json");
  writeFileSync(path, JSON.stringify({ differences: [{ key: "events:*", scenarios: ["basic"], reason: "turnstile does not yet do it" }] }));
  const entries = loadExpected(path);
  assert.ok(explain(entries, "basic", "turnstile", "events:missing:x"));
  assert.equal(explain(entries, "abort", "turnstile", "events:missing:x"), null);
  writeFileSync(path, JSON.stringify({ differences: [{ key: "events:*", reason: "short" }] }));
  assert.throws(() => loadExpected(path), /differences\[0\].*reason/);
});

test("the docs section is replaced in place, keeping what follows it", () => {
  const text = section([{ key: "k", scenarios: "*", reason: "turnstile does not yet do it" }]);
  const doc = "# P\n\n## Differences from the Copilot CLI\nold\n\n## Later\nkeep\n";
  const out = withSection(doc, text);
  assert.ok(out.startsWith("# P\n\n## Differences from the Copilot CLI\n"));
  assert.ok(out.includes("- turnstile does not yet do it. (all scenarios; `k`)"));
  assert.ok(out.endsWith("\n## Later\nkeep\n"));
  assert.ok(!out.includes("old"));
});

test("soak: arguments are checked, naming the bad one", () => {
  assert.deepEqual(parseArgs([]), { runs: 3, load: 2, scenarios: [] });
  assert.deepEqual(parseArgs(["--runs", "5", "--load", "0", "basic"]), { runs: 5, load: 0, scenarios: ["basic"] });
  assert.throws(() => parseArgs(["--runs", "0"]), /--runs needs a whole number of at least 1, got "0"/);
  assert.throws(() => parseArgs(["--load"]), /--load needs a whole number, got null/);
  assert.throws(() => parseArgs(["no-such-scenario"]), /no scenario or option named no-such-scenario/);
});

test("soak: failures add up with their runs; unused entries only where all their scenarios ran", () => {
  const expected = [
    { index: 0, key: "a", scenarios: "*" },
    { index: 1, key: "b", scenarios: ["basic"] },
    { index: 2, key: "c", scenarios: ["rewind"] },
    { index: 3, key: "d", scenarios: ["basic", "rewind"] },
  ];
  const summaries = [
    { scenarios: ["basic"], used: [0], failures: ["basic [turnstile]: 1 unexpected difference(s): x"] },
    null,
    { scenarios: ["basic"], used: [0], failures: ["basic [turnstile]: 1 unexpected difference(s): x"] },
  ];
  const { failures, unused } = tally(summaries, expected, ["basic", "rewind"]);
  assert.deepEqual([...failures], [
    ["basic [turnstile]: 1 unexpected difference(s): x", [1, 3]],
    ["the run ended without a summary (see its log)", [2]],
  ]);
  assert.deepEqual(unused.map((e) => e.key), ["b"], "d names rewind, which did not run");
  const clean = tally([{ scenarios: ["basic"], used: [1, 3], failures: [] }], expected, ["basic", "rewind"]);
  assert.equal(clean.failures.size, 0);
  assert.deepEqual(clean.unused, [], "an entry of every scenario is not stale when only some ran");
  const every = tally([{ scenarios: ["basic", "rewind"], used: [1, 2], failures: [] }], expected, ["basic", "rewind"]);
  assert.deepEqual(every.unused.map((e) => e.key), ["a", "d"]);
});

test("unused entries: with every scenario run, each entry not used; a misspelt scenario is reported", () => {
  const entries = [
    { index: 0, key: "a", scenarios: "*" },
    { index: 1, key: "b", scenarios: ["basic"] },
    { index: 2, key: "c", scenarios: ["rewind", "basci"] },
    { index: 3, key: "d", scenarios: ["basci"] },
  ];
  const all = ["basic", "rewind"];
  const everyRun = unusedEntries(entries, new Set([1]), new Set(all), all);
  assert.deepEqual(everyRun.map((e) => e.key), ["a", "c", "d"]);
  // Only basic ran: c names rewind, which might use it; d names no known scenario at all.
  const basicOnly = unusedEntries(entries, new Set(), new Set(["basic"]), all);
  assert.deepEqual(basicOnly.map((e) => e.key), ["b", "d"]);
});
