"""MCP servers behind the same gate, end to end: thread/start.mcpServers through the real sidecar.

A server written with the SDK (tests/mcp_servers/sdk_server.py) and the reference server
``@modelcontextprotocol/server-everything``: listing, calls through hooks (allowed, blocked,
rewritten, transformed, asked), validation before the server, timeouts and cancellation,
exit and restart, list_changed as a revision, filters, required servers, and no server
outliving its thread or the sidecar.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from helpers import add_skill, write
from mcp_helpers import (
    EVERYTHING,
    pids_with_env,
    read_events,
    sdk_server,
    wait_until,
)

POLICY = """
def gate(event, ctx):
    call = event["call"]
    if call["name"] == "mcp__test__exit":
        return {"block": True, "reason": "servers may not be stopped from here"}
    if call["name"] == "mcp__test__echo" and call["arguments"]["text"] == "shout":
        return {"arguments": {"text": "SHOUT"}}
    if call["name"] == "mcp__test__ping" and not ctx.ui.confirm("Ping?", "Ping the test server?"):
        return {"block": True, "reason": "the user said no"}
def mask(event):
    text = event["result"]["content"][0]["text"] if event["result"]["content"] else ""
    if "secret" in text:
        return {"content": text.replace("secret", "[masked]")}
def activate(api):
    api.on("tool_call", gate)
    api.on("tool_result_transform", mask)
"""


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.")
    write(root / "extensions/policy.py", POLICY)
    events = tmp_path / "events.txt"
    return root, events


def server(events, *flags, name="test", **extra):
    return {"name": name, "command": sdk_server(*flags), "env": {"MCP_TEST_EVENTS": str(events)}, **extra}


def start(sidecar, root, servers, trusted=("policy",), **extra):
    return sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": list(trusted),
                                         "mcpServers": servers, **extra}, timeout=60)


def call(sidecar, thread, name, arguments=None, call_id="m1", **extra):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}, **extra},
                        timeout=60)["result"]


def editor(spawn, answer=True):
    sidecar = spawn(initialize=False, on_request=lambda m: {"result": {"confirmed": answer}}
                    if m["method"] == "ui/confirm" else None)
    sidecar.call("initialize", {"capabilities": {"ui": {"confirm": True}}})
    return sidecar


def test_mcp_tools_are_listed_after_the_extensions_and_pass_the_hooks(spawn, ws):
    root, events = ws
    sidecar = editor(spawn)
    result = start(sidecar, root, [server(events)], dynamicTools=[{"name": "ed", "description": "",
                                                                   "inputSchema": {}}])
    thread = result["threadId"]
    names = [t["name"] for t in result["tools"]]
    assert names[:2] == ["load_skill", "ed"]
    assert names[2:] == ["mcp__test__echo", "mcp__test__ping", "mcp__test__fail", "mcp__test__crash",
                         "mcp__test__sleep", "mcp__test__toggle", "mcp__test__exit", "mcp__test__mixed",
                         "mcp__test__whoami"]  # every page (2 tools a page), in the server's order
    echo = next(t for t in result["tools"] if t["name"] == "mcp__test__echo")
    assert echo["origin"] == {"kind": "mcp", "id": "test"} and echo["inputSchema"]["required"] == ["text"]
    assert call(sidecar, thread, "mcp__test__echo", {"text": "hi"}, call_id="e1") == {
        "toolCallId": "e1", "toolName": "mcp__test__echo", "content": [{"type": "text", "text": "hi"}],
        "details": {}, "isError": False}
    rewritten = call(sidecar, thread, "mcp__test__echo", {"text": "shout"})
    assert rewritten["content"][0]["text"] == "SHOUT" and rewritten["details"]["argumentsRewrittenBy"] == ["policy"]
    masked = call(sidecar, thread, "mcp__test__echo", {"text": "a secret"})
    assert masked["content"][0]["text"] == "a [masked]" and masked["details"]["transformedBy"] == ["policy"]
    blocked = call(sidecar, thread, "mcp__test__exit")
    assert blocked["details"]["blocked"]["reason"] == "servers may not be stopped from here"
    assert call(sidecar, thread, "mcp__test__ping")["content"][0]["text"] == "pong"  # the user said yes
    invalid = call(sidecar, thread, "mcp__test__echo", {"text": 5})
    assert invalid["details"]["kind"] == "invalid_arguments" and invalid["details"]["path"] == "$.text"
    failed = call(sidecar, thread, "mcp__test__fail")
    assert failed["isError"] is True and failed["content"][0]["text"] == "it failed on purpose"
    mixed = call(sidecar, thread, "mcp__test__mixed")
    assert mixed["details"]["structuredContent"] == {"answer": 42, "items": ["a", "b"]}
    assert "[image content: mimeType image/png]" in [c["text"] for c in mixed["content"]]
    assert not any(n["params"].get("kind") == "mcp_exit" for n in sidecar.notifications
                   if n["method"] == "thread/diagnostic")  # the blocked exit never reached the server


def test_a_user_who_says_no_keeps_the_call_from_the_server(spawn, ws):
    root, events = ws
    sidecar = editor(spawn, answer=False)
    thread = start(sidecar, root, [server(events)])["threadId"]
    assert call(sidecar, thread, "mcp__test__ping")["details"]["blocked"]["reason"] == "the user said no"


def test_timeout_and_cancellation_reach_the_server_as_notifications_cancelled(spawn, ws):
    root, events = ws
    sidecar = spawn()
    thread = start(sidecar, root, [server(events)], trusted=(), limits={"mcpToolTimeoutMs": 300})["threadId"]
    started = time.monotonic()
    result = call(sidecar, thread, "mcp__test__sleep", {"seconds": 20})
    assert result["isError"] and result["details"]["kind"] == "timeout" and time.monotonic() - started < 5
    assert wait_until(lambda: any(e.startswith("cancelled") for e in read_events(events)))
    pending = sidecar.request_async("tools/call", {"threadId": thread, "call": {
        "id": "c", "name": "mcp__test__sleep", "arguments": {"seconds": 20}}})
    wait_until(lambda: len([e for e in read_events(events) if e.startswith("sleep")]) == 2)
    sidecar.notify("$/cancelRequest", {"id": pending})
    assert sidecar.wait_for(pending, 10)["error"]["data"]["kind"] == "cancelled"
    assert wait_until(lambda: len([e for e in read_events(events) if e.startswith("cancelled")]) == 2)
    assert call(sidecar, thread, "mcp__test__ping")["content"][0]["text"] == "pong"  # the server kept running


def test_a_server_that_exits_is_reported_and_restarted(spawn, ws):
    root, events = ws
    sidecar = spawn()
    thread = start(sidecar, root, [server(events)], trusted=())["threadId"]
    result = call(sidecar, thread, "mcp__test__exit", {"code": 7})
    assert result["isError"] and result["details"]["kind"] == "mcp_exit"
    exit_ = wait_notification(sidecar, "thread/diagnostic", lambda p: p.get("kind") == "mcp_exit")
    assert exit_["threadId"] == thread and exit_["name"] == "test" and exit_["exitCode"] == 7
    assert call(sidecar, thread, "mcp__test__ping")["content"][0]["text"] == "pong"
    assert len([e for e in read_events(events) if e.startswith("start")]) == 2


def wait_notification(sidecar, method, predicate, timeout=10.0):
    """Read messages until a ``method`` notification whose params satisfy ``predicate`` arrived."""
    deadline = time.monotonic() + timeout
    while True:
        found = [n["params"] for n in sidecar.notifications if n["method"] == method and predicate(n["params"])]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no {method} notification; got {sidecar.notifications}")
        try:
            sidecar._dispatch(sidecar.next_message(0.1))
        except Exception:  # noqa: BLE001 - nothing arrived yet
            pass


def test_list_changed_is_a_new_revision_and_an_old_call_is_stale(spawn, ws):
    root, events = ws
    sidecar = spawn()
    thread = start(sidecar, root, [server(events)], trusted=(), watch=False)["threadId"]
    before = sidecar.call("tools/list", {"threadId": thread})
    assert "mcp__test__extra" not in [t["name"] for t in before["tools"]]
    call(sidecar, thread, "mcp__test__toggle")
    started = time.monotonic()
    change = wait_notification(sidecar, "catalog/changed", lambda p: True)
    assert time.monotonic() - started < 2
    assert change["revision"] == before["revision"] + 1
    assert change["added"] == [{"kind": "tool", "name": "mcp__test__extra"}]
    assert call(sidecar, thread, "mcp__test__extra", revision=change["revision"])["content"][0]["text"] == "extra ran"
    stale = call(sidecar, thread, "mcp__test__extra", revision=before["revision"])
    assert stale["details"]["kind"] == "stale_tool"
    assert call(sidecar, thread, "mcp__test__ping", revision=before["revision"])["isError"] is False


def test_filters_required_servers_and_failures(spawn, ws):
    root, events = ws
    sidecar = spawn()
    result = start(sidecar, root, [
        server(events, tools={"allow": ["echo", "ping", "fail"], "deny": ["fail"]}),
        server(events, "--exit-at-start", "3", name="broken"),
    ], trusted=())
    names = [t["name"] for t in result["tools"]]
    assert [n for n in names if n.startswith("mcp__")] == ["mcp__test__echo", "mcp__test__ping"]
    (diag,) = [d for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"]
    assert diag["name"] == "broken"
    denied = call(sidecar, result["threadId"], "mcp__test__fail")
    assert denied["details"]["kind"] == "tool_not_found"
    response = sidecar.request("thread/start", {"roots": [str(root)], "mcpServers": [
        server(events, "--exit-at-start", "3", name="needed", required=True)]}, timeout=60)
    assert response["error"]["data"] == {"kind": "mcp_unavailable", "name": "needed"}
    bad = sidecar.request("thread/start", {"roots": [str(root)], "mcpServers": [
        {"name": "a__b", "command": ["x"]}]})
    assert bad["error"]["code"] == -32602


def test_a_tool_whose_name_is_claimed_is_skipped(spawn, ws):
    root, events = ws
    write(root / "extensions/claimer.py", "def activate(api):\n    api.register_tool(name='mcp__test__ping', "
                                          "description='mine', input_schema={}, execute=lambda c, a: 'mine')\n")
    sidecar = spawn()
    result = start(sidecar, root, [server(events)], trusted=("claimer",))
    assert next(t for t in result["tools"] if t["name"] == "mcp__test__ping")["origin"] == {
        "kind": "extension", "id": "claimer"}
    (skipped,) = [d for d in result["diagnostics"] if d["kind"] == "mcp_tool_skipped"]
    assert skipped["name"] == "mcp__test__ping" and "claimed" in skipped["message"]


def test_no_server_outlives_its_thread_or_a_killed_sidecar(spawn, ws, tmp_path):
    root, events = ws
    mark = f"harness-e2e-{os.getpid()}-{time.monotonic_ns()}"
    sidecar = spawn()
    lingering = {**server(events, "--linger"), "env": {"MCP_TEST_EVENTS": str(events), "E2E_MARK": mark}}
    thread = start(sidecar, root, [lingering], trusted=())["threadId"]
    assert len(pids_with_env("E2E_MARK", mark)) == 1
    assert sidecar.call("thread/close", {"threadId": thread}, timeout=30) == {"state": {}}  # v4 §5
    assert pids_with_env("E2E_MARK", mark) == []  # gone by the time thread/close answers
    killed = spawn()
    start(killed, root, [lingering], trusted=())
    assert len(pids_with_env("E2E_MARK", mark)) == 1
    killed.proc.send_signal(signal.SIGKILL)
    killed.proc.wait(10)
    assert wait_until(lambda: pids_with_env("E2E_MARK", mark) == [], timeout=10)


@pytest.mark.skipif(not EVERYTHING.exists(), reason="server-everything is not installed "
                    "(cd tests/mcp_servers/everything && npm ci)")
def test_server_everything_through_the_sidecar(spawn, ws):
    root, events = ws
    sidecar = editor(spawn)
    result = start(sidecar, root, [{"name": "everything", "command": ["node", str(EVERYTHING)]}])
    thread = result["threadId"]
    names = [t["name"] for t in result["tools"] if t["origin"].get("kind") == "mcp"]
    assert "mcp__everything__echo" in names and "mcp__everything__get-sum" in names
    echoed = call(sidecar, thread, "mcp__everything__echo", {"message": "a secret"})
    assert echoed["content"][0]["text"].endswith("a [masked]") and echoed["details"]["transformedBy"] == ["policy"]
    total = call(sidecar, thread, "mcp__everything__get-sum", {"a": 2, "b": 3})
    assert "5" in total["content"][0]["text"]
    invalid = call(sidecar, thread, "mcp__everything__get-sum", {"a": "two", "b": 3})
    assert invalid["details"]["kind"] == "invalid_arguments"
    image = call(sidecar, thread, "mcp__everything__get-tiny-image")
    assert any("image content" in c["text"] for c in image["content"])
