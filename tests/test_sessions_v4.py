"""protocol-v4 §5 (part 2) through the real sidecar and host: the conversation (``ctx.messages``,
``session/messages``), the tools the model sees (``ctx.tools``, deferred tools, ``tool_search``),
the cancellable session events with Pi's event names as aliases, and the debug log.

Written as an author porting a Pi extension (github:badlogic/pi-mono, packages/coding-agent, MIT
licence, © Mario Zechner) would write them: Pi's ``pi.on("session_start", …)``, ``{"cancel": True}``.
"""

from __future__ import annotations

import pytest
from helpers import error_kind
from test_extension_api import UI, start, start_editor, ws  # noqa: F401 - ws is a fixture
from test_loop_events import EMPTY, loop_event

# -- session events and Pi's names ------------------------------------------------------------------------

# After Pi's confirm-destructive.ts: ask before a new session or a fork would drop the work.
GUARD = """
def on_start(event, ctx):
    trace('start', event)
def on_end(event, ctx):
    trace('end', event)
def also_end(event, ctx):
    raise RuntimeError('cannot tell')
def before_switch(event, ctx):
    trace('switch', event)
    if event['reason'] == 'new':
        return {'cancel': True, 'reason': 'the plan is not saved'}
def before_fork(event):
    return {'block': True, 'reason': 'no forks here'}
def activate(api):
    api.on('session_start', on_start)
    api.on('agent_end', on_end)
    api.on('agent_end', also_end)
    api.on('session_before_switch', before_switch)
    api.on('session_before_fork', before_fork)
"""


def test_pi_event_names_are_aliases_with_the_targets_semantics(spawn, ws):
    ws.extension("guard", GUARD)
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["guard"])
    thread = started["threadId"]
    aliases = [d for d in started["diagnostics"] if d["kind"] == "event_alias"]
    # one diagnostic per alias used (agent_end twice: one), severity info, naming the target
    assert sorted((d["alias"], d["event"], d["severity"]) for d in aliases) == [
        ("agent_end", "stop", "info"), ("session_start", "thread_start", "info")]
    # session_start is thread_start: called once, with thread_start's payload
    assert [e for e in ws.events() if e[0] == "start"] == [
        ["start", {"threadId": thread, "cwd": ws.events()[0][1]["cwd"], "roots": [str(ws.root)],
                   "reason": "startup"}]]
    # agent_end is stop: its payload, and stop's fail-closed rule (a handler that raised blocks)
    answer = loop_event(sidecar, thread, "stop", {"stopHookActive": False, "lastAssistantMessage": "done"})
    assert answer["blocked"]["by"] == ["extension:guard"]
    assert ["end", {"threadId": thread, "event": "stop", "stopHookActive": False,
                    "lastAssistantMessage": "done"}] in ws.events()


def test_session_before_switch_and_fork_can_be_cancelled(spawn, ws):
    ws.extension("guard", GUARD)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["guard"])["threadId"]
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "new"})["blocked"] == {
        "reason": "the plan is not saved", "by": ["extension:guard"]}
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "resume"}) == EMPTY
    assert loop_event(sidecar, thread, "session_before_fork")["blocked"] == {
        "reason": "no forks here", "by": ["extension:guard"]}
    bad = sidecar.request("loop/event", {"threadId": thread, "event": "session_before_switch", "payload": {}})
    assert error_kind(bad) == "invalid_params" and "payload.reason" in bad["error"]["message"]
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "resume"}) == EMPTY  # still serving


def test_an_unknown_event_name_still_fails_the_extension_and_names_the_aliases(spawn, ws):
    ws.extension("typo", "def activate(api):\n    api.on('agent_ended', lambda e: None)\n")
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["typo"])
    failed = [d for d in started["diagnostics"] if d["kind"] == "extension_failed"]
    assert failed and "agent_ended" in failed[0]["message"] and "agent_end" in failed[0]["message"]


# -- the conversation ------------------------------------------------------------------------------------

CONVERSATION = [{"role": "user", "text": "fix the bug"},
                {"role": "assistant", "text": "reading it", "toolCalls": [{"id": "c0", "name": "read"}]},
                {"role": "tool", "text": "def f(): ...", "toolResults": [{"id": "c0", "isError": False}]},
                {"role": "assistant", "text": "fixed"}]

# After Pi's summarize.ts: the conversation, read by a tool and by the context handler.
RECALL = """
def recall(call_id, arguments, ctx):
    try:
        return json.dumps(ctx.messages(limit=arguments.get('limit')))
    except Exception as exc:
        return json.dumps({'error': type(exc).__name__, 'message': str(exc)})
async def arecall(call_id, arguments, ctx):
    return json.dumps(await ctx.messages())
def context(event, ctx):
    trace('context', event)
    return 'Turns so far: %d' % len(event.get('messages', []))
def activate(api):
    api.register_tool('recall', 'The conversation so far.', {'type': 'object'}, recall)
    api.register_tool('arecall', 'The conversation so far.', {'type': 'object'}, arecall)
    api.on('context', context)
"""


def conversation_editor(spawn, conversation, answer=None):
    asked = []

    def on_request(message):
        asked.append(message)
        if message["method"] == "session/messages":
            if answer is not None:  # a wrong answer on purpose: the schema check is told so
                from harness_sidecar.console.client import Malformed

                return Malformed({"result": answer})
            limit = message["params"].get("limit")
            return {"result": {"messages": conversation[-limit:] if limit else list(conversation)}}
        return None

    sidecar = spawn(on_request=on_request, initialize=False)
    caps = {"ui": UI} if conversation is None else {"ui": UI, "conversation": True}
    sidecar.call("initialize", {"protocolVersion": "2", "capabilities": caps})
    return sidecar, asked


def tool_json(sidecar, thread, name, arguments=None):
    import json

    from test_extension_api import call

    return json.loads(call(sidecar, thread, name, arguments)["content"][0]["text"])


def test_ctx_messages_asks_the_editor_and_the_context_event_gets_the_last_messages(spawn, ws):
    ws.extension("recall", RECALL)
    sidecar, asked = conversation_editor(spawn, CONVERSATION)
    thread = start(sidecar, ws, ["recall"], limits={"contextMessages": 3})["threadId"]
    assert tool_json(sidecar, thread, "recall", {"limit": 2}) == CONVERSATION[-2:]
    assert tool_json(sidecar, thread, "arecall") == CONVERSATION
    assert [m["params"] for m in asked if m["method"] == "session/messages"] == [
        {"threadId": thread, "limit": 2}, {"threadId": thread}]
    prompt = sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    assert "Turns so far: 3" in prompt
    assert asked[-1]["params"] == {"threadId": thread, "limit": 3}
    context = [e[1] for e in ws.events() if e[0] == "context"]
    assert context[-1]["messages"] == CONVERSATION[-3:]


def test_without_the_capability_ctx_messages_raises_and_nothing_is_asked(spawn, ws):
    ws.extension("recall", RECALL)
    sidecar, asked = conversation_editor(spawn, None)
    thread = start(sidecar, ws, ["recall"])["threadId"]
    failed = tool_json(sidecar, thread, "recall")
    assert failed["error"] == "ConversationUnavailable" and "capabilities.conversation" in failed["message"]
    assert "Turns so far: 0" in sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    assert "messages" not in [e[1] for e in ws.events() if e[0] == "context"][-1]
    assert not [m for m in asked if m["method"] == "session/messages"]


def test_a_malformed_conversation_is_an_error_in_the_handler_and_the_sidecar_keeps_serving(spawn, ws):
    ws.extension("recall", RECALL)
    sidecar, _ = conversation_editor(spawn, CONVERSATION, answer={"messages": [{"role": "user"}]})
    thread = start(sidecar, ws, ["recall"])["threadId"]
    failed = tool_json(sidecar, thread, "recall")
    assert failed["error"] == "ConversationUnavailable" and "message 0" in failed["message"]
    assert "Turns so far: 0" in sidecar.call("context/build", {"threadId": thread})["systemPrompt"]


# -- what the model may use ------------------------------------------------------------------------------

# After Pi's plan-mode.ts: /plan leaves the model the read-only tools, /build gives it all of them back.
PLAN_MODE = """
def plan(arguments, ctx):
    every = ctx.tools.list()
    active = ctx.tools.set_active([t['name'] for t in every if t['name'].startswith('read')])
    return json.dumps({'every': every, 'active': active})
def build(arguments, ctx):
    return json.dumps(ctx.tools.set_active([t['name'] for t in ctx.tools.list()]))
async def wrong(arguments, ctx):
    try:
        await ctx.tools.set_active(['nope'])
    except ValueError as exc:
        return str(exc)
def note(call_id, arguments):
    return 'noted'
def activate(api):
    api.register_command('plan', 'Plan only.', plan)
    api.register_command('build', 'Build.', build)
    api.register_command('wrong', 'A wrong name.', wrong)
    api.register_tool('note', 'Take a note.', {'type': 'object'}, note)
"""


def dynamic(name, description):
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}


def run_command(sidecar, thread, name):
    return sidecar.call("commands/run", {"threadId": thread, "name": name}, timeout=60)


def changes(sidecar, count):
    from helpers import changes_until

    return changes_until(sidecar, lambda found: len(found) >= count)


def test_set_active_changes_tools_list_and_catalog_changed_names_the_tools(spawn, ws):
    import json

    ws.extension("plan-mode", PLAN_MODE)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["plan-mode"], watch=False,
                   dynamicTools=[dynamic("read_file", "Read a file."), dynamic("write_file", "Write a file.")])["threadId"]
    names = lambda: [t["name"] for t in sidecar.call("tools/list", {"threadId": thread})["tools"]]  # noqa: E731
    assert names() == ["load_skill", "read_file", "write_file", "note"]
    planned = json.loads(run_command(sidecar, thread, "plan")["content"][0]["text"])
    assert [(t["name"], t["origin"], t["active"]) for t in planned["every"]] == [
        ("load_skill", "builtin", True), ("read_file", "dynamic", True), ("write_file", "dynamic", True),
        ("note", "extension", True)]
    assert planned["active"] == ["load_skill", "read_file"]  # builtins stay
    assert names() == ["load_skill", "read_file"]
    left = changes(sidecar, 1)[-1]
    assert left["removed"] == [{"kind": "tool", "name": "note"}, {"kind": "tool", "name": "write_file"}]
    assert left["added"] == [] and left["revision"] == sidecar.call("tools/list", {"threadId": thread})["revision"]
    refused = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "w", "name": "write_file",
                                                                       "arguments": {}}})["result"]
    assert refused["isError"] and refused["details"]["kind"] == "tool_inactive"
    refused = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "n", "name": "note",
                                                                       "arguments": {}}})["result"]
    assert refused["isError"] and refused["details"]["kind"] == "tool_inactive"
    assert json.loads(run_command(sidecar, thread, "build")["content"][0]["text"]) == [
        "load_skill", "read_file", "write_file", "note"]
    back = changes(sidecar, 2)[-1]
    assert back["added"] == [{"kind": "tool", "name": "note"}, {"kind": "tool", "name": "write_file"}]
    assert back["removed"] == []
    assert names() == ["load_skill", "read_file", "write_file", "note"]
    noted = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "n2", "name": "note", "arguments": {}}})
    assert noted["result"]["content"][0]["text"] == "noted"
    assert "no tool named 'nope'" in run_command(sidecar, thread, "wrong")["content"][0]["text"]
    assert names() == ["load_skill", "read_file", "write_file", "note"]  # a wrong name changed nothing


def test_deferred_tools_are_listed_by_name_found_by_tool_search_and_callable(spawn, ws):
    def on_request(message):
        if message["method"] == "item/tool/call":
            return {"result": {"contentItems": [{"type": "inputText", "text": f"ran {message['params']['tool']}"}],
                               "success": True}}
        return None

    sidecar = spawn(on_request=on_request)
    tools = [dynamic("send_email", "Send an email to someone."),
             dynamic("weather", "Query the weather forecast for a city."),
             dynamic("resize_images", "Resize images to a given width.")]
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "dynamicTools": tools,
                                           "limits": {"deferToolsOver": 1}})["threadId"]
    listed = sidecar.call("tools/list", {"threadId": thread})["tools"]
    assert [t["name"] for t in listed] == ["load_skill", "send_email", "weather", "resize_images", "tool_search"]
    by_name = {t["name"]: t for t in listed}
    assert by_name["weather"] == {"name": "weather", "deferred": True}
    assert by_name["resize_images"] == {"name": "resize_images", "deferred": True}
    assert "inputSchema" in by_name["send_email"] and "inputSchema" in by_name["tool_search"]
    found = sidecar.call("tools/call", {"threadId": thread, "call": {
        "id": "s", "name": "tool_search", "arguments": {"query": "weather forecast"}}})["result"]
    assert not found["isError"]
    assert [t["name"] for t in found["details"]["tools"]] == ["weather"]
    assert found["details"]["tools"][0]["inputSchema"] == tools[1]["inputSchema"]
    assert "weather: Query the weather forecast" in found["content"][0]["text"]
    called = sidecar.call("tools/call", {"threadId": thread, "call": {
        "id": "r", "name": "resize_images", "arguments": {"q": "640"}}})["result"]
    assert called["content"][0]["text"] == "ran resize_images" and not called["isError"]
    bad = sidecar.call("tools/call", {"threadId": thread, "call": {
        "id": "b", "name": "tool_search", "arguments": {"query": "   "}}})["result"]
    assert bad["isError"] and bad["details"]["kind"] == "invalid_arguments"
    # tool_search is a builtin's name: an editor's tool may not take it (it would hide the builtin)
    taken = sidecar.request("thread/start", {"roots": [str(ws.root)], "dynamicTools": [dynamic("tool_search", "x")]})
    assert error_kind(taken) == "invalid_params"


# -- observable ------------------------------------------------------------------------------------------

TRACED = """
def guard(event):
    return None
def note(call_id, arguments):
    return 'noted'
def activate(api):
    api.register_tool('note', 'Take a note.', {'type': 'object'}, note)
    api.on('tool_call', guard)
"""


def stderr_until(sidecar, wanted, timeout=20.0):
    """The sidecar's stderr lines (text), read until one contains ``wanted`` (a bounded poll)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line.decode("utf-8", "replace").rstrip("\n") for line in list(sidecar.stderr_lines)]
        if any(wanted in line for line in lines):
            return lines
        time.sleep(0.02)
    return [line.decode("utf-8", "replace").rstrip("\n") for line in list(sidecar.stderr_lines)]


def test_debug_log_shows_the_load_sequence_and_each_calls_steps_with_durations(spawn, ws):
    import re

    from harness_sidecar.console.client import sidecar_command

    ws.extension("traced", TRACED)
    sidecar = spawn(command=[*sidecar_command(), "--log-level", "debug"])
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["traced"],
                                           "dynamicTools": [dynamic("ask_editor", "Asked of the editor.")]})["threadId"]
    sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "note", "arguments": {}}})
    lines = stderr_until(sidecar, "tools/call c1 (note): answered")
    ms = r"\d+\.\d{3} ms"
    load = [line for line in lines if "extension traced:" in line or ": commit:" in line]
    # the load sequence, in its order, one line a step
    assert [re.sub(ms, "T", line.split(": ", 2)[-1]) for line in load] == [
        "extension traced: import T", "extension traced: factory activate(api) T",
        "extension traced: registrations staged: 1 tools, 1 hooks, 0 commands (load T)",
        "extension traced: staged registrations checked: ok, to be committed", "commit: traced live"]
    call = [line for line in lines if "tools/call c1 (note)" in line]
    steps = [re.sub(ms, "T", re.search(r"\(note\): (.*)", line).group(1)) for line in call]
    assert steps == ["arguments checked against inputSchema T", "host exchange [tool_call:traced, core:traced] T",
                     "answered, T in all"]
    assert all(line.startswith("harness-sidecar DEBUG ") for line in load + call)
    # a core that runs in the sidecar (the editor's tool; this editor serves no requests): its own step
    sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c2", "name": "ask_editor", "arguments": {}}})
    lines = stderr_until(sidecar, "tools/call c2 (ask_editor): answered")
    steps = [re.sub(ms, "T", re.search(r"\(ask_editor\): (.*)", line).group(1)) for line in lines
             if "tools/call c2 (ask_editor)" in line]
    assert steps == ["arguments checked against inputSchema T", "host exchange [tool_call:traced] T",
                     "core (dynamic) T", "answered isError (editor_error), T in all"]


def test_info_level_writes_no_step_lines(spawn, ws):
    from harness_sidecar.console.client import sidecar_command

    ws.extension("traced", TRACED)
    sidecar = spawn(command=[*sidecar_command(), "--log-level", "info"])
    thread = start(sidecar, ws, ["traced"])["threadId"]
    sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "note", "arguments": {}}})
    sidecar.call("thread/close", {"threadId": thread})
    text = "".join(line.decode("utf-8", "replace") for line in sidecar.stderr_lines)
    assert "tools/call c1" not in text and "registrations staged" not in text and "DEBUG" not in text
