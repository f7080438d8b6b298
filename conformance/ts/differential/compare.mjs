// Comparison of a reference run (the Copilot CLI) with a subject run (turnstile): each
// difference is a record with a stable `key` (what an expected-differences entry matches)
// and a readable `detail` (what the report shows).
//
// Keys: `<channel>:<kind>:<what>`, channels `events` (live session.event stream), `journal`
// (events.jsonl), `requests` (model requests), `outcome` (what the scenario observed: RPC
// results and errors, files). Kinds: `missing` (in the reference, not in the subject),
// `extra` (the other way), `moved` (in both, at another place), `field-missing`,
// `field-extra`, `value`, `count`.

import { flatten, shapeOf } from "./normalize.mjs";

/** Longest common subsequence alignment of two key lists: pairs [i, j], i or j null when
 * unmatched. */
export function align(a, b) {
  const n = a.length;
  const m = b.length;
  const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    }
  }
  const pairs = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (dp[i + 1][j] >= dp[i][j + 1]) pairs.push([i++, null]);
    else pairs.push([null, j++]);
  }
  while (i < n) pairs.push([i++, null]);
  while (j < m) pairs.push([null, j++]);
  return pairs;
}

function show(value) {
  const text = JSON.stringify(value);
  return text === undefined ? "undefined" : text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** Field-by-field differences of two normalised values; `prefix` names the thing compared. */
export function compareFields(channel, prefix, ref, sub, out) {
  const a = flatten(ref);
  const b = flatten(sub);
  for (const [path, value] of a) {
    const key = shapeOf(path);
    if (!b.has(path)) {
      // A leaf present as a deeper structure on the other side is a value difference.
      out.push({ key: `${channel}:field-missing:${prefix}.${key}`, detail: `${prefix}.${path} = ${show(value)} only in the reference` });
    } else if (b.get(path) !== value) {
      out.push({
        key: `${channel}:value:${prefix}.${key}`,
        detail: `${prefix}.${path}: reference ${show(value)}, turnstile ${show(b.get(path))}`,
      });
    }
  }
  for (const [path, value] of b) {
    if (!a.has(path)) {
      out.push({ key: `${channel}:field-extra:${prefix}.${shapeOf(path)}`, detail: `${prefix}.${path} = ${show(value)} only in turnstile` });
    }
  }
}

/** Differences of two prepared event streams (see prepareEvents). */
export function compareEvents(channel, ref, sub) {
  const out = [];
  const key = (e) => `${e.type}${e.ephemeral ? "~" : ""}`;
  const pairs = align(ref.sequence.map(key), sub.sequence.map(key));
  const missing = [];
  const extra = [];
  for (const [i, j] of pairs) {
    if (i !== null && j !== null) {
      const a = ref.sequence[i];
      const b = sub.sequence[j];
      compareFields(channel, a.type, { parentId: a.parent, data: a.data }, { parentId: b.parent, data: b.data }, out);
    } else if (i !== null) missing.push({ at: i, event: ref.sequence[i] });
    else extra.push({ at: j, event: sub.sequence[j] });
  }
  // An event missing at one place and extra at another is one that moved.
  for (const m of [...missing]) {
    const k = extra.findIndex((x) => key(x.event) === key(m.event));
    if (k >= 0) {
      const [x] = extra.splice(k, 1);
      missing.splice(missing.indexOf(m), 1);
      out.push({ key: `${channel}:moved:${key(m.event)}`, detail: `${key(m.event)} at #${m.at} in the reference, #${x.at} in turnstile` });
      compareFields(channel, m.event.type, { parentId: m.event.parent, data: m.event.data }, { parentId: x.event.parent, data: x.event.data }, out);
    }
  }
  for (const m of missing) out.push({ key: `${channel}:missing:${key(m.event)}`, detail: `${key(m.event)} (reference #${m.at}) not sent by turnstile` });
  for (const x of extra) out.push({ key: `${channel}:extra:${key(x.event)}`, detail: `${key(x.event)} (turnstile #${x.at}) not sent by the reference` });
  for (const t of ref.unordered) {
    if (!sub.unordered.has(t)) out.push({ key: `${channel}:missing:${t}~`, detail: `${t} (timing-dependent, compared by presence) not sent by turnstile` });
  }
  for (const t of sub.unordered) {
    if (!ref.unordered.has(t)) out.push({ key: `${channel}:extra:${t}~`, detail: `${t} (timing-dependent, compared by presence) not sent by the reference` });
  }
  return out;
}

/** Differences of two prepared request lists (see prepareRequests). */
export function compareRequests(ref, sub) {
  const out = [];
  if (ref.length !== sub.length) {
    out.push({ key: "requests:count", detail: `${ref.length} model requests by the reference, ${sub.length} by turnstile` });
  }
  for (let r = 0; r < Math.min(ref.length, sub.length); r++) {
    const a = ref[r];
    const b = sub[r];
    const where = `request[${r}]`;
    if (a.path !== b.path) out.push({ key: "requests:value:path", detail: `${where} path: reference ${a.path}, turnstile ${b.path}` });
    if (a.initiator !== b.initiator) {
      out.push({ key: "requests:value:header.x-initiator", detail: `${where} x-initiator: reference ${a.initiator}, turnstile ${b.initiator}` });
    }
    compareFields("requests", "params", a.params, b.params, out);
    if (JSON.stringify(a.tools) !== JSON.stringify(b.tools)) {
      out.push({ key: "requests:value:tools", detail: `${where} tools: reference [${a.tools.join(",")}], turnstile [${b.tools.join(",")}]` });
    }
    const role = (m) => `${m.role}${m.tool_call_id ? `(${m.tool_call_id})` : ""}`;
    for (const [i, j] of align(a.messages.map(role), b.messages.map(role))) {
      if (i !== null && j !== null) {
        compareFields("requests", `message.${a.messages[i].role}`, a.messages[i], b.messages[j], out);
      } else if (i !== null) {
        out.push({ key: `requests:missing:message.${a.messages[i].role}`, detail: `${where} message #${i} ${role(a.messages[i])} ${show(a.messages[i].content)} not sent by turnstile` });
      } else {
        out.push({ key: `requests:extra:message.${b.messages[j].role}`, detail: `${where} message #${j} ${role(b.messages[j])} ${show(b.messages[j].content)} not sent by the reference` });
      }
    }
  }
  return out;
}

/** Differences of two journals' key order (each line must be `type,data,id,timestamp,parentId`). */
export function compareKeyOrder(refLines, subLines) {
  const order = (lines) => [...new Set(lines.map((l) => Object.keys(l).join(",")))];
  const a = order(refLines);
  const b = order(subLines);
  const out = [];
  for (const k of b) if (!a.includes(k)) out.push({ key: "journal:value:key-order", detail: `a journal line with keys ${k} (reference: ${a.join(" | ")})` });
  return out;
}

/** Differences of two scenario outcome objects (already normalised). */
export function compareOutcomes(ref, sub) {
  const out = [];
  compareFields("outcome", "outcome", ref, sub, out);
  return out.map((d) => ({ ...d, key: d.key.replace("outcome.", "") }));
}

/** Counts equal keys: [{key, count, details}] in first-seen order. */
export function group(differences) {
  const byKey = new Map();
  for (const d of differences) {
    const g = byKey.get(d.key) ?? { key: d.key, count: 0, details: [] };
    g.count++;
    if (g.details.length < 3) g.details.push(d.detail);
    byKey.set(d.key, g);
  }
  return [...byKey.values()];
}
