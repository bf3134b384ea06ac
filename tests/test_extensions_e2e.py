"""Trusted extensions and hook-wrapped tool calls, through the real process.

Extensions here write what happens to them into trace files, so the order of events
(trust → import → activate → commit → hooks → core) is observed from outside.
"""

from __future__ import annotations

import hashlib
import time

import pytest
from helpers import TraceWorkspace, add_skill, write


@pytest.fixture
def workspace(tmp_path):
    """A project root with two skills, and a way to add extensions that trace into one file."""
    ws = TraceWorkspace.make(tmp_path, ("os", "sys", "time", "asyncio"), trace_import=True)
    add_skill(ws.root, "forbidden", "Never allowed.", "FORBIDDEN BODY\n")
    return ws


def start(sidecar, ws, trusted, **extra):
    params = {"roots": [str(ws.root)], "trustedExtensions": trusted, **extra}
    return sidecar.call("thread/start", params)


def call(sidecar, thread, name, arguments=None, call_id="call-1"):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}})["result"]


NOTE_TOOL = """
def note(call_id, arguments):
    trace('core', call_id, arguments)
    return {"content": "noted " + arguments.get("text", ""), "details": {"n": 1}}

def activate(api):
    trace('activate', api.id)
    api.register_tool(name="note", description="Take a note.",
                      input_schema={"type": "object"}, execute=note)
"""


def status_of(result, ext_id):
    return next(e for e in result["catalog"]["extensions"] if e["id"] == ext_id)


def test_trust_then_import_then_activate_in_trust_order(spawn, workspace):
    workspace.extension("alpha", NOTE_TOOL.replace('name="note"', 'name="alpha_note"'))
    workspace.extension("beta", NOTE_TOOL.replace('name="note"', 'name="beta_note"'))
    sidecar = spawn()
    result = start(sidecar, workspace, ["beta", "alpha"])
    assert workspace.events() == [["import", "beta"], ["activate", "beta"], ["import", "alpha"],
                                  ["activate", "alpha"]]
    assert [t["name"] for t in result["tools"]] == ["load_skill", "beta_note", "alpha_note"]
    assert result["tools"][1]["origin"] == {"kind": "extension", "id": "beta"}
    entry = status_of(result, "alpha")
    source = workspace.root / "extensions/alpha.py"
    assert entry == {"id": "alpha", "root": str(workspace.root), "path": str(source),
                     "source": {"kind": "root", "root": str(workspace.root)},
                     "sha256": hashlib.sha256(source.read_bytes()).hexdigest(), "status": "loaded"}


def test_untrusted_code_is_never_executed(spawn, workspace, tmp_path):
    marker = tmp_path / "imported"
    workspace.extension("evil", f"open({str(marker)!r}, 'w').write('ran')\n" + NOTE_TOOL)
    write(workspace.root / "extensions/pkg/__init__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    sidecar = spawn()
    result = start(sidecar, workspace, [])
    assert not marker.exists() and workspace.events() == []
    assert status_of(result, "evil")["status"] == "skipped_untrusted"
    assert status_of(result, "pkg")["status"] == "skipped_untrusted"
    assert [t["name"] for t in result["tools"]] == ["load_skill"]
    assert call(sidecar, result["threadId"], "note")["details"]["kind"] == "tool_not_found"


def test_sha256_pin_match_and_mismatch(spawn, workspace):
    path = workspace.extension("pinned", NOTE_TOOL)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    sidecar = spawn()
    ok = start(sidecar, workspace, [{"id": "pinned", "sha256": digest.upper()}])
    assert status_of(ok, "pinned")["status"] == "loaded"
    bad = start(sidecar, workspace, [{"id": "pinned", "sha256": "0" * 64}])
    entry = status_of(bad, "pinned")
    assert entry["status"] == "hash_mismatch" and digest in entry["error"]
    assert workspace.events() == [["import", "pinned"], ["activate", "pinned"]]  # the mismatch never imported
    assert any(d["kind"] == "hash_mismatch" for d in bad["diagnostics"])


def test_pin_refuses_malformed_hash(spawn, workspace):
    sidecar = spawn()
    response = sidecar.request("thread/start", {"roots": [str(workspace.root)],
                                                "trustedExtensions": [{"id": "x", "sha256": "abc"}]})
    assert response["error"]["data"] == {"kind": "invalid_params", "field": "trustedExtensions[0].sha256"}


def test_activate_raising_after_registering_leaves_nothing(spawn, workspace):
    workspace.extension("half", """
def activate(api):
    api.register_tool(name="half_tool", description="", input_schema={}, execute=lambda c, a: "x")
    api.on("tool_call", lambda event: {"block": True, "reason": "half hook"})
    raise RuntimeError("changed my mind")
""")
    workspace.extension("whole", NOTE_TOOL)
    sidecar = spawn()
    result = start(sidecar, workspace, ["half", "whole"])
    entry = status_of(result, "half")
    assert entry["status"] == "failed" and "RuntimeError: changed my mind" in entry["error"]
    assert [t["name"] for t in result["tools"]] == ["load_skill", "note"]
    out = call(sidecar, result["threadId"], "note", {"text": "hi"})
    assert out["isError"] is False  # the staged hook was never committed
    assert any(d["kind"] == "extension_failed" for d in result["diagnostics"])


@pytest.mark.parametrize("code, reason", [
    ("def activate(api):\n    api.register_tool(name='load_skill', description='', input_schema={}, "
     "execute=lambda c, a: 'x')\n", "already registered by builtin"),
    ("def activate(api):\n    api.register_tool(name='editor_tool', description='', input_schema={}, "
     "execute=lambda c, a: 'x')\n", "already registered by dynamic"),
    ("def activate(api):\n    api.register_tool(name='note', description='', input_schema={}, "
     "execute=lambda c, a: 'x')\n", "already registered by extension 'first'"),
    ("def activate(api):\n    for i in range(2):\n        api.register_tool(name='twice', description='', "
     "input_schema={}, execute=lambda c, a: 'x')\n", "registers the tool 'twice' twice"),
    ("def activate(api):\n    api.on('tool_call', lambda e: {'block': True})\n"
     "    api.register_tool(name='bad name!', description='', input_schema={}, execute=lambda c, a: 'x')\n",
     "ValueError"),
    ("def activate(api):\n    api.on('before_everything', print)\n", "unknown event"),
    ("x = 1\n", "defines no activate(api)"),
    ("def activate(api:\n", "SyntaxError"),
    ("import module_that_does_not_exist\n", "ModuleNotFoundError"),
    ("import sys\nsys.exit(3)\n", "SystemExit"),
])
def test_a_failing_extension_registers_nothing_and_others_load(spawn, workspace, code, reason):
    workspace.extension("first", NOTE_TOOL)
    workspace.extension("second", code)
    sidecar = spawn()
    result = start(sidecar, workspace, ["first", "second"],
                   dynamicTools=[{"name": "editor_tool", "description": "", "inputSchema": {}}])
    entry = status_of(result, "second")
    assert entry["status"] == "failed" and reason in entry["error"], entry
    assert [t["name"] for t in result["tools"]] == ["load_skill", "editor_tool", "note"]
    assert call(sidecar, result["threadId"], "note")["isError"] is False  # nothing of 'second' blocks


def test_registration_after_activate_returns_is_refused(spawn, workspace):
    workspace.extension("late", """
API = []
def tool(call_id, arguments):
    try:
        API[0].register_tool(name="sneaky", description="", input_schema={}, execute=tool)
    except Exception as exc:
        return type(exc).__name__
    return "registered"
def activate(api):
    API.append(api)
    api.register_tool(name="late", description="", input_schema={}, execute=tool)
""")
    sidecar = spawn()
    thread = start(sidecar, workspace, ["late"])["threadId"]
    assert call(sidecar, thread, "late")["content"][0]["text"] == "RegistrationClosed"
    assert [t["name"] for t in sidecar.call("tools/list", {"threadId": thread})["tools"]] == ["load_skill", "late"]


GATES = NOTE_TOOL + """
def deny(event):
    trace('before', 'deny', event['call']['id'], event['call']['name'], event['call']['arguments'])
    if "SECRET" in event["call"]["arguments"].get("text", ""):
        return {"block": True, "reason": "no secrets"}

def allow_and_mutate(event):
    trace('before', 'mutate', event['call']['id'])
    event["call"]["arguments"]["text"] = "MUTATED"
    event["call"]["name"] = "other"
    return {"block": False}

def observe(event):
    trace('after', 'observe', event['result']['content'][0]['text'])
    event["result"]["content"][0]["text"] = "MUTATED BY AFTER"
    event["result"]["isError"] = True

def observe_again(event):
    trace('after', 'again', event['result']['content'][0]['text'], event['result']['isError'])

def activate(api):
    trace('activate', api.id)
    api.register_tool(name="note", description="Take a note.", input_schema={"type": "object"}, execute=note)
    api.on("tool_call", allow_and_mutate)
    api.on("tool_call", deny)
    api.on("tool_result", observe)
    api.on("tool_result", observe_again)
"""


def test_deny_is_paired_with_the_call_and_the_core_never_runs(spawn, workspace):
    workspace.extension("gates", GATES)
    sidecar = spawn()
    thread = start(sidecar, workspace, ["gates"])["threadId"]
    result = call(sidecar, thread, "note", {"text": "a SECRET"}, call_id="call-42")
    assert result["toolCallId"] == "call-42" and result["toolName"] == "note" and result["isError"] is True
    assert result["details"]["blocked"] == {"extensionId": "gates", "kind": "deny", "reason": "no secrets"}
    events = workspace.events()
    assert not any(e[0] == "core" for e in events)
    assert not any(e[0] == "after" for e in events)  # a blocked call runs no after hooks


def test_hooks_cannot_change_what_others_see(spawn, workspace):
    workspace.extension("gates", GATES)
    sidecar = spawn()
    thread = start(sidecar, workspace, ["gates"])["threadId"]
    result = call(sidecar, thread, "note", {"text": "fine"}, call_id=7)
    assert result == {"toolCallId": 7, "toolName": "note", "content": [{"type": "text", "text": "noted fine"}],
                      "details": {"n": 1}, "isError": False}
    deadline = time.monotonic() + 10  # v3 §2: observers run after the answer
    while ["after", "again", "noted fine", False] not in workspace.events() and time.monotonic() < deadline:
        time.sleep(0.02)
    events = workspace.events()
    assert ["before", "deny", 7, "note", {"text": "fine"}] in events  # nor the next before hook
    assert ["core", 7, {"text": "fine"}] in events  # the before hook's mutation did not reach the core
    assert ["after", "observe", "noted fine"] in events
    assert ["after", "again", "noted fine", False] in events  # nor did the after hook's reach the next one


FAULTS = NOTE_TOOL + """
import threading
def block_sync(event):
    time.sleep(20)

async def block_async(event):
    await asyncio.sleep(20)

def throw(event):
    raise ValueError("hook exploded")

def exit_hook(event):
    raise SystemExit(9)

def bad_value(event):
    return "yes please"

def observer_throw(event):
    trace('after', 'throw')
    raise KeyError("observer exploded")

def observer_slow(event):
    trace('after', 'slow')
    time.sleep(20)

def observer_good(event):
    trace('after', 'good', event['result']['content'][0]['text'])

MODE = os.environ.get("HOOK_MODE", "")

def activate(api):
    api.register_tool(name="note", description="", input_schema={}, execute=note)
    before = {"sync": block_sync, "async": block_async, "throw": throw, "exit": exit_hook,
              "value": bad_value}.get(MODE)
    if before:
        api.on("tool_call", before)
        api.on("tool_call", lambda event: trace('before', 'second'))
    if MODE == "after":
        api.on("tool_result", observer_throw)
        api.on("tool_result", observer_slow)
        api.on("tool_result", observer_good)
"""


@pytest.mark.parametrize("mode, kind", [("sync", "timeout"), ("async", "timeout"), ("throw", "throw"),
                                        ("exit", "throw"), ("value", "throw")])
def test_before_hook_faults_fail_closed_with_a_diagnostic(spawn, workspace, mode, kind):
    from harness_sidecar.console.client import child_env

    workspace.extension("faulty", FAULTS)
    sidecar = spawn(env=child_env({"HOOK_MODE": mode}))
    thread = start(sidecar, workspace, ["faulty"], limits={"hookTimeoutMs": 300})["threadId"]
    started = time.monotonic()
    result = call(sidecar, thread, "note", {"text": "x"}, call_id="c9")
    assert time.monotonic() - started < 10
    assert result["isError"] is True and result["toolCallId"] == "c9" and result["toolName"] == "note"
    assert result["details"]["blocked"]["kind"] == kind and result["details"]["blocked"]["extensionId"] == "faulty"
    (diag,) = [n for n in sidecar.notifications if n["method"] == "thread/diagnostic"]
    assert diag["params"]["threadId"] == thread and diag["params"]["hook"] == "tool_call"
    assert diag["params"]["kind"] == kind and diag["params"]["extensionId"] == "faulty"
    events = workspace.events()
    assert not any(e[0] == "core" for e in events)
    assert ["before", "second"] not in events  # the first block short-circuits
    assert sidecar.call("tools/list", {"threadId": thread})  # still serving


def test_a_blocking_hook_does_not_freeze_other_requests(spawn, workspace):
    from harness_sidecar.console.client import child_env

    workspace.extension("faulty", FAULTS)
    sidecar = spawn(env=child_env({"HOOK_MODE": "sync"}))
    thread = start(sidecar, workspace, ["faulty"], limits={"hookTimeoutMs": 8000})["threadId"]
    slow = sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": "s", "name": "note"}})
    started = time.monotonic()
    assert sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    assert time.monotonic() - started < 4  # answered while the hook sleeps
    assert sidecar.wait_for(slow, 30)["result"]["result"]["details"]["blocked"]["kind"] == "timeout"


def test_after_hook_faults_are_reported_and_change_nothing(spawn, workspace):
    from harness_sidecar.console.client import child_env

    workspace.extension("faulty", FAULTS)
    sidecar = spawn(env=child_env({"HOOK_MODE": "after"}))
    thread = start(sidecar, workspace, ["faulty"], limits={"hookTimeoutMs": 300})["threadId"]
    result = call(sidecar, thread, "note", {"text": "x"})
    assert result["isError"] is False and result["content"] == [{"type": "text", "text": "noted x"}]
    # v3 §2: observers run after the answer; their faults follow it
    sidecar.request("tools/list", {"threadId": thread}, timeout=30)
    deadline = time.monotonic() + 10
    while len([n for n in sidecar.notifications if n["method"] == "thread/diagnostic"]) < 2 \
            and time.monotonic() < deadline:
        sidecar.request("tools/list", {"threadId": thread})
        time.sleep(0.05)
    kinds = [n["params"]["kind"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"]
    assert kinds == ["throw", "timeout"]
    assert all(n["params"]["hook"] == "tool_result" for n in sidecar.notifications)
    events = workspace.events()
    assert [e for e in events if e[0] == "core"] == [["core", "call-1", {"text": "x"}]]
    assert events.count(["after", "good", "noted x"]) == 1


CORES = """
def boom(call_id, arguments):
    raise RuntimeError("core exploded")
def leave(call_id, arguments):
    raise SystemExit(1)
def slow(call_id, arguments):
    time.sleep(20)
async def aslow(call_id, arguments):
    await asyncio.sleep(20)
async def afine(call_id, arguments):
    return {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "details": {"k": [1]}}
def weird(call_id, arguments):
    return 42
def activate(api):
    for fn in (boom, leave, slow, aslow, afine, weird):
        api.register_tool(name=fn.__name__, description="", input_schema={}, execute=fn)
"""


def test_core_failures_become_error_results(spawn, workspace):
    workspace.extension("cores", CORES)
    sidecar = spawn()
    thread = start(sidecar, workspace, ["cores"], limits={"toolTimeoutMs": 300})["threadId"]
    boom = call(sidecar, thread, "boom")
    assert boom["isError"] and "RuntimeError: core exploded" in boom["content"][0]["text"]
    leave = call(sidecar, thread, "leave")
    assert leave["isError"] and "SystemExit" in leave["content"][0]["text"]
    for name in ("slow", "aslow"):
        result = call(sidecar, thread, name)
        assert result["isError"] and result["details"]["kind"] == "timeout"
    assert call(sidecar, thread, "afine") == {"toolCallId": "call-1", "toolName": "afine", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "details": {"k": [1]}, "isError": False}
    weird = call(sidecar, thread, "weird")
    assert weird["isError"] and "unusable value" in weird["content"][0]["text"]


def test_unknown_tool_is_a_paired_error_without_hooks(spawn, workspace):
    workspace.extension("gates", GATES)
    sidecar = spawn()
    thread = start(sidecar, workspace, ["gates"])["threadId"]
    result = call(sidecar, thread, "nope", call_id="x1")
    assert result["toolCallId"] == "x1" and result["toolName"] == "nope" and result["isError"]
    assert result["details"] == {"kind": "tool_not_found"}
    assert not any(e[0] == "before" for e in workspace.events())


LOAD_GATE = """
def gate(event):
    call = event["call"]
    if call["name"] == "load_skill" and call["arguments"].get("name") == "forbidden":
        return {"block": True, "reason": "that skill is off limits"}
def activate(api):
    api.on("tool_call", gate)
"""


def test_load_skill_passes_hooks_and_activates(spawn, workspace):
    workspace.extension("gate", LOAD_GATE)
    sidecar = spawn()
    thread = start(sidecar, workspace, ["gate"])["threadId"]
    ok = call(sidecar, thread, "load_skill", {"name": "review"})
    assert ok["isError"] is False and ok["content"][0]["text"].startswith("REVIEW BODY\n\n---\nSkill directory: ")
    blocked = call(sidecar, thread, "load_skill", {"name": "forbidden"})
    assert blocked["details"]["blocked"]["reason"] == "that skill is off limits"
    built = sidecar.call("context/build", {"threadId": thread})
    # v4 §5: a skill load_skill activated is named, its body (the tool result) not pasted into the prompt again
    assert built["activeSkills"] == [{"name": "review", "path": ok["details"]["path"], "via": "load_skill"}]
    assert "REVIEW BODY" not in built["systemPrompt"] and "FORBIDDEN BODY" not in built["systemPrompt"]


@pytest.mark.parametrize("arguments", [{"name": "review", "resources": ["x"]}, {}, {"name": "../review"},
                                       {"name": "../../etc/passwd"}, {"name": 5}])
def test_load_skill_refuses_bad_arguments_before_touching_files(spawn, workspace, arguments):
    sidecar = spawn()
    thread = start(sidecar, workspace, [])["threadId"]
    result = call(sidecar, thread, "load_skill", arguments)
    assert result["isError"] and result["details"]["kind"] == "invalid_arguments"
    assert "REVIEW BODY" not in sidecar.call("context/build", {"threadId": thread})["systemPrompt"]


DYNAMIC = [{"name": "editor_selection", "description": "Selected text.", "inputSchema": {"type": "object"}}]


@pytest.mark.parametrize("answer, is_error, text", [
    ({"result": {"contentItems": [{"type": "inputText", "text": "sel"}], "success": True}}, False, "sel"),
    ({"result": {"contentItems": [{"type": "inputText", "text": "no file"}], "success": False}}, True, "no file"),
    ({"error": {"code": -32000, "message": "editor broke"}}, True, "editor broke"),
    ({"result": {"contentItems": "nope"}}, True, "malformed"),
    (None, True, "did not answer"),
])
def test_dynamic_tools_are_answered_by_the_editor(spawn, workspace, answer, is_error, text):
    asked = []

    def on_request(message):
        asked.append(message)
        return answer

    sidecar = spawn(on_request=on_request)
    thread = start(sidecar, workspace, [], dynamicTools=DYNAMIC, limits={"dynamicToolTimeoutMs": 500})["threadId"]
    result = call(sidecar, thread, "editor_selection", {"whole": True}, call_id="d1")
    assert result["toolCallId"] == "d1" and result["isError"] is is_error
    assert text in result["content"][0]["text"]
    assert asked[0]["method"] == "item/tool/call" and isinstance(asked[0]["id"], int)
    assert asked[0]["params"] == {"threadId": thread, "callId": "d1", "tool": "editor_selection",
                                  "arguments": {"whole": True}}


def test_a_late_dynamic_answer_is_ignored(spawn, workspace):
    held = []
    sidecar = spawn(on_request=lambda message: held.append(message) and None)
    thread = start(sidecar, workspace, [], dynamicTools=DYNAMIC, limits={"dynamicToolTimeoutMs": 300})["threadId"]
    assert call(sidecar, thread, "editor_selection")["details"]["kind"] == "timeout"
    sidecar.send({"jsonrpc": "2.0", "id": held[0]["id"], "result": {"contentItems": [], "success": True}})
    assert sidecar.call("tools/list", {"threadId": thread})["tools"]  # no harm, no extra output
    assert all("id" not in n for n in sidecar.notifications)


def test_blocked_dynamic_call_never_reaches_the_editor(spawn, workspace):
    workspace.extension("gate", "def activate(api):\n    api.on('tool_call', lambda e: {'block': True, "
                                "'reason': 'editor tools are off'})\n")
    asked = []
    sidecar = spawn(on_request=lambda m: asked.append(m) or {"result": {"contentItems": [], "success": True}})
    thread = start(sidecar, workspace, ["gate"], dynamicTools=DYNAMIC)["threadId"]
    assert call(sidecar, thread, "editor_selection")["details"]["blocked"]["kind"] == "deny"
    assert asked == []


def test_dynamic_tool_names_may_not_clash(spawn, workspace):
    sidecar = spawn()
    for tools in ([{"name": "load_skill"}], [{"name": "a"}, {"name": "a"}]):
        response = sidecar.request("thread/start", {"roots": [str(workspace.root)], "dynamicTools": tools})
        assert response["error"]["code"] == -32602


def test_threads_are_isolated(spawn, workspace):
    workspace.extension("gates", GATES)
    sidecar = spawn()
    trusted = start(sidecar, workspace, ["gates"])["threadId"]
    untrusted = start(sidecar, workspace, [])["threadId"]
    assert call(sidecar, trusted, "note", {"text": "a"})["isError"] is False
    assert call(sidecar, untrusted, "note", {"text": "a"})["details"]["kind"] == "tool_not_found"
    call(sidecar, trusted, "load_skill", {"name": "review"})
    assert "REVIEW BODY" not in sidecar.call("context/build", {"threadId": untrusted})["systemPrompt"]
    assert sidecar.call("thread/close", {"threadId": trusted}) == {"state": {}}  # v4 §5: the extensions' state
    assert sidecar.request("tools/list", {"threadId": trusted})["error"]["data"]["kind"] == "thread_not_found"


def test_same_id_in_two_roots_and_explicit_sources(spawn, workspace, tmp_path):
    user = tmp_path / "user"
    workspace.extension("shared", "def activate(api):\n    api.register_tool(name='which', description='', "
                                  "input_schema={}, execute=lambda c, a: 'project')\n")
    workspace.extension("shared", "def activate(api):\n    api.register_tool(name='which', description='', "
                                  "input_schema={}, execute=lambda c, a: 'user')\n", root=user)
    explicit = write(tmp_path / "elsewhere/shared.py", "def activate(api):\n    api.register_tool(name='which', "
                     "description='', input_schema={}, execute=lambda c, a: 'explicit')\n")
    sidecar = spawn()
    # v4: a grant by id alone matches both roots' files, so neither is imported (trust_ambiguous)
    ambiguous = sidecar.call("thread/start", {"roots": [str(workspace.root), str(user)],
                                              "trustedExtensions": ["shared"]})
    assert "which" not in [t["name"] for t in ambiguous["tools"]]
    assert status_of(ambiguous, "shared")["status"] == "skipped_untrusted"
    assert [d["candidates"] for d in ambiguous["diagnostics"] if d["kind"] == "trust_ambiguous"] == [
        [str(workspace.root / "extensions/shared.py"), str(user / "extensions/shared.py")]]
    # naming the winner's file chooses it
    a = sidecar.call("thread/start", {"roots": [str(workspace.root), str(user)], "trustedExtensions": [
        {"id": "shared", "path": str(workspace.root / "extensions/shared.py")}]})
    assert call(sidecar, a["threadId"], "which")["content"][0]["text"] == "project"
    assert any(d["kind"] == "shadowed" and d["path"] == str(user / "extensions/shared.py") for d in a["diagnostics"])
    b = sidecar.call("thread/start", {"roots": [str(user), str(workspace.root)], "trustedExtensions": ["shared"],
                                      "extensions": [{"id": "shared", "path": str(explicit)}]})
    assert call(sidecar, b["threadId"], "which")["content"][0]["text"] == "explicit"
    assert "root" not in status_of(b, "shared")
    assert call(sidecar, a["threadId"], "which")["content"][0]["text"] == "project"


def test_package_extension_with_relative_import(spawn, workspace):
    write(workspace.root / "extensions/pkgext/helper.py", "def greet():\n    return 'hello from helper'\n")
    write(workspace.root / "extensions/pkgext/__init__.py",
          "from . import helper\n"
          "def activate(api):\n"
          "    api.register_tool(name='greet', description='', input_schema={}, "
          "execute=lambda c, a: helper.greet())\n")
    sidecar = spawn()
    result = start(sidecar, workspace, ["pkgext"])
    assert status_of(result, "pkgext")["status"] == "loaded"
    assert call(sidecar, result["threadId"], "greet")["content"][0]["text"] == "hello from helper"
    before = status_of(result, "pkgext")["sha256"]
    write(workspace.root / "extensions/pkgext/helper.py", "def greet():\n    return 'changed'\n")
    assert status_of(start(sidecar, workspace, []), "pkgext")["sha256"] != before


def test_trusted_but_missing_extension_is_reported(spawn, workspace):
    sidecar = spawn()
    result = start(sidecar, workspace, ["ghost"])
    assert any(d["kind"] == "extension_not_found" and d["id"] == "ghost" for d in result["diagnostics"])


def test_async_activate_and_async_hooks(spawn, workspace):
    workspace.extension("asyncy", """
async def gate(event):
    await asyncio.sleep(0)
    if event["call"]["arguments"].get("stop"):
        return {"block": True, "reason": "async says no"}
async def tool(call_id, arguments):
    await asyncio.sleep(0)
    return "async ok"
async def activate(api):
    await asyncio.sleep(0)
    api.register_tool(name="atool", description="", input_schema={}, execute=tool)
    api.on("tool_call", gate)
""")
    sidecar = spawn()
    thread = start(sidecar, workspace, ["asyncy"])["threadId"]
    assert call(sidecar, thread, "atool")["content"][0]["text"] == "async ok"
    assert call(sidecar, thread, "atool", {"stop": True})["details"]["blocked"]["reason"] == "async says no"


def test_an_activate_that_hangs_fails_the_extension_not_the_thread(spawn, workspace):
    # The activate sleeps an hour: the thread must not wait for it. The bound below is generous (a loaded 2-core
    # machine restarts a host in seconds, never in minutes) and still far from the hour it would take otherwise.
    workspace.extension("hangs", "def activate(api):\n"
                                 "    time.sleep(3600)\n"
                                 "    api.register_tool(name='late', description='', input_schema={}, "
                                 "execute=lambda c, a: 'x')\n")
    workspace.extension("fine", NOTE_TOOL)
    sidecar = spawn()
    started = time.monotonic()
    result = sidecar.call("thread/start", {"roots": [str(workspace.root)], "trustedExtensions": ["hangs", "fine"],
                                           "limits": {"extensionTimeoutMs": 300}}, timeout=300)
    assert time.monotonic() - started < 300
    entry = status_of(result, "hangs")
    assert entry["status"] == "failed" and "did not finish within 300 ms" in entry["error"]
    assert [t["name"] for t in result["tools"]] == ["load_skill", "note"]
    assert status_of(result, "fine")["status"] == "loaded"


def test_api_offers_registration_only(spawn, workspace):
    workspace.extension("curious", """
def activate(api):
    trace('api', sorted(name for name in dir(api) if not name.startswith('_')), api.id, type(api.logger).__name__)
    api.logger.warning('hello from the extension logger')
""")
    sidecar = spawn()
    result = start(sidecar, workspace, ["curious"])
    assert status_of(result, "curious")["status"] == "loaded"
    assert ["api", ["events", "id", "logger", "on", "register_command", "register_tool"], "curious",
            "Logger"] in workspace.events()  # v4: `events`, Pi's pi.events (a bus between a thread's extensions)
    assert not sidecar.proc.poll()
    sidecar.close()
    assert any(b"hello from the extension logger" in line for line in sidecar.stderr_lines)


def test_a_package_with_a_file_linked_out_of_the_root_is_never_imported(spawn, workspace, tmp_path):
    import os

    marker = tmp_path / "imported"
    write(workspace.root / "extensions/leaky/__init__.py", f"open({str(marker)!r}, 'w').write('ran')\n"
                                                           "def activate(api):\n    pass\n")
    outside = write(tmp_path / "outside.py", "SECRET = 1\n")
    os.symlink(outside, workspace.root / "extensions/leaky/helper.py")
    sidecar = spawn()
    result = start(sidecar, workspace, ["leaky"])
    assert not marker.exists()
    assert "leaky" not in [e["id"] for e in result["catalog"]["extensions"]]
    assert any(d["kind"] == "path_escape" and d["path"].endswith("extensions/leaky") for d in result["diagnostics"])
