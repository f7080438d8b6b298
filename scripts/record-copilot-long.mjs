// Records journals of the real Copilot runtime for the long-session fixtures:
//   node scripts/record-copilot-long.mjs SCENARIO OUT_DIR
// with COPILOT_CLI_PATH (the runtime), COPILOT_SDK_DIR (the @github/copilot-sdk package) and
// SCRIPTED_MODEL_BIN set. Writes OUT_DIR/events.jsonl (the journal as the runtime left it) and
// OUT_DIR/requests.jsonl (every chat completion request the runtime sent, in order).
//
// Scenarios:
//   crash     a bash call runs, the runtime is killed with SIGKILL, a new process resumes
//             the session and sends another prompt.
//   truncate  infinite sessions off, a small prompt limit (PROMPT_TOKENS), large tool results:
//             the runtime truncates the history it sends.
//   compact   infinite sessions on (the runtime's defaults), the same limit: the runtime
//             compacts; its summary requests are answered by a second scripted model.
// truncate and compact take PROMPT_TOKENS (30000), TURNS (8 views) and LINES (120 a file).
// The runtime compacts in both (its prompt limit triggers it even with infinite sessions off).
//
// Timeouts are failure guards only.

import { spawn } from "node:child_process";
import { createServer, request as httpRequest } from "node:http";
import { createInterface } from "node:readline";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [scenario, outDir] = process.argv.slice(2);
const CLI = resolve(process.env.COPILOT_CLI_PATH ?? "");
const SDK = resolve(process.env.COPILOT_SDK_DIR ?? "");
const MODEL_BIN = resolve(process.env.SCRIPTED_MODEL_BIN ?? "target/debug/scripted-model");
const GUARD_MS = Number(process.env.GUARD_MS ?? "60000");
const sdk = await import(join(SDK, "dist", "index.js"));

function guard(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), GUARD_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function until(condition, what) {
  return guard(
    (async () => {
      while (!(await condition())) await new Promise((r) => setTimeout(r, 20));
    })(),
    what,
  );
}

/** Starts the scripted model on `script` (recording its requests to `requests`, if given);
 * resolves to its base URL (`http://127.0.0.1:PORT/v1`) and a stop function. */
async function startModel(script, requests, name = "script") {
  const scriptPath = join(outDir, `.${name}.json`);
  writeFileSync(scriptPath, JSON.stringify(script));
  const args = ["--script", scriptPath];
  if (requests) args.push("--record-requests", requests);
  const child = spawn(MODEL_BIN, args, { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const url = await guard(
    new Promise((ok, fail) => {
      child.once("exit", (code) => fail(new Error(`scripted-model exited with ${code}`)));
      lines.on("line", (line) => {
        const m = line.match(/^listening on (http:\/\/127\.0\.0\.1:\d+\/v1)/);
        if (m) ok(m[1]);
      });
    }),
    "scripted-model start",
  );
  return { url, stop: () => child.kill("SIGTERM") };
}

function dirs() {
  const base = mkdtempSync(join(tmpdir(), `copilot-long-${scenario}-`));
  const home = join(base, "home");
  const project = join(base, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  return { home, project };
}

function client({ home, project }) {
  return new sdk.CopilotClient({
    connection: sdk.RuntimeConnection.forStdio({ path: CLI }),
    baseDirectory: home,
    workingDirectory: project,
    logLevel: "error",
  });
}

function options(url, extra = {}) {
  return {
    model: "scripted-model",
    provider: { type: "openai", baseUrl: url, apiKey: "recording-key" },
    onPermissionRequest: sdk.approveAll,
    ...extra,
  };
}

function journalPath(home, id) {
  return join(home, "session-state", id, "events.jsonl");
}

function journal(home, id) {
  const path = journalPath(home, id);
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
}

async function crash() {
  const d = dirs();
  writeFileSync(join(d.project, "build.sh"), "#!/bin/sh\nsleep 30\necho built\n");
  const requests = join(outDir, "requests.jsonl");
  const model = await startModel(
    {
      model: "scripted-model",
      responses: [
        { toolCalls: [{ name: "bash", arguments: { command: "sh build.sh", description: "Run the build" } }] },
        { content: "The build was interrupted; starting over is safe." },
      ],
    },
    requests,
  );
  try {
    const first = client(d);
    const session = await first.createSession(options(model.url));
    const id = session.sessionId;
    void session.send({ prompt: "Run the build" }).catch(() => {});
    await until(() => journal(d.home, id).some((l) => l.type === "tool.execution_start"), "the bash call on disk");
    await until(() => existsSync(join(d.home, "session-state", id, "workspace.yaml")), "workspace.yaml");
    const runtime = first["cliProcess"];
    const gone = new Promise((r) => runtime.once("exit", r));
    process.kill(runtime.pid, "SIGKILL");
    await guard(gone, "the killed runtime exit");
    await first.forceStop().catch(() => {});

    const second = client(d);
    const resumed = await second.resumeSession(id, options(model.url));
    const answer = await resumed.sendAndWait("Is the build done?", GUARD_MS);
    console.log(`answer: ${answer?.data?.content}`);
    await resumed.disconnect();
    await second.stop();
    copyFileSync(journalPath(d.home, id), join(outDir, "events.jsonl"));
  } finally {
    model.stop();
  }
}

/** A proxy on loopback: requests whose last message asks for a summary go to `summaries`,
 * the others to `main`; every request body is appended to `requests` with its route. */
async function routingProxy(main, summaries, requests) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      writeFileSync(join(outDir, ".paths.jsonl"), JSON.stringify({ t: Date.now(), method: req.method, path: req.url, summary: /summar/i.test(Buffer.concat(chunks).toString("utf8").slice(-3000)) }) + "\n", { flag: "a" });
      let route = main;
      let parsed = null;
      try {
        parsed = JSON.parse(body.toString("utf8"));
      } catch {}
      const last = parsed?.messages?.at(-1);
      const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
      if (parsed?.messages && /summar/i.test(text)) route = summaries;
      if (parsed) {
        const line = { route: route === main ? "main" : "summary", path: req.url, body: parsed };
        writeFileSync(requests, JSON.stringify(line) + "\n", { flag: "a" });
      }
      const target = new URL(route);
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode, up.headers);
          up.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      upstream.end(body);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, stop: () => server.close() };
}

/** Many large tool results under a small prompt limit; `infinite` turns compaction on.
 * `summaryFails` answers every summary request with HTTP 500; `models` serves the prompt
 * limit in `GET /models` capabilities instead of the provider's `maxPromptTokens`;
 * `overflowAt` answers that main request (0-based) with a context-length error. */
async function long(infinite, { summaryFails = false, models = false, overflowAt = -1 } = {}) {
  const d = dirs();
  const limit = Number(process.env.PROMPT_TOKENS ?? "30000");
  const turns = Number(process.env.TURNS ?? "8");
  for (let i = 0; i < turns; i++) {
    const text = Array.from({ length: Number(process.env.LINES ?? "120") }, (_, j) => `file ${i} line ${j}: the quick brown fox jumps over the lazy dog`).join("\n");
    writeFileSync(join(d.project, `part${i}.txt`), text + "\n");
  }
  const responses = [];
  for (let i = 0; i < turns; i++) responses.push({ toolCalls: [{ name: "view", arguments: { path: join(d.project, `part${i}.txt`) } }] });
  responses.push({ content: "I read every part." });
  responses.push({ content: "Second answer." });
  if (overflowAt >= 0) {
    responses.splice(overflowAt, 0, {
      status: 400,
      errorBody: { error: { message: `This model's maximum context length is ${limit} tokens. However, your messages resulted in more tokens. Please reduce the length of the messages.`, type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } },
    });
  }
  const requests = join(outDir, "requests.jsonl");
  writeFileSync(requests, "");
  const script = { model: "scripted-model", responses };
  if (models) {
    script.models = [{ id: "scripted-model", name: "Scripted", object: "model", capabilities: { family: "scripted", type: "chat", limits: { max_prompt_tokens: limit, max_context_window_tokens: limit + 10000, max_output_tokens: 4000 }, supports: { streaming: true, tool_calls: true } } }];
  }
  const model = await startModel(script, join(outDir, ".main-requests.jsonl"));
  const summaryResponses = Array.from({ length: 20 }, (_, i) =>
    summaryFails
      ? { status: 500, errorBody: { error: { message: "the summary model is down", type: "server_error" } } }
      : { content: `<overview>Summary ${i + 1}: the user asked to read the parts; the assistant viewed them one by one.</overview>` },
  );
  const summaries = await startModel({ model: "scripted-model", responses: summaryResponses }, null, "summary-script");
  const proxy = await routingProxy(model.url.replace(/\/v1$/, ""), summaries.url.replace(/\/v1$/, ""), requests);
  try {
    const c = client(d);
    const session = await c.createSession({
      ...options(proxy.url),
      provider: models
        ? { type: "openai", baseUrl: proxy.url, apiKey: "recording-key" }
        : { type: "openai", baseUrl: proxy.url, apiKey: "recording-key", maxPromptTokens: limit },
      infiniteSessions: { enabled: infinite },
    });
    const id = session.sessionId;
    const live = [];
    session.on((e) => {
      if (e.type !== "assistant.streaming_delta" && e.type !== "assistant.message_delta") live.push(e);
    });
    // A refused request ends its prompt with an error; the next prompt still goes.
    for (const prompt of ["Read every part file, one at a time", "And now?"]) {
      try {
        const answer = await session.sendAndWait(prompt, GUARD_MS);
        console.log(`answer: ${answer?.data?.content}`);
      } catch (e) {
        console.log(`error: ${e?.message ?? e}`);
      }
    }
    await session.disconnect();
    await c.stop();
    copyFileSync(journalPath(d.home, id), join(outDir, "events.jsonl"));
    writeFileSync(join(outDir, "live.jsonl"), live.map((e) => JSON.stringify(e)).join("\n") + "\n");
  } finally {
    proxy.stop();
    model.stop();
    summaries.stop();
  }
}

/** Three prompts (a file created, then edited, then a plain answer), then the history RPCs:
 * list and preview the rewind points, rewind conversation-only to the third prompt, send,
 * rewind with files to the second, send, truncate to an event, send, and resume in a new
 * process. Writes the journal after each step (`NN-step.events.jsonl`), every live event
 * (`live.jsonl`) and the RPC answers (`answers.json`). */
async function rewind() {
  const d = dirs();
  const requests = join(outDir, "requests.jsonl");
  writeFileSync(requests, "");
  const notes = join(d.project, "notes.txt");
  const model = await startModel(
    {
      model: "scripted-model",
      responses: [
        { toolCalls: [{ name: "create", arguments: { path: notes, file_text: "one\n" } }] },
        { content: "Created notes.txt." },
        { toolCalls: [{ name: "edit", arguments: { path: notes, old_str: "one", new_str: "two" } }] },
        { content: "Edited notes.txt." },
        { content: "Hi." },
        { content: "Answer after the conversation rewind." },
        { content: "Answer after the files rewind." },
        { content: "Answer after the truncation." },
        { content: "Answer after the resume." },
      ],
    },
    requests,
  );
  const answers = {};
  const live = [];
  let step = 0;
  // The runtime writes its journal behind the live events: wait until it stops growing.
  const snap = async (name, id) => {
    step += 1;
    const path = journalPath(d.home, id);
    let last = -1;
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const size = existsSync(path) ? readFileSync(path).length : 0;
      if (size === last) break;
      last = size;
    }
    const file = join(outDir, `${String(step).padStart(2, "0")}-${name}.events.jsonl`);
    if (existsSync(path)) copyFileSync(path, file);
  };
  try {
    const c = client(d);
    const session = await c.createSession(options(model.url, { enableFileChangeTracking: true }));
    const id = session.sessionId;
    session.on((e) => live.push(e));
    for (const prompt of ["Create notes.txt", "Change one to two in notes.txt", "Say hi"]) {
      const a = await session.sendAndWait(prompt, GUARD_MS);
      console.log(`answer: ${a?.data?.content}`);
    }
    await snap("three-prompts", id);
    const users = async () => (await session.getEvents()).filter((l) => l.type === "user.message");
    answers.listRewindPoints = await session.rpc.history.listRewindPoints();
    const [u1, u2, u3] = await users();
    answers.previewRewindSecond = await session.rpc.history.previewRewind({ eventId: u2.id });
    answers.rewindThirdConversation = await session.rpc.history.rewind({ eventId: u3.id, mode: "conversation" });
    await snap("rewound-third", id);
    answers.messagesAfterRewind = (await session.getEvents()).map((e) => e.type);
    const a4 = await session.sendAndWait("After the rewind", GUARD_MS);
    console.log(`answer: ${a4?.data?.content}`);
    await snap("sent-after-rewind", id);
    answers.rewindSecondFiles = await session.rpc.history.rewind({ eventId: u2.id, mode: "conversation-and-files" });
    answers.notesAfterFilesRewind = existsSync(notes) ? readFileSync(notes, "utf8") : null;
    await snap("rewound-second-files", id);
    answers.listAfterFilesRewind = await session.rpc.history.listRewindPoints();
    const a5 = await session.sendAndWait("After the files rewind", GUARD_MS);
    console.log(`answer: ${a5?.data?.content}`);
    await snap("sent-after-files-rewind", id);
    const lastUser = (await users()).at(-1);
    const after = await session.getEvents();
    const cut = after[after.findIndex((l) => l.id === lastUser.id) + 1];
    answers.truncateTo = { type: cut.type, id: cut.id };
    answers.truncate = await session.rpc.history.truncate({ eventId: cut.id });
    await snap("truncated", id);
    answers.messagesAfterTruncate = (await session.getEvents()).map((e) => e.type);
    const a6 = await session.sendAndWait("After the truncation", GUARD_MS);
    console.log(`answer: ${a6?.data?.content}`);
    await snap("sent-after-truncate", id);
    try {
      answers.rewindGone = await session.rpc.history.rewind({ eventId: u3.id, mode: "conversation" });
    } catch (e) {
      answers.rewindGone = { error: String(e?.message ?? e), code: e?.code };
    }
    try {
      answers.truncateUnknown = await session.rpc.history.truncate({ eventId: "00000000-0000-4000-8000-000000000000" });
    } catch (e) {
      answers.truncateUnknown = { error: String(e?.message ?? e), code: e?.code };
    }
    await session.disconnect();
    await c.stop();
    const second = client(d);
    const resumed = await second.resumeSession(id, options(model.url));
    answers.messagesOnResume = (await resumed.getEvents()).map((e) => e.type);
    answers.listOnResume = await resumed.rpc.history.listRewindPoints();
    const a7 = await resumed.sendAndWait("After the resume", GUARD_MS);
    console.log(`answer: ${a7?.data?.content}`);
    await resumed.disconnect();
    await second.stop();
    await snap("resumed", id);
    answers.notesAtEnd = existsSync(notes) ? readFileSync(notes, "utf8") : null;
    void u1;
  } finally {
    writeFileSync(join(outDir, "answers.json"), JSON.stringify(answers, null, 2) + "\n");
    writeFileSync(join(outDir, "live.jsonl"), live.map((e) => JSON.stringify(e)).join("\n") + "\n");
    model.stop();
  }
}

const scenarios = {
  crash,
  rewind,
  truncate: () => long(false),
  compact: () => long(true),
  "compact-fail": () => long(true, { summaryFails: true }),
  "models-window": () => long(true, { models: true }),
  overflow: () => long(false, { overflowAt: Number(process.env.OVERFLOW_AT ?? "4") }),
};
if (!scenarios[scenario]) {
  console.error(`unknown scenario ${scenario}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
await scenarios[scenario]();
process.exit(0);
