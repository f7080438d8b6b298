"""The basic differential scenario with the official Python client (github-copilot-sdk,
unmodified), run by conformance/ts/differential (scenario py-basic) once per runtime.

Usage: python3 conformance/py/differential.py RUNTIME_PATH MODEL_URL HOME PROJECT OUT_JSON
A BYOK session on MODEL_URL (the scripted model behind the harness's recording proxy):
send on a prompt that makes two tool calls, then disconnect. Writes
{"sessionId": ..., "events": [every session.event as it came off the wire]} to OUT_JSON.
The harness compares those, the journal and the model requests with the other runtime's.
Timeouts are failure guards only.
"""

import asyncio
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "target", "conformance", "py"))

from copilot import CopilotClient, PermissionHandler, RuntimeConnection  # noqa: E402
from copilot import _jsonrpc  # noqa: E402

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


async def scenario(runtime, url, home, project, out_path):
    client = CopilotClient(
        connection=RuntimeConnection.for_stdio(path=runtime),
        base_directory=home,
        working_directory=project,
        log_level="error",
    )
    await client.start()
    try:
        session = await client.create_session(
            on_permission_request=PermissionHandler.approve_all,
            model="scripted-model",
            provider={"type": "openai", "base_url": url, "api_key": "conformance-key"},
            streaming=True,
        )
        # send + session.idle rather than send_and_wait: this client's send_and_wait calls
        # session.sendAndWait, a method the Copilot CLI 1.0.81-0 does not have.
        idle = asyncio.Event()
        answers = []

        def on_event(event):
            kind = getattr(event.type, "value", event.type)
            if kind == "assistant.message":
                answers.append(event.data.content)
            elif kind == "session.idle":
                idle.set()

        session.on(on_event)
        await session.send("Say hello with the shell, then read notes.txt")
        await asyncio.wait_for(idle.wait(), timeout=GUARD_S)
        await session.disconnect()
    finally:
        await client.stop()
    with open(out_path, "w", encoding="utf-8") as out:
        json.dump(
            {
                "sessionId": session.session_id,
                "answer": answers[-1] if answers else None,
                "events": WIRE_EVENTS,
            },
            out,
        )


def main():
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    runtime, url, home, project, out_path = sys.argv[1:]
    try:
        asyncio.run(asyncio.wait_for(scenario(runtime, url, home, project, out_path), timeout=120))
    except Exception as e:  # noqa: BLE001 - the harness reports the failure
        print(f"py-basic failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
