"""Extension API v2 end to end: ctx, asking the editor, argument policy, transforms, commands,
lifecycle, context and input — through the real sidecar and its extension host."""

from __future__ import annotations

import json
import time

import pytest
from harness_sidecar.console.client import Malformed
from helpers import TraceWorkspace, write

UI = {"confirm": True, "select": True, "input": True, "notify": True, "status": True}


@pytest.fixture
def ws(tmp_path):
    ws = TraceWorkspace.make(tmp_path, ("os", "sys", "time", "asyncio"))
    write(ws.root / "templates/review.md", "---\ndescription: Review a file.\n---\nReview {{path}}, focus on {{focus}}.\n")
    return ws


def editor(answers=None, capabilities=UI, **spawn_kwargs):
    """Spawn options for a sidecar whose editor answers ui/* requests from ``answers`` (method → fn)."""
    asked: list[dict] = []

    def on_request(message):
        asked.append(message)
        handler = (answers or {}).get(message["method"])
        return handler(message) if handler else None

    return asked, {"on_request": on_request, "initialize": False, **spawn_kwargs}, capabilities


def start_editor(spawn, answers=None, capabilities=UI):
    asked, kwargs, caps = editor(answers, capabilities)
    sidecar = spawn(**kwargs)
    sidecar.call("initialize", {"protocolVersion": "2", "capabilities": {"ui": caps} if caps else {}})
    return sidecar, asked


def start(sidecar, ws, trusted, **extra):
    return sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": trusted, **extra})


def call(sidecar, thread, name, arguments=None, call_id="c1", **extra):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}, **extra},
                        timeout=60)["result"]


def diagnostics(sidecar, kind=None):
    found = [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"]
    return [d for d in found if kind is None or d["kind"] == kind]


# -- ctx ------------------------------------------------------------------------------------------------


CTX = """
def look(call_id, arguments, ctx):
    ctx.settings["mutated"] = True  # a copy: the next call sees the original
    return json.dumps({"thread": ctx.thread_id, "cwd": ctx.cwd, "roots": ctx.roots, "settings": ctx.settings,
                       "ui": ctx.ui.available})
def old_style(call_id, arguments):
    return "one parameter still works"
def hook(event, ctx):
    trace('hook', ctx.thread_id, ctx.settings)
async def ahook(event, ctx):
    trace('ahook', ctx.cwd)
def activate(api):
    api.register_tool(name="look", description="", input_schema={}, execute=look)
    api.register_tool(name="old", description="", input_schema={}, execute=old_style)
    api.on("tool_call", hook)
    api.on("tool_result", ahook)
"""


def test_ctx_gives_thread_cwd_roots_settings_and_ui(spawn, ws):
    ws.extension("ctxy", CTX)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["ctxy"], cwd=str(ws.tmp), extensionSettings={"ctxy": {"level": 3}})["threadId"]
    for _ in range(2):
        seen = json.loads(call(sidecar, thread, "look")["content"][0]["text"])
        assert seen == {"thread": thread, "cwd": str(ws.tmp), "roots": [str(ws.root)],
                        "settings": {"level": 3, "mutated": True}, "ui": True}
    assert call(sidecar, thread, "old")["content"][0]["text"] == "one parameter still works"
    assert ["hook", thread, {"level": 3}] in ws.events() and ["ahook", str(ws.tmp)] in ws.events()


def test_settings_for_an_untrusted_or_unknown_extension_are_ignored_with_a_diagnostic(spawn, ws):
    ws.extension("ctxy", CTX)
    ws.extension("other", "def activate(api):\n    pass\n")
    sidecar, _ = start_editor(spawn, capabilities=None)
    result = start(sidecar, ws, ["ctxy"], extensionSettings={"other": {"a": 1}, "ghost": {"b": 2}, "ctxy": {}})
    ignored = sorted(d["name"] for d in result["diagnostics"] if d["kind"] == "settings_ignored")
    assert ignored == ["ghost", "other"]
    assert json.loads(call(sidecar, result["threadId"], "look")["content"][0]["text"])["ui"] is False


# -- asking the editor ------------------------------------------------------------------------------------


GATE = """
def gate(event, ctx):
    args = event["call"]["arguments"]
    if "rm -rf" in args.get("command", ""):
        if not ctx.ui.confirm("Dangerous command", "Run " + args["command"] + "?"):
            trace('denied')
            return {"block": True, "reason": "the user said no"}
        trace('allowed')
def shell(call_id, arguments):
    trace('core', arguments["command"])
    return "ran " + arguments["command"]
def activate(api):
    api.register_tool(name="shell", description="Run a command.",
                      input_schema={"type": "object", "properties": {"command": {"type": "string"}},
                                    "required": ["command"]}, execute=shell)
    api.on("tool_call", gate)
"""


@pytest.mark.parametrize("answer, allowed", [
    (lambda m: {"result": {"confirmed": True}}, True),
    (lambda m: {"result": {"confirmed": False}}, False),
    (lambda m: {"error": {"code": -32000, "message": "no dialog today"}}, False),
    (lambda m: Malformed({"result": {"confirmed": "yes"}}), False),
])
def test_confirm_allowed_denied_and_fail_closed(spawn, ws, answer, allowed):
    ws.extension("gate", GATE)
    sidecar, asked = start_editor(spawn, {"ui/confirm": answer})
    thread = start(sidecar, ws, ["gate"])["threadId"]
    result = call(sidecar, thread, "shell", {"command": "rm -rf build"}, call_id="k1")
    (request,) = [m for m in asked if m["method"] == "ui/confirm"]
    assert request["params"] == {"threadId": thread, "extensionId": "gate", "title": "Dangerous command",
                                 "message": "Run rm -rf build?", "callId": "k1", "tool": "shell",
                                 "arguments": {"command": "rm -rf build"}}
    if allowed:
        assert result == {"toolCallId": "k1", "toolName": "shell", "content": [{"type": "text",
                          "text": "ran rm -rf build"}], "details": {}, "isError": False}
    else:
        assert result["details"]["blocked"] == {"extensionId": "gate", "kind": "deny", "reason": "the user said no"}
        assert not any(e[0] == "core" for e in ws.events())


def test_confirm_without_the_capability_is_no_and_asks_nobody(spawn, ws):
    ws.extension("gate", GATE)
    sidecar, asked = start_editor(spawn, {"ui/confirm": lambda m: {"result": {"confirmed": True}}},
                                  capabilities={"notify": True})
    thread = start(sidecar, ws, ["gate"])["threadId"]
    assert call(sidecar, thread, "shell", {"command": "rm -rf /"})["details"]["blocked"]["kind"] == "deny"
    assert asked == []


def test_confirm_unanswered_within_ui_timeout_is_no(spawn, ws):
    ws.extension("gate", GATE)
    sidecar, asked = start_editor(spawn)  # the editor never answers
    thread = start(sidecar, ws, ["gate"], limits={"uiTimeoutMs": 400})["threadId"]
    started = time.monotonic()
    assert call(sidecar, thread, "shell", {"command": "rm -rf x"})["details"]["blocked"]["reason"] == \
        "the user said no"
    assert time.monotonic() - started < 5
    ui_id = next(m["id"] for m in asked if m["method"] == "ui/confirm")
    cancels = [n for n in sidecar.notifications if n["method"] == "$/cancelRequest"]
    assert cancels == [{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": ui_id}}]


def test_the_users_time_does_not_count_against_the_hook_timeout(spawn, ws):
    ws.extension("gate", GATE)

    def slow_yes(message):
        time.sleep(1.0)  # the user thinks for longer than hookTimeoutMs
        return {"result": {"confirmed": True}}

    sidecar, _ = start_editor(spawn, {"ui/confirm": slow_yes})
    thread = start(sidecar, ws, ["gate"], limits={"hookTimeoutMs": 300})["threadId"]
    result = call(sidecar, thread, "shell", {"command": "rm -rf tmp"})
    assert result["isError"] is False and result["content"][0]["text"] == "ran rm -rf tmp"


def test_cancelling_a_call_that_waits_for_the_user_cancels_the_question(spawn, ws):
    ws.extension("gate", GATE)
    sidecar, asked = start_editor(spawn)
    thread = start(sidecar, ws, ["gate"])["threadId"]
    request_id = sidecar.request_async("tools/call", {"threadId": thread, "call": {
        "id": "k", "name": "shell", "arguments": {"command": "rm -rf src"}}})
    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:
        sidecar._dispatch(sidecar.next_message(10))
    sidecar.notify("$/cancelRequest", {"id": request_id})
    response = sidecar.wait_for(request_id, 10)
    assert response["error"]["data"]["kind"] == "cancelled"
    ui_id = asked[0]["id"]
    deadline = time.monotonic() + 5
    while not any(n["method"] == "$/cancelRequest" for n in sidecar.notifications) and time.monotonic() < deadline:
        try:
            sidecar._dispatch(sidecar.next_message(0.2))
        except Exception:  # noqa: BLE001
            pass
    assert {"method": "$/cancelRequest", "params": {"id": ui_id}}.items() <= next(
        n for n in sidecar.notifications if n["method"] == "$/cancelRequest").items()
    time.sleep(0.5)
    assert "core" not in [e[0] for e in ws.events()]


def test_eof_while_waiting_for_the_user_answers_no_and_exits(spawn, ws):
    ws.extension("gate", GATE)
    sidecar, asked = start_editor(spawn)
    thread = start(sidecar, ws, ["gate"])["threadId"]
    request_id = sidecar.request_async("tools/call", {"threadId": thread, "call": {
        "id": "k", "name": "shell", "arguments": {"command": "rm -rf src"}}})
    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:
        sidecar._dispatch(sidecar.next_message(10))
    sidecar.close_stdin()
    messages = sidecar.drain(20)
    (answer,) = [m for m in messages if m.get("id") == request_id]
    assert answer["result"]["result"]["details"]["blocked"]["reason"] == "the user said no"
    assert sidecar.proc.wait(10) == 0
    assert "core" not in [e[0] for e in ws.events()]


ASK = """
def pick(call_id, arguments, ctx):
    choice = ctx.ui.select("Pick one", ["red", {"value": "g", "label": "Green", "description": "grass"}])
    name = ctx.ui.input("Your name", placeholder="e.g. Ada")
    ctx.ui.notify("picked " + str(choice), level="warning")
    ctx.ui.set_status("mode", "picking")
    ctx.ui.set_status("mode", None)
    return json.dumps([choice, name])  # v4 §2: the v2 values, plain (a str, or None)
async def apick(call_id, arguments, ctx):
    await ctx.ui.notify("async note")
    await ctx.ui.set_status("mode", "async")
    return json.dumps([await ctx.ui.select("Pick", ["a", "b"]), await ctx.ui.confirm("Sure?", "Really?")])
def activate(api):
    api.register_tool(name="pick", description="", input_schema={}, execute=pick)
    api.register_tool(name="apick", description="", input_schema={}, execute=apick)
"""


def test_select_input_notify_and_status_sync_and_async(spawn, ws):
    ws.extension("asker", ASK)
    answers = {"ui/select": lambda m: {"result": {"value": m["params"]["options"][-1]["value"]}},
               "ui/input": lambda m: {"result": {"value": "Ada"}},
               "ui/confirm": lambda m: {"result": {"confirmed": True}}}
    sidecar, asked = start_editor(spawn, answers)
    thread = start(sidecar, ws, ["asker"])["threadId"]
    assert json.loads(call(sidecar, thread, "pick")["content"][0]["text"]) == ["g", "Ada"]
    select = next(m for m in asked if m["method"] == "ui/select")
    assert select["params"]["options"] == [{"value": "red", "label": "red"},
                                           {"value": "g", "label": "Green", "description": "grass"}]
    assert next(m for m in asked if m["method"] == "ui/input")["params"]["placeholder"] == "e.g. Ada"
    kinds = [(n["method"], n["params"].get("level"), n["params"].get("text", "-")) for n in sidecar.notifications
             if n["method"].startswith("ui/")]
    assert kinds == [("ui/notify", "warning", "-"), ("ui/status", None, "picking"), ("ui/status", None, None)]
    assert json.loads(call(sidecar, thread, "apick")["content"][0]["text"]) == ["b", True]
    awaited = [(n["method"], n["params"].get("message", n["params"].get("text"))) for n in sidecar.notifications
               if n["method"].startswith("ui/")][3:]
    assert awaited == [("ui/notify", "async note"), ("ui/status", "async")]


def test_an_answer_that_is_not_an_option_is_none_and_notify_without_capability_goes_to_stderr(spawn, ws):
    ws.extension("asker", ASK)
    answers = {"ui/select": lambda m: Malformed({"result": {"value": "purple"}}),
               "ui/input": lambda m: Malformed({"result": {"value": 42}})}
    sidecar, _ = start_editor(spawn, answers, capabilities={"select": True, "input": True})
    thread = start(sidecar, ws, ["asker"])["threadId"]
    assert json.loads(call(sidecar, thread, "pick")["content"][0]["text"]) == [None, None]
    assert not [n for n in sidecar.notifications if n["method"].startswith("ui/")]
    sidecar.close()
    assert any(b"picked None" in line for line in sidecar.stderr_lines)


# -- arguments: validation and rewriting ----------------------------------------------------------------


ARGS = """
def before(event):
    trace('before', event["call"]["arguments"])
    args = event["call"]["arguments"]
    if args.get("mode") == "rewrite":
        return {"arguments": {"name": args["name"].upper(), "mode": "done"}}
    if args.get("mode") == "break":
        return {"block": False, "arguments": {"name": 42}}
def hello(call_id, arguments):
    trace('core', arguments)
    return "hello " + arguments["name"]
def activate(api):
    api.register_tool(name="hello", description="Greet.", input_schema={
        "type": "object", "properties": {"name": {"type": "string"}, "mode": {"type": "string"}},
        "required": ["name"], "additionalProperties": False}, execute=hello)
    api.on("tool_call", before)
"""


@pytest.mark.parametrize("arguments, path", [({}, "$"), ({"name": 42}, "$.name"), ({"name": "a", "x": 1}, "$")])
def test_arguments_are_checked_against_the_schema_before_any_hook(spawn, ws, arguments, path):
    ws.extension("greeter", ARGS)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["greeter"])["threadId"]
    result = call(sidecar, thread, "hello", arguments, call_id="v")
    assert result["toolCallId"] == "v" and result["isError"] is True
    assert result["details"]["kind"] == "invalid_arguments" and result["details"]["path"] == path
    assert ws.events() == []  # no hook, no core


def test_a_before_hook_rewrites_arguments_and_a_bad_rewrite_fails_closed(spawn, ws):
    ws.extension("greeter", ARGS)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["greeter"])["threadId"]
    result = call(sidecar, thread, "hello", {"name": "ada", "mode": "rewrite"})
    assert result["content"][0]["text"] == "hello ADA"
    assert result["details"]["argumentsRewrittenBy"] == ["greeter"]
    assert ["core", {"name": "ADA", "mode": "done"}] in ws.events()
    broken = call(sidecar, thread, "hello", {"name": "ada", "mode": "break"})
    assert broken["details"]["blocked"]["kind"] == "throw" and broken["details"]["blocked"]["extensionId"] == "greeter"
    assert "inputSchema" in broken["details"]["blocked"]["reason"]
    assert len([e for e in ws.events() if e[0] == "core"]) == 1
    assert diagnostics(sidecar, "throw")[0]["hook"] == "tool_call"


def test_rewritten_arguments_reach_an_editor_tool_revalidated(spawn, ws):
    ws.extension("greeter", ARGS.replace('if args.get("mode") == "rewrite"', 'if args.get("mode") == "rewrite" or '
                                                                             'event["call"]["name"] == "ed"'))
    asked, kwargs, _ = editor({"item/tool/call": lambda m: {"result": {"contentItems": [
        {"type": "inputText", "text": json.dumps(m["params"]["arguments"])}], "success": True}}})
    sidecar = spawn(**kwargs)
    sidecar.call("initialize")
    thread = start(sidecar, ws, ["greeter"], dynamicTools=[{"name": "ed", "description": "", "inputSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}])["threadId"]
    result = call(sidecar, thread, "ed", {"name": "bo"})
    assert json.loads(result["content"][0]["text"]) == {"name": "BO", "mode": "done"}
    assert result["details"]["argumentsRewrittenBy"] == ["greeter"]


def test_an_extension_tool_with_an_invalid_schema_fails_its_extension(spawn, ws):
    ws.extension("bad", "def activate(api):\n    api.register_tool(name='b', description='', "
                        "input_schema={'type': 'no-such-type'}, execute=lambda c, a: 'x')\n")
    sidecar, _ = start_editor(spawn)
    result = start(sidecar, ws, ["bad"])
    entry = result["catalog"]["extensions"][0]
    assert entry["status"] == "failed" and "not valid JSON Schema" in entry["error"]
    assert [t["name"] for t in result["tools"]] == ["load_skill"]


# -- transforms and observers ---------------------------------------------------------------------------


MASK = """
import re
SECRET = re.compile(r"sk-live-[A-Za-z0-9]+")
def leak(call_id, arguments):
    return {"content": "key=sk-live-ABC123 and more", "details": {"raw": "sk-live-ABC123"}}
def mask(event):
    result = event["result"]
    if os.environ.get("MASK_MODE") == "raise":
        raise RuntimeError("redaction broke")
    if os.environ.get("MASK_MODE") == "garbage":
        return {"content": 5}
    text = result["content"][0]["text"]
    if SECRET.search(text):
        return {"content": SECRET.sub("[redacted]", text), "details": {}}
def observe(event):
    trace('observer', event["result"])
def activate(api):
    api.register_tool(name="leak", description="", input_schema={}, execute=leak)
    api.on("tool_result_transform", mask)
    api.on("tool_result", observe)
"""


def test_a_transform_redacts_and_observers_see_the_transformed_result(spawn, ws):
    ws.extension("masker", MASK)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["masker"])["threadId"]
    result = call(sidecar, thread, "leak")
    assert result["content"] == [{"type": "text", "text": "key=[redacted] and more"}]
    assert result["details"] == {"transformedBy": ["masker"]}
    deadline = time.monotonic() + 10  # v3 §2: observers run after the answer
    while not [e for e in ws.events() if e[0] == "observer"] and time.monotonic() < deadline:
        time.sleep(0.02)
    (observed,) = [e[1] for e in ws.events() if e[0] == "observer"]
    assert observed == {"content": result["content"], "details": result["details"], "isError": False}


@pytest.mark.parametrize("mode", ["raise", "garbage"])
def test_a_failing_transform_withholds_the_result_and_leaks_nothing(spawn, ws, mode):
    from harness_sidecar.console.client import child_env

    ws.extension("masker", MASK)
    asked, kwargs, caps = editor()
    sidecar = spawn(env=child_env({"MASK_MODE": mode}), **kwargs)
    sidecar.call("initialize", {"capabilities": {"ui": caps}})
    thread = start(sidecar, ws, ["masker"])["threadId"]
    raw = sidecar.request("tools/call", {"threadId": thread, "call": {"id": "w", "name": "leak", "arguments": {}}})
    assert "sk-live" not in json.dumps(raw)
    result = raw["result"]["result"]
    assert result["toolCallId"] == "w" and result["isError"] is True
    assert result["details"]["withheld"]["extensionId"] == "masker" and result["details"]["withheld"]["kind"] == "throw"
    assert "sk-live" not in json.dumps(sidecar.notifications)
    deadline = time.monotonic() + 10  # v3 §2: observers run after the answer
    while not [e for e in ws.events() if e[0] == "observer"] and time.monotonic() < deadline:
        time.sleep(0.02)
    (observed,) = [e[1] for e in ws.events() if e[0] == "observer"]
    assert "withheld" in observed["details"] and "sk-live" not in json.dumps(observed)


# -- commands ---------------------------------------------------------------------------------------------


COMMANDS = """
TODOS = []
def add(arguments, ctx):
    TODOS.append(arguments["text"])
    return "added " + arguments["text"]
def todos(arguments):
    return {"content": "\\n".join(TODOS) or "(none)", "details": {"count": len(TODOS)}}
def boom(arguments):
    raise ValueError("command exploded")
def slow(arguments):
    time.sleep(10)
def activate(api):
    api.register_command("todo-add", "Add a todo.", add, input_schema={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    api.register_command("todos", "List the todos.", todos)
    api.register_command("boom", "Fails.", boom)
    api.register_command("slow", "Sleeps.", slow)
    api.on("tool_call", lambda e: trace('tool hook'))
"""


def test_commands_list_run_and_fail(spawn, ws):
    ws.extension("todo", COMMANDS)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["todo"], limits={"commandTimeoutMs": 300})["threadId"]
    listed = sidecar.call("commands/list", {"threadId": thread})["commands"]
    assert [c["name"] for c in listed] == ["todo-add", "todos", "boom", "slow"]
    assert listed[0]["origin"] == {"kind": "extension", "id": "todo"} and "inputSchema" in listed[0]
    assert "inputSchema" not in listed[1]
    run = lambda name, args=None: sidecar.request("commands/run", {"threadId": thread, "name": name,  # noqa: E731
                                                                   "arguments": args or {}})
    assert run("todo-add", {"text": "write tests"})["result"]["content"][0]["text"] == "added write tests"
    assert run("todos")["result"] == {"content": [{"type": "text", "text": "write tests"}],
                                      "details": {"count": 1}, "isError": False}
    assert run("todo-add", {"text": 5})["error"]["data"]["kind"] == "invalid_arguments"
    assert run("nope")["error"]["data"]["kind"] == "command_not_found"
    failed = run("boom")["result"]
    assert failed["isError"] and "command exploded" in failed["content"][0]["text"]
    slow = run("slow")["result"]
    assert slow["isError"] and slow["details"]["kind"] == "timeout"
    assert ws.events() == []  # commands are the user's: tool hooks do not run


# -- lifecycle ---------------------------------------------------------------------------------------------


LIFECYCLE = """
def started(event, ctx):
    trace('start', event)
def closed(event):
    trace('close', event)
def broken(event):
    raise RuntimeError("start handler broke")
def activate(api):
    api.on("thread_start", started)
    api.on("thread_start", broken)
    api.on("thread_close", closed)
    api.register_tool(name="ping", description="", input_schema={}, execute=lambda c, a: "pong")
"""


@pytest.mark.parametrize("ending", ["close", "shutdown", "eof"])
def test_thread_start_and_close_handlers(spawn, ws, ending):
    ws.extension("life", LIFECYCLE)
    sidecar, _ = start_editor(spawn)
    result = start(sidecar, ws, ["life"], cwd=str(ws.tmp))
    thread = result["threadId"]
    # v4 §5: thread_start says why the thread started
    assert ["start", {"threadId": thread, "cwd": str(ws.tmp), "roots": [str(ws.root)], "reason": "startup"}] \
        in ws.events()
    assert result["catalog"]["extensions"][0]["status"] == "loaded"  # a faulty handler is a diagnostic only
    fault = diagnostics(sidecar, "throw")[0]
    assert fault["hook"] == "thread_start" and fault["extensionId"] == "life"
    if ending == "close":
        assert sidecar.call("thread/close", {"threadId": thread}) == {"state": {}}  # v4 §5: the extensions' state
    elif ending == "shutdown":
        assert sidecar.call("shutdown") is None
        sidecar.notify("exit")
    else:
        sidecar.close_stdin()
    assert sidecar.proc.wait(15) == 0 if ending != "close" else True
    assert ["close", {"threadId": thread, "reason": ending}] in ws.events()


# -- context -----------------------------------------------------------------------------------------------


def test_context_contributions_within_and_over_the_budget(spawn, ws):
    ws.extension("rules", "def rules(event):\n    return 'Project rule: use tabs. Active: ' + ','.join("
                          "event['activeSkills'])\ndef activate(api):\n    api.on('context', rules)\n")
    ws.extension("long", "def more(event):\n    return 'x' * 3000\ndef activate(api):\n    api.on('context', more)\n")
    ws.extension("bad", "def b(event):\n    raise KeyError('no')\ndef activate(api):\n    api.on('context', b)\n")
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["rules", "bad", "long"], limits={"extensionContextBytes": 2000})["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "review"})
    prompt = sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    assert prompt.index("# Active skill: review") < prompt.index("# Extension: rules")
    assert "# Extension: rules\n\nProject rule: use tabs. Active: review\n" in prompt
    assert "# Extension: long" not in prompt and "1 more extension section left out" in prompt
    assert diagnostics(sidecar, "throw")[0]["hook"] == "context"
    roomy = start(sidecar, ws, ["rules", "long"], limits={"extensionContextBytes": 4000})["threadId"]
    prompt = sidecar.call("context/build", {"threadId": roomy})["systemPrompt"]
    assert prompt.index("# Extension: rules") < prompt.index("# Extension: long")


# -- input -------------------------------------------------------------------------------------------------


INPUT = """
def shout(event):
    text = event["text"]
    if text.startswith("!"):
        return {"handled": True, "reason": "bang commands are local"}
    if text == "explode":
        raise RuntimeError("input handler broke")
    if text.startswith("please "):
        return {"text": text[len("please "):]}
def todo(arguments):
    return "todo: " + arguments.get("text", "")
def activate(api):
    api.on("input", shout)
    api.register_command("todo", "Add a todo.", todo)
"""


@pytest.mark.parametrize("typed, expected", [
    ("hello there", {"action": "send", "message": {"role": "user", "content": "hello there"}}),
    ("please hello", {"action": "send", "message": {"role": "user", "content": "hello"}}),
    ("!ls", {"action": "handled", "by": {"kind": "extension", "id": "shaper"}, "reason": "bang commands are local"}),
    ('/review path=src/a.ts focus="error handling"',
     {"action": "send", "message": {"role": "user", "content": "Review src/a.ts, focus on error handling.\n"}}),
    ('please /review path=a focus=b',
     {"action": "send", "message": {"role": "user", "content": "Review a, focus on b.\n"}}),
    ("/todo text=tests", {"action": "handled", "by": {"kind": "command", "id": "todo", "extensionId": "shaper"},
                          "result": {"content": [{"type": "text", "text": "todo: tests"}], "details": {},
                                     "isError": False}}),
    ("/unknown x=1", {"action": "send", "message": {"role": "user", "content": "/unknown x=1"}}),
])
def test_input_submit_every_branch(spawn, ws, typed, expected):
    ws.extension("shaper", INPUT)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["shaper"])["threadId"]
    assert sidecar.call("input/submit", {"threadId": thread, "text": typed}) == expected


@pytest.mark.parametrize("typed, kind", [("explode", "input_blocked"), ("/review path=a focus", "invalid_arguments"),
                                         ("/review path=a", "missing_argument")])
def test_input_submit_errors(spawn, ws, typed, kind):
    ws.extension("shaper", INPUT)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["shaper"])["threadId"]
    response = sidecar.request("input/submit", {"threadId": thread, "text": typed})
    assert response["error"]["data"]["kind"] == kind
    if kind == "input_blocked":
        assert response["error"]["data"]["extensionId"] == "shaper"


# -- v3: registration of raw commands and handler deadlines -----------------------------------------------


@pytest.mark.parametrize("registration, error", [
    ('api.register_command(name="c", description="", handler=lambda a: None, raw_arguments=True,\n'
     '                         input_schema={"type": "object"})', "give it no input_schema"),
    ('api.on("turn_end", lambda e: None, timeout_ms=0)', "timeout_ms must be a positive int"),
    ('api.register_command(name="c", description="", handler=lambda a: None, timeout_ms=1.5)',
     "timeout_ms must be a positive int"),
    ('api.on("turn_ended", lambda e: None)', "unknown event 'turn_ended'"),
])
def test_a_wrong_raw_command_or_deadline_fails_the_extension_with_the_reason(spawn, ws, registration, error):
    ws.extension("wrong", f"def activate(api):\n    {registration}\n")
    ws.extension("fine", "def activate(api):\n    api.on('turn_end', lambda e: {'context': 'fine ran'})\n")
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["wrong", "fine"])
    status = {e["id"]: e for e in started["catalog"]["extensions"]}
    assert status["wrong"]["status"] == "failed" and error in status["wrong"]["error"]
    assert status["fine"]["status"] == "loaded"
    assert sidecar.call("loop/event", {"threadId": started["threadId"], "event": "turn_end"})[
        "additionalContext"] == ["fine ran"]


def test_an_input_handler_that_changes_the_text_in_place_is_told_the_right_form(spawn, ws):
    ws.extension("shouty", "def shout(event):\n    event['text'] = event['text'].upper()\n"
                           "def activate(api):\n    api.on('input', shout)\n")
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["shouty"])["threadId"]
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "hello"})
    assert answer == {"action": "send", "message": {"role": "user", "content": "hello"}}  # ignored, as before …
    (notice,) = diagnostics(sidecar, "handler_return_ignored")  # … but said
    assert notice["extensionId"] == "shouty" and notice["hook"] == "input"
    assert "return {'text': ...}" in notice["message"]
