"""v3 §2 "No lost results": every step of a call on the sidecar's clock, attacked from inside the host.

Each test runs the real sidecar and its real extension hosts. The extensions are hostile in one
way each (they crash in a transform, freeze in a hook, forge the channel's step frames, loop for
ever); what ran is written to a trace file and observed from outside, and what the editor gets is
checked against what really happened.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest
from helpers import TraceWorkspace, add_skill
from mcp_helpers import alive


@pytest.fixture
def ws(tmp_path):
    return TraceWorkspace.make(tmp_path, ("os", "sys", "time", "re"))


def start(sidecar, ws, trusted, **extra):
    return sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": trusted, **extra},
                        timeout=60)["threadId"]


def call_async(sidecar, thread, name, arguments=None, call_id="c1"):
    return sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                            "arguments": arguments or {}}})


def call(sidecar, thread, name, arguments=None, call_id="c1", timeout=60):
    return sidecar.wait_for(call_async(sidecar, thread, name, arguments, call_id), timeout)["result"]["result"]


def pump(sidecar, seconds=0.0):
    end = time.monotonic() + seconds
    while True:
        try:
            sidecar._dispatch(sidecar.next_message(0.02))
        except Exception:  # noqa: BLE001 - queue.Empty: nothing more for now
            if time.monotonic() >= end:
                return


def diagnostics(sidecar, kind=None):
    found = [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"]
    return [d for d in found if kind is None or d["kind"] == kind]


def wait_for(predicate, timeout=15.0, sidecar=None):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        if sidecar is not None:
            pump(sidecar, 0.05)
        else:
            time.sleep(0.05)


TOOLER = """
def fast(call_id, arguments):
    trace('core', call_id)
    return "made " + call_id
def slow(call_id, arguments):
    trace('core', call_id)
    time.sleep(arguments.get("seconds", 1.5))
    trace('core-done', call_id)
    return "finished " + call_id
def activate(api):
    api.register_tool(name="fast", description="", input_schema={}, execute=fast)
    api.register_tool(name="slow", description="", input_schema={}, execute=slow)
"""


def with_tooler(spawn, ws, extensions, **extra):
    """A sidecar and a thread trusting TOOLER and ``extensions`` (id → source), each written into the root."""
    for ext_id, code in {"tooler": TOOLER, **extensions}.items():
        ws.extension(ext_id, code)
    sidecar = spawn()
    return sidecar, start(sidecar, ws, ["tooler", *extensions], **extra)


# -- a result, once made, is kept ----------------------------------------------------------------------


OBSERVER_DIES = """
def watch(event):
    if event["call"]["arguments"].get("observer") == "die":
        trace('observer-dies', os.getpid())
        os._exit(1)
    if event["call"]["arguments"].get("observer") == "sleep":
        time.sleep(3)
        trace('observer-woke', event["call"]["id"])
def activate(api):
    api.on('tool_result', watch)
"""


def test_a_host_dying_in_an_observer_after_a_fast_tool_keeps_the_tools_result(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"watcher": OBSERVER_DIES})
    for n in range(2):  # each kills the host (2 exits: the thread is not failed)
        result = call(sidecar, thread, "fast", {"observer": "die"}, call_id=f"k{n}")
        assert result["isError"] is False, result
        assert result["content"] == [{"type": "text", "text": f"made k{n}"}]
        wait_for(lambda: len(diagnostics(sidecar, "host_exit")) == n + 1, sidecar=sidecar)
    assert [e for e in ws.events() if e[0] == "core"] == [["core", "k0"], ["core", "k1"]]  # each ran once
    assert len([e for e in ws.events() if e[0] == "observer-dies"]) == 2


def test_an_observer_cannot_delay_the_answer(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"watcher": OBSERVER_DIES})
    started = time.monotonic()
    result = call(sidecar, thread, "fast", {"observer": "sleep"}, call_id="s")
    took = time.monotonic() - started
    assert result["content"] == [{"type": "text", "text": "made s"}]
    assert took < 2.5, took  # the observer sleeps 3 s after the answer
    assert not [e for e in ws.events() if e[0] == "observer-woke"]
    wait_for(lambda: ["observer-woke", "s"] in ws.events(), timeout=15)  # it did run, after


# -- blame on the step that ran --------------------------------------------------------------------------


SHAPER = """
def shape(event):
    how = event["call"]["arguments"].get("transform")
    trace('transform', os.getpid())
    if how == "die":
        os._exit(1)
    if how == "freeze":
        re.match(r'(a+)+$', 'a' * 40 + 'b')   # holds the GIL for hours
    return None
def activate(api):
    api.on('tool_result_transform', shape)
"""


def test_a_transform_crash_is_blamed_on_the_transform_and_its_extension(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"shaper": SHAPER})
    result = call(sidecar, thread, "fast", {"transform": "die"}, call_id="t")
    assert result["isError"] is True
    assert result["details"].get("kind") != "crash"  # not a core crash: the core finished
    assert result["details"]["withheld"]["extensionId"] == "shaper"
    assert result["details"]["withheld"]["kind"] == "crash"
    assert "made t" not in json.dumps(result)  # a transform that cannot finish withholds the result
    assert "tool 'fast' was running" not in json.dumps(result)
    assert [e for e in ws.events() if e[0] == "core"] == [["core", "t"]]


def test_a_frozen_transform_is_answered_by_hook_timeout_not_tool_timeout(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"shaper": SHAPER},
                                  limits={"hookTimeoutMs": 500, "toolTimeoutMs": 30000, "hostGraceMs": 1000})
    started = time.monotonic()
    result = call(sidecar, thread, "fast", {"transform": "freeze"}, call_id="f")
    took = time.monotonic() - started
    assert result["details"]["withheld"] == {"extensionId": "shaper", "kind": "timeout",
                                             "reason": result["details"]["withheld"]["reason"]}
    assert "500 ms" in result["details"]["withheld"]["reason"]
    assert took < 10, took  # 0.5 s deadline; toolTimeoutMs (30 s) would be far later
    exit_ = wait_for_diagnostic(sidecar, "host_exit")
    assert exit_["signal"] == signal.SIGKILL  # the frozen host is ended
    assert call(sidecar, thread, "fast", call_id="again")["content"][0]["text"] == "made again"


GATES = """
def gate(event):
    if event["call"]["arguments"].get("freeze") == {ext!r}:
        trace('freezing', {ext!r})
        re.match(r'(a+)+$', 'a' * 40 + 'b')   # holds the GIL for hours
def activate(api):
    api.on('tool_call', gate)
"""


def test_a_freeze_in_the_second_before_hook_is_blamed_on_its_extension(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"alpha": GATES.format(ext="alpha"),
                                               "beta": GATES.format(ext="beta")},
                                  limits={"hookTimeoutMs": 500, "hostGraceMs": 1000})
    result = call(sidecar, thread, "fast", {"freeze": "beta"}, call_id="b")
    assert result["details"]["blocked"]["extensionId"] == "beta", result
    assert result["details"]["blocked"]["kind"] == "timeout"
    assert not [e for e in ws.events() if e[0] == "core"]


WATCHER = """
def watch(event):
    trace('watched', event["call"]["id"])
def activate(api):
    api.on('tool_result', watch)
"""


def test_an_answered_calls_end_is_kept_when_the_next_call_freezes_its_host(spawn, ws):
    """Pipelined calls: the first one's end (its observer finished, nothing to report) waits in the host
    to go out with the next frame, and its board cell says it ended — so the next call's hook holding
    the GIL, then its host being killed, blames nothing on the first call's observer."""
    sidecar, thread = with_tooler(spawn, ws, {"alpha": GATES.format(ext="alpha"), "watcher": WATCHER},
                                  limits={"hookTimeoutMs": 500, "hostGraceMs": 1000})
    assert call(sidecar, thread, "fast", call_id="warm")["content"][0]["text"] == "made warm"
    first, second = next(sidecar._ids), next(sidecar._ids)
    sidecar.send_raw(b"".join(sidecar.encode({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": call_id, "name": "fast", "arguments": arguments}}})
        for i, call_id, arguments in ((first, "a", {}), (second, "b", {"freeze": "alpha"}))))
    answered = sidecar.wait_for(first, 30)["result"]["result"]
    frozen = sidecar.wait_for(second, 30)["result"]["result"]
    assert answered["isError"] is False and answered["content"][0]["text"] == "made a", answered
    assert frozen["details"]["blocked"]["extensionId"] == "alpha", frozen
    assert ["watched", "a"] in ws.events()
    exit_ = wait_for_diagnostic(sidecar, "host_exit")
    assert exit_["signal"] == signal.SIGKILL
    pump(sidecar, 1.0)
    assert not [d for d in diagnostics(sidecar) if "watcher" in d.get("message", "")], diagnostics(sidecar)


def wait_for_diagnostic(sidecar, kind, timeout=15.0):
    wait_for(lambda: diagnostics(sidecar, kind), timeout, sidecar)
    return diagnostics(sidecar, kind)[0]


# -- no host clock, no endless step ----------------------------------------------------------------------


FORGER = """
def forge(event):
    if not event["call"]["arguments"].get("forge"):
        return None
    # The channel is the host's socket: write step frames for every exchange id, each claiming
    # the step that runs now started far in the future (the v2 wire format), then freeze.
    socks = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):
                socks.append(int(fd))
        except OSError:
            pass
    frames = b''.join(b'["step",%d,[0,1e12]]\\n["step",%d,[0,1e12,null,[]]]\\n["step",%d,[0]]\\n' % (i, i, i)
                      for i in range(1, 64))
    for fd in socks:
        try:
            os.write(fd, frames)
        except OSError:
            pass
    trace('forged', os.getpid())
    re.match(r'(a+)+$', 'a' * 40 + 'b')   # holds the GIL for hours
def activate(api):
    api.on('tool_call', forge)
"""


def forged_call(spawn, ws, forger):
    """A thread trusting ``forger`` (hook deadline 0.5 s, tool deadline 30 s): one plain call, then the
    call that makes it forge; the sidecar, the thread, that call's result and how long it took."""
    sidecar, thread = with_tooler(spawn, ws, {"forger": forger},
                                  limits={"hookTimeoutMs": 500, "toolTimeoutMs": 30000, "hostGraceMs": 1000})
    assert call(sidecar, thread, "fast", call_id="ok")["content"][0]["text"] == "made ok"
    started = time.monotonic()
    result = call(sidecar, thread, "fast", {"forge": True}, call_id="x")
    return sidecar, thread, result, time.monotonic() - started


def test_a_forged_future_step_frame_cannot_delay_the_answer(spawn, ws):
    sidecar, _thread, result, took = forged_call(spawn, ws, FORGER)
    assert [e[0] for e in ws.events()].count("forged") == 1, result
    assert result["details"]["blocked"] == {"extensionId": "forger", "kind": "timeout",
                                            "reason": result["details"]["blocked"]["reason"]}
    assert took < 10, took  # by the 0.5 s deadline on the sidecar's clock, not by the forged time
    (pid,) = [e[1] for e in ws.events() if e[0] == "forged"]
    exit_ = wait_for_diagnostic(sidecar, "host_exit")
    assert exit_["signal"] == signal.SIGKILL
    wait_for(lambda: not alive(pid), 10)
    assert not [e for e in ws.events() if e == ["core", "x"]]


BOARD_FORGER = """
import mmap
def forge(event):
    if not event["call"]["arguments"].get("forge"):
        return None
    # The step board is memory this host shares with the sidecar: shrink it under the sidecar's
    # mapping (its next read would fault), and fill every cell with announcements for every
    # exchange id — out of any plan, and step 0 again — then freeze.
    shrunk = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            if 'harness-sidecar-board' not in os.readlink('/proc/self/fd/' + fd):
                continue
            cells = memoryview(mmap.mmap(int(fd), 512)).cast('Q')
        except OSError:
            continue
        for i in range(64):
            cells[i] = ((i + 1) << 16) | (0xFFFF if i % 2 else 0)
        try:
            os.ftruncate(int(fd), 0)
            shrunk.append(True)
        except OSError:
            shrunk.append(False)
    trace('board-forged', os.getpid(), shrunk)
    re.match(r'(a+)+$', 'a' * 40 + 'b')   # holds the GIL for hours
def activate(api):
    api.on('tool_call', forge)
"""


def test_a_forged_step_board_cannot_delay_the_answer_or_fault_the_sidecar(spawn, ws):
    sidecar, thread, result, took = forged_call(spawn, ws, BOARD_FORGER)
    (forged,) = [e for e in ws.events() if e[0] == "board-forged"]
    assert forged[2] and not any(forged[2]), forged  # the board was found, and it cannot shrink (sealed)
    # Its own announcement was overwritten before the sidecar read it: the call is answered as one whose
    # first step never began (blamed on the host), or as the forger's — never as the core's or later
    # than the 0.5 s hook deadline. (A host misreports only its own thread's steps, as with frames.)
    assert result["details"]["blocked"]["extensionId"] in ("forger", "host"), result
    assert result["details"]["blocked"]["kind"] == "timeout", result
    assert took < 10, took  # by the 0.5 s hook deadline, not the 30 s tool deadline
    exit_ = wait_for_diagnostic(sidecar, "host_exit")
    assert exit_["signal"] == signal.SIGKILL
    assert not [e for e in ws.events() if e == ["core", "x"]]
    assert sidecar.proc.poll() is None  # the sidecar never faulted on the board
    assert call(sidecar, thread, "fast", call_id="after")["content"][0]["text"] == "made after"


SPINNER = """
def spin(event):
    if event["call"]["arguments"].get("spin"):
        trace('spinning', os.getpid())
        while True:   # lets go of the GIL every few ms: the host still answers the sidecar
            pass
def activate(api):
    api.on('tool_call', spin)
"""


def test_a_hook_that_never_returns_ends_its_host_after_host_grace(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"spinner": SPINNER},
                                  limits={"hookTimeoutMs": 300, "hostGraceMs": 700})
    result = call(sidecar, thread, "fast", {"spin": True}, call_id="s")
    assert result["details"]["blocked"]["extensionId"] == "spinner"
    assert result["details"]["blocked"]["kind"] == "timeout"
    (pid,) = [e[1] for e in ws.events() if e[0] == "spinning"]
    exit_ = wait_for_diagnostic(sidecar, "host_exit")  # killed at deadline + hostGraceMs, pings or not
    assert exit_["signal"] == signal.SIGKILL and "hostGraceMs" in exit_["message"]
    wait_for(lambda: not alive(pid), 10)  # no CPU burnt for ever
    assert call(sidecar, thread, "fast", call_id="next")["content"][0]["text"] == "made next"  # restarted
    assert diagnostics(sidecar, "host_restarted")


# -- close keeps outcomes -------------------------------------------------------------------------------


HOLDER = """
def hold(event):
    seconds = event["call"]["arguments"].get("hold")
    if seconds:
        trace('holding', event["call"]["id"])
        time.sleep(seconds)
def seen(event):
    trace('observed', event["call"]["id"], event["result"]["content"][0]["text"])
def activate(api):
    api.on('tool_call', hold)
    api.on('tool_result', seen)
"""


def test_close_during_a_running_core_answers_its_real_result_and_blocks_unstarted_calls(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"holder": HOLDER})
    running = call_async(sidecar, thread, "slow", {"seconds": 1.5}, call_id="run")
    wait_for(lambda: ["core", "run"] in ws.events(), 15)
    waiting = call_async(sidecar, thread, "fast", {"hold": 1.0}, call_id="wait")  # in its before hook
    wait_for(lambda: ["holding", "wait"] in ws.events(), 15)
    closing = sidecar.request_async("thread/close", {"threadId": thread})
    ran = sidecar.wait_for(running, 30)["result"]["result"]
    assert ran["isError"] is False and ran["content"] == [{"type": "text", "text": "finished run"}], ran
    unstarted = sidecar.wait_for(waiting, 30)["result"]["result"]
    assert unstarted["details"]["blocked"]["kind"] == "closed"
    assert sidecar.wait_for(closing, 30)["result"] == {"state": {}}  # v4 §5: the extensions' state (none set)
    events = ws.events()
    assert ["core-done", "run"] in events and ["core", "wait"] not in events  # what did and did not run
    assert ["observed", "run", "finished run"] in events  # its observers ran too, before the host closed


def test_close_during_an_editor_executed_tool_is_never_reported_blocked(spawn, ws):
    ws.extension("holder", HOLDER)
    asked = []

    def editor(message):
        if message["method"] == "item/tool/call":
            asked.append(message)
            return None  # answered below, after thread/close
        return None

    sidecar = spawn(on_request=editor)
    thread = start(sidecar, ws, ["holder"], dynamicTools=[{"name": "edit", "description": "", "inputSchema": {}}])
    pending = call_async(sidecar, thread, "edit", {"file": "a"}, call_id="e")
    wait_for(lambda: asked, 15, sidecar)
    closing = sidecar.request_async("thread/close", {"threadId": thread})
    pump(sidecar, 0.3)
    sidecar.send({"jsonrpc": "2.0", "id": asked[0]["id"],
                  "result": {"contentItems": [{"type": "inputText", "text": "edited a"}], "success": True}})
    result = sidecar.wait_for(pending, 30)["result"]["result"]
    assert "blocked" not in result["details"], result
    assert result["isError"] is False and result["content"] == [{"type": "text", "text": "edited a"}]
    assert sidecar.wait_for(closing, 30)["result"] == {"state": {}}  # v4 §5: the extensions' state (none set)
    assert ["observed", "e", "edited a"] in ws.events()


# -- a failed thread runs nothing ------------------------------------------------------------------------


FATAL = """
def gate(event):
    if event["call"]["arguments"].get("exit"):
        os._exit(0)
def hello(arguments):
    return "hello"
def activate(api):
    api.register_tool(name="fast", description="", input_schema={}, execute=lambda call_id, arguments: "made")
    api.register_command(name="hello", description="", handler=hello)
    api.on('tool_call', gate)
"""


def test_a_failed_thread_runs_no_tool_command_or_input(spawn, ws, tmp_path):
    for i in range(12):  # more than the catalog budget lists: find_skills is offered
        add_skill(ws.root, f"skill-{i}", f"Use when doing thing number {i} with a long description " * 3)
    ws.extension("fatal", FATAL)
    asked = []
    sidecar = spawn(on_request=lambda m: asked.append(m) or {"result": {"contentItems": [
        {"type": "inputText", "text": "ran"}], "success": True}})
    mcp = {"name": "raw", "command": [sys.executable, str(Path(__file__).parent / "mcp_servers" / "raw_server.py"),
                                      "--record", str(tmp_path / "mcp.jsonl")]}
    thread = start(sidecar, ws, ["fatal"], limits={"catalogBytes": 600}, mcpServers=[mcp],
                   dynamicTools=[{"name": "edit", "description": "", "inputSchema": {}}])
    tools = {t["name"] for t in sidecar.call("tools/list", {"threadId": thread})["tools"]}
    mcp_tool = next(name for name in tools if name.startswith("mcp__"))
    assert {"load_skill", "find_skills", "edit", "fast"} <= tools
    assert call(sidecar, thread, mcp_tool, {"text": "before"}, call_id="m0")["isError"] is False
    for n in range(3):
        assert call(sidecar, thread, "fast", {"exit": True}, call_id=f"x{n}")["details"]["blocked"]["kind"] == "crash"
    wait_for(lambda: len(diagnostics(sidecar, "host_exit")) == 3, 15, sidecar)
    asked.clear()
    mcp_lines = (tmp_path / "mcp.jsonl").read_text().count("tools/call")
    for name, arguments in (("load_skill", {"name": "review"}), ("find_skills", {"query": "thing"}),
                            ("edit", {}), (mcp_tool, {"text": "after"}), ("fast", {})):
        result = call(sidecar, thread, name, arguments, call_id=f"after-{name}")
        assert result["isError"] is True and result["details"]["blocked"]["kind"] == "failed", (name, result)
    assert not asked  # no item/tool/call reached the editor
    assert (tmp_path / "mcp.jsonl").read_text().count("tools/call") == mcp_lines  # nor the MCP server
    for method, params in (("commands/run", {"name": "hello", "arguments": {}}), ("input/submit", {"text": "hi"})):
        response = sidecar.request(method, {"threadId": thread, **params})
        assert response["error"]["data"]["kind"] == "extension_failed", response
        assert -32099 <= response["error"]["code"] <= -32000


def test_a_call_waiting_behind_a_frozen_one_blames_the_host_not_an_extension(spawn, ws):
    sidecar, thread = with_tooler(spawn, ws, {"alpha": GATES.format(ext="alpha")},
                                  limits={"hookTimeoutMs": 500, "hostGraceMs": 1000})
    frozen = call_async(sidecar, thread, "fast", {"freeze": "alpha"}, call_id="frozen")
    wait_for(lambda: ["freezing", "alpha"] in ws.events(), 15)
    waiting = call_async(sidecar, thread, "fast", call_id="waiting")  # its hook never begins: the GIL is held
    first = sidecar.wait_for(frozen, 30)["result"]["result"]["details"]["blocked"]
    second = sidecar.wait_for(waiting, 30)["result"]["result"]["details"]["blocked"]
    assert first["extensionId"] == "alpha" and first["kind"] == "timeout"
    assert second["extensionId"] == "host", second  # alpha's hook did not run for this call
    assert not [e for e in ws.events() if e[0] == "core"]
