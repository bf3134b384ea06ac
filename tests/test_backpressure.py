"""v3 §2 "Backpressure never stops answers": the real sidecar under --max-in-flight and --max-queued-bytes.

The sidecar always reads stdin: the editor's answers to the sidecar's own requests (``ui/confirm``,
``item/tool/call``) are applied at once however many requests are in flight; requests over the
limit wait in arrival order; one that does not fit in the queue is answered ``overloaded`` and
nothing of it runs.
"""

from __future__ import annotations

import json
import time

from harness_sidecar.console.client import sidecar_command
from helpers import add_skill, write

ASKER = """
import json
TRACE = {trace!r}
def gate(event, ctx):
    if event["call"]["arguments"].get("ask"):
        if not ctx.ui.confirm("Run it?", event["call"]["id"]):
            return {{"block": True, "reason": "the user said no"}}
def note(call_id, arguments):
    with open(TRACE, "a") as f:
        f.write(json.dumps(call_id) + "\\n")
    return "ran " + call_id
def activate(api):
    api.register_tool(name="note", description="", input_schema={{}}, execute=note)
    api.on("tool_call", gate)
"""


def _pump(sidecar, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            sidecar._dispatch(sidecar.next_message(0.02))
        except Exception:  # noqa: BLE001 - queue.Empty
            pass


def test_answers_to_the_sidecars_own_requests_are_applied_with_max_in_flight_reached(spawn, tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.")
    trace = tmp_path / "ran.jsonl"
    write(root / "extensions" / "asker.py", ASKER.format(trace=str(trace)))
    asked: list[str] = []

    def editor(message):
        asked.append(message["method"])
        if message["method"] == "ui/confirm":
            return {"result": {"confirmed": True}}  # "yes", at once
        if message["method"] == "item/tool/call":
            text = "editor ran " + message["params"]["callId"]
            return {"result": {"contentItems": [{"type": "inputText", "text": text}], "success": True}}
        return None

    sidecar = spawn(initialize=False, command=sidecar_command() + ["--max-in-flight", "4"], on_request=editor)
    sidecar.call("initialize", {"capabilities": {"ui": {"confirm": True}}})
    thread = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["asker"], "limits": {
        "uiTimeoutMs": 60000}, "dynamicTools": [{"name": "edit", "description": "", "inputSchema": {}}]})["threadId"]
    ids = []
    for i in range(6):  # more than 4 in flight, each waiting for the editor's answer
        ids.append(sidecar.request_async("tools/call", {"threadId": thread, "call": {
            "id": f"q{i}", "name": "note", "arguments": {"ask": True}}}))
        ids.append(sidecar.request_async("tools/call", {"threadId": thread, "call": {
            "id": f"e{i}", "name": "edit", "arguments": {}}}))
    results = [sidecar.wait_for(i, 30)["result"]["result"] for i in ids]
    for i in range(6):
        confirmed, edited = results[2 * i], results[2 * i + 1]
        assert "blocked" not in confirmed["details"], confirmed  # "yes" was applied, not dropped
        assert confirmed["content"] == [{"type": "text", "text": f"ran q{i}"}]
        assert edited["isError"] is False and edited["content"] == [{"type": "text", "text": f"editor ran e{i}"}]
    assert sorted(json.loads(line) for line in trace.read_text().splitlines()) == sorted(f"q{i}" for i in range(6))
    assert asked.count("ui/confirm") == 6 and asked.count("item/tool/call") == 6


def test_a_request_that_does_not_fit_the_queue_is_overloaded_and_never_runs(spawn, tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.")
    held = []
    sidecar = spawn(command=sidecar_command() + ["--max-in-flight", "1", "--max-queued-bytes", "700"],
                    on_request=lambda m: held.append(m) and None)
    thread = sidecar.call("thread/start", {"roots": [str(root)], "dynamicTools": [
        {"name": "edit", "description": "", "inputSchema": {}}]})["threadId"]

    def edit(call_id):
        return sidecar.request_async("tools/call", {"threadId": thread, "call": {
            "id": call_id, "name": "edit", "arguments": {"pad": "p" * 150}}})

    running = edit("running")  # holds the only place: the editor does not answer yet
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        _pump(sidecar, 0.05)
    assert [m["params"]["callId"] for m in held] == ["running"]
    queued = [edit("first"), edit("second")]  # ~300 bytes each: both fit in 700
    overloaded = edit("third")
    refused = sidecar.wait_for(overloaded, 15)
    assert refused["error"]["data"]["kind"] == "overloaded"
    assert -32099 <= refused["error"]["code"] <= -32000
    _pump(sidecar, 0.5)
    assert [m["params"]["callId"] for m in held] == ["running"]  # nothing queued started; nothing refused ran
    answer = {"contentItems": [{"type": "inputText", "text": "done"}], "success": True}
    for n, expected in enumerate(["running", "first", "second"]):  # in arrival order, one at a time
        deadline = time.monotonic() + 15
        while len(held) <= n and time.monotonic() < deadline:
            _pump(sidecar, 0.05)
        assert held[n]["params"]["callId"] == expected
        sidecar.send({"jsonrpc": "2.0", "id": held[n]["id"], "result": answer})
    for request in [running, *queued]:
        assert sidecar.wait_for(request, 15)["result"]["result"]["isError"] is False
    _pump(sidecar, 0.3)
    assert "third" not in [m["params"]["callId"] for m in held]
    assert sidecar.call("tools/list", {"threadId": thread})["tools"]  # serving on


def test_a_queued_request_can_be_cancelled_and_never_runs(spawn, tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.")
    held = []
    sidecar = spawn(command=sidecar_command() + ["--max-in-flight", "1"], on_request=lambda m: held.append(m) and None)
    thread = sidecar.call("thread/start", {"roots": [str(root)], "dynamicTools": [
        {"name": "edit", "description": "", "inputSchema": {}}]})["threadId"]
    running = sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": "running", "name": "edit"}})
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        _pump(sidecar, 0.05)
    queued = sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": "queued", "name": "edit"}})
    sidecar.notify("$/cancelRequest", {"id": queued})
    assert sidecar.wait_for(queued, 15)["error"]["data"]["kind"] == "cancelled"
    sidecar.send({"jsonrpc": "2.0", "id": held[0]["id"], "result": {
        "contentItems": [{"type": "inputText", "text": "done"}], "success": True}})
    assert sidecar.wait_for(running, 15)["result"]["result"]["content"] == [{"type": "text", "text": "done"}]
    _pump(sidecar, 0.3)
    assert [m["params"]["callId"] for m in held] == ["running"]  # the cancelled one never reached the editor
