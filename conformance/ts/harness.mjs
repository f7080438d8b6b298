// Shared pieces of the conformance scenarios: paths, the scripted model, clients of the
// official SDK spawning the turnstile binary, schema validation, journal reading, checks.
//
// Timeouts here are failure guards only: a scenario passes on what happened, never on time.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const OUT = join(ROOT, "target", "conformance");
export const NODE_MODULES = join(OUT, "node", "node_modules");
export const TURNSTILE = process.env.TURNSTILE_BIN ?? join(ROOT, "target", "debug", "turnstile");
export const SCRIPTED_MODEL =
  process.env.SCRIPTED_MODEL_BIN ?? join(ROOT, "target", "debug", "scripted-model");
export const SCRIPTS = join(ROOT, "conformance", "scripts");
export const GUARD_MS = 60_000;

const require = createRequire(join(NODE_MODULES, "noop.js"));
const sdkEntry = join(NODE_MODULES, "@github", "copilot-sdk", "dist", "index.js");
export const sdk = await import(sdkEntry);
const Ajv = require("ajv").default;
const addFormats = require("ajv-formats").default;

/** The event schema shipped with the installed SDK runtime package. */
export const SCHEMA_PATH = join(
  NODE_MODULES,
  "@github",
  "copilot-sdk-linux-x64",
  "schemas",
  "session-events.schema.json",
);
const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: true });
addFormats(ajv);
const validateEvent = ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, "utf8")));

/** A failed expectation. */
export class CheckError extends Error {}

/** Throws unless `condition`. */
export function check(condition, message) {
  if (!condition) throw new CheckError(message);
}

/** Throws unless `actual` deep-equals `expected`. */
export function checkEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: expected ${e}, got ${a}`);
}

/** Validates one event (live or from the journal); throws with the schema errors. */
export function checkSchema(event, where) {
  if (!validateEvent(event)) {
    const errors = ajv.errorsText(validateEvent.errors, { separator: "; " });
    throw new CheckError(`${where}: ${event.type} does not match session-events.schema.json: ${errors}`);
  }
}

/** A fresh directory for a scenario: `home` (COPILOT_HOME) and `project` (the cwd). */
export function scenarioDirs(name) {
  const base = join(OUT, "work", name);
  rmSync(base, { recursive: true, force: true });
  const home = join(base, "home");
  const project = join(base, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  return { base, home, project };
}

/** Starts the scripted model on a script of conformance/scripts; resolves to {url, stop}. */
export async function startModel(scriptName, { recordRequests } = {}) {
  const args = ["--script", join(SCRIPTS, scriptName)];
  if (recordRequests) args.push("--record-requests", recordRequests);
  const child = spawn(SCRIPTED_MODEL, args, { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const url = await withGuard(
    new Promise((resolveUrl, reject) => {
      child.once("exit", (code) => reject(new Error(`scripted-model exited with ${code}`)));
      lines.on("line", (line) => {
        const match = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/);
        if (match) resolveUrl(match[1]);
      });
    }),
    "scripted-model did not start",
  );
  return {
    url,
    stop: () => {
      if (child.exitCode === null) child.kill("SIGTERM");
    },
  };
}

/** A client of the official SDK that spawns turnstile over stdio. */
export function newClient({ home, project }) {
  return new sdk.CopilotClient({
    connection: sdk.RuntimeConnection.forStdio({ path: TURNSTILE }),
    baseDirectory: home,
    workingDirectory: project,
    logLevel: process.env.CONFORMANCE_LOG_LEVEL ?? "warning",
  });
}

/** The BYOK provider of every scenario. */
export function provider(url) {
  return { type: "openai", baseUrl: url, apiKey: "conformance-key" };
}

/** Session options shared by the scenarios: BYOK model, events collected and validated. */
export function sessionOptions(url, events, extra = {}) {
  return {
    model: "scripted-model",
    provider: provider(url),
    onEvent: (event) => {
      events.push(event);
    },
    ...extra,
  };
}

/** The journal of a session as JSON lines. */
export function journal(home, sessionId) {
  const path = join(home, "session-state", sessionId, "events.jsonl");
  check(existsSync(path), `no journal at ${path}`);
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line, i) => {
      try {
        return JSON.parse(line);
      } catch (e) {
        throw new CheckError(`${path}:${i + 1}: not JSON: ${e.message}`);
      }
    });
}

/** Validates every live event and every journal line; checks that the journal holds exactly
 * the persisted events received (same ids, same order) and none of the ephemeral ones. */
export function checkEventsAndJournal(events, lines, { from = 0 } = {}) {
  events.forEach((e, i) => checkSchema(e, `live event ${i}`));
  lines.forEach((e, i) => checkSchema(e, `journal line ${i + 1}`));
  for (const line of lines) {
    check(line.ephemeral === undefined, `journal line ${line.type} carries "ephemeral"`);
  }
  // A tool result's `contents` (a shell's shell_exit block) are sent live only, as the Copilot
  // CLI sends them: the journal line is the live event without them.
  const withoutLiveOnly = (e) => {
    if (e.type !== "tool.execution_complete" || e.data?.result?.contents === undefined) return e;
    const { contents, ...result } = e.data.result;
    return { ...e, data: { ...e.data, result } };
  };
  const persisted = events.filter((e) => e.ephemeral !== true).map(withoutLiveOnly);
  const tail = lines.slice(from);
  checkEqual(
    tail.map((l) => l.id),
    persisted.map((e) => e.id),
    "journal ids vs received persisted events",
  );
  checkEqual(tail, persisted, "journal lines vs received persisted events");
  const ephemeralTypes = new Set(events.filter((e) => e.ephemeral === true).map((e) => e.type));
  for (const line of lines) {
    check(!ephemeralTypes.has(line.type), `ephemeral ${line.type} written to the journal`);
  }
}

/** Checks that `session.idle` came exactly once and last. */
export function checkIdleLast(events) {
  const idles = events.filter((e) => e.type === "session.idle");
  check(idles.length === 1, `expected one session.idle, got ${idles.length}`);
  check(events.at(-1).type === "session.idle", `last event is ${events.at(-1).type}, not session.idle`);
}

/** Resolves when an event matching `predicate` arrives on `session`. */
export function nextEvent(session, predicate, what) {
  return withGuard(
    new Promise((resolveEvent) => {
      const off = session.on((event) => {
        if (predicate(event)) {
          off();
          resolveEvent(event);
        }
      });
    }),
    `no ${what}`,
  );
}

/** Rejects when `promise` does not settle within the guard. */
export function withGuard(promise, what, ms = GUARD_MS) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckError(`${what} (guard of ${ms} ms reached)`)), ms);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

/** Runs a node script as a separate client process; resolves to its JSON output line. */
export async function runChild(script, args) {
  const child = spawn(process.execPath, [join(ROOT, "conformance", "ts", script), ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const code = await withGuard(
    new Promise((r) => child.once("exit", (c) => r(c))),
    `${script} did not finish`,
  );
  check(code === 0, `${script} exited with ${code}: ${out}`);
  const last = out.trim().split("\n").at(-1);
  return JSON.parse(last);
}

/** Writes a file into the project. */
export function writeProjectFile(project, name, text) {
  writeFileSync(join(project, name), text);
}

/** Types of events, for messages. */
export function types(events) {
  return events.map((e) => e.type + (e.ephemeral ? "*" : ""));
}
