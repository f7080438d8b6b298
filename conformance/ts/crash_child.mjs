// A client that vanishes mid tool call: `node crash_child.mjs HOME PROJECT MODEL_URL`.
// Creates a session with a client tool that never answers, sends, and once the call is
// requested cuts the runtime's stdin as a crashing client process would (without stop() or
// disconnect()). Waits for the runtime to exit and prints {"id", "runtimeExit", "events"}.

import { newClient, nextEvent, sdk, sessionOptions, withGuard } from "./harness.mjs";

const [home, project, url] = process.argv.slice(2);
const client = newClient({ home, project });
const events = [];
const session = await client.createSession({
  ...sessionOptions(url, events, { onPermissionRequest: sdk.approveAll }),
  tools: [{ name: "wait_forever", description: "never answers", handler: () => new Promise(() => {}) }],
});
const requested = nextEvent(session, (e) => e.type === "external_tool.requested", "external_tool.requested");
await session.send({ prompt: "Wait for the tool" });
await requested;
// The SDK's own child process handle: what the operating system closes when a client dies.
const runtime = client["cliProcess"];
const exited = new Promise((resolve) => runtime.once("exit", (code, signal) => resolve(code ?? signal)));
runtime.stdin.destroy();
const code = await withGuard(exited, "the runtime did not exit after its client vanished");
console.log(JSON.stringify({ id: session.sessionId, runtimeExit: code, events }));
process.exit(0);
