// Conformance scenarios: the official TypeScript Copilot SDK (@github/copilot-sdk, unmodified)
// drives the turnstile binary over stdio against the scripted model on 127.0.0.1.
//
// Usage: node conformance/ts/scenarios.mjs [scenario ...]   (all when none is named)
// Prints one PASS/FAIL line per scenario; exits 1 when any failed.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  check,
  checkEqual,
  checkEventsAndJournal,
  checkIdleLast,
  checkSchema,
  journal,
  newClient,
  nextEvent,
  runChild,
  scenarioDirs,
  sdk,
  sessionOptions,
  startModel,
  TURNSTILE,
  types,
  withGuard,
  writeProjectFile,
} from "./harness.mjs";

const { approveAll } = sdk;
const INTERRUPTED = "The execution of this tool, or a previous tool was interrupted.";

/** Runs `body` with a scripted model and a client; always stops both. */
async function withModelAndClient(name, script, body, { recordRequests } = {}) {
  const dirs = scenarioDirs(name);
  const model = await startModel(script, {
    recordRequests: recordRequests ? join(dirs.base, "requests.jsonl") : undefined,
  });
  const client = newClient(dirs);
  try {
    return await body({ ...dirs, model, client });
  } finally {
    await client.stop().catch(() => []);
    model.stop();
  }
}

/** What `basic` left behind, for `resume` to continue. */
let basicResult = null;

const scenarios = {
  // BYOK session; sendAndWait on a prompt that makes two tool calls; the event sequence, idle
  // last, the journal holding the persisted events only; then a new client process resumes.
  async basic() {
    return withModelAndClient("basic", "basic.json", async ({ home, project, model, client }) => {
      writeProjectFile(project, "notes.txt", "first line\nsecond line\n");
      const events = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, { onPermissionRequest: approveAll, streaming: true }),
      );
      const answer = await session.sendAndWait("Say hello with the shell, then read notes.txt", 60_000);
      checkEqual(answer?.data?.content, "The shell said hello and notes.txt holds two lines.", "final answer");
      checkIdleLast(events);
      const persisted = events.filter((e) => !e.ephemeral).map((e) => e.type);
      checkEqual(
        persisted,
        [
          "session.start",
          "system.message",
          "user.message",
          "assistant.turn_start",
          "assistant.message",
          "tool.execution_start",
          "permission.requested",
          "permission.completed",
          "tool.execution_complete",
          "assistant.turn_end",
          "assistant.turn_start",
          "assistant.message",
          "tool.execution_start",
          // The view of notes.txt asks a read permission, as the Copilot CLI asks its clients.
          "permission.requested",
          "permission.completed",
          "tool.execution_complete",
          "assistant.turn_end",
          "assistant.turn_start",
          "assistant.message",
          "assistant.turn_end",
        ],
        "persisted event sequence",
      );
      const ephemeral = new Set(events.filter((e) => e.ephemeral).map((e) => e.type));
      for (const t of ["assistant.message_delta", "assistant.usage", "session.idle"]) {
        check(ephemeral.has(t), `no ephemeral ${t} received (got ${[...ephemeral]})`);
      }
      const completions = events.filter((e) => e.type === "tool.execution_complete");
      check(completions.every((c) => c.data.success), "both tool calls succeeded");
      check(completions[0].data.result.content.includes("conformance says hello"), "bash output");
      check(completions[1].data.result.content.includes("second line"), "view output");
      const fetched = await session.getEvents();
      checkEqual(fetched, journal(home, session.sessionId), "getMessages vs journal");
      const id = session.sessionId;
      await session.disconnect();
      const lines = journal(home, id);
      checkEventsAndJournal(events, lines);
      checkEqual(lines.at(-1).type, "session.shutdown", "last journal line after disconnect");
      basicResult = { id, home, project };
      return "two tool calls, idle last, journal = persisted events";
    });
  },

  async resume() {
    if (basicResult === null) await scenarios.basic();
    const first = basicResult;
    const dirs = { home: first.home, project: first.project };
    const model = await startModel("resume.json", {
      recordRequests: join(first.home, "..", "resume-requests.jsonl"),
    });
    try {
      const before = journal(first.home, first.id).length;
      const child = await runChild("resume_child.mjs", [dirs.home, dirs.project, first.id, model.url]);
      checkEqual(child.answer, "Continuing where we left off: the shell said hello.", "answer after resume");
      const lines = journal(first.home, first.id);
      checkEventsAndJournal(child.events, lines, { from: before });
      checkEqual(lines[before].type, "session.resume", "first event of the resumed process");
      const request = JSON.parse(
        readFileSync(join(first.home, "..", "resume-requests.jsonl"), "utf8").split("\n")[0],
      );
      const said = JSON.stringify(request.body ?? request);
      check(said.includes("Say hello with the shell"), "the model saw the earlier conversation");
      return "resumed from a new client process and continued";
    } finally {
      model.stop();
    }
  },

  // A tool implemented by the client: requested as a persisted event, answered by the handler.
  async "client-tool"() {
    return withModelAndClient("client-tool", "client-tool.json", async ({ home, model, client }) => {
      const events = [];
      const calls = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, {
          onPermissionRequest: approveAll,
          tools: [
            {
              name: "lookup_capital",
              description: "The capital city of a country",
              parameters: {
                type: "object",
                properties: { country: { type: "string" } },
                required: ["country"],
              },
              handler: async (args) => {
                calls.push(args);
                return args.country === "France" ? "Paris" : "unknown";
              },
            },
          ],
        }),
      );
      const answer = await session.sendAndWait("What is the capital of France?", 60_000);
      checkEqual(answer?.data?.content, "The capital of France is Paris.", "final answer");
      checkEqual(calls, [{ country: "France" }], "handler calls");
      checkIdleLast(events);
      const id = session.sessionId;
      await session.disconnect();
      const lines = journal(home, id);
      checkEventsAndJournal(events, lines);
      const requested = lines.filter((l) => l.type === "external_tool.requested");
      check(requested.length === 1, "external_tool.requested is persisted");
      checkEqual(requested[0].data.toolName, "lookup_capital", "requested tool");
      const done = lines.find((l) => l.type === "tool.execution_complete");
      check(done.data.success && done.data.result.content === "Paris", "the handler's result reached the journal");
      return "handler answered; external_tool.requested persisted";
    });
  },

  // A permission handler that rejects bash (and approves the file creation).
  async "permission-reject"() {
    return withModelAndClient("permission-reject", "permission-reject.json", async ({ home, project, model, client }) => {
      const events = [];
      const asked = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, {
          onPermissionRequest: (request) => {
            asked.push(request.kind);
            return request.kind === "shell"
              ? { kind: "reject", feedback: "no shell in conformance" }
              : { kind: "approve-once" };
          },
        }),
      );
      await session.sendAndWait("Create two files", 60_000);
      checkEqual(asked, ["shell", "write"], "permission kinds asked");
      check(!existsSync(join(project, "made-by-bash.txt")), "the rejected bash did not run");
      check(existsSync(join(project, "made-by-create.txt")), "the approved create ran");
      checkIdleLast(events);
      const id = session.sessionId;
      await session.disconnect();
      const lines = journal(home, id);
      checkEventsAndJournal(events, lines);
      const results = lines.filter((l) => l.type === "permission.completed").map((l) => l.data.result);
      checkEqual(
        results,
        [{ kind: "denied-interactively-by-user", feedback: "no shell in conformance" }, { kind: "approved" }],
        "permission results",
      );
      const bash = lines.find((l) => l.type === "tool.execution_complete");
      check(bash.data.success === false, "bash failed as denied");
      return "bash rejected, create approved";
    });
  },

  // A preToolUse hook that denies bash.
  async "hook-deny"() {
    return withModelAndClient("hook-deny", "hook-deny.json", async ({ home, project, model, client }) => {
      const events = [];
      const seen = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, {
          onPermissionRequest: approveAll,
          hooks: {
            onPreToolUse: (input) => {
              seen.push(input);
              if (input.toolName === "bash") {
                return { permissionDecision: "deny", permissionDecisionReason: "blocked by the conformance hook" };
              }
              return undefined;
            },
          },
        }),
      );
      await session.sendAndWait("Touch a file", 60_000);
      check(seen.length === 1, `preToolUse called once, got ${seen.length}`);
      checkEqual(seen[0].toolArgs?.command, "touch hooked.txt", "hook input toolArgs.command");
      check(seen[0].workingDirectory !== undefined && seen[0].timestamp instanceof Date, "hook input normalized by the SDK");
      check(!existsSync(join(project, "hooked.txt")), "the denied bash did not run");
      checkIdleLast(events);
      const id = session.sessionId;
      await session.disconnect();
      const lines = journal(home, id);
      checkEventsAndJournal(events, lines);
      const done = lines.find((l) => l.type === "tool.execution_complete");
      checkEqual(done.data.error?.message, "Denied by preToolUse hook: blocked by the conformance hook", "denial text");
      check(!lines.some((l) => l.type === "permission.requested"), "no permission was asked after the hook denied");
      const ends = lines.filter((l) => l.type === "hook.end").map((l) => l.data.hookType);
      check(ends.includes("preToolUse") && ends.includes("sessionStart"), `hook.end recorded: ${ends}`);
      return "preToolUse deny applied";
    });
  },

  // session.list, session.getLastId, session.delete (and the lifecycle notifications).
  async listing() {
    return withModelAndClient("listing", "listing.json", async ({ home, model, client }) => {
      const lifecycle = [];
      client.onLifecycle((e) => lifecycle.push(e));
      const events = [];
      const a = await client.createSession(sessionOptions(model.url, events, { onPermissionRequest: approveAll }));
      await a.sendAndWait("first session prompt", 60_000);
      const b = await client.createSession(sessionOptions(model.url, events, { onPermissionRequest: approveAll }));
      await b.sendAndWait("second session prompt", 60_000);
      events.forEach((e, i) => checkSchema(e, `live event ${i}`));
      const listed = await client.listSessions();
      checkEqual(listed.map((s) => s.sessionId), [b.sessionId, a.sessionId], "listSessions, newest first");
      checkEqual(listed[0].summary, "second session prompt", "summary");
      checkEqual(await client.getLastSessionId(), b.sessionId, "getLastSessionId");
      const aId = a.sessionId;
      await client.deleteSession(aId);
      checkEqual((await client.listSessions()).map((s) => s.sessionId), [b.sessionId], "after delete");
      check(!existsSync(join(home, "session-state", aId)), "the deleted session's directory is gone");
      const kinds = lifecycle.map((e) => `${e.type}:${e.sessionId === aId ? "a" : "b"}`);
      for (const k of ["session.created:a", "session.created:b", "session.deleted:a"]) {
        check(kinds.includes(k), `lifecycle ${k} missing (got ${kinds})`);
      }
      let failed = false;
      try {
        await client.deleteSession(aId);
      } catch {
        failed = true;
      }
      check(failed, "deleting twice fails");
      return "list/getLastId/delete and lifecycle";
    });
  },

  // Abort while a tool runs; the session goes on.
  async abort() {
    return withModelAndClient("abort", "abort.json", async ({ home, model, client }) => {
      const events = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, { onPermissionRequest: approveAll }),
      );
      // The shell runs once its permission is granted.
      const started = nextEvent(session, (e) => e.type === "permission.completed", "permission.completed");
      const idle = nextEvent(session, (e) => e.type === "session.idle", "session.idle");
      await session.send({ prompt: "Wait for a long time" });
      await started;
      await session.abort();
      const idleEvent = await idle;
      checkEqual(idleEvent.data.aborted, true, "session.idle aborted");
      const again = await session.sendAndWait("Are you back?", 60_000);
      checkEqual(again?.data?.content, "Back after the abort.", "answer after the abort");
      const id = session.sessionId;
      await session.disconnect();
      const lines = journal(home, id);
      checkEventsAndJournal(events, lines);
      check(lines.some((l) => l.type === "abort"), "abort recorded");
      const done = lines.find((l) => l.type === "tool.execution_complete");
      check(done.data.success === false && done.data.error.message === INTERRUPTED, "the tool was interrupted");
      return "aborted mid-tool, then continued";
    });
  },

  // An autopilot send: nudged until task_complete; sendAndWait returns at the end.
  async autopilot() {
    return withModelAndClient("autopilot", "autopilot.json", async ({ home, project, model, client }) => {
      const events = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, { onPermissionRequest: approveAll }),
      );
      const answer = await session.sendAndWait({ prompt: "Write summary.txt", agentMode: "autopilot" }, 60_000);
      // The run ends with the turn that called task_complete.
      checkEqual(answer?.data?.toolRequests?.map((t) => t.name), ["task_complete"], "last assistant message");
      check(existsSync(join(project, "summary.txt")), "the work was done");
      checkIdleLast(events);
      check(
        events.some((e) => e.type === "user.message" && e.data.isAutopilotContinuation === true),
        "an autopilot nudge was sent",
      );
      const complete = events.find((e) => e.type === "session.task_complete");
      checkEqual(complete?.data?.summary, "summary.txt written", "task_complete summary");
      const id = session.sessionId;
      await session.disconnect();
      checkEventsAndJournal(events, journal(home, id));
      return "nudged, task_complete, final idle";
    });
  },

  // The TCP transport: the client spawns `turnstile --headless` without --stdio (a free port,
  // announced on stdout) and authenticates with its generated connection token.
  async tcp() {
    const dirs = scenarioDirs("tcp");
    const model = await startModel("listing.json");
    const client = new sdk.CopilotClient({
      connection: sdk.RuntimeConnection.forTcp({ path: TURNSTILE }),
      baseDirectory: dirs.home,
      workingDirectory: dirs.project,
      logLevel: "warning",
    });
    try {
      const events = [];
      const session = await client.createSession(
        sessionOptions(model.url, events, { onPermissionRequest: approveAll }),
      );
      const answer = await session.sendAndWait("Hello over TCP", 60_000);
      checkEqual(answer?.data?.content, "First session answer.", "answer over TCP");
      checkIdleLast(events);
      checkEqual((await client.ping("tcp")).message, "pong: tcp", "ping over TCP");
      const id = session.sessionId;
      await session.disconnect();
      checkEventsAndJournal(events, journal(dirs.home, id));
      return "free port announced, connection token checked, session served";
    } finally {
      await client.stop();
      model.stop();
    }
  },

  // The client dies mid tool call (its process exits), then the runtime is killed mid tool
  // call; each time a new client resumes the session and continues.
  async disconnect() {
    const dirs = scenarioDirs("disconnect");
    const model = await startModel("disconnect.json");
    try {
      const crashed = await runChild("crash_child.mjs", [dirs.home, dirs.project, model.url]);
      checkEqual(crashed.runtimeExit, 0, "the runtime exited cleanly when its client vanished");
      let lines = journal(dirs.home, crashed.id);
      lines.forEach((l, i) => checkSchema(l, `journal line ${i + 1}`));
      checkEqual(lines.at(-1).type, "session.shutdown", "journal closed by the runtime");
      // The session waited on the vanished client: the call stays open for a resume, as the
      // Copilot CLI leaves it; the resume below (no continuePendingWork) closes it.
      check(!lines.some((l) => l.type === "tool.execution_complete"), "the pending client tool call was left open for a resume");

      // Resume with a new client and continue; then leave a call open and kill the runtime.
      const client = newClient(dirs);
      const events = [];
      try {
        const session = await client.resumeSession(crashed.id, {
          ...sessionOptions(model.url, events, { onPermissionRequest: approveAll }),
          tools: [{ name: "wait_forever", description: "never answers", handler: () => new Promise(() => {}) }],
        });
        const closedOnResume = events.find((e) => e.type === "tool.execution_complete");
        check(closedOnResume && closedOnResume.data.success === false, "the resume closed the pending client tool call as interrupted");
        const answer = await session.sendAndWait("Go on", 60_000);
        checkEqual(answer?.data?.content, "Resumed after the client crashed.", "answer after the client crash");
        const requested = nextEvent(session, (e) => e.type === "external_tool.requested", "external_tool.requested");
        await session.send({ prompt: "Wait again" });
        await requested;
      } finally {
        await client.forceStop();
      }
      lines = journal(dirs.home, crashed.id);
      check(lines.at(-1).type === "external_tool.requested" || lines.at(-1).type === "tool.execution_start" || lines.at(-1).type === "assistant.message",
        `the killed runtime left the call open (last line ${lines.at(-1).type})`);

      const again = newClient(dirs);
      const after = [];
      try {
        const session = await withGuard(
          again.resumeSession(crashed.id, sessionOptions(model.url, after, { onPermissionRequest: approveAll })),
          "resume after the kill",
        );
        const resume = after.find((e) => e.type === "session.resume");
        check(
          resume && resume.data.sessionWasActive === true,
          `session.resume says the session was active (got ${JSON.stringify(resume)}; events ${types(after)})`,
        );
        const closed = after.find((e) => e.type === "tool.execution_complete");
        check(closed && closed.data.success === false, "the open call was marked interrupted on resume");
        const answer = await session.sendAndWait("Go on again", 60_000);
        checkEqual(answer?.data?.content, "Resumed after the runtime was killed.", "answer after the kill");
        await session.disconnect();
      } finally {
        await again.stop();
      }
      lines = journal(dirs.home, crashed.id);
      lines.forEach((l, i) => checkSchema(l, `journal line ${i + 1}`));
      [...crashed.events, ...events, ...after].forEach((e, i) => checkSchema(e, `live event ${i}`));
      return "client crash and runtime kill, both resumed";
    } finally {
      model.stop();
    }
  },
};

const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(scenarios);
const failures = [];
for (const name of names) {
  const run = scenarios[name];
  if (!run) {
    console.log(`FAIL ${name}: no such scenario (have ${Object.keys(scenarios).join(", ")})`);
    failures.push(name);
    continue;
  }
  const started = Date.now();
  try {
    const detail = await withGuard(run(), `scenario ${name}`, 180_000);
    const text = typeof detail === "string" ? detail : "ok";
    console.log(`PASS ts/${name}: ${text} (${Date.now() - started} ms)`);
  } catch (e) {
    failures.push(`ts/${name}: ${e.message.split("\n")[0]}`);
    console.log(`FAIL ts/${name}: ${e.message}`);
    if (!(e.name === "CheckError") && e.stack) console.log(e.stack);
  }
}
// Repeated last, so the tail of a long log names what failed.
for (const f of failures) console.log(`FAILED ${f}`);
process.exit(failures.length > 0 ? 1 : 0);
