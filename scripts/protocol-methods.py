#!/usr/bin/env python3
"""Writes the "Every method of the SDK's schema" section of docs/protocol.md.

Reads fixtures/schema/api.schema.json (every rpcMethod), the methods the server answers
(`SERVED` in crates/server/src/dispatch.rs) and why the others are not served (`REASONS` in
crates/server/src/methods/unsupported.rs), so the table cannot drift from the code; the
server's unit test `every_schema_method_is_served_or_explained_and_documented` checks it.
Run: python3 scripts/protocol-methods.py
"""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
BEGIN, END = "<!-- methods:begin -->", "<!-- methods:end -->"

schema = json.loads((ROOT / "fixtures/schema/api.schema.json").read_text())
dispatch = (ROOT / "crates/server/src/dispatch.rs").read_text()
served_block = dispatch[dispatch.index("pub(crate) const SERVED"):]
served_block = served_block[: served_block.index("];")]
served = re.findall(r'"([^"]+)"', served_block)
reasons_src = (ROOT / "crates/server/src/methods/unsupported.rs").read_text()
reasons = re.findall(r'\(\s*"([^"]+)",\s*"((?:[^"\\]|\\.)*)"\s*,?\s*\)', reasons_src)


def reason(method):
    for prefix, why in reasons:
        if method.startswith(prefix):
            return why
    return None


def walk(node, out):
    if isinstance(node, dict):
        if "rpcMethod" in node:
            out.append(node["rpcMethod"])
            return
        for v in node.values():
            walk(v, out)


CLIENT_SIDE = {
    "hooks.invoke": "yes: the server calls it with `hooks: true` (see Hooks)",
    "providerToken.getToken": "yes: before every model call of a provider with `hasBearerTokenProvider` (see Opening and closing sessions)",
    "llmInference.httpRequestStart": "yes: each model call's request head, to the client that called `llmInference.setProvider` (see A client that answers the model calls)",
    "llmInference.httpRequestChunk": "yes: the request's body in one chunk, and `cancel: true` when the turn is aborted (see A client that answers the model calls)",
}

lines = [BEGIN, ""]
for side, title in [
    ("server", "Server methods (the client calls them)"),
    ("session", "Session methods (the client calls them)"),
    ("clientSession", "Client session methods (a runtime would call the client)"),
    ("clientGlobal", "Client methods (a runtime would call the client)"),
]:
    methods = []
    walk(schema[side], methods)
    count = sum(1 for m in methods if m in served or m in CLIENT_SIDE)
    lines += [f"#### {title}: {len(methods)}, {count} used", "", "| Method | Served | Why not / note |", "|---|---|---|"]
    for m in methods:
        if side.startswith("client"):
            note = CLIENT_SIDE.get(m)
            lines.append(f"| `{m}` | {'yes' if note else 'no'} | {note or 'the server never calls it (the feature behind it is not supported)'} |")
        elif m in served:
            lines.append(f"| `{m}` | yes | see above |")
        else:
            why = reason(m) or "not implemented"
            lines.append(f"| `{m}` | no | {why} |")
    lines.append("")
extra = [m for m in served if not any(m == x for x in [])]
lines += [
    "Served though the schema does not define them (the clients' session lifecycle): "
    + ", ".join(f"`{m}`" for m in served if m.startswith("session.") and m.count(".") == 1
                and m not in ("session.send", "session.abort", "session.log", "session.suspend", "session.shutdown")
                and m.split(".")[1] in ("create", "resume", "detach", "destroy", "delete", "list", "getLastId",
                                        "getMetadata", "sendAndWait", "getMessages", "getForeground", "setForeground"))
    + ", and `connect`, `status.get`, `auth.getStatus`.",
    "",
    END,
]
text = DOC.read_text()
section = "\n".join(lines)
if BEGIN in text:
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    text = head + section + tail
else:
    text = text.rstrip("\n") + "\n\n## Every method of the SDK's schema\n\n" + section + "\n"
DOC.write_text(text)
print(f"wrote {DOC}")
