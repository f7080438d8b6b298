// The in-use marker against a prompt run: role "a" runs a prompt from the command line
// (`copilot -p`, or `turnstile run`) whose model asks for a shell command that waits; while
// that process is live inside the tool call, role "b" (an SDK client spawning its runtime)
// resumes the session and must see it in use. Then "a" is killed with SIGKILL, which leaves
// its marker behind; "b" resumes again and must take the marker for stale. With the runtimes
// mixed both ways, each runtime meets the other's live and dead markers.
//
// Each step waits for the state it observes (the tool call in the journal, the process gone):
// nothing depends on a runtime's timing. The command waits while a file the scenario made is
// there; the scenario removes it at the end (and the run's directory with it), so the command
// a killed runtime left running ends too.

import { spawn } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sdk, withGuard } from "../harness.mjs";
import { outcomeOf, waitUntil } from "./run.mjs";
import { dirTree, readWorkspace, stopAndWait } from "./session_dir.mjs";

const GUARD = 60_000;

/** The command line of a prompt run of `runtime`. */
function promptArgs(runtime, prompt) {
  return runtime.name === "copilot" ? ["-p", prompt, "--allow-all-tools"] : ["run", prompt, "--allow-all-tools"];
}

/** The one session of the run's home whose journal has reached a `tool.execution_start`. */
function sessionInTool(run) {
  const root = join(run.home, "session-state");
  if (!existsSync(root)) return null;
  for (const id of readdirSync(root)) {
    if (run.journal(id).some((e) => e.type === "tool.execution_start")) return id;
  }
  return null;
}

/** What a resume saw: whether the session was in use (the CLI says so with `alreadyInUse`,
 * turnstile by refusing with the holder named), and the markers then. */
async function resumeAndLook(run, client, id) {
  const events = [];
  const resumed = await outcomeOf(
    client.resumeSession(id, {
      model: "scripted-model",
      provider: { type: "openai", baseUrl: run.url, apiKey: "conformance-key" },
      onPermissionRequest: sdk.approveAll,
      onEvent: (e) => events.push(e),
    }),
  );
  const resume = events.find((e) => e.type === "session.resume");
  const seen = {
    "resume": resumed.ok ? "ok" : { code: resumed.error.code },
    "in use": resumed.ok ? (resume?.data?.alreadyInUse ?? null) : /in use/.test(resumed.error.message),
    "markers": run.inUseMarkers(id),
  };
  if (resumed.ok) await resumed.ok.disconnect();
  return seen;
}

export async function inUsePromptRun(run) {
  await run.model("inuse-prompt-run.json", { record: false });
  const hold = run.file("hold", "");
  run.stops.push(async () => rmSync(hold, { force: true }));
  const runtime = run.runtime("a");
  const holder = spawn(runtime.path, promptArgs(runtime, "Wait while the hold file is there"), {
    cwd: run.project,
    env: {
      ...process.env,
      COPILOT_HOME: run.home,
      COPILOT_PROVIDER_BASE_URL: run.url,
      COPILOT_PROVIDER_API_KEY: "conformance-key",
      COPILOT_MODEL: "scripted-model",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  holder.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((resolve) => holder.once("exit", resolve));
  run.owners.push({ role: "a", pid: holder.pid });
  run.stops.push(async () => {
    if (holder.exitCode === null && holder.signalCode === null) holder.kill("SIGKILL");
  });

  let id = null;
  await waitUntil(() => (id = sessionInTool(run)) !== null, "the prompt run inside its tool call", GUARD).catch((e) => {
    throw new Error(`${e.message}; the prompt run's stderr: ${stderr.slice(-2000)}`);
  });
  run.observe("markers while the prompt run is in its tool call", run.inUseMarkers(id));
  run.observe("files while the prompt run is in its tool call", dirTree(join(run.home, "session-state", id)));
  run.observe("workspace.yaml while the prompt run is in its tool call", readWorkspace(join(run.home, "session-state", id)));

  const live = run.client("b");
  run.observe("resume while the prompt run is live", await resumeAndLook(run, live, id));
  await stopAndWait(run, live);

  process.kill(holder.pid, "SIGKILL");
  await withGuard(exited, "the killed prompt run did not exit");
  run.observe("markers after the kill", run.inUseMarkers(id));

  const after = run.client("b");
  run.observe("resume after the kill", await resumeAndLook(run, after, id));
  await stopAndWait(run, after);
  run.observe("markers at the end", run.inUseMarkers(id));
}
