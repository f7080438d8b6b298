// The differential scenarios: each drives the official TypeScript client against a `Run`
// (see run.mjs) and leaves behind what it saw; the runner runs each once with the Copilot CLI
// and once with turnstile and compares. A scenario never checks turnstile against its own
// idea of right: the reference run is the right answer.
//
// `cross: true` scenarios use two roles ("a" holds a session, "b" comes second); besides
// copilot/copilot and turnstile/turnstile they run with the runtimes mixed, both ways.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { OUT, ROOT, sdk, withGuard } from "../harness.mjs";
import { outcomeOf, waitFor, waitUntil } from "./run.mjs";
import { sessionDirectory } from "./session_dir.mjs";
import { inUsePromptRun } from "./inuse_prompt_run.mjs";

const { approveAll } = sdk;
const GUARD = 60_000;

const lookupCapital = (handler) => ({
  name: "lookup_capital",
  description: "The capital city of a country",
  parameters: { type: "object", properties: { country: { type: "string" } }, required: ["country"] },
  handler,
});

/** The port of the web-fetch scenario's server, chosen by its first run. */
let webFetchPort = 0;
/** The port of the mcp-methods scenario's remote server, chosen by its first run (the
 * runtimes' answers name its URL). */
let mcpMethodsPort = 0;
/** The ports of the web-fetch-redirect scenario's two servers, chosen by its first run. */
const webFetchRedirectPorts = { a: 0, b: 0 };

/** The HTML page the web-fetch scenario serves. */
const PAGE =
  "<html><head><title>T</title><style>p{}</style><script>x()</script></head><body><h1>Title</h1>" +
  "<p>Hello <b>web</b> and <a href=\"/other\">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>";

/** What the model read of each tool call: success and the result or error text. */
function toolResultTexts(events) {
  return events
    .filter((e) => e.type === "tool.execution_complete")
    .map((e) => ({ success: e.data.success, text: e.data.success ? e.data.result?.content : e.data.error?.message }));
}

/** Prompt -> bash, view, final text; then disconnect. */
async function mcpServers(run) {
  await run.model("mcp-servers.json");
  const changing = join(ROOT, "conformance", "mcp", "changing-server.mjs");
  const everything = join(ROOT, "target", "mcp-servers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
  const client = run.client();
  const session = await client.createSession(
    run.options("main", {
      onPermissionRequest: approveAll,
      mcpServers: {
        changing: { type: "local", command: "node", args: [changing], tools: ["*"] },
        everything: { type: "local", command: "node", args: [everything, "stdio"], tools: ["*"] },
        broken: { type: "local", command: join(run.project, "no-such-server"), args: [], tools: ["*"] },
      },
    }),
  );
  run.session("main", session.sessionId);
  const mcp = session.rpc.mcp;
  const offered = () => run.requests().map((r) => (r.body?.tools ?? []).map((t) => t.function?.name).filter((n) => n.startsWith("changing")));
  run.observe("list", await outcomeOf(mcp.list()));
  run.observe("running", await outcomeOf(mcp.isServerRunning({ serverName: "changing" })));
  run.observe("running unknown", await outcomeOf(mcp.isServerRunning({ serverName: "nosuch" })));
  run.observe("stop", await outcomeOf(mcp.stopServer({ serverName: "changing" })));
  run.observe("running after stop", await outcomeOf(mcp.isServerRunning({ serverName: "changing" })));
  run.observe("list after stop", await outcomeOf(mcp.list()));
  run.observe("stop again", await outcomeOf(mcp.stopServer({ serverName: "changing" })));
  run.observe("stop unknown", await outcomeOf(mcp.stopServer({ serverName: "nosuch" })));
  await session.sendAndWait("After the stop", GUARD);
  run.observe("start", await outcomeOf(mcp.startServer({ serverName: "changing" })));
  run.observe("running after start", await outcomeOf(mcp.isServerRunning({ serverName: "changing" })));
  run.observe("start again", await outcomeOf(mcp.startServer({ serverName: "changing" })));
  run.observe("start unknown", await outcomeOf(mcp.startServer({ serverName: "nosuch" })));
  run.observe("restart", await outcomeOf(mcp.restartServer({ serverName: "changing" })));
  run.observe("restart unknown", await outcomeOf(mcp.restartServer({ serverName: "nosuch" })));
  run.observe(
    "start with config",
    await outcomeOf(mcp.startServer({ serverName: "extra", config: { type: "local", command: "node", args: [changing], env: { MCP_SECOND: "1" }, tools: ["*"] } })),
  );
  run.observe("list after start with config", await outcomeOf(mcp.list()));
  await session.sendAndWait("After the starts", GUARD);
  run.observe("tools offered", offered());
  const r = mcp.resources;
  const page = await outcomeOf(r.list({ serverName: "everything" }));
  run.observe("resources.list", page);
  if (page.ok?.nextCursor) run.observe("resources.list page 2", await outcomeOf(r.list({ serverName: "everything", cursor: page.ok.nextCursor })));
  run.observe("resources.listTemplates", await outcomeOf(r.listTemplates({ serverName: "everything" })));
  const first = page.ok?.resources?.[0]?.uri;
  if (first) run.observe("resources.read", await outcomeOf(r.read({ serverName: "everything", uri: first })));
  run.observe("resources.read bad uri", await outcomeOf(r.read({ serverName: "everything", uri: "demo://nosuch/1" })));
  run.observe("resources.list no resources", await outcomeOf(r.list({ serverName: "changing" })));
  run.observe("resources.list unknown", await outcomeOf(r.list({ serverName: "nosuch" })));
  await session.disconnect();
}


/** Calls every session.mcp method that manages more than servers (sampling, env values, GitHub,
 * external clients, OAuth, headers refresh, MCP Apps) on a session without servers and on one
 * with an app server, a stdio server and two remote ones (one asking for OAuth); a server
 * started with `$NAME` references in its env; a server written into the home's
 * mcp-config.json and a reload; the servers replaced by reloadWithConfig. */
async function mcpMethods(run) {
  await run.model("mcp-methods.json");
  const changing = join(ROOT, "conformance", "mcp", "changing-server.mjs");
  const apps = join(ROOT, "conformance", "mcp", "apps-server.mjs");
  // Two remote servers: one asks for OAuth (401 with a challenge), one is no MCP server.
  const remote = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url.startsWith("/auth")) {
        res.writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="mcp"' });
        res.end(JSON.stringify({ error: "invalid_token" }));
      } else {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("not an MCP server");
      }
    });
  });
  await new Promise((resolve) => remote.listen(mcpMethodsPort, "127.0.0.1", resolve));
  run.stops.push(() => new Promise((resolve) => remote.close(resolve)));
  const port = (mcpMethodsPort = remote.address().port);
  const client = run.client();
  const bare = await client.createSession(run.options("bare", { onPermissionRequest: approveAll }));
  run.session("bare", bare.sessionId);
  const session = await client.createSession(
    run.options("main", {
      onPermissionRequest: approveAll,
      mcpServers: {
        apps: { type: "local", command: "node", args: [apps], tools: ["*"] },
        changing: { type: "local", command: "node", args: [changing], tools: ["*"] },
        needsauth: { type: "http", url: `http://127.0.0.1:${port}/auth/mcp`, tools: ["*"] },
      },
    }),
  );
  run.session("main", session.sessionId);
  const view = "ui://apps/view.html";
  const each = async (label, s) => {
    const mcp = s.rpc.mcp;
    const internal = s.internalRpc.mcp;
    const see = async (name, promise) => run.observe(`${label} ${name}`, await outcomeOf(promise));
    await see("moveLoadingToBackground", mcp.moveLoadingToBackground());
    await see("cancelSamplingExecution", mcp.cancelSamplingExecution({ requestId: "nosuch" }));
    await see("setEnvValueMode indirect", mcp.setEnvValueMode({ mode: "indirect" }));
    await see("setEnvValueMode bogus", mcp.setEnvValueMode({ mode: "bogus" }));
    await see("setEnvValueMode direct", mcp.setEnvValueMode({ mode: "direct" }));
    await see("removeGitHub", mcp.removeGitHub());
    await see("configureGitHub empty", internal.configureGitHub({ authInfo: {} }));
    await see("configureGitHub string", internal.configureGitHub({ authInfo: "x" }));
    await see("configureGitHub null", internal.configureGitHub({ authInfo: null }));
    await see("registerExternalClient", internal.registerExternalClient({ serverName: "ext", client: {}, transport: {}, config: {} }));
    await see("unregisterExternalClient", internal.unregisterExternalClient({ serverName: "ext" }));
    await see("oauth.handlePendingRequest", mcp.oauth.handlePendingRequest({ requestId: "nosuch", result: { kind: "cancelled" } }));
    await see("oauth.authenticationStateChanged", mcp.oauth.authenticationStateChanged({ serverName: "changing" }));
    await see("oauth.authenticationStateChanged unknown", mcp.oauth.authenticationStateChanged({ serverName: "nosuch" }));
    await see("oauth.respond", mcp.oauth.respond({ requestId: "nosuch" }));
    await see("oauth.login unknown", mcp.oauth.login({ serverName: "nosuch" }));
    await see("oauth.login stdio", mcp.oauth.login({ serverName: "changing" }));
    await see("oauth.probe", mcp.oauth.probe({ serverName: "needsauth" }));
    await see("headers.handlePendingHeadersRefreshRequest", mcp.headers.handlePendingHeadersRefreshRequest({ requestId: "nosuch", result: { kind: "none" } }));
    await see("apps.getHostContext", mcp.apps.getHostContext());
    await see("apps.setHostContext", mcp.apps.setHostContext({ context: { theme: "dark", locale: "en-US", extra: 1 } }));
    await see("apps.getHostContext after set", mcp.apps.getHostContext());
    await see("apps.diagnose", mcp.apps.diagnose({ serverName: "apps" }));
    await see("apps.diagnose unknown", mcp.apps.diagnose({ serverName: "nosuch" }));
    await see("apps.listTools", mcp.apps.listTools({ serverName: "apps", originServerName: "apps" }));
    await see("apps.listTools no origin", mcp.apps.listTools({ serverName: "apps" }));
    await see("apps.callTool", mcp.apps.callTool({ serverName: "apps", toolName: "refresh", arguments: { a: 1 }, originServerName: "apps" }));
    await see("apps.callTool other origin", mcp.apps.callTool({ serverName: "apps", toolName: "show", originServerName: "changing" }));
    await see("apps.readResource", mcp.apps.readResource({ serverName: "apps", uri: view }));
    await see(
      "executeSampling",
      mcp.executeSampling({
        requestId: "s1",
        serverName: "changing",
        mcpRequestId: 7,
        request: {
          messages: [{ role: "user", content: { type: "text", text: "Say hello." } }],
          systemPrompt: "You are a test server.",
          maxTokens: 50,
        },
      }),
    );
    await see("executeSampling not ending with the user", mcp.executeSampling({ requestId: "s2", serverName: "nosuch", mcpRequestId: 8, request: { messages: [], maxTokens: 5 } }));
  };
  await each("bare", bare);
  await each("main", session);
  // MCP Apps once the session has the capability: a view's own server only, its tools by
  // visibility, its ui:// bundle; then the capability taken away.
  const views = session.rpc.mcp.apps;
  const seeApps = async (name, promise) => run.observe(`apps ${name}`, await outcomeOf(promise));
  await seeApps("capability on", session.rpc.options.update({ sessionCapabilities: ["mcp-apps"] }));
  await seeApps("diagnose", views.diagnose({ serverName: "apps" }));
  await seeApps("listTools", views.listTools({ serverName: "apps", originServerName: "apps" }));
  await seeApps("listTools other origin", views.listTools({ serverName: "apps", originServerName: "changing" }));
  await seeApps("listTools no origin", views.listTools({ serverName: "apps" }));
  await seeApps("listTools plain server", views.listTools({ serverName: "changing", originServerName: "changing" }));
  await seeApps("listTools unknown", views.listTools({ serverName: "nosuch", originServerName: "nosuch" }));
  await seeApps("callTool", views.callTool({ serverName: "apps", toolName: "refresh", arguments: { a: 1 }, originServerName: "apps" }));
  await seeApps("callTool model only", views.callTool({ serverName: "apps", toolName: "secret", originServerName: "apps" }));
  await seeApps("callTool plain", views.callTool({ serverName: "apps", toolName: "plain", originServerName: "apps" }));
  await seeApps("callTool unknown tool", views.callTool({ serverName: "apps", toolName: "nosuch", originServerName: "apps" }));
  await seeApps("callTool other origin", views.callTool({ serverName: "apps", toolName: "show", originServerName: "changing" }));
  await seeApps("callTool no origin", views.callTool({ serverName: "apps", toolName: "show" }));
  await seeApps("readResource", views.readResource({ serverName: "apps", uri: "ui://apps/view.html" }));
  await seeApps("readResource unknown", views.readResource({ serverName: "nosuch", uri: "ui://apps/view.html" }));
  await seeApps("capability off", session.rpc.options.update({ sessionCapabilities: [] }));
  await seeApps("listTools after off", views.listTools({ serverName: "apps", originServerName: "apps" }));
  const mcp = session.rpc.mcp;
  run.observe("login remote", await outcomeOf(mcp.oauth.login({ serverName: "needsauth" })));
  // `$NAME` and `${NAME}` in a server's env are the runtime's variables (the client spawned
  // the runtime with this process's environment, PATH included).
  const envFile = join(run.project, "env.json");
  run.observe(
    "start with env references",
    await outcomeOf(
      mcp.startServer({
        serverName: "envs",
        config: {
          type: "local",
          command: "node",
          args: [apps, "--env-out", envFile, "A", "B", "C", "D", "E"],
          env: { A: "PATH", B: "$PATH", C: "pre-${PATH}-post", D: "${NO_SUCH_VARIABLE_X}", E: "literal" },
          tools: ["*"],
        },
      }),
    ),
  );
  const seenEnv = existsSync(envFile) ? JSON.parse(readFileSync(envFile, "utf8")) : null;
  const path = process.env.PATH;
  run.observe("env as launched", seenEnv && {
    A: seenEnv.A,
    B: seenEnv.B === path ? "the runtime's PATH" : seenEnv.B,
    C: seenEnv.C === `pre-${path}-post` ? "pre-<the runtime's PATH>-post" : seenEnv.C,
    D: seenEnv.D,
    E: seenEnv.E,
  });
  // A server written into the home's configuration after the session started, then a reload.
  writeFileSync(
    join(run.home, "mcp-config.json"),
    JSON.stringify({ mcpServers: { fromfile: { type: "local", command: "node", args: [changing], tools: ["*"] } } }),
  );
  run.observe("reload", await outcomeOf(mcp.reload()));
  run.observe("list after reload", await outcomeOf(mcp.list()));
  writeFileSync(join(run.home, "mcp-config.json"), JSON.stringify({ servers: {} }));
  run.observe("reload damaged file", await outcomeOf(mcp.reload()));
  run.observe("bare reload", await outcomeOf(bare.rpc.mcp.reload()));
  run.observe("bare list after reload", await outcomeOf(bare.rpc.mcp.list()));
  // The servers replaced: by none, then by one.
  const internal = session.internalRpc.mcp;
  run.observe("reloadWithConfig none", await outcomeOf(internal.reloadWithConfig({ config: {} })));
  run.observe("list after reloadWithConfig none", await outcomeOf(mcp.list()));
  run.observe(
    "reloadWithConfig one",
    await outcomeOf(internal.reloadWithConfig({ config: { mcpServers: { x: { type: "local", command: "node", args: [changing], tools: ["*"] } } } })),
  );
  run.observe("list after reloadWithConfig one", await outcomeOf(mcp.list()));
  await client.stop();
}


/** The user's MCP servers in the home (mcp.config.*): each answer and refusal, and the two
 * files after each change, as both runtimes write them. */
async function mcpConfig(run) {
  const servers = join(run.home, "mcp-config.json");
  const settings = join(run.home, "settings.json");
  writeFileSync(servers, JSON.stringify({ mcpServers: { pre: { type: "local", command: "node", args: ["x.js"], tools: ["*"] } } }));
  writeFileSync(settings, '{\n  // kept by neither runtime\n  "model": "gpt-4.1",\n  "disabledMcpServers": ["q"]\n}\n');
  const client = run.client();
  await client.start();
  const c = client.rpc.mcp.config;
  const files = () => [servers, settings].map((f) => (existsSync(f) ? readFileSync(f, "utf8") : null));
  const step = async (name, call) => {
    run.observe(name, await outcomeOf(call));
    run.observe(`${name}: files`, files());
  };
  await step("list", c.list());
  await step("add", c.add({ name: "a", config: { type: "local", command: "node", args: ["a.js"], tools: ["*"] } }));
  await step("add again", c.add({ name: "a", config: { command: "node" } }));
  await step("add remote", c.add({ name: "b", config: { url: "http://127.0.0.1:9/mcp", type: "http" } }));
  await step("add defaults", c.add({ name: "c", config: { env: { A: "1" }, command: "n", type: "stdio", timeout: 5, cwd: "/tmp" } }));
  await step("add empty name", c.add({ name: "", config: { command: "node" } }));
  await step("add bad type", c.add({ name: "z", config: { type: "weird", command: "node" } }));
  await step("add no command", c.add({ name: "z", config: { type: "local" } }));
  await step("add no config", c.add({ name: "z" }));
  await step("list after adds", c.list());
  await step("update", c.update({ name: "a", config: { command: "node", args: ["a2.js"], tools: ["x"] } }));
  await step("update unknown", c.update({ name: "zz", config: { command: "node" } }));
  await step("disable", c.disable({ names: ["a", "a", "zz"] }));
  await step("enable", c.enable({ names: ["q", "never"] }));
  await step("remove", c.remove({ name: "a" }));
  await step("remove unknown", c.remove({ name: "zz" }));
  await step("reload", c.reload());
  await step("list at the end", c.list());
  writeFileSync(servers, JSON.stringify({ mcpServers: [1, 2] }));
  // The CLI answers from its cache until mcp.config.reload; turnstile keeps none.
  await step("reload after the damage", c.reload());
  await step("list of a damaged file", c.list());
  await step("add to a damaged file", c.add({ name: "t", config: { command: "y" } }));
}

/** A server in the user's mcp-config.json and one in the settings file: which of them an SDK
 * session that names no mcpServers starts (the tools its first request offers). */
async function mcpConfigSession(run) {
  await run.model("mcp-config-session.json");
  const changing = join(ROOT, "conformance", "mcp", "changing-server.mjs");
  writeFileSync(
    join(run.home, "mcp-config.json"),
    JSON.stringify({ mcpServers: { fromfile: { type: "local", command: "node", args: [changing], tools: ["*"] } } }),
  );
  writeFileSync(
    join(run.home, "settings.json"),
    JSON.stringify({ mcpServers: { fromsettings: { type: "local", command: "node", args: [changing], tools: ["*"] } } }),
  );
  const client = run.client();
  const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
  run.session("main", session.sessionId);
  const answer = await session.sendAndWait("Hello", GUARD);
  run.observe("answer", answer?.data?.content ?? null);
  run.observe(
    "offered MCP tools",
    run.requests().map((r) => (r.body?.tools ?? []).map((t) => t.function?.name).filter((n) => n.startsWith("from"))),
  );
  run.observe("mcp.list", await outcomeOf(session.rpc.mcp.list()));
  await session.disconnect();
}

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

/** What a permission request is about, for observations: the kind and its subject. */
function askedAbout(request) {
  if (request.kind === "shell") return `shell: ${request.fullCommandText}`;
  if (request.kind === "write") return `write: ${String(request.fileName ?? "").split("/").pop()}`;
  if (request.kind === "custom-tool") return `custom-tool: ${request.toolName}`;
  return request.kind;
}

/** Session-scoped approvals: an approval for `ls` covers a later `ls`, not `echo` nor a line
 * that also runs `echo`; one for writes covers later writes; a resumed session asks again. */
async function sessionApproval(run) {
  await run.model("session-approval.json");
  const asked = [];
  const onPermissionRequest = (request) => {
    asked.push(askedAbout(request));
    if (request.kind === "shell" && request.fullCommandText === "ls") {
      return { kind: "approve-for-session", approval: { kind: "commands", commandIdentifiers: ["ls"] } };
    }
    if (request.kind === "write") return { kind: "approve-for-session", approval: { kind: "write" } };
    return { kind: "approve-once" };
  };
  const first = run.client();
  const session = await first.createSession(run.options("first", { onPermissionRequest }));
  const id = session.sessionId;
  run.session("main", id);
  const answer = await session.sendAndWait("List, echo and write", GUARD);
  run.observe("answer", answer?.data?.content ?? null);
  run.observe("asked in the first session", asked.splice(0));
  run.observe("files", ["a.txt", "b.txt"].map((f) => existsSync(join(run.project, f))));
  await session.disconnect();
  await first.stop();
  const second = run.client();
  const resumed = await second.resumeSession(id, run.options("resumed", { onPermissionRequest }));
  const again = await resumed.sendAndWait("List once more", GUARD);
  run.observe("answer after resume", again?.data?.content ?? null);
  run.observe("asked after resume", asked.splice(0));
  await resumed.disconnect();
}

/** Location-scoped approvals: persisted for the working directory; a new session gets them
 * once it applies its location. */
async function locationApproval(run) {
  await run.model("location-approval.json");
  const asked = [];
  let locationKey = null;
  const onPermissionRequest = (request) => {
    asked.push(askedAbout(request));
    if (request.kind === "shell" && locationKey) {
      return {
        kind: "approve-for-location",
        approval: { kind: "commands", commandIdentifiers: request.commands.map((c) => c.identifier) },
        locationKey,
      };
    }
    return { kind: "approve-once" };
  };
  const client = run.client();
  const first = await client.createSession(run.options("first", { onPermissionRequest }));
  run.session("main", first.sessionId);
  const resolved = await outcomeOf(first.rpc.permissions.locations.resolve({ workingDirectory: run.project }));
  run.observe("resolve", resolved);
  locationKey = resolved.ok?.locationKey ?? null;
  await first.sendAndWait("Where am I, twice", GUARD);
  run.observe("asked in the first session", asked.splice(0));
  const store = join(run.home, "permissions-config.json");
  // As [key, approvals] pairs: keys hold the project's path, which only values normalise.
  const stored = existsSync(store) ? JSON.parse(readFileSync(store, "utf8")) : null;
  run.observe("location store", stored && Object.entries(stored.locations ?? {}).map(([k, v]) => [k, v]));
  await first.disconnect();
  // Another runtime process: what it knows of the approval is what was persisted.
  const other = run.client();
  const second = await other.createSession(run.options("second", { onPermissionRequest: (r) => (asked.push(askedAbout(r)), { kind: "approve-once" }) }));
  run.session("second", second.sessionId);
  await second.sendAndWait("Where am I, in a new session", GUARD);
  run.observe("asked before apply", asked.splice(0));
  run.observe("apply", await outcomeOf(second.rpc.permissions.locations.apply({ workingDirectory: run.project })));
  await second.sendAndWait("Where am I, after apply", GUARD);
  run.observe("asked after apply", asked.splice(0));
  await second.disconnect();
}

/** The session.permissions.* methods besides the answers: results and errors, and that the
 * rules they set decide later requests. */
async function permissionsRpc(run) {
  await run.model("permissions-rpc.json");
  const asked = [];
  const client = run.client();
  const session = await client.createSession(
    run.options("main", { onPermissionRequest: (r) => (asked.push(askedAbout(r)), { kind: "approve-once" }) }),
  );
  run.session("main", session.sessionId);
  const p = session.rpc.permissions;
  const calls = [
    ["setApproveAll", () => p.setApproveAll({ enabled: true })],
    ["setRequired", () => p.setRequired({ required: true })],
    ["notifyPromptShown", () => p.notifyPromptShown({ message: "Allow the shell?" })],
    ["paths.add relative", () => p.paths.add({ path: "sub" })],
    ["paths.add missing", () => p.paths.add({ path: join(run.project, "missing") })],
    ["paths.add", () => p.paths.add({ path: join(run.project, "..", "extra") })],
    ["isPathWithinAllowedDirectories inside", () => p.paths.isPathWithinAllowedDirectories({ path: join(run.project, "a", "b.txt") })],
    ["isPathWithinAllowedDirectories added", () => p.paths.isPathWithinAllowedDirectories({ path: join(run.project, "..", "extra", "x") })],
    ["isPathWithinAllowedDirectories outside", () => p.paths.isPathWithinAllowedDirectories({ path: "/etc/passwd" })],
    ["isPathWithinAllowedDirectories relative", () => p.paths.isPathWithinAllowedDirectories({ path: "a.txt" })],
    ["isPathWithinWorkspace project", () => p.paths.isPathWithinWorkspace({ path: join(run.project, "a.txt") })],
    ["urls.setUnrestrictedMode", () => p.urls.setUnrestrictedMode({ enabled: false })],
    ["folderTrust.isTrusted before", () => p.folderTrust.isTrusted({ path: run.project })],
    ["folderTrust.addTrusted", () => p.folderTrust.addTrusted({ path: run.project })],
    ["folderTrust.isTrusted after", () => p.folderTrust.isTrusted({ path: run.project })],
    ["folderTrust.isTrusted below", () => p.folderTrust.isTrusted({ path: join(run.project, "sub") })],
    ["folderTrust.addTrusted missing", () => p.folderTrust.addTrusted({ path: join(run.project, "missing") })],
    ["locations.resolve", () => p.locations.resolve({ workingDirectory: run.project })],
    ["resetSessionApprovals", () => p.resetSessionApprovals({})],
    ["pendingRequests", () => p.pendingRequests({})],
  ];
  mkdirSync(join(run.project, "..", "extra"), { recursive: true });
  for (const [name, call] of calls) run.observe(name, await outcomeOf(call()));
  // setApproveAll on: the shell runs unasked.
  await session.sendAndWait("Echo with approve-all on", GUARD);
  run.observe("asked with approve-all", asked.splice(0));
  run.observe("setApproveAll off", await outcomeOf(p.setApproveAll({ enabled: false })));
  run.observe(
    "modifyRules session",
    await outcomeOf(p.modifyRules({ scope: "session", add: [{ kind: "shell", argument: "ls" }] })),
  );
  // A session rule for ls: ls runs unasked, echo is asked.
  await session.sendAndWait("Echo and list with a session rule", GUARD);
  run.observe("asked with a session rule", asked.splice(0));
  run.observe(
    "modifyRules remove",
    await outcomeOf(p.modifyRules({ scope: "session", remove: [{ kind: "shell", argument: "ls" }] })),
  );
  run.observe(
    "configure deny",
    await outcomeOf(p.configure({ rules: { approved: [], denied: [{ kind: "shell", argument: "echo" }] } })),
  );
  // A configured deny rule for echo: refused unasked.
  await session.sendAndWait("Echo with a deny rule", GUARD);
  run.observe("asked with a deny rule", asked.splice(0));
  const denied = (run.events.main ?? []).filter((e) => e.type === "tool.execution_complete").at(-1);
  run.observe("denied result", denied?.data?.success ?? null);
  // A client that shows no prompts: what no rule decides is denied without asking.
  run.observe("setRequired off", await outcomeOf(p.setRequired({ required: false })));
  await session.sendAndWait("Where am I, with no prompts", GUARD);
  run.observe("asked with no prompts", asked.splice(0));
  const unasked = (run.events.main ?? []).filter((e) => e.type === "tool.execution_complete").at(-1);
  run.observe("unasked result", unasked?.data?.error?.message ?? null);
  await session.disconnect();
}

/** `systemMessage.customize` with a function: the runtime asks the client for the section's
 * new text (`systemMessage.transform`) and the model reads it. */
async function systemTransform(run) {
  await run.model("system-transform.json");
  const seen = [];
  const client = run.client();
  const session = await client.createSession(
    run.options("main", {
      onPermissionRequest: approveAll,
      systemMessage: {
        mode: "customize",
        sections: {
          tone: {
            action: (content) => {
              seen.push(typeof content === "string" && content.length > 0);
              return `${content}\nALWAYS ANSWER IN UPPER CASE.`;
            },
          },
        },
      },
    }),
  );
  run.session("main", session.sessionId);
  const answer = await session.sendAndWait("Hello", GUARD);
  run.observe("answer", answer?.data?.content ?? null);
  // A second prompt: the runtime writes the system message again before every prompt.
  const again = await session.sendAndWait("Hello again", GUARD);
  run.observe("second answer", again?.data?.content ?? null);
  run.observe("transform calls (non-empty section)", seen);
  const system = run.requests().filter((r) => Array.isArray(r.body?.messages)).at(-1)?.body?.messages?.find((m) => m.role === "system")?.content ?? "";
  run.observe("the model read the transformed section", String(system).includes("ALWAYS ANSWER IN UPPER CASE."));
  await session.disconnect();
}

/** A session of `client` whose permission handler answers approve-once, after one prompt:
 * observes the kinds it was asked for and each tool call's success. */
async function approvingOnce(run, client, prompt) {
  const asked = [];
  const session = await client.createSession(
    run.options("main", { onPermissionRequest: (r) => (asked.push(r.kind), { kind: "approve-once" }) }),
  );
  run.session("main", session.sessionId);
  await session.sendAndWait(prompt, GUARD);
  run.observe("asked", asked);
  run.observe(
    "results",
    (run.events.main ?? []).filter((e) => e.type === "tool.execution_complete").map((e) => e.data.success),
  );
  return session;
}

/** `--add-dir` given to the runtime, then a file read in that directory and one in another
 * directory outside the working directory, each approved when asked. */
async function addDir(run) {
  await run.model("add-dir.json");
  const { mkdirSync: mkdir, writeFileSync } = await import("node:fs");
  const extra = join(run.scratch, "extra");
  mkdir(extra);
  writeFileSync(join(extra, "x.txt"), "inside an added directory\n");
  mkdir(join(run.scratch, "elsewhere"));
  writeFileSync(join(run.scratch, "elsewhere", "y.txt"), "outside every allowed directory\n");
  const session = await approvingOnce(run, run.client("a", { args: ["--add-dir", extra] }), "Read both files");
  run.observe("paths.list", await outcomeOf(session.rpc.permissions.paths.list({})));
  await session.disconnect();
}

/** The read-only tools inside the working directory (view of a file and of a directory, glob,
 * grep), each permission the runtime asks for answered approve-once; the file is read twice. */
async function readTools(run) {
  await run.model("read-tools.json");
  run.file("a.txt", "alpha\n");
  run.file("src/main.rs", "fn main() {}\n");
  const session = await approvingOnce(run, run.client(), "Look around the project");
  await session.disconnect();
}

/** What each tool's result carries besides the model's text (detailedContent, the live-only
 * contents of a shell's end): a view of a range, of a file without a final newline and of a
 * directory, an edit, a create, a long shell output, a failing and a silent command. */
async function toolDetails(run) {
  await run.model("tool-details.json");
  run.file("lines.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n");
  run.file("plain.txt", "no newline");
  run.file("dir/b.txt", "b\n");
  run.file("dir/a.txt", "a\n");
  const session = await run.client().createSession(run.options("main", { onPermissionRequest: approveAll }));
  run.session("main", session.sessionId);
  await session.sendAndWait("Show the details", GUARD);
  await session.disconnect();
}

/** The read-only tools of `read-tools` with the first read approved for the session (approval
 * `read`): what the later reads still ask. */
async function readSessionApproval(run) {
  await run.model("read-tools.json");
  run.file("a.txt", "alpha\n");
  run.file("src/main.rs", "fn main() {}\n");
  const asked = [];
  const onPermissionRequest = (request) => {
    asked.push(`${request.kind}: ${request.intention}`.replaceAll(run.project, "<project>"));
    if (request.kind === "read") return { kind: "approve-for-session", approval: { kind: "read" } };
    return { kind: "approve-once" };
  };
  const session = await run.client().createSession(run.options("main", { onPermissionRequest }));
  run.session("main", session.sessionId);
  await session.sendAndWait("Look around the project", GUARD);
  run.observe("asked", asked);
  run.observe(
    "results",
    (run.events.main ?? []).filter((e) => e.type === "tool.execution_complete").map((e) => e.data.success),
  );
  await session.disconnect();
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

  // History cut back: rewind points listed, a conversation rewind to the third prompt, a
  // prompt, a truncation to the turn start of that prompt, a files rewind (no file tracking
  // asked), refused cuts, and a last prompt: its request shows what the model still sees.
  async rewind(run) {
    await run.model("rewind.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    for (const prompt of ["Say one", "Say two", "Say three"]) await session.sendAndWait(prompt, GUARD);
    const h = session.rpc.history;
    const points = await h.listRewindPoints();
    const strip = (list) => ({ ...list, points: list.points.map(({ eventId, timestamp, ...rest }) => rest) });
    run.observe("listRewindPoints", strip(points));
    const [, second, third] = points.points;
    run.observe("previewRewind", await outcomeOf(h.previewRewind({ eventId: second.eventId })));
    run.observe("rewind conversation", await outcomeOf(h.rewind({ eventId: third.eventId, mode: "conversation" })));
    // The system prompt's events are left out: turnstile records it once (another difference).
    const types = async () => (await session.getEvents()).map((e) => e.type).filter((t) => t !== "system.message");
    run.observe("getMessages after rewind", await types());
    await session.sendAndWait("Say four", GUARD);
    const events = await session.getEvents();
    const lastStart = events.filter((e) => e.type === "assistant.turn_start").at(-1);
    run.observe("truncate", await outcomeOf(h.truncate({ eventId: lastStart.id })));
    run.observe("getMessages after truncate", await types());
    run.observe("rewind with files", await outcomeOf(h.rewind({ eventId: second.eventId, mode: "conversation-and-files" })));
    const noIds = (o) => JSON.parse(JSON.stringify(o).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>"));
    run.observe("rewind to a removed turn", noIds(await outcomeOf(h.rewind({ eventId: third.eventId, mode: "conversation" }))));
    run.observe("truncate to a removed event", noIds(await outcomeOf(h.truncate({ eventId: lastStart.id }))));
    run.observe("points at the end", strip(await h.listRewindPoints()));
    const answer = await session.sendAndWait("Say five", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    await session.disconnect();
  },
  ...(pythonClientAvailable() ? { "py-basic": pyBasic } : {}),

  // `session.log` at each level, and an ephemeral entry (live only, never in the journal).
  async log(run) {
    await run.model("log.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    await session.sendAndWait("Hello", GUARD);
    const answers = [];
    for (const [message, options] of [
      ["an info entry", undefined],
      ["a warning entry", { level: "warning" }],
      ["an error entry", { level: "error" }],
      ["a live-only entry", { ephemeral: true }],
    ]) {
      const result = await session.log(message, options).then(
        (r) => ({ ok: typeof r?.eventId === "string" }),
        (e) => ({ error: String(e?.message ?? e) }),
      );
      answers.push(result);
    }
    run.observe("log answers", answers);
    await session.disconnect();
  },

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
    run.observe("tool result texts", toolResultTexts(run.events.main));
    await session.disconnect();
  },

  // Shells that end while the message runs: an async shell that fails, one that passes, a
  // detached one, each ending during a later sync call; and one whose end a read in the same
  // turn shows before the next call. The next call's request tells the model of each end.
  async "shell-notice"(run) {
    await run.model("shell-notice.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Run shells and notice their ends", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main));
    await session.disconnect();
  },

  // Sub-agents through `task` in synchronous mode: an explore agent (view, then its answer), a
  // general-purpose agent (bash, then its answer), and an unknown agent type; the main agent's
  // model reads each sub-agent's answer (or the error).
  async task(run) {
    await run.model("task.json");
    run.file("notes.txt", "first line\nsecond line\n");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Ask sub-agents about notes.txt", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    // What the main agent's model read: its own calls' results (the sub-agents' answers).
    run.observe("tool result texts", toolResultTexts(run.events.main.filter((e) => !e.agentId)));
    run.observe(
      "sub-agent ids",
      run.events.main.filter((e) => e.type === "subagent.started").map((e) => [e.agentId, e.data.toolCallId, e.data.agentName]),
    );
    await session.disconnect();
  },

  // The other agent types: a code-review, a research and a security-review agent, each
  // answering at once; the main agent's model reads each answer.
  async "task-types"(run) {
    await run.model("task-types.json");
    run.file("notes.txt", "first line\nsecond line\n");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Review, research and audit notes.txt", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main.filter((e) => !e.agentId)));
    run.observe(
      "sub-agents",
      run.events.main.filter((e) => e.type === "subagent.started").map((e) => [e.data.agentName, e.data.agentDisplayName]),
    );
    await session.disconnect();
  },

  // A background sub-agent: `task` with mode background returns at once with the agent's id
  // (a sync bash keeps the main agent busy while the sub-agent answers), `read_agent` waits
  // for its result, then an unknown id and `list_agents`.
  async "task-background"(run) {
    await run.model("task-background.json");
    run.file("notes.txt", "first line\nsecond line\n");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Ask a background agent about notes.txt", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main.filter((e) => !e.agentId)));
    await session.disconnect();
  },

  // A follow-up to a background agent: `task` in background mode (a sync bash keeps the main
  // agent busy while the agent answers), then `write_agent` to the idle agent (another bash
  // while it answers again), `read_agent` with wait, `write_agent` to an unknown id and
  // without a message, and `list_agents`.
  async "write-agent"(run) {
    await run.model("write-agent.json");
    run.file("notes.txt", "first line\nsecond line\n");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Ask a background agent about notes.txt, then ask it again", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main.filter((e) => !e.agentId)));
    run.observe(
      "notifications",
      run.events.main.filter((e) => e.type === "system.notification").map((e) => [e.data.content, e.data.kind]),
    );
    await session.disconnect();
  },

  // The session database: the runtime's own tables, DDL, writes, reads of every value type,
  // several statements in one call, and the errors; the model must read the same texts.
  async sql(run) {
    await run.model("sql.json");
    const client = run.client();
    const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Use the database", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main));
    await session.disconnect();
  },

  // Skills from the SDK's skillDirectories: one enabled, one disabled, one without front
  // matter; the model loads the enabled one, the disabled one, an unknown one and none. A
  // second session with no skill directory and the built-in skills disabled shows whether
  // the `skill` tool is offered with no skill at all.
  async skill(run) {
    await run.model("skill.json");
    const skills = join(run.scratch, "skills");
    const write = (name, text) => {
      mkdirSync(join(skills, name), { recursive: true });
      writeFileSync(join(skills, name, "SKILL.md"), text);
    };
    write("demo", "---\nname: demo\ndescription: A demo skill\n---\n\nSay DEMO when asked.\n");
    write("off", "---\nname: off\ndescription: A disabled skill\n---\nNever used.\n");
    write("bad", "No front matter here.\n");
    const client = run.client();
    const session = await client.createSession(
      run.options("main", { onPermissionRequest: approveAll, skillDirectories: [skills], disabledSkills: ["off"] }),
    );
    run.session("main", session.sessionId);
    const answer = await session.sendAndWait("Use the skills", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main));
    run.observe(
      "skills loaded",
      run.events.main.filter((e) => e.type === "session.skills_loaded").map((e) => e.data.skills.map((s) => `${s.name}:${s.source}:${s.enabled}`)),
    );
    await session.disconnect();
    const bare = await client.createSession(
      run.options("bare", { onPermissionRequest: approveAll, disabledSkills: ["customize-cloud-agent", "github-pr-media"] }),
    );
    run.session("bare", bare.sessionId);
    await bare.sendAndWait("Say hi", GUARD);
    run.observe("tools offered", run.requests().map((r) => (r.body?.tools ?? []).map((t) => t.function?.name).filter((n) => n === "skill")));
    await bare.disconnect();
  },

  // web_fetch: private and link-local targets refused, then pages of a local HTTP server.
  // Both engines refuse loopback by default; the CLI is let through by its
  // COPILOT_WEB_FETCH_ALLOW_LOCALHOST switch, turnstile by naming the host (--allow-url).
  async "web-fetch"(run) {
    const server = createServer((req, res) => {
      const send = (status, type, body, headers = {}) => {
        res.writeHead(status, { "Content-Type": type, ...headers });
        res.end(body);
      };
      if (req.url === "/page") send(200, "text/html; charset=utf-8", PAGE);
      else if (req.url === "/text") send(200, "text/plain", "0123456789abcdefghij");
      else if (req.url === "/json") send(200, "application/json", '{"a": [1, 2]}');
      else if (req.url === "/redirect") send(302, "text/plain", "", { Location: "/page" });
      else send(404, "text/plain", "missing");
    });
    // The same port in every run: the URLs are part of what is compared.
    await new Promise((resolve) => server.listen(webFetchPort, "127.0.0.1", resolve));
    webFetchPort = server.address().port;
    run.stops.push(() => new Promise((resolve) => server.close(resolve)));
    const base = `http://127.0.0.1:${server.address().port}`;
    const fetch = (args) => ({ toolCalls: [{ name: "web_fetch", arguments: args }] });
    const script = join(run.base, "web-fetch.json");
    writeFileSync(
      script,
      JSON.stringify({
        model: "scripted-model",
        responses: [
          fetch({ url: "http://10.0.0.1/private" }),
          fetch({ url: "http://169.254.169.254/latest/meta-data" }),
          fetch({ url: "not a url" }),
          fetch({ url: "ftp://example.com/file" }),
          fetch({ url: "file:///etc/hostname" }),
          fetch({ url: `${base}/page` }),
          fetch({ url: `${base}/page`, raw: true }),
          fetch({ url: `${base}/text`, max_length: 8 }),
          fetch({ url: `${base}/text`, max_length: 8, start_index: 16 }),
          fetch({ url: `${base}/text`, start_index: 20 }),
          fetch({ url: `${base}/json` }),
          fetch({ url: `${base}/redirect` }),
          fetch({ url: `${base}/missing` }),
          { content: "Fetched." },
        ],
      }),
    );
    await run.model(script);
    const copilot = run.runtime().name === "copilot";
    if (copilot) process.env.COPILOT_WEB_FETCH_ALLOW_LOCALHOST = "1";
    try {
      const client = run.client("a", { args: copilot ? [] : ["--allow-url", "127.0.0.1"] });
      const session = await client.createSession(run.options("main", { onPermissionRequest: approveAll }));
      run.session("main", session.sessionId);
      const answer = await session.sendAndWait("Fetch the pages", GUARD);
      run.observe("answer", answer?.data?.content ?? null);
      run.observe("tool result texts", toolResultTexts(run.events.main));
      await session.disconnect();
    } finally {
      delete process.env.COPILOT_WEB_FETCH_ALLOW_LOCALHOST;
    }
  },

  // web_fetch redirects: each hop is a url permission request of its own (`redirectedFrom`),
  // decided like the first URL. The handler approves everything but a hop to server B (on
  // 127.0.0.2, another loopback host), which must then never be reached; turnstile's rule
  // names 127.0.0.1 only, so its hop to B is asked of the handler too.
  async "web-fetch-redirect"(run) {
    let secretHits = 0;
    const secret = createServer((req, res) => {
      secretHits += 1;
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end("secret");
    });
    await new Promise((resolve) => secret.listen(webFetchRedirectPorts.b, "127.0.0.2", resolve));
    webFetchRedirectPorts.b = secret.address().port;
    const target = `http://127.0.0.2:${webFetchRedirectPorts.b}/secret`;
    const open = createServer((req, res) => {
      if (req.url === "/go") {
        res.writeHead(302, { Location: target, "Content-Type": "text/plain" });
        res.end();
      } else if (req.url === "/same") {
        res.writeHead(302, { Location: "/page", "Content-Type": "text/plain" });
        res.end();
      } else {
        res.writeHead(200, { "Content-Type": "text/plain" });
        res.end("page");
      }
    });
    await new Promise((resolve) => open.listen(webFetchRedirectPorts.a, "127.0.0.1", resolve));
    webFetchRedirectPorts.a = open.address().port;
    run.stops.push(() => new Promise((resolve) => open.close(resolve)));
    run.stops.push(() => new Promise((resolve) => secret.close(resolve)));
    const base = `http://127.0.0.1:${webFetchRedirectPorts.a}`;
    const fetch = (args) => ({ toolCalls: [{ name: "web_fetch", arguments: args }] });
    const script = join(run.base, "web-fetch-redirect.json");
    writeFileSync(
      script,
      JSON.stringify({
        model: "scripted-model",
        responses: [fetch({ url: `${base}/same` }), fetch({ url: `${base}/go` }), { content: "Done." }],
      }),
    );
    await run.model(script);
    const copilot = run.runtime().name === "copilot";
    if (copilot) process.env.COPILOT_WEB_FETCH_ALLOW_LOCALHOST = "1";
    const asked = [];
    try {
      const client = run.client("a", { args: ["--allow-url", "127.0.0.1"] });
      const session = await client.createSession(
        run.options("main", {
          onPermissionRequest: (request) => {
            asked.push({ kind: request.kind, url: request.url, redirectedFrom: request.redirectedFrom });
            const elsewhere = request.redirectedFrom !== undefined && new URL(request.url).hostname !== "127.0.0.1";
            return elsewhere ? { kind: "reject" } : { kind: "approve-once" };
          },
        }),
      );
      run.session("main", session.sessionId);
      const answer = await session.sendAndWait("Fetch the pages", GUARD);
      run.observe("answer", answer?.data?.content ?? null);
      run.observe("tool result texts", toolResultTexts(run.events.main));
      run.observe("asked", asked);
      run.observe("secret hits", secretHits);
      await session.disconnect();
    } finally {
      delete process.env.COPILOT_WEB_FETCH_ALLOW_LOCALHOST;
    }
  },

  // URL permissions in unrestricted mode (session.permissions.urls.setUnrestrictedMode): a
  // fetch with the mode on asks nobody; with it off again the next fetch asks the handler. The
  // server is on 10.255.255.1's place: a private address no rule names, so turnstile's fetch
  // is refused by its block on local addresses after the permission step in both messages.
  async "web-fetch-unrestricted"(run) {
    const fetch = (args) => ({ toolCalls: [{ name: "web_fetch", arguments: args }] });
    const script = join(run.base, "web-fetch-unrestricted.json");
    writeFileSync(
      script,
      JSON.stringify({
        model: "scripted-model",
        responses: [
          fetch({ url: "http://10.255.255.1/one" }),
          { content: "One." },
          fetch({ url: "http://10.255.255.1/two" }),
          { content: "Two." },
        ],
      }),
    );
    await run.model(script);
    const asked = [];
    const client = run.client();
    const session = await client.createSession(
      run.options("main", {
        onPermissionRequest: (request) => {
          asked.push({ kind: request.kind, url: request.url });
          return { kind: "reject" };
        },
      }),
    );
    run.session("main", session.sessionId);
    run.observe("unrestricted on", await outcomeOf(session.rpc.permissions.urls.setUnrestrictedMode({ enabled: true })));
    const one = await session.sendAndWait("Fetch one", GUARD);
    run.observe("asked with the mode on", [...asked]);
    run.observe("unrestricted off", await outcomeOf(session.rpc.permissions.urls.setUnrestrictedMode({ enabled: false })));
    const two = await session.sendAndWait("Fetch two", GUARD);
    run.observe("answers", [one?.data?.content ?? null, two?.data?.content ?? null]);
    run.observe("asked", asked);
    run.observe("tool result texts", toolResultTexts(run.events.main));
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

  // MCP servers on stdio (conformance/mcp/changing-server.mjs): the tools offered (names,
  // order, schemas; a long name, a built-in's name, two servers' names colliding), a call, the
  // tool list changing after it (the next request offers the new tool), the RPC view of the
  // servers, and a server disabled and enabled again.
  async mcp(run) {
    await run.model("mcp.json");
    const server = join(ROOT, "conformance", "mcp", "changing-server.mjs");
    const client = run.client();
    const session = await client.createSession(
      run.options("main", {
        onPermissionRequest: approveAll,
        mcpServers: {
          changing: { type: "local", command: "node", args: [server], tools: ["*"] },
          "changing-b": { type: "local", command: "node", args: [server], env: { MCP_SECOND: "1" }, tools: ["*"] },
        },
      }),
    );
    run.session("main", session.sessionId);
    run.observe("mcp.list", await outcomeOf(session.rpc.mcp.list()));
    const answer = await session.sendAndWait("Use the MCP tools", GUARD);
    run.observe("answer", answer?.data?.content ?? null);
    run.observe("tool result texts", toolResultTexts(run.events.main));
    run.observe("tools offered", run.requests().map((r) => (r.body?.tools ?? []).map((t) => t.function?.name).filter((n) => n.startsWith("changing"))));
    run.observe("disable", await outcomeOf(session.rpc.mcp.disable({ serverName: "changing-b" })));
    run.observe("mcp.list after disable", await outcomeOf(session.rpc.mcp.list()));
    run.observe("enable", await outcomeOf(session.rpc.mcp.enable({ serverName: "changing-b" })));
    run.observe("mcp.list after enable", await outcomeOf(session.rpc.mcp.list()));
    run.observe("reload", await outcomeOf(session.rpc.mcp.reload()));
    run.observe("mcp.list after reload", await outcomeOf(session.rpc.mcp.list()));
    run.observe("enable unknown", await outcomeOf(session.rpc.mcp.enable({ serverName: "nosuch" })));
    await session.disconnect();
  },

  // A session's MCP servers one at a time (start, stop, restart, running; a server that
  // fails to start), the resources of the reference server-everything, and the host view in
  // session.mcp.list.
  "mcp-servers": mcpServers,
  // The user's MCP configuration files, listed and edited over mcp.config.*.
  "mcp-config": mcpConfig,
  // Which configured servers a session started without mcpServers gets.
  "mcp-config-session": mcpConfigSession,
  // The session.mcp methods beyond the servers themselves: sampling, OAuth, apps, and a reload.
  "mcp-methods": mcpMethods,

  "session-approval": sessionApproval,
  "add-dir": addDir,
  "read-tools": readTools,
  "tool-details": toolDetails,
  "read-session-approval": readSessionApproval,
  "system-transform": systemTransform,
  "location-approval": locationApproval,
  "permissions-rpc": permissionsRpc,

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
  // The same marker against a prompt run (`copilot -p`, `turnstile run`) live in a tool call,
  // then killed.
  "inuse-prompt-run": Object.assign(inUsePromptRun, { cross: true }),

  // The session directory, workspace.yaml and session.start/resume/shutdown in a repository
  // (sub-agent, model switch, resume on a new branch) and outside one (kill, resume).
  "session-directory": sessionDirectory,
};
