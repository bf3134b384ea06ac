"""protocol-v3 §4 — loop events and the extension author's friction — through the real sidecar and host.

Written as a Pi extension author would write them. Two of Pi's example extensions
(github:badlogic/pi-mono, packages/coding-agent/examples/extensions, MIT licence, © Mario
Zechner) are ported to Python here:

- ``status-line.ts`` → STATUS_LINE: ``turn_start``/``turn_end`` set a status item counting turns
  (``ctx.ui.setStatus`` → ``ctx.ui.set_status``; the theme colours are dropped: the editor styles).
  It needs loop events: the editor reports its turns with ``loop/event``.
- ``send-user-message.ts`` (its ``/ask`` command) → ASK: a command that takes the rest of the
  slash line as text (``raw_arguments=True``) and asks the editor to send it as a user message
  (``pi.sendUserMessage(args)`` → ``ctx.ui.send_message(text)``, ``chat/send``); it returns nothing.
  Pi's ``ctx.isIdle()`` check is left to the editor (it decides what to do with chat/send).
"""

from __future__ import annotations

import json
import time

import pytest
from helpers import error_kind, write
from test_extension_api import UI, call, diagnostics, start, start_editor, ws  # noqa: F401 - ws is a fixture

STATUS_LINE = """
turn_count = 0
def session_start(event, ctx):
    ctx.ui.set_status("status-demo", "Ready")
def turn_start(event, ctx):
    global turn_count
    turn_count += 1
    trace('turn_start', event)
    ctx.ui.set_status("status-demo", f"● Turn {turn_count}...")
def turn_end(event, ctx):
    ctx.ui.set_status("status-demo", f"✓ Turn {turn_count} complete")
def activate(api):
    api.on("thread_start", session_start)
    api.on("turn_start", turn_start)
    api.on("turn_end", turn_end)
"""

EMPTY = {"blocked": None, "additionalContext": [], "systemMessages": []}


def loop_event(sidecar, thread, event, payload=None):
    params = {"threadId": thread, "event": event}
    if payload is not None:
        params["payload"] = payload
    return sidecar.call("loop/event", params, timeout=60)


def open_thread(spawn, ws, extensions, **extra):
    """A sidecar with the editor's UI, and a thread trusting ``extensions`` (id → source), each written first."""
    for ext_id, code in extensions.items():
        ws.extension(ext_id, code)
    sidecar, _ = start_editor(spawn)
    return sidecar, start(sidecar, ws, list(extensions), **extra)["threadId"]


def read_diagnostics(sidecar, kind, count, timeout=15.0):
    """Diagnostics of ``kind``, read until ``count`` arrived: an observer runs (and is judged) after the answer."""
    deadline = time.monotonic() + timeout
    while len(diagnostics(sidecar, kind)) < count and time.monotonic() < deadline:
        try:
            sidecar._dispatch(sidecar.next_message(0.05))
        except Exception:  # noqa: BLE001 - queue.Empty: nothing more for now
            pass
    return diagnostics(sidecar, kind)


def statuses(sidecar):
    return [n["params"]["text"] for n in sidecar.notifications if n["method"] == "ui/status"]


def test_pi_status_line_follows_the_editors_turns(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"status-line": STATUS_LINE})
    assert loop_event(sidecar, thread, "turn_start", {"prompt": "fix the bug"}) == EMPTY
    assert loop_event(sidecar, thread, "turn_end", {"lastAssistantMessage": "done"}) == EMPTY
    assert loop_event(sidecar, thread, "turn_start", {"prompt": "and the test"}) == EMPTY
    assert statuses(sidecar) == ["Ready", "● Turn 1...", "✓ Turn 1 complete", "● Turn 2..."]
    # the handler's event: {threadId, event, ...payload}
    assert ["turn_start", {"threadId": thread, "event": "turn_start", "prompt": "fix the bug"}] in ws.events()


GUARDS = {
    "reads-ok": """
def permission(event):
    if event["toolName"] == "Read":
        return {"decision": "allow", "context": "reads are fine here"}
def activate(api):
    api.on("permission_request", permission)
""",
    "no-rm": """
def permission(event):
    if "rm -rf" in event["toolInput"].get("command", ""):
        return {"block": True, "reason": "rm -rf is not allowed", "systemMessage": "no-rm refused a command"}
    return {"context": ["no-rm looked at " + event["toolName"]]}
def activate(api):
    api.on("permission_request", permission)
""",
    "no-bash": """
def permission(event):
    if event["toolName"] == "Bash":
        return {"decision": "deny", "reason": "no shell in this project"}
def activate(api):
    api.on("permission_request", permission)
""",
}


def test_permission_request_merges_every_extension_deterministically(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, GUARDS)
    read = loop_event(sidecar, thread, "permission_request", {"toolName": "Read", "toolInput": {"path": "a"}})
    assert read == {"blocked": None, "decision": "allow",
                    "additionalContext": ["reads are fine here", "no-rm looked at Read"], "systemMessages": []}
    edit = loop_event(sidecar, thread, "permission_request", {"toolName": "Edit", "toolInput": {}})
    assert edit["decision"] is None and edit["blocked"] is None  # nobody decided: the editor asks as usual
    rm = loop_event(sidecar, thread, "permission_request", {"toolName": "Bash", "toolInput": {"command": "rm -rf /"}})
    assert rm == {"blocked": {"reason": "rm -rf is not allowed; no shell in this project",
                              "by": ["extension:no-rm", "extension:no-bash"]},
                  "decision": "deny", "additionalContext": [], "systemMessages": ["no-rm refused a command"]}
    # the same question, the same answer (declaration order, not finishing order)
    again = loop_event(sidecar, thread, "permission_request",
                       {"toolName": "Bash", "toolInput": {"command": "rm -rf /"}})
    assert again == rm


FAILING = """
def stop(event):
    raise RuntimeError("stop hook broke")
def turn_end(event):
    raise RuntimeError("turn_end hook broke")
def compact(event):
    return {"block": True, "reason": "keep the details"}
def activate(api):
    api.on("stop", stop)
    api.on("turn_end", turn_end)
    api.on("compact_before", compact)
"""


def test_a_failing_stop_handler_blocks_and_a_failing_turn_end_handler_only_reports(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"flaky": FAILING})
    stop = loop_event(sidecar, thread, "stop", {"stopHookActive": False, "lastAssistantMessage": "all done"})
    assert stop["blocked"]["by"] == ["extension:flaky"] and "stop hook broke" in stop["blocked"]["reason"]
    assert loop_event(sidecar, thread, "turn_end", {}) == EMPTY
    faults = [(d["hook"], d["kind"]) for d in diagnostics(sidecar, "throw")]
    assert faults == [("stop", "throw"), ("turn_end", "throw")]
    assert loop_event(sidecar, thread, "compact_before", {"trigger": "auto"})["blocked"] == {
        "reason": "keep the details", "by": ["extension:flaky"]}


@pytest.mark.parametrize("params, field", [
    ({"event": "turn_start"}, "payload.prompt"),
    ({"event": "turn_start", "payload": {"prompt": 3}}, "payload.prompt"),
    ({"event": "stop", "payload": {"stopHookActive": "no"}}, "payload.stopHookActive"),
    ({"event": "stop", "payload": {"stopHookActive": False, "lastMessage": "x"}}, "payload.lastMessage"),
    ({"event": "permission_request", "payload": {"toolName": "Bash", "toolInput": "ls"}}, "payload.toolInput"),
    ({"event": "subagent_stop", "payload": {}}, "payload.agentType"),
    ({"event": "turn_start", "payload": []}, "payload"),
    ({"event": "session_end"}, "event"),
    ({"payload": {}}, "event"),
])
def test_a_bad_loop_event_is_invalid_params_naming_the_field(spawn, ws, params, field):
    sidecar, thread = open_thread(spawn, ws, {"status-line": STATUS_LINE})
    response = sidecar.request("loop/event", {"threadId": thread, **params})
    assert error_kind(response) == "invalid_params" and response["error"]["data"]["field"] == field
    assert loop_event(sidecar, thread, "notification", {"message": "still serving"}) == EMPTY


def test_a_loop_event_without_extensions_is_answered_empty(spawn, ws):
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, [])["threadId"]
    assert loop_event(sidecar, thread, "permission_request", {"toolName": "Read", "toolInput": {}}) == \
        {"blocked": None, "decision": None, "additionalContext": [], "systemMessages": []}
    assert error_kind(sidecar.request("loop/event", {"threadId": "thread-99", "event": "turn_end"})) == \
        "thread_not_found"


# -- chat/send and commands that take text -------------------------------------------------------------

ASK = """
def ask(arguments, ctx):
    text = arguments["text"]
    if not text.strip():
        ctx.ui.notify("Usage: /ask <message>", "warning")
        return
    sent = ctx.ui.send_message(text)
    trace('sent', sent)
def todo(arguments):
    return "todo " + json.dumps(arguments, sort_keys=True)
def activate(api):
    api.register_command(name="ask", description="Send a user message to the agent", handler=ask,
                         raw_arguments=True)
    api.register_command(name="todo", description="", handler=todo)
"""


def test_pi_ask_command_takes_the_slash_line_as_text_and_sends_it_through_the_editor(spawn, ws):
    ws.extension("ask", ASK)
    sidecar, _ = start_editor(spawn, capabilities={**UI, "sendMessage": True})
    thread = start(sidecar, ws, ["ask"])["threadId"]
    listed = {c["name"]: c for c in sidecar.call("commands/list", {"threadId": thread})["commands"]}
    assert listed["ask"]["rawArguments"] is True and "rawArguments" not in listed["todo"]
    typed = sidecar.call("input/submit", {"threadId": thread, "text": "/ask What is 2+2?"})
    assert typed == {"action": "handled", "by": {"kind": "command", "id": "ask", "extensionId": "ask"},
                     "result": {"content": [], "details": {}, "isError": False}}  # returned None: success
    sends = [n["params"] for n in sidecar.notifications if n["method"] == "chat/send"]
    assert sends == [{"threadId": thread, "extensionId": "ask", "text": "What is 2+2?"}]
    run = sidecar.call("commands/run", {"threadId": thread, "name": "ask", "text": "  key=value stays text "})
    assert run["isError"] is False and sends[0] != [n["params"] for n in sidecar.notifications
                                                    if n["method"] == "chat/send"][-1]
    assert [n["params"]["text"] for n in sidecar.notifications if n["method"] == "chat/send"][-1] == \
        "key=value stays text"
    assert ws.events() == [["sent", True], ["sent", True]]
    # a key=value command given text: the words are its arguments
    assert sidecar.call("commands/run", {"threadId": thread, "name": "todo", "text": 'a=1 b="x y"'})[
        "content"][0]["text"] == 'todo {"a": "1", "b": "x y"}'
    both = sidecar.request("commands/run", {"threadId": thread, "name": "ask", "text": "x", "arguments": {}})
    assert error_kind(both) == "invalid_params" and both["error"]["data"]["field"] == "text"


def test_send_message_without_the_capability_returns_false_and_sends_nothing(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"ask": ASK})  # no ui.sendMessage
    assert sidecar.call("commands/run", {"threadId": thread, "name": "ask", "text": "hello"})["isError"] is False
    assert ws.events() == [["sent", False]]
    assert not [n for n in sidecar.notifications if n["method"] == "chat/send"]


# -- nothing ignored silently ---------------------------------------------------------------------------

IGNORED = """
def redact_in_place(event):
    event["call"]["arguments"]["command"] = "echo redacted"  # Pi style: mutate the event
def patch_from_observer(event):
    return {"content": "changed?"}
def started(event):
    return "hello"
def shell(call_id, arguments):
    return "ran " + arguments["command"]
def activate(api):
    api.register_tool(name="shell", description="", input_schema={"type": "object", "properties": {
        "command": {"type": "string"}}}, execute=shell)
    api.on("tool_call", redact_in_place)
    api.on("tool_result", patch_from_observer)
    api.on("thread_start", started)
"""



def test_an_ignored_return_or_an_in_place_change_is_a_diagnostic_naming_the_right_form(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"pi-style": IGNORED})
    result = call(sidecar, thread, "shell", {"command": "cat secrets"})
    assert result["content"][0]["text"] == "ran cat secrets"  # neither change took effect …
    notices = {d["hook"]: d for d in read_diagnostics(sidecar, "handler_return_ignored", 3)}
    assert set(notices) == {"thread_start", "tool_call", "tool_result"}  # … and each was said
    assert all(d["extensionId"] == "pi-style" for d in notices.values())
    assert "return {'arguments': {...}}" in notices["tool_call"]["message"]
    assert "tool_result_transform" in notices["tool_result"]["message"]
    # a handler that returns its rewrite properly gets no notice
    before = len(diagnostics(sidecar, "handler_return_ignored"))
    call(sidecar, thread, "shell", {"command": "echo redacted"})  # in-place "change" to the same value
    read_diagnostics(sidecar, "handler_return_ignored", before + 2, timeout=1.0)  # time for a wrong extra one
    assert len(diagnostics(sidecar, "handler_return_ignored")) == before + 1  # only the observer's return


IN_PLACE = """
class Marker:
    def __eq__(self, other):
        trace('eq ran')
        return True
def tag_other_key(event):
    event["seen"] = True  # not the call: nothing ignored that the author meant to change
def put_object(event):
    if event["call"]["arguments"].get("command") == "mark":
        event["call"]["arguments"]["command"] = Marker()  # not JSON: a change, and its __eq__ never runs
def shell(call_id, arguments):
    return "ran " + arguments["command"]
def activate(api):
    api.register_tool(name="shell", description="", input_schema={"type": "object"}, execute=shell)
    api.on("tool_call", tag_other_key)
    api.on("tool_call", put_object)
"""


def test_only_a_change_of_the_call_in_place_is_a_diagnostic_and_no_handler_code_judges_it(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"in-place": IN_PLACE})
    assert call(sidecar, thread, "shell", {"command": "ls"})["content"][0]["text"] == "ran ls"
    read_diagnostics(sidecar, "handler_return_ignored", 1, timeout=1.0)  # time for a wrong one
    assert diagnostics(sidecar, "handler_return_ignored") == []  # another key of the event changed: not said
    assert call(sidecar, thread, "shell", {"command": "mark"}, call_id="c2")["content"][0]["text"] == "ran mark"
    (notice,) = read_diagnostics(sidecar, "handler_return_ignored", 1)
    assert notice["extensionId"] == "in-place" and notice["hook"] == "tool_call"
    assert "changed event['call'] in place" in notice["message"]
    assert ws.events() == []  # Marker.__eq__ never ran in the host


# -- deadlines per handler ------------------------------------------------------------------------------

DEADLINES = """
def patient(event):
    time.sleep(0.8)
    return {"context": "patient finished"}
def hasty(event, ctx):
    time.sleep(0.8)
    ctx.ui.notify("too late")  # stopped at its deadline: this reaches nobody
    trace('hasty went on')
def capped(event):
    time.sleep(0.8)
    return {"context": "capped finished"}
def slow_command(arguments):
    time.sleep(0.8)
    return "slow command finished"
def activate(api):
    api.on("stop", patient, timeout_ms=5000)
    api.on("stop", hasty)
    api.on("subagent_stop", capped, timeout_ms=60000)
    api.register_command(name="slow", description="", handler=slow_command, timeout_ms=5000)
    api.register_command(name="slow-default", description="", handler=slow_command)
"""


def test_each_handler_has_its_own_deadline_capped_by_max_handler_timeout(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"deadlines": DEADLINES}, limits={
        "hookTimeoutMs": 300, "commandTimeoutMs": 300, "maxHandlerTimeoutMs": 3000})
    stop = loop_event(sidecar, thread, "stop", {"stopHookActive": False})
    assert stop["additionalContext"] == ["patient finished"]  # its own 5 s (capped at 3 s) were enough
    assert stop["blocked"]["by"] == ["extension:deadlines"]  # the other one, on 300 ms, was stopped
    assert "within 300 ms" in stop["blocked"]["reason"]
    time.sleep(1.0)  # hasty wakes up and tries to reach the editor
    assert "too late" not in [n["params"].get("message") for n in sidecar.notifications]
    assert sidecar.call("commands/run", {"threadId": thread, "name": "slow"})["content"][0]["text"] == \
        "slow command finished"
    assert sidecar.call("commands/run", {"threadId": thread, "name": "slow-default"})["details"]["kind"] == "timeout"
    sidecar.call("tools/list", {"threadId": thread})  # the host's later frames have been read
    assert [d["hook"] for d in diagnostics(sidecar, "ui_after_handler")] == ["stop"]


def test_max_handler_timeout_caps_a_handlers_own_deadline(spawn, ws):
    sidecar, thread = open_thread(spawn, ws, {"deadlines": DEADLINES}, limits={"maxHandlerTimeoutMs": 300})
    result = loop_event(sidecar, thread, "subagent_stop", {"agentType": "explore"})
    assert result["additionalContext"] == [] and "within 300 ms" in result["blocked"]["reason"]


TOOL_DEADLINES = """
import time
def echo(call_id, arguments):
    return "ran"
def patient(event):
    time.sleep(0.8)  # more than hookTimeoutMs, within its own 3 s
def hasty(event):
    time.sleep(5)  # more than its own 300 ms, within hookTimeoutMs
def activate(api):
    api.register_tool(name="echo", description="", input_schema={}, execute=echo)
    api.on("tool_call", patient, timeout_ms=3000)
    api.on("tool_result", hasty, timeout_ms=300)
"""


def test_tool_call_hooks_have_their_own_deadlines_too(spawn, ws):
    """A before hook on its own 3 s outlives hookTimeoutMs 500; an observer on its own 300 ms is stopped there."""
    ws.extension("tooldeadlines", TOOL_DEADLINES)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["tooldeadlines"], limits={"hookTimeoutMs": 500, "hostGraceMs": 60000})["threadId"]
    began = time.monotonic()
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "echo", "arguments": {}}},
                          timeout=30)["result"]
    assert result["isError"] is False and result["content"] == [{"type": "text", "text": "ran"}], result
    deadline = time.monotonic() + 10
    while not [d for d in diagnostics(sidecar) if d.get("hook") == "tool_result"]:
        assert time.monotonic() < deadline, diagnostics(sidecar)
        sidecar.call("tools/list", {"threadId": thread})
    stopped = [d for d in diagnostics(sidecar) if d.get("hook") == "tool_result"][0]
    assert stopped["kind"] == "timeout" and "300 ms" in stopped["message"], stopped
    assert time.monotonic() - began < 4.5  # stopped by its own 300 ms, not after its 5 s sleep


# -- ctx.ui after the handler, and how a question ended -------------------------------------------------

KEEPER = """
kept = []
def started(event, ctx):
    kept.append(ctx)
def late(call_id, arguments):
    answer = kept[0].ui.confirm("Still there?", "asked after the handler ended")
    outcome = kept[0].ui.last_outcome
    kept[0].ui.notify("late note")
    return json.dumps([answer, outcome, type(answer) is bool])
def ask(call_id, arguments, ctx):
    answer = ctx.ui.confirm("Proceed?", "really")
    confirm = [answer, ctx.ui.last_outcome, type(answer) is bool]
    choice = ctx.ui.select("Pick", ["red", "green"])
    select = [choice, ctx.ui.last_outcome, choice is None or isinstance(choice, str)]
    name = ctx.ui.input("Name")
    return json.dumps({"confirm": confirm, "select": select,
                       "input": [name, ctx.ui.last_outcome, name is None]})
async def aask(call_id, arguments, ctx):
    answer = await ctx.ui.confirm("Proceed?", "really")
    return json.dumps([answer, ctx.ui.last_outcome])
def activate(api):
    api.on("thread_start", started)
    api.register_tool(name="late", description="", input_schema={}, execute=late)
    api.register_tool(name="ask", description="", input_schema={}, execute=ask)
    api.register_tool(name="aask", description="", input_schema={}, execute=aask)
"""


def test_ctx_ui_after_its_handler_ended_fails_closed_with_a_diagnostic(spawn, ws):
    ws.extension("keeper", KEEPER)
    sidecar, asked = start_editor(spawn, {"ui/confirm": lambda m: {"result": {"confirmed": True}}})
    thread = start(sidecar, ws, ["keeper"])["threadId"]
    assert json.loads(call(sidecar, thread, "late")["content"][0]["text"]) == [False, "unavailable", True]
    assert asked == [] and not [n for n in sidecar.notifications if n["method"] == "ui/notify"]
    notices = diagnostics(sidecar, "ui_after_handler")
    assert [(d["extensionId"], d["hook"]) for d in notices] == [("keeper", "thread_start")] * 2
    assert "ctx.ui.confirm" in notices[0]["message"] and "ctx.ui.notify" in notices[1]["message"]


@pytest.mark.parametrize("answers, capabilities, limits, expected", [
    ({"ui/confirm": lambda m: {"result": {"confirmed": True}}, "ui/select": lambda m: {"result": {"value": "green"}},
      "ui/input": lambda m: {"result": {"value": "Ada"}}}, UI, {},
     {"confirm": [True, "answered", True], "select": ["green", "answered", True], "input": ["Ada", "answered", False]}),
    ({"ui/confirm": lambda m: {"result": {"confirmed": False}}, "ui/select": lambda m: {"result": {"value": None}},
      "ui/input": lambda m: {"error": {"code": -32000, "message": "no prompt"}}}, UI, {},
     {"confirm": [False, "declined", True], "select": [None, "cancelled", True],
      "input": [None, "unavailable", True]}),
    ({}, UI, {"uiTimeoutMs": 300},
     {"confirm": [False, "timeout", True], "select": [None, "timeout", True], "input": [None, "timeout", True]}),
    ({}, {"notify": True}, {},
     {"confirm": [False, "unavailable", True], "select": [None, "unavailable", True],
      "input": [None, "unavailable", True]}),
])
def test_ui_answers_are_plain_v2_values_and_last_outcome_tells_how_they_ended(spawn, ws, answers, capabilities, limits,
                                                                        expected):
    ws.extension("keeper", KEEPER)
    sidecar, _ = start_editor(spawn, answers, capabilities=capabilities)
    thread = start(sidecar, ws, ["keeper"], limits=limits)["threadId"]
    assert json.loads(call(sidecar, thread, "ask")["content"][0]["text"]) == expected
    aexpected = [expected["confirm"][0], expected["confirm"][1]]
    assert json.loads(call(sidecar, thread, "aask", call_id="c2")["content"][0]["text"]) == aexpected


# -- the one merge, fed by any source --------------------------------------------------------------------


def test_the_merge_takes_command_hook_verdicts_too_and_depends_only_on_declaration_order():
    """The command hooks of §5 (Stop, PermissionRequest… hooks) feed the one merge (hooks.decision.merge,
    answered by loop.result) with their own sources, beside the extensions'."""
    from harness_sidecar.hooks.decision import Verdict, merge
    from harness_sidecar.hooks.loop import result

    def answer(event, verdicts):  # loop/event's answer, as the sidecar builds it
        return result(event, merge(verdicts))

    hook = Verdict("root:/p/hooks.json", decision="ask", context=["hook context"])
    ext = Verdict("extension:reads-ok", decision="allow", context=["ext context"])
    asked = answer("permission_request", [hook, ext])
    assert asked == {"blocked": None, "decision": None, "additionalContext": ["hook context", "ext context"],
                     "systemMessages": []}  # ask beats allow: the editor asks as usual
    assert answer("permission_request", [ext])["decision"] == "allow"
    deny_hook = Verdict("plugin:safety", decision="deny", reason="rm -rf /", system_message="safety net said no")
    deny_ext = Verdict("extension:no-bash", decision="deny")
    for order in ([deny_hook, hook, deny_ext], [hook, deny_hook, deny_ext]):
        merged = answer("permission_request", order)
        assert merged["blocked"] == {"reason": "rm -rf /; blocked by extension:no-bash",
                                     "by": ["plugin:safety", "extension:no-bash"]}
        assert merged["decision"] == "deny" and merged["systemMessages"] == ["safety net said no"]
    stop = answer("stop", [deny_hook])
    assert "decision" not in stop and stop["blocked"]["by"] == ["plugin:safety"]


# -- command hooks on loop events (protocol-v3 §5: Stop, PermissionRequest, PreCompact… → loop/event) -----

def _hook_script(ws, name: str, body: str) -> str:
    """A command hook of the project: a shell script that keeps its stdin in ``<name>.stdin.json``."""
    path = write(ws.tmp / "hooks" / name, f"#!/bin/sh\ncat > {ws.tmp}/{name}.stdin.json\n{body}")
    path.chmod(0o755)
    return str(path)


def _declare(ws, event: str, command: str, matcher: str | None = None) -> dict:
    group: dict = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        group["matcher"] = matcher
    write(ws.root / "hooks.json", json.dumps({"hooks": {event: [group]}}))
    return {"trustedHooks": [{"path": str(ws.root / "hooks.json")}]}


def test_a_stop_hook_that_exits_2_keeps_the_loop_going_with_its_reason(spawn, ws):
    trusted = _declare(ws, "Stop", _hook_script(ws, "stop.sh", "echo 'the tests still fail' >&2\nexit 2\n"))
    source = f"root:{ws.root / 'hooks.json'}"
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, [], cwd=str(ws.tmp), **trusted)["threadId"]
    stopped = loop_event(sidecar, thread, "stop", {"stopHookActive": False, "lastAssistantMessage": "All done."})
    assert stopped == {"blocked": {"reason": "the tests still fail", "by": [source]}, "additionalContext": [],
                       "systemMessages": []}
    assert json.loads((ws.tmp / "stop.sh.stdin.json").read_text()) == {
        "session_id": thread, "transcript_path": None, "cwd": str(ws.tmp),
        "hook_event_name": "Stop", "permission_mode": "default", "stop_hook_active": False,
        "last_assistant_message": "All done."}
    # the same hook, not trusted: it never runs, and the editor was told so
    (ws.tmp / "stop.sh.stdin.json").unlink()
    untrusted = start(sidecar, ws, [])["threadId"]
    assert loop_event(sidecar, untrusted, "stop", {"stopHookActive": False})["blocked"] is None
    assert not (ws.tmp / "stop.sh.stdin.json").exists()
    assert [d["source"] for d in diagnostics(sidecar, "hook_untrusted") if d["threadId"] == untrusted] == [source]


def test_a_permission_request_hook_that_denies_beats_an_extension_that_allows(spawn, ws):
    ws.extension("allow-all", """
def permission(event):
    return {"decision": "allow", "context": "allow-all looked at " + event["toolName"]}
def activate(api):
    api.on("permission_request", permission)
""")
    deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                              "decision": {"behavior": "deny", "message": "not on main"}}})
    trusted = _declare(ws, "PermissionRequest", _hook_script(ws, "guard.sh", f"echo '{deny}'\n"), matcher="Bash")
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["allow-all"], **trusted)["threadId"]
    push = loop_event(sidecar, thread, "permission_request", {"toolName": "Bash", "toolInput": {"command": "git push"}})
    assert push == {"blocked": {"reason": "not on main", "by": [f"root:{ws.root / 'hooks.json'}"]},
                    "decision": "deny", "additionalContext": ["allow-all looked at Bash"], "systemMessages": []}
    stdin = json.loads((ws.tmp / "guard.sh.stdin.json").read_text())
    assert (stdin["hook_event_name"], stdin["tool_name"], stdin["tool_input"]) == \
        ("PermissionRequest", "Bash", {"command": "git push"})
    # the hook's matcher does not take Read: the extension's allow stands alone
    read = loop_event(sidecar, thread, "permission_request", {"toolName": "Read", "toolInput": {"path": "a"}})
    assert (read["blocked"], read["decision"]) == (None, "allow")


def test_pre_compact_hook_context_comes_first_then_the_extensions(spawn, ws):
    ws.extension("notes", """
def compact(event):
    return {"context": "notes: keep the open questions"}
def activate(api):
    api.on("compact_before", compact)
""")
    said = json.dumps({"hookSpecificOutput": {"hookEventName": "PreCompact",
                                              "additionalContext": "keep the API decisions"}})
    trusted = _declare(ws, "PreCompact", _hook_script(ws, "pre.sh", f"echo '{said}'\n"), matcher="manual")
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["notes"], **trusted)["threadId"]
    manual = loop_event(sidecar, thread, "compact_before", {"trigger": "manual"})
    assert manual == {"blocked": None, "additionalContext": ["keep the API decisions", "notes: keep the open questions"],
                      "systemMessages": []}
    assert json.loads((ws.tmp / "pre.sh.stdin.json").read_text())["trigger"] == "manual"
    auto = loop_event(sidecar, thread, "compact_before", {"trigger": "auto"})  # the matcher does not take it
    assert auto["additionalContext"] == ["notes: keep the open questions"]


@pytest.mark.parametrize("event, hook_event, payload", [
    ("stop", "Stop", {"stopHookActive": True}),
    ("subagent_stop", "SubagentStop", {"agentType": "reviewer"}),
    ("permission_request", "PermissionRequest", {"toolName": "Bash", "toolInput": {"command": "ls"}}),
])
def test_a_failing_hook_of_a_blocking_loop_event_blocks_unless_failures_are_open(spawn, ws, event, hook_event,
                                                                                  payload):
    trusted = _declare(ws, hook_event, _hook_script(ws, "broken.sh", "echo 'jq: command not found' >&2\nexit 127\n"))
    sidecar, _ = start_editor(spawn)
    closed = loop_event(sidecar, start(sidecar, ws, [], **trusted)["threadId"], event, payload)
    assert closed["blocked"]["by"] == [f"root:{ws.root / 'hooks.json'}"]
    assert "exited with code 127" in closed["blocked"]["reason"] and "jq: command not found" in closed["blocked"]["reason"]
    assert closed.get("decision", "deny") == "deny"
    thread = start(sidecar, ws, [], limits={"commandHookFailure": "open"}, **trusted)["threadId"]
    opened = loop_event(sidecar, thread, event, payload)
    assert opened["blocked"] is None and opened.get("decision") is None
    assert [d["event"] for d in diagnostics(sidecar, "hook_failed") if d["threadId"] == thread] == [hook_event]
