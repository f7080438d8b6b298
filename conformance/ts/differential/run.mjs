// One run of a differential scenario with one assignment of runtimes to roles: its own
// directories, a scripted model behind a recording proxy, SDK clients spawning the runtimes,
// and everything the run saw (live events per label, journals, model requests, outcomes).
//
// Timeouts here are failure guards only: nothing passes or fails on time.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { startRecordingProxy } from "../record_proxy.mjs";
import { OUT, ROOT, SCRIPTED_MODEL, sdk, withGuard } from "../harness.mjs";

export const SCRIPTS = join(ROOT, "conformance", "scripts", "differential");

/** The runtimes a role can be given. */
export const RUNTIMES = {
  copilot: {
    name: "copilot",
    // Absolute: the client spawns the runtime in the project directory.
    path: resolve(
      process.env.COPILOT_REFERENCE_CLI ?? join(OUT, "node", "node_modules", "@github", "copilot-linux-x64", "copilot"),
    ),
  },
  turnstile: {
    name: "turnstile",
    path: resolve(process.env.TURNSTILE_BIN ?? join(ROOT, "target", "debug", "turnstile")),
  },
};

/** Whether the reference runtime is installed. */
export function referenceAvailable() {
  return existsSync(RUNTIMES.copilot.path);
}

/** A run: `roles` maps a role name ("a", "b") to a runtime of RUNTIMES. */
export class Run {
  constructor(scenario, variant, roles) {
    this.scenario = scenario;
    this.variant = variant;
    this.roles = roles;
    // What the run saw is kept under target/; the session's home and project live in a
    // fresh temporary directory outside any git checkout (the runtimes look for one).
    this.base = join(OUT, "differential", scenario, variant);
    rmSync(this.base, { recursive: true, force: true });
    mkdirSync(this.base, { recursive: true });
    this.scratch = mkdtempSync(join(tmpdir(), `conformance-${scenario}-`));
    this.home = join(this.scratch, "home");
    this.project = join(this.scratch, "project");
    mkdirSync(this.home, { recursive: true });
    mkdirSync(this.project, { recursive: true });
    this.requestsPath = join(this.base, "requests.jsonl");
    writeFileSync(this.requestsPath, "");
    this.events = {};
    this.sessions = {};
    this.outcome = {};
    this.clients = [];
    this.owners = [];
    this.stops = [];
  }

  /** The runtime of a role (default "a"). */
  runtime(role = "a") {
    return this.roles[role] ?? this.roles.a;
  }

  /** Writes a file into the project (its directories made as needed). */
  file(name, text) {
    mkdirSync(dirname(join(this.project, name)), { recursive: true });
    writeFileSync(join(this.project, name), text);
    return join(this.project, name);
  }

  /** Starts the scripted model on conformance/scripts/differential/<script> (or a script
   * written by the scenario, at an absolute path) behind the recording proxy; resolves to
   * the BYOK base URL. With `record: false` the runtimes talk to the model directly and no
   * request is compared (a scenario about files, whose requests other scenarios compare). */
  async model(script, { record = true } = {}) {
    const path = isAbsolute(script) ? script : join(SCRIPTS, script);
    const child = spawn(SCRIPTED_MODEL, ["--script", path], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.stops.push(async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
    });
    const lines = createInterface({ input: child.stdout });
    const upstream = await withGuard(
      new Promise((resolve, reject) => {
        child.once("exit", (code) => reject(new Error(`scripted-model exited with ${code}`)));
        lines.on("line", (line) => {
          const m = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)\/v1/);
          if (m) resolve(m[1]);
        });
      }),
      "scripted-model did not start",
    );
    if (!record) {
      this.url = `${upstream}/v1`;
      return this.url;
    }
    const proxy = await startRecordingProxy(upstream, this.requestsPath);
    this.stops.unshift(() => proxy.stop());
    this.url = `${proxy.url}/v1`;
    return this.url;
  }

  /** Session options: BYOK on the run's model, live events collected under `label`. */
  options(label, extra = {}) {
    const events = (this.events[label] ??= []);
    return {
      model: "scripted-model",
      provider: { type: "openai", baseUrl: this.url, apiKey: "conformance-key" },
      onEvent: (event) => events.push(event),
      ...extra,
    };
  }

  /** An SDK client spawning the runtime of `role` over stdio (or TCP: `{ tcp: true }`),
   * with extra command-line `args` before the client's own. */
  client(role = "a", { tcp = false, args = [] } = {}) {
    const path = this.runtime(role).path;
    const connection = tcp ? sdk.RuntimeConnection.forTcp({ path, args }) : sdk.RuntimeConnection.forStdio({ path, args });
    const client = new sdk.CopilotClient({
      connection,
      baseDirectory: this.home,
      workingDirectory: this.project,
      logLevel: process.env.CONFORMANCE_LOG_LEVEL ?? "error",
    });
    this.clients.push(client);
    this.owners.push({ role, client });
    return client;
  }

  /** An SDK client connecting to an already running runtime (no process of its own). */
  clientAt(url, connectionToken) {
    const connection = sdk.RuntimeConnection.forUri(url, connectionToken ? { connectionToken } : {});
    const client = new sdk.CopilotClient({ connection, logLevel: "error" });
    this.clients.push(client);
    return client;
  }

  /** Names a session so that its journal is compared under `label`. */
  session(label, sessionId) {
    this.sessions[label] = sessionId;
  }

  /** Records an observation compared between runtimes (normalised later). */
  observe(name, value) {
    this.outcome[name] = value;
  }

  /** The files of a session's directory (sorted), for observations about markers. */
  sessionFiles(sessionId) {
    const dir = join(this.home, "session-state", sessionId);
    return existsSync(dir) ? readdirSync(dir).sort() : null;
  }

  /** The in-use markers of a session, each named by the role whose runtime's pid it holds
   * ("a", "b", or "other"), sorted: pids differ between runs, roles do not. */
  inUseMarkers(sessionId) {
    this.rememberPids();
    return (this.sessionFiles(sessionId) ?? [])
      .map((f) => f.match(/^inuse\.(\d+)\.lock$/))
      .filter((m) => m !== null)
      .map((m) => this.owners.find((o) => o.pid === Number(m[1]))?.role ?? "other")
      .sort();
  }

  /** Notes the pid of each client's runtime (the SDK forgets it once the process is gone). */
  rememberPids() {
    for (const o of this.owners) o.pid ??= o.client.cliProcess?.pid;
  }

  /** Kills a client's runtime process with SIGKILL and waits until it is gone. */
  async kill9(client) {
    this.rememberPids();
    const child = client.cliProcess;
    if (!child || child.exitCode !== null) throw new Error("no runtime process to kill");
    const gone = new Promise((resolve) => child.once("exit", resolve));
    process.kill(child.pid, "SIGKILL");
    await withGuard(gone, "the killed runtime did not exit");
    await client.forceStop().catch(() => {});
  }

  /** The journal of a session as parsed lines (an unparsable line is kept as a marker). */
  journal(sessionId) {
    const path = join(this.home, "session-state", sessionId, "events.jsonl");
    if (!existsSync(path)) return [];
    return readFileSync(path, "utf8")
      .split("\n")
      .filter((l) => l.length > 0)
      .map((l) => {
        try {
          return JSON.parse(l);
        } catch {
          return { type: "<not JSON>", data: l };
        }
      });
  }

  /** The model requests the proxy recorded. */
  requests() {
    return readFileSync(this.requestsPath, "utf8")
      .split("\n")
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l));
  }

  /** Stops every client and the model; returns what the run saw. */
  async finish() {
    for (const client of this.clients.reverse()) {
      await withGuard(client.stop(), "client.stop", 20_000).catch(() => client.forceStop().catch(() => {}));
    }
    for (const stop of this.stops) await stop();
    const journals = {};
    for (const [label, id] of Object.entries(this.sessions)) journals[label] = this.journal(id);
    const seen = { events: this.events, journals, requests: this.requests(), outcome: this.outcome };
    writeFileSync(join(this.base, "seen.json"), JSON.stringify(seen, null, 1));
    if (!process.env.CONFORMANCE_KEEP) rmSync(this.scratch, { recursive: true, force: true });
    return seen;
  }

  /** Appends a line to the run's log (for reading a failure afterwards). */
  log(line) {
    appendFileSync(join(this.base, "log.txt"), `${line}\n`);
  }
}

/** Resolves when `events` (a live array) gets an event matching `predicate`. */
export function waitFor(events, predicate, what, ms) {
  return withGuard(
    new Promise((resolve) => {
      const tick = () => {
        const found = events.find(predicate);
        if (found) resolve(found);
        else setTimeout(tick, 20);
      };
      tick();
    }),
    `no ${what}`,
    ms,
  );
}

/** Resolves when `condition` (sync or async) holds, polling; rejects at the guard. */
export async function waitUntil(condition, what, ms = 60_000) {
  let stop = false;
  return withGuard(
    (async () => {
      while (!stop && !(await condition())) await new Promise((r) => setTimeout(r, 25));
    })(),
    `no ${what}`,
    ms,
  ).finally(() => (stop = true));
}

/** An RPC outcome for comparison: the result, or the error's code and message. */
export async function outcomeOf(promise) {
  try {
    const result = await promise;
    return { ok: result ?? null };
  } catch (e) {
    return { error: { code: e.code ?? null, message: String(e.message ?? e) } };
  }
}
