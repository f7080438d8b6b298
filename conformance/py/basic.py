"""The basic conformance scenario with the official Python client (github-copilot-sdk,
unmodified): a BYOK session, send_and_wait on a prompt that makes two tool calls, the events
in order with session.idle last, the journal holding exactly the persisted events; then a
second client resumes the session and continues.

Usage: python3 conformance/py/basic.py EVENTS_OUT
Writes every event received (as it came off the wire) and every journal line to EVENTS_OUT
(JSON lines) for schema validation by conformance/ts/validate.mjs. Prints PASS/FAIL.
Timeouts are failure guards only.
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "target", "conformance")
sys.path.insert(0, os.path.join(OUT, "py"))

from copilot import CopilotClient, PermissionHandler, RuntimeConnection  # noqa: E402
from copilot import _jsonrpc  # noqa: E402

TURNSTILE = os.environ.get("TURNSTILE_BIN", os.path.join(ROOT, "target", "debug", "turnstile"))
SCRIPTED_MODEL = os.environ.get(
    "SCRIPTED_MODEL_BIN", os.path.join(ROOT, "target", "debug", "scripted-model")
)
GUARD_S = 60.0

# Every session.event exactly as it came off the wire, observed (not changed) at the client's
# JSON-RPC layer.
WIRE_EVENTS: list[dict] = []
_handle_message = _jsonrpc.JsonRpcClient._handle_message


def _observe(self, message):
    if isinstance(message, dict) and message.get("method") == "session.event":
        WIRE_EVENTS.append(message["params"]["event"])
    return _handle_message(self, message)


_jsonrpc.JsonRpcClient._handle_message = _observe


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def start_model(script):
    child = subprocess.Popen(
        [SCRIPTED_MODEL, "--script", os.path.join(ROOT, "conformance", "scripts", script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = child.stdout.readline()
    match = re.match(r"listening on (http://127\.0\.0\.1:\d+/v1)", line)
    check(match is not None, f"scripted-model did not start: {line!r}")
    return child, match.group(1)


def without_live_only(event):
    """The event as the journal holds it: a tool result's `contents` (a shell's shell_exit
    block) are sent live only, as the Copilot CLI sends them."""
    result = event.get("data", {}).get("result")
    if event.get("type") != "tool.execution_complete" or not isinstance(result, dict) or "contents" not in result:
        return event
    result = {k: v for k, v in result.items() if k != "contents"}
    return {**event, "data": {**event["data"], "result": result}}


def journal(home, session_id):
    path = os.path.join(home, "session-state", session_id, "events.jsonl")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def new_client(home, project):
    return CopilotClient(
        connection=RuntimeConnection.for_stdio(path=TURNSTILE),
        base_directory=home,
        working_directory=project,
        log_level="warning",
    )


async def scenario(events_out):
    base = os.path.join(OUT, "work", "py-basic")
    shutil.rmtree(base, ignore_errors=True)
    home, project = os.path.join(base, "home"), os.path.join(base, "project")
    os.makedirs(home)
    os.makedirs(project)
    with open(os.path.join(project, "notes.txt"), "w") as f:
        f.write("first line\nsecond line\n")
    model, url = start_model("basic.json")
    provider = {"type": "openai", "base_url": url, "api_key": "conformance-key"}
    try:
        client = new_client(home, project)
        await client.start()
        try:
            session = await client.create_session(
                on_permission_request=PermissionHandler.approve_all,
                model="scripted-model",
                provider=provider,
                streaming=True,
            )
            session_id = session.session_id
            answer = await session.send_and_wait(
                "Say hello with the shell, then read notes.txt", timeout=GUARD_S
            )
            content = answer.data.content if answer is not None else None
            check(
                content == "The shell said hello and notes.txt holds two lines.",
                f"final answer: {content!r}",
            )
            await session.disconnect()
        finally:
            await client.stop()
        live = [e for e in WIRE_EVENTS]
        kinds = [e["type"] for e in live]
        check(kinds.count("session.idle") == 1, f"one session.idle: {kinds}")
        idle_at = kinds.index("session.idle")
        check(
            all(e.get("ephemeral") is not True or e["type"] != "session.idle" for e in live[idle_at + 1 :]),
            "nothing after idle but the shutdown",
        )
        check(
            [k for k in kinds[idle_at + 1 :]]
            in ([], ["session.shutdown"], ["session.shutdown", "session.background_tasks_changed"]),
            f"session.idle last (then only the shutdown on disconnect): {kinds[idle_at:]}",
        )
        tools = [e for e in live if e["type"] == "tool.execution_complete"]
        check(len(tools) == 2 and all(t["data"]["success"] for t in tools), "two tool calls succeeded")
        lines = journal(home, session_id)
        persisted = [without_live_only(e) for e in live if e.get("ephemeral") is not True]
        check(lines == persisted, "the journal holds exactly the persisted events received")
        check(all("ephemeral" not in line for line in lines), "no ephemeral event on disk")

        # A second client resumes and continues.
        WIRE_EVENTS.clear()
        model.terminate()
        model.wait()
        model, url = start_model("resume.json")
        provider["base_url"] = url
        before = len(lines)
        client = new_client(home, project)
        await client.start()
        try:
            session = await client.resume_session(
                session_id,
                on_permission_request=PermissionHandler.approve_all,
                model="scripted-model",
                provider=provider,
            )
            answer = await session.send_and_wait("Please continue", timeout=GUARD_S)
            content = answer.data.content if answer is not None else None
            check(
                content == "Continuing where we left off: the shell said hello.",
                f"answer after resume: {content!r}",
            )
            await session.disconnect()
        finally:
            await client.stop()
        lines = journal(home, session_id)
        check(lines[before]["type"] == "session.resume", "the resumed process starts with session.resume")
        persisted = [without_live_only(e) for e in WIRE_EVENTS if e.get("ephemeral") is not True]
        check(lines[before:] == persisted, "the resumed journal tail holds the persisted events received")
        with open(events_out, "w", encoding="utf-8") as out:
            for event in live + WIRE_EVENTS + lines:
                out.write(json.dumps(event) + "\n")
    finally:
        model.terminate()
        model.wait()


def main():
    events_out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(OUT, "py-events.jsonl")
    try:
        asyncio.run(asyncio.wait_for(scenario(events_out), timeout=180))
    except Exception as e:  # noqa: BLE001 - report any failure as a FAIL line
        print(f"FAIL py/basic: {type(e).__name__}: {e}")
        sys.exit(1)
    print("PASS py/basic: BYOK session, two tool calls, idle last, journal = persisted events, resumed")


if __name__ == "__main__":
    main()
