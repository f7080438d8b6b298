// The differential scenarios: each drives the official TypeScript client against a `Run`
// (see run.mjs) and leaves behind what it saw; the runner runs each once with the Copilot CLI
// and once with turnstile and compares. A scenario never checks turnstile against its own
// idea of right: the reference run is the right answer.
//
// `cross: true` scenarios use two roles ("a" holds a session, "b" comes second); besides
// copilot/copilot and turnstile/turnstile they run with the runtimes mixed, both ways.

import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { OUT, ROOT, sdk, withGuard } from "../harness.mjs";
import { outcomeOf, waitFor, waitUntil } from "./run.mjs";

const { approveAll } = sdk;
const GUARD = 60_000;

const lookupCapital = (handler) => ({
  name: "lookup_capital",
  description: "The capital city of a country",
  parameters: { type: "object", properties: { country: { type: "string" } }, required: ["country"] },
  handler,
});

/** Prompt -> bash, view, final text; then disconnect. */
async function basic(run) {
  await run.model("basic.json");
  run.file("notes.txt", "first line\nsecond line\n");
  const client = run.client();
  const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll, streaming: true }));
  run.session("main", session.sessionId);
  const answer = await session.sendAndWait("Say hello with the shell, then read notes.txt", GUARD);
  run.observe("answer", answer?.data?.content ?? null);
  run.observe("getMessages = journal", JSON.stringify(await session.getEvents()) === JSON.stringify(run.journal(session.sessionId)));
  await session.disconnect();
}

/** Pending work left by a runtime killed with SIGKILL, then resumed by a new process. */
function pending(kind, continuePendingWork) {
  return async (run) => {
    await run.model(kind === "permission" ? "pending-permission.json" : "pending-tool.json");
    const first = run.client();
    let announce;
    const asked = new Promise((resolve) => (announce = resolve));
    const never = () => {
      announce();
      return new Promise(() => {});
    };
    const session = await first.createSession(
      run.options("killed", {
        onPermissionRequest: kind === "permission" ? never : approveAll,
        tools: [lookupCapital(never)],
      }),
    );
    const id = session.sessionId;
    run.session("main", id);
    void session.send("Do the pending thing").catch(() => {});
    await asked;
    // The crash comes once the pending request is on disk (journal line and session files):
    // what a user resuming after a crash can expect to find.
    const type = kind === "permission" ? "permission.requested" : "external_tool.requested";
    const original = await waitFor(run.events.killed, (e) => e.type === type, "the pending request", GUARD);
    await waitUntil(() => run.journal(id).some((l) => l.id === original.id), "the pending request in the journal", 20_000);
    // The Copilot CLI cannot resume a session whose workspace.yaml is not written yet.
    await waitUntil(() => (run.sessionFiles(id) ?? []).includes("workspace.yaml"), "workspace.yaml", 5_000).catch(() => {});
    await run.kill9(first);
    run.observe("markers after kill", run.inUseMarkers(id));
    const handled = [];
    const second = run.client();
    const resumed = await second.resumeSession(
      id,
      run.options("resumed", {
        continuePendingWork,
        onPermissionRequest: (request) => {
          handled.push(request.kind);
          return { kind: "approve-once" };
        },
        tools: [
          lookupCapital(async () => {
            handled.push("lookup_capital");
            return "Paris";
          }),
        ],
      }),
    );
    // The resumed runtime restores pending work after answering session.resume.
    let pendingList = await outcomeOf(resumed.rpc.permissions.pendingRequests({}));
    if (kind === "permission") {
      await waitUntil(async () => {
        pendingList = await outcomeOf(resumed.rpc.permissions.pendingRequests({}));
        return (pendingList.ok?.items?.length ?? 0) > 0;
      }, "a pending permission request after resume", 10_000).catch(() => {});
    }
    run.observe("pendingRequests", pendingList);
    run.observe(
      "pending request keeps its id",
      (pendingList.ok?.items ?? []).map((i) => i.requestId === original?.data?.requestId),
    );
    const answer =
      kind === "permission"
        ? resumed.rpc.permissions.handlePendingPermissionRequest({ requestId: original.data.requestId, result: { kind: "approve-once" } })
        : resumed.rpc.tools.handlePendingToolCall({ requestId: original.data.requestId, result: "Paris" });
    run.observe("handle pending", await outcomeOf(answer));
    if (continuePendingWork) {
      await waitFor(run.events.resumed, (e) => e.type === "session.idle", "session.idle after the pending work", 20_000);
    } else {
      const reply = await resumed.sendAndWait("Carry on", GUARD);
      run.observe("answer", reply?.data?.content ?? null);
    }
    run.observe("handlers called on resume", handled);
    await resumed.disconnect();
  };
}

/** Role "a" holds a session; role "b", another process, resumes it (alive or killed). */
function inUse(killed) {
  return async (run) => {
    await run.model("inuse.json");
    const holder = run.client("a");
    const session = await holder.createSession(run.options("holder", { onPermissionRequest: approveAll }));
    const id = session.sessionId;
    run.session("main", id);
    await session.sendAndWait("First prompt", GUARD);
    run.observe("markers while held", run.inUseMarkers(id));
    if (killed) {
      // The kill comes once the finished turn is on disk: this scenario is about the marker,
      // not about events the runtime had not written yet.
      await waitUntil(() => run.journal(id).some((l) => l.type === "assistant.turn_end"), "the turn in the journal", 20_000);
      await run.kill9(holder);
    }
    const second = run.client("b");
    const resumed = await outcomeOf(second.resumeSession(id, run.options("second", { onPermissionRequest: approveAll })));
    const resumeEvent = (run.events.second ?? []).find((e) => e.type === "session.resume");
    run.observe("resume", resumed.error ?? "ok");
    run.observe("alreadyInUse", resumeEvent?.data?.alreadyInUse ?? null);
    run.observe("markers after resume", run.inUseMarkers(id));
    if (resumed.ok) {
      const reply = await resumed.ok.sendAndWait("Second prompt", GUARD);
      run.observe("second answer", reply?.data?.content ?? null);
      if (!killed) {
        const before = run.events.holder.length;
        const again = await outcomeOf(session.sendAndWait("Third prompt from the holder", GUARD));
        run.observe("holder after takeover", again.error ?? again.ok?.data?.content ?? null);
        run.observe("holder saw", run.events.holder.slice(before).filter((e) => !e.ephemeral).map((e) => e.type));
      }
      await resumed.ok.disconnect();
    }
    if (!killed) await session.disconnect().catch(() => {});
    run.observe("markers at the end", run.inUseMarkers(id));
  };
}

/** Whether the Python client is installed (conformance/run.sh puts it in target/conformance/py). */
export function pythonClientAvailable() {
  return existsSync(join(OUT, "py", "copilot"));
}

/** `basic` through the official Python client, in its own process. */
async function pyBasic(run) {
  await run.model("basic.json");
  run.file("notes.txt", "first line\nsecond line\n");
  const out = join(run.base, "py-out.json");
  const script = join(ROOT, "conformance", "py", "differential.py");
  const child = spawn("python3", [script, run.runtime().path, run.url, run.home, run.project, out], {
    stdio: ["ignore", "inherit", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const code = await withGuard(new Promise((r) => child.once("exit", r)), "the Python client did not finish", 150_000);
  if (code !== 0) throw new Error(`the Python client exited with ${code}: ${stderr.trim()}`);
  const seen = JSON.parse(readFileSync(out, "utf8"));
  run.events.main = seen.events;
  run.session("main", seen.sessionId);
  run.observe("answer", seen.answer);
}

export const SCENARIOS = {
  basic,
  ...(pythonClientAvailable() ? { "py-basic": pyBasic } : {}),

  // A tool implemented by the client.
  async "client-tool"(run) {
    await run.model("client-tool.json");
    const calls = [];
    const client = run.client();
    const session = await client.createSession(
      run.options("main", {
        onPermissionRequest: approveAll,
        tools: [
          lookupCapital(async (args) => {
            calls.push(args);
            return "Paris";
          }),
        ],
      }),
    );
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("What is the capital of France?", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("handler calls", calls);
    await session.disconnect();
  },

  // Shells: an async command read until it ends, stopped, read and listed when gone, then a
  // sync call and a bad delay. The command sleeps so the read is waiting when it ends (the
  // runtime would otherwise announce the end in a notification first).
  async shells(run) {
    await run.model("shells.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Use the shells", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe(
      "tool result texts",
      run.events.main
        .filter((e) => e.type === "tool.execution_complete")
        .map((e) => ({ success: e.data.success, text: e.data.success ? e.data.result?.content : e.data.error?.message })),
    );
    await session.disconnect();
  },

  // The permission handler rejects the shell and approves the file creation.
  async "permission-reject"(run) {
    await run.model("permission-reject.json");
    const asked = [];
    const client = run.client();
    const session = await client.createSession(
      run.options("main", {
        onPermissionRequest: (request) => {
          asked.push(request.kind);
          return request.kind === "shell" ? { kind: "reject", feedback: "no shell here" } : { kind: "approve-once" };
        },
      }),
    );
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Create two files", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("asked", asked);
    await session.disconnect();
  },

  // Abort in the middle of a long shell command, then continue.
  async abort(run) {
    await run.model("abort.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    void session.send("Wait for a long time").catch(() => {});
    await waitFor(run.events.main, (e) => e.type === "permission.completed", "permission.completed", GUARD);
    await session.abort();
    await waitFor(run.events.main, (e) => e.type === "session.idle", "session.idle after abort", GUARD);
    const again = await session.sendAndWait("Are you back?", GUARD);
    run.observe("answer after abort", again?.data?.content ?? null);
    await session.disconnect();
  },

  // Autopilot: nudged until task_complete. The mode is set with session.mode.set: the CLI
  // 1.0.81-0 ignores `agentMode: "autopilot"` on a send for this (it answers once and idles).
  async autopilot(run) {
    await run.model("autopilot.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    run.observe("mode.set", await outcomeOf(session.rpc.mode.set({ mode: "autopilot" })));
    const answer = await session.sendAndWait({ prompt: "Write summary.txt", agentMode: "autopilot" }, GUARD);
    run.observe("last tool requests", answer?.data?.toolRequests?.map((t) => t.name) ?? null);
    await session.disconnect();
  },

  // A new client process resumes the session and continues.
  async resume(run) {
    await run.model("resume.json");
    run.file("notes.txt", "first line\nsecond line\n");
    const first = run.client();
    const session = await first.createSession(run.options("first", { onPermissionRequest: approveAll }));
    const id = session.sessionId;
    run.session("main", id);
    await session.sendAndWait("Read notes.txt", GUARD);
    await session.disconnect();
    await first.stop();
    const second = run.client();
    const resumed = await second.resumeSession(id, run.options("resumed", { onPermissionRequest: approveAll }));
    const answer = await resumed.sendAndWait("And now?", GUARD);
    run.observe("answer after resume", answer?.data?.content ?? null);
    await resumed.disconnect();
  },

  // Each kind of attachment on session.send.
  async attachments(run) {
    await run.model("attachments.json");
    const notes = run.file("notes.txt", "first line\nsecond line\n");
    const code = run.file("code.rs", 'fn main() {\n    println!("hi");\n}\n');
    const { mkdirSync, writeFileSync } = await import("node:fs");
    mkdirSync(join(run.project, "sub"));
    writeFileSync(join(run.project, "sub", "a.txt"), "A\n");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const sends = [
      [{ type: "file", path: notes }],
      [{ type: "directory", path: join(run.project, "sub") }],
      [
        {
          type: "selection",
          filePath: code,
          displayName: "code.rs:2",
          selection: { start: { line: 1, character: 4 }, end: { line: 1, character: 19 } },
          text: 'println!("hi");',
        },
      ],
      [{ type: "blob", data: Buffer.from("blob text body\n").toString("base64"), mimeType: "text/plain", displayName: "b.txt" }],
    ];
    for (const [i, attachments] of sends.entries()) {
      await session.sendAndWait({ prompt: `Attachment ${i + 1}`, attachments }, GUARD);
    }
    await session.disconnect();
  },

  "kill9-permission-continue": pending("permission", true),
  "kill9-permission-interrupt": pending("permission", false),
  "kill9-client-tool-continue": pending("tool", true),
  "kill9-client-tool-interrupt": pending("tool", false),

  // Two clients on one runtime (TCP) and one session: the second resumes it by id.
  async "two-clients"(run) {
    await run.model("two-clients.json");
    const first = run.client("a", { tcp: true });
    const session = await first.createSession(run.options("first", { onPermissionRequest: approveAll }));
    const id = session.sessionId;
    run.session("main", id);
    await session.sendAndWait("Prompt from the first client", GUARD);
    await first.start();
    // The SDK keeps the port and the generated connection token to itself.
    const second = run.clientAt(`127.0.0.1:${first.runtimePort}`, first.effectiveConnectionToken);
    const joined = await second.resumeSession(id, run.options("second", { onPermissionRequest: approveAll }));
    const before = run.events.first.length;
    const answer = await joined.sendAndWait("Prompt from the second client", GUARD);
    run.observe("second answer", answer?.data?.content ?? null);
    await waitFor(run.events.first, (e, i) => i >= before && e.type === "session.idle", "the first client seeing the idle", GUARD).catch(() => null);
    run.observe("first client saw", run.events.first.slice(before).filter((e) => !e.ephemeral).map((e) => e.type));
    await joined.disconnect();
    await session.disconnect().catch(() => {});
  },

  // The in-use marker: a second process resumes a session the first still runs (takeover),
  // or one whose runtime was killed.
  takeover: Object.assign(inUse(false), { cross: true }),
  "inuse-after-kill9": Object.assign(inUse(true), { cross: true }),
};
