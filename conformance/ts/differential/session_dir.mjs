// The session directory as each runtime leaves it, in the situations the tools that read
// `session-state/` meet: a session inside a git repository (a branch, a commit, a hosted
// remote) that runs a sub-agent, switches model, ends, and is resumed (naming its first
// model) after the branch moved on; and a plain session (outside any repository) whose
// runtime is killed with SIGKILL after its turn, then resumed. What is compared, field by
// field: the files and folders of each session directory (kind and mode; the text of the
// CLI's small side files), `workspace.yaml` (its keys in order, their values and types), and
// the data of `session.start`, `session.resume` and `session.shutdown` (names, types,
// presence; the values that must match: the working directory, the git context, the models,
// the request counts).
//
// Every observation is taken after the runtime process it concerns has exited (stopped, or
// killed once its turn was on disk), so nothing depends on when a runtime writes. The model
// requests and live events of these situations are compared by the `task`, `resume` and
// `inuse-after-kill9` scenarios; here the model is not recorded.

import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sdk, withGuard } from "../harness.mjs";
import { waitUntil } from "./run.mjs";

const GUARD = 60_000;

/** Commits made with fixed names and dates, so both runs' repositories have the same hashes. */
const GIT_ENV = {
  GIT_AUTHOR_NAME: "conformance",
  GIT_AUTHOR_EMAIL: "conformance@example.invalid",
  GIT_COMMITTER_NAME: "conformance",
  GIT_COMMITTER_EMAIL: "conformance@example.invalid",
  GIT_AUTHOR_DATE: "2026-01-02T03:04:05Z",
  GIT_COMMITTER_DATE: "2026-01-02T03:04:05Z",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
};

/** `git ARGS` in `dir`; its trimmed output; throws on failure. */
export function git(dir, ...args) {
  const r = spawnSync("git", ["-C", dir, ...args], { env: { ...process.env, ...GIT_ENV }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

/** Session options without live events (this scenario compares files, not streams). */
function quiet(run, extra = {}) {
  return {
    model: "scripted-model",
    provider: { type: "openai", baseUrl: run.url, apiKey: "conformance-key" },
    onPermissionRequest: sdk.approveAll,
    ...extra,
  };
}

/** Stops a client and waits until its runtime process has exited. */
export async function stopAndWait(run, client) {
  run.rememberPids();
  const child = client.cliProcess;
  await withGuard(client.stop(), "client.stop", 20_000).catch(() => client.forceStop().catch(() => {}));
  if (child && child.exitCode === null && child.signalCode === null) {
    await withGuard(new Promise((resolve) => child.once("exit", resolve)), "the runtime did not exit", 20_000);
  }
}

/** Files whose text is compared: the CLI's small side files (never a journal, lock or db). */
const TEXT = /^(checkpoints|files|research|rewind-file-snapshots)\//;

/** A session directory as `{path: "dir 700" | "file 600[: text]"}`, the directory itself as
 * `./`; sorted by path. A runtime still live may add its own files meanwhile (turnstile's
 * `processes.json` once a tool's process starts): those are expected differences, present or
 * not; the CLI's files are all written before the first tool call. */
export function dirTree(dir) {
  if (!existsSync(dir)) return null;
  const mode = (st) => (st.mode & 0o777).toString(8);
  const out = { "./": `dir ${mode(lstatSync(dir))}` };
  const walk = (rel) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      // A file being replaced atomically has a temporary name for a moment: a live runtime's
      // write in flight, not part of the layout.
      if (/^\..*\.tmp$/.test(name)) continue;
      const path = rel ? `${rel}/${name}` : name;
      // A marker's pid differs between runs (the key names it, so the normaliser cannot).
      const key = path.replace(/^inuse\.\d+\.lock$/, "inuse.<pid>.lock");
      const st = lstatSync(join(dir, path));
      if (st.isDirectory()) {
        out[`${key}/`] = `dir ${mode(st)}`;
        walk(path);
      } else {
        const kind = st.isFile() ? "file" : st.isSymbolicLink() ? "link" : "other";
        const text = st.isFile() && TEXT.test(path) && st.size <= 4096 ? `: ${readFileSync(join(dir, path), "utf8")}` : "";
        out[key] = `${kind} ${mode(st)}${text}`;
      }
    }
  };
  walk("");
  return out;
}

/** `workspace.yaml` as `{keys: "id cwd ...", values: {...}}` (values typed as YAML reads
 * them: a `|-` block joined, a double-quoted scalar unquoted, booleans and integers). */
export function readWorkspace(dir) {
  const path = join(dir, "workspace.yaml");
  if (!existsSync(path)) return null;
  const lines = readFileSync(path, "utf8").split("\n");
  const keys = [];
  const values = {};
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^([A-Za-z_][\w-]*):(?: (.*))?$/);
    if (!m) continue;
    const [, key, raw = ""] = m;
    let value;
    if (raw === "|-" || raw === "|") {
      const block = [];
      while (i + 1 < lines.length && (lines[i + 1].startsWith("  ") || (lines[i + 1] === "" && (lines[i + 2] ?? "").startsWith("  ")))) {
        block.push(lines[++i].slice(2));
      }
      value = block.join("\n");
    } else if (raw.startsWith('"')) value = JSON.parse(raw);
    else if (raw === "true" || raw === "false") value = raw === "true";
    else if (/^-?\d+$/.test(raw)) value = Number(raw);
    else value = raw;
    keys.push(key);
    values[key] = value;
  }
  return { keys: keys.join(" "), values };
}

/** An event's data with every number replaced by its type, but for the counts that must
 * match (`requests.count`, `version`, `summary_count`). */
export function shapeOfData(value, path = "") {
  if (typeof value === "number") return /(^|\.)(requests\.count|version)$/.test(path) ? value : "<number>";
  if (Array.isArray(value)) return value.map((v, i) => shapeOfData(v, `${path}[${i}]`));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOfData(v, path ? `${path}.${k}` : k)]));
  }
  return value;
}

/** The data of each journal event of `type`, shaped. */
function dataOf(run, id, type) {
  return run
    .journal(id)
    .filter((e) => e.type === type)
    .map((e) => shapeOfData(e.data));
}

/** What a resumed session left once its runtime stopped: its files, `workspace.yaml`, and
 * the data of its start, resumes and shutdowns. */
function observeAfterResume(run, what, id) {
  const dir = join(run.home, "session-state", id);
  run.observe(`${what}: files after the resume`, dirTree(dir));
  run.observe(`${what}: workspace.yaml after the resume`, readWorkspace(dir));
  for (const type of ["session.start", "session.resume", "session.shutdown"]) {
    run.observe(`${what}: ${type}`, dataOf(run, id, type));
  }
}

export async function sessionDirectory(run) {
  await run.model("session-directory.json", { record: false });
  const repo = join(run.project, "repo");
  run.file("repo/notes.txt", "first line\nsecond line\n");
  git(run.project, "init", "-q", "-b", "feature/x", "repo");
  git(repo, "add", "notes.txt");
  git(repo, "commit", "-q", "-m", "one");
  git(repo, "remote", "add", "origin", "https://github.com/acme/widgets.git");
  const dirOf = (id) => join(run.home, "session-state", id);

  // In the repository: a sub-agent, a model switch, then the end of the process.
  const first = run.client();
  const session = await first.createSession(quiet(run, { workingDirectory: repo }));
  const id = session.sessionId;
  await session.sendAndWait("Ask a sub-agent what notes.txt begins with", GUARD);
  await session.setModel("scripted-model-b");
  await session.sendAndWait("And with the other model?", GUARD);
  await session.disconnect();
  await stopAndWait(run, first);
  run.observe("repository session: files after its first run", dirTree(dirOf(id)));
  run.observe("repository session: workspace.yaml after its first run", readWorkspace(dirOf(id)));

  // The branch moves on and gets a commit; another process resumes the session.
  git(repo, "checkout", "-q", "-b", "next");
  run.file("repo/notes.txt", "first line\nsecond line\nthird line\n");
  git(repo, "commit", "-q", "-am", "two");
  const second = run.client();
  // The resume names the session's first model, not its current one: each runtime goes on
  // with the model its journal names last (`session.resume`'s `selectedModel`, the shutdown's
  // model metrics), and records no model change.
  const resumed = await second.resumeSession(id, quiet(run, { workingDirectory: repo }));
  await resumed.sendAndWait("What changed?", GUARD);
  await resumed.disconnect();
  await stopAndWait(run, second);
  observeAfterResume(run, "repository session", id);

  // Outside any repository: a turn, then SIGKILL once the turn is on disk; then a resume.
  const third = run.client();
  const plain = await third.createSession(quiet(run));
  const plainId = plain.sessionId;
  await plain.sendAndWait("Say something plain", GUARD);
  await waitUntil(() => run.journal(plainId).some((l) => l.type === "assistant.turn_end"), "the turn in the journal", 20_000);
  await run.kill9(third);
  run.observe("killed session: files after the kill", dirTree(dirOf(plainId)));
  run.observe("killed session: workspace.yaml after the kill", readWorkspace(dirOf(plainId)));
  const fourth = run.client();
  const again = await fourth.resumeSession(plainId, quiet(run));
  await again.sendAndWait("Still there?", GUARD);
  await again.disconnect();
  await stopAndWait(run, fourth);
  observeAfterResume(run, "killed session", plainId);
}
