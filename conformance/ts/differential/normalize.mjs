// Normalisation: what two runs of the same scenario may legitimately differ in (ids, times,
// temporary paths, pids, measured numbers, the system prompt's text) is replaced by stable
// placeholders, so that what remains differs only where the runtimes behave differently.

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g;
const DATETIME_TAG = /<current_datetime>[^<]*<\/current_datetime>/g;
const SHA256 = /sha256:[0-9a-f]{64}/g;
const INUSE_LOCK = /inuse\.\d+\.lock/g;
const CHATCMPL = /chatcmpl-\d+/g;

/** Event types whose count and position depend on timing (background work, chunking); only
 * whether they occur at all is compared. */
export const UNORDERED_TYPES = new Set([
  "session.background_tasks_changed",
  "session.skills_loaded",
  "session.mcp_servers_loaded",
  "session.managed_settings_resolved",
  "session.tools_updated",
  "session.title_changed",
  "pending_messages.modified",
  // A shell's output pieces: cut where the pipe's reads fall, and on a busy machine the
  // Copilot CLI sends some after the call's tool.execution_complete.
  "tool.execution_partial_result",
]);

/** Event types that come in runs (one per chunk); in a run of them each type counts once. */
export const RUN_TYPES = new Set([
  "assistant.streaming_delta",
  "assistant.message_delta",
  "assistant.tool_call_delta",
]);

/** Makes a string normaliser for one run: its own directories become placeholders. */
export function stringNormalizer({ home, project, base, scratch }) {
  const replacements = [
    [project, "<project>"],
    [home, "<home>"],
    [base, "<base>"],
    [scratch, "<scratch>"],
  ].filter(([from]) => typeof from === "string" && from.length > 0);
  return (text) => {
    let out = text;
    for (const [from, to] of replacements) out = out.split(from).join(to);
    return out
      .replace(DATETIME_TAG, "<current_datetime/>")
      .replace(ISO_TIME, "<time>")
      .replace(SHA256, "sha256:<hash>")
      .replace(INUSE_LOCK, "inuse.<pid>.lock")
      .replace(CHATCMPL, "chatcmpl-<n>")
      .replace(UUID, "<uuid>");
  };
}

/** Deep-normalises a JSON value: strings through `norm`, numbers to their type (measured
 * sizes, tokens and durations differ by nature) unless `numbers` keeps them. */
export function normalizeValue(value, norm, { numbers = false } = {}) {
  if (typeof value === "string") return norm(value);
  if (typeof value === "number") return numbers ? value : "<number>";
  if (Array.isArray(value)) return value.map((v) => normalizeValue(v, norm, { numbers }));
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = normalizeValue(v, norm, { numbers });
    return out;
  }
  return value;
}

/** Flattens a normalised value into `path -> leaf` pairs; array indices are kept. Empty
 * objects and arrays are leaves, so that `{}` and a missing field differ. */
export function flatten(value, prefix = "", out = new Map()) {
  if (Array.isArray(value)) {
    if (value.length === 0) out.set(prefix, "[]");
    value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  } else if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 0 && prefix !== "") out.set(prefix, "{}");
    for (const k of keys) flatten(value[k], prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, value);
  }
  return out;
}

/** A path with its array indices blanked (`a[3].b` -> `a[].b`), for stable keys. */
export function shapeOf(path) {
  return path.replace(/\[\d+\]/g, "[]");
}

/** Prepares a stream of events (live or journal) for comparison: parentId becomes the type
 * of the event it names, ids go, timing-dependent types are set aside, runs collapse. */
export function prepareEvents(events, norm, { system = true } = {}) {
  const typeById = new Map(events.map((e) => [e.id, e.type]));
  const sequence = [];
  const unordered = new Set();
  // The types seen in the current run of chunk events (runs interleave, e.g. streaming_delta
  // and message_delta alternate): each type counts once per run.
  let run = new Set();
  for (const event of events) {
    if (UNORDERED_TYPES.has(event.type)) {
      unordered.add(event.type);
      continue;
    }
    if (RUN_TYPES.has(event.type)) {
      if (run.has(event.type)) continue;
      run.add(event.type);
    } else {
      run = new Set();
    }
    let data = event.data;
    if (system && event.type === "system.message" && data && typeof data.content === "string") {
      data = { ...data, content: "<system prompt>" };
    }
    sequence.push({
      type: event.type,
      ephemeral: event.ephemeral === true,
      parent: event.parentId === null ? null : (typeById.get(event.parentId) ?? "<unknown>"),
      data: normalizeValue(data ?? null, norm),
    });
  }
  return { sequence, unordered };
}

/** Prepares the model requests of a run: the system prompt's text goes, the rest normalised. */
export function prepareRequests(requests, norm) {
  return requests
    .filter((r) => r.method === "POST" && /chat\/completions$/.test((r.path ?? "").split("?")[0]))
    .map((r) => {
      const body = r.body && typeof r.body === "object" ? r.body : {};
      const messages = (body.messages ?? []).map((m) =>
        m.role === "system" ? { ...m, content: "<system prompt>" } : m,
      );
      const { messages: _m, tools, ...params } = body;
      return {
        path: r.path,
        initiator: r.headers?.["x-initiator"] ?? null,
        params: normalizeValue(params, norm),
        tools: (tools ?? []).map((t) => t.function?.name ?? t.name ?? "?"),
        messages: normalizeValue(messages, norm),
      };
    });
}
