"""The tool vocabulary hooks were written for, and the handler fields (protocol-v4 §3), through the real
sidecar: ``hookAs`` on an editor tool and an MCP tool, ``if``, ``once``, ``async``, ``statusMessage``,
and the loop/event names for the events the editor fires.

The hook that must block is hookify's own ``pretooluse.py`` (tests/fixtures/hooks/hookify, Apache-2.0,
from anthropics/claude-plugins-official ``plugins/hookify``, unchanged; see its SOURCE.md): it matches
``Bash`` and reads ``tool_input.command`` — the editor's tool is ``run_command {cmd}``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers import changes_until, write
from test_command_hooks import Editor, _gone, _json_hook, _wait_for_file, one, ws  # noqa: F401 - ws: fixture
from test_hook_sources import check, hookify_settings, project

RUN_COMMAND = {"name": "run_command", "description": "Run a shell command in the editor's terminal.",
               "inputSchema": {"type": "object", "properties": {"cmd": {"type": "string"}, "cwd": {"type": "string"}},
                               "required": ["cmd"], "additionalProperties": False},
               "hookAs": {"name": "Bash", "input": {"command": "cmd"}}}


def start(spawn, roots: list[Path], cwd: Path, trusted: list[dict], editor: Editor | None = None,
          ui: dict | None = None, **extra):
    editor = editor or Editor()
    sidecar = spawn(initialize=False, on_request=editor)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "protocolVersion": "2",
                                "capabilities": {"ui": ui} if ui else {}})
    started = sidecar.call("thread/start", {"roots": [str(r) for r in roots], "cwd": str(cwd),
                                            "dynamicTools": [RUN_COMMAND], "trustedHooks": trusted, **extra})
    return sidecar, started, editor


def run_command(sidecar, started, cmd: str, call_id: str = "c1", **more) -> dict:
    return sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": call_id, "name": "run_command", "arguments": {"cmd": cmd, **more}}}, timeout=60)["result"]


def notified(sidecar, method: str, predicate, timeout: float = 30.0) -> list[dict]:
    """``method`` notifications, read until one satisfies ``predicate`` (a bounded poll)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [n["params"] for n in sidecar.notifications if n["method"] == method]
        if any(predicate(p) for p in found):
            return found
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"no matching {method}: {found}")
        try:
            sidecar._dispatch(sidecar.next_message(min(remaining, 0.2)))
        except Exception:  # noqa: BLE001 - nothing arrived yet
            pass


# -- hookAs ------------------------------------------------------------------------------------------

def test_hookify_blocks_the_editors_run_command_declared_as_bash(spawn, tmp_path):
    """Before: hookify matched "Bash" and never saw run_command, so rm -rf ran. Now the editor says
    run_command is Bash {command: cmd}; hookify (its cwd: the project, where its rule is) blocks it."""
    work = project(tmp_path)
    settings = write(work / ".claude" / "settings.json", hookify_settings())
    sidecar, started, editor = start(spawn, [work / ".claude"], work, [{"path": str(settings)}])
    result = run_command(sidecar, started, "rm -rf /tmp/important")
    assert result["isError"] and editor.ran == []
    assert result["details"]["blocked"]["by"] == [f"root:{settings}"]
    assert "Dangerous rm command detected" in result["details"]["blocked"]["reason"]
    assert not run_command(sidecar, started, "ls -la", call_id="c2")["isError"]
    assert editor.ran == [{"cmd": "ls -la"}]  # the editor gets its own field names


def test_hooks_see_their_names_and_fields_and_a_rewrite_comes_back_in_ours(spawn, ws):
    seen = ws.dir / "pre.json"
    rewrite = ws.script("rewrite.sh", f"cat > {seen}\n" + "echo '" + json.dumps({"hookSpecificOutput": {
        "permissionDecision": "allow", "updatedInput": {"command": "ls -a", "cwd": "/srv"}}}) + "'\n")
    post = ws.script("post.sh", f"cat > {ws.dir}/post.json\n")
    ws.declare({"PreToolUse": one("Bash", rewrite), "PostToolUse": one("Bash", post)})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    result = run_command(sidecar, started, "ls", cwd="/tmp")
    assert not result["isError"], result
    pre = json.loads(seen.read_text())
    assert pre["tool_name"] == "Bash" and pre["tool_input"] == {"command": "ls", "cwd": "/tmp"}  # cwd: passed through
    assert editor.ran == [{"cmd": "ls -a", "cwd": "/srv"}]  # updatedInput mapped back, then validated
    after = json.loads((ws.dir / "post.json").read_text())
    assert after["tool_name"] == "Bash" and after["tool_input"] == {"command": "ls -a", "cwd": "/srv"}


def test_a_rewrite_that_breaks_our_schema_after_mapping_is_blocked(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "bad.sh", {"hookSpecificOutput": {
        "updatedInput": {"command": "ls", "timeout": 5}}}))})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    result = run_command(sidecar, started, "ls")
    assert result["details"]["blocked"]["kind"] == "hook" and "inputSchema" in result["details"]["blocked"]["reason"]
    assert editor.ran == []


def test_an_mcp_tool_declared_as_read_is_matched_by_that_name(spawn, ws):
    from mcp_helpers import sdk_server

    ws.declare({"PreToolUse": one("Read", ws.script("read.sh", f"cat > {ws.dir}/mcp.json; "
                                                               "echo 'no reads here' >&2; exit 2\n"))})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}], mcpServers=[
        {"name": "srv", "command": sdk_server(), "required": True, "hookAs": {"ping": {"name": "Read"}}}])
    result = sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": "m1", "name": "mcp__srv__ping", "arguments": {}}}, timeout=60)["result"]
    assert result["details"]["blocked"]["reason"] == "no reads here"
    assert json.loads((ws.dir / "mcp.json").read_text())["tool_name"] == "Read"


def test_a_permission_request_for_the_editors_tool_reaches_hooks_in_their_vocabulary(spawn, ws):
    seen = ws.dir / "permission.json"
    ws.declare({"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "if": "Bash(git push *)",
                                                                     "command": ws.script("perm.sh", f"cat > {seen}; "
                                                                     "echo 'not on main' >&2; exit 2\n")}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    ask = lambda cmd: sidecar.call("loop/event", {  # noqa: E731
        "threadId": started["threadId"], "event": "permission_request",
        "payload": {"toolName": "run_command", "toolInput": {"cmd": cmd}}})
    assert ask("git status")["decision"] is None and not seen.exists()  # the if rule: the hook never started
    assert ask("git push origin main")["decision"] == "deny"
    request = json.loads(seen.read_text())
    assert (request["tool_name"], request["tool_input"]) == ("Bash", {"command": "git push origin main"})


def test_a_bad_hook_as_is_invalid_params_naming_the_field(spawn, tmp_path):
    sidecar = spawn()
    bad = dict(RUN_COMMAND, hookAs={"name": "Bash", "input": {"command": "cmd", "description": "cmd"}})
    answer = sidecar.request("thread/start", {"roots": [str(tmp_path)], "dynamicTools": [bad]})
    assert answer["error"]["data"]["kind"] == "invalid_params"
    assert answer["error"]["data"]["field"] == "dynamicTools[0].hookAs.input.description"
    assert "result" in sidecar.request("thread/start", {"roots": [str(tmp_path)]})  # it keeps serving


class FailingEditor(Editor):
    """The editor's run_command fails (a non-zero exit, as the editor reports it)."""

    def __call__(self, message: dict) -> dict | None:
        if message["method"] == "item/tool/call":
            self.ran.append(message["params"]["arguments"])
            return {"result": {"contentItems": [{"type": "inputText", "text": "exit 1: no such file"}],
                               "success": False}}
        return super().__call__(message)


def test_post_tool_use_failure_sees_the_call_in_the_hooks_vocabulary(spawn, ws):
    seen = ws.dir / "failure.json"
    ws.declare({"PostToolUseFailure": one("Bash", ws.script("failed.sh", f"cat > {seen}\n"))})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}], FailingEditor())
    assert run_command(sidecar, started, "cat missing")["isError"]
    failure = json.loads(seen.read_text())
    assert (failure["tool_name"], failure["tool_input"]) == ("Bash", {"command": "cat missing"})
    assert "no such file" in failure["error"]


def test_extension_hooks_keep_the_sidecars_names(spawn, ws):
    """hookAs is for command hooks: an extension's tool_call hook sees run_command {cmd}."""
    trace = ws.dir / "extension.json"
    write(ws.root / "extensions" / "watch.py", f'''
import json

def before(event):
    with open({str(trace)!r}, "w") as f:
        json.dump({{"name": event["call"]["name"], "arguments": event["call"]["arguments"]}}, f)

def activate(api):
    api.on("tool_call", before)
''')
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "ok.sh", {}))})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}],
                                     trustedExtensions=["watch"])
    assert not run_command(sidecar, started, "ls")["isError"]
    assert json.loads(trace.read_text()) == {"name": "run_command", "arguments": {"cmd": "ls"}}


# -- handler fields ------------------------------------------------------------------------------------

def test_if_runs_a_handler_only_for_calls_its_permission_rule_matches(spawn, ws):
    deny = ws.script("git.sh", f"cat >> {ws.dir}/ran; echo >> {ws.dir}/ran; echo 'no git here' >&2; exit 2\n")
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": deny,
                                                              "if": "Bash(git *)"}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    assert started["catalog"]["hooks"][0]["if"] == "Bash(git *)"
    assert not run_command(sidecar, started, "ls -la")["isError"]
    assert not (ws.dir / "ran").exists()  # the hook never started
    blocked = run_command(sidecar, started, "npm test && FOO=1 git push", call_id="c2")
    assert blocked["details"]["blocked"]["reason"] == "no git here"
    assert editor.ran == [{"cmd": "ls -la"}]


def test_check_lists_a_handlers_if_once_and_async(ws):
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "guard", "if": "Bash(git *)", "once": True, "async": True}]}]})
    out = check(ws.root)
    assert out.returncode == 0, out.stderr
    assert "hook          PreToolUse [Bash]: guard [if Bash(git *), once, async]" in out.stdout


def test_a_bad_if_is_a_diagnostic_and_that_handler_never_runs(spawn, ws):
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/bin/false",
                                                              "if": ["Bash(git *)"]}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    assert started["catalog"]["hooks"] == []
    assert any(d["kind"] == "hook_invalid" and ".if" in d["message"] for d in started["diagnostics"])
    assert not run_command(sidecar, started, "ls")["isError"]


def test_once_runs_a_handler_once_per_thread(spawn, ws):
    note = ws.script("once.sh", f"echo ran >> {ws.dir}/once\n")
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": note, "once": True}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    for n in range(3):
        assert not run_command(sidecar, started, "ls", call_id=f"c{n}")["isError"]
    assert ws.trace("once") == ["ran"]
    other = sidecar.call("thread/start", {"roots": [str(ws.root)], "cwd": str(ws.dir), "dynamicTools": [RUN_COMMAND],
                                          "trustedHooks": [{"path": str(ws.hooks_file)}]})
    run_command(sidecar, other, "ls", call_id="d1")
    assert ws.trace("once") == ["ran", "ran"]  # once per thread, not per sidecar


def test_once_stays_once_when_a_changed_hooks_file_applies_at_refresh(spawn, ws):
    note = ws.script("once.sh", f"echo once >> {ws.dir}/trace\n")
    also = ws.script("also.sh", f"echo also >> {ws.dir}/trace\n")
    once = {"type": "command", "command": note, "once": True}
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [once]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    run_command(sidecar, started, "ls")
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [once, {"type": "command", "command": also}]}]})
    changes_until(sidecar, lambda c: {"kind": "hooks", "name": str(ws.hooks_file)} in c["changed"])
    sidecar.call("thread/refresh", {"threadId": started["threadId"]})
    run_command(sidecar, started, "ls", call_id="c2")
    assert ws.trace("trace") == ["once", "also"]


def test_async_never_blocks_and_its_system_message_reaches_the_user(spawn, ws):
    """The async hook waits for a file the test writes only after the call was answered: the call cannot
    have waited for it. It then denies (exit 2) — which decides nothing — and says a systemMessage."""
    go = ws.dir / "go"
    slow = ws.script("tests.sh", f"cat > /dev/null; while [ ! -f {go} ]; do sleep 0.05; done; "
                                 "echo '{\"systemMessage\": \"tests passed after the edit\", "
                                 "\"decision\": \"block\", \"reason\": \"too late\"}'\n")
    ws.declare({"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": slow, "async": True}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}], ui={"notify": True})
    result = run_command(sidecar, started, "ls")
    assert not result["isError"] and "hookFeedback" not in result["details"]
    go.write_text("")
    notes = notified(sidecar, "ui/notify", lambda n: n["message"] == "tests passed after the edit")
    assert [n["level"] for n in notes if n["message"] == "tests passed after the edit"] == ["warning"]


def test_an_async_hook_still_running_ends_with_its_thread(spawn, ws):
    pidfile = ws.dir / "async.pid"
    ws.declare({"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "async": True,
                                                               "command": ws.script("bg.sh", f"echo $$ > {pidfile}; "
                                                                                    "exec sleep 300\n")}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    assert not run_command(sidecar, started, "ls")["isError"]  # answered while the hook sleeps
    pid = int(_wait_for_file(pidfile))
    sidecar.call("thread/close", {"threadId": started["threadId"]}, timeout=60)
    assert _gone(pid), "the async hook outlived its thread"


def test_status_message_is_a_ui_status_while_the_hook_runs_cleared_after(spawn, ws):
    check = ws.script("check.sh", "cat > /dev/null; exit 0\n")
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": check, "statusMessage": "Checking the command…"}]}]})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}], ui={"status": True})
    assert not run_command(sidecar, started, "ls")["isError"]
    statuses = notified(sidecar, "ui/status", lambda s: s["text"] is None)
    assert [s["text"] for s in statuses] == ["Checking the command…", None]
    assert {s["key"] for s in statuses} == {"hook:PreToolUse:0"}
    assert {s["extensionId"] for s in statuses} == {f"root:{ws.hooks_file}"}


# -- events the editor fires -------------------------------------------------------------------------

def test_loop_event_fires_the_events_hooks_used_to_sleep_through(spawn, ws):
    """TaskCreated and CwdChanged were dormant (listed, never run); loop/event now names them."""
    seen = ws.dir / "cwd.json"
    ws.declare({"TaskCreated": one(None, ws.script("ticket.sh", "cat > /dev/null; echo 'Task subject must start "
                                                                "with a ticket number' >&2; exit 2\n")),
                "CwdChanged": one(None, ws.script("cwd.sh", f"cat > {seen}\n")),
                "Setup": one("init", ws.script("setup.sh", f"cat > {ws.dir}/setup.json\n"))})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [{"path": str(ws.hooks_file)}])
    assert not any(h.get("dormant") for h in started["catalog"]["hooks"])
    event = lambda name, payload: sidecar.call("loop/event", {  # noqa: E731
        "threadId": started["threadId"], "event": name, "payload": payload}, timeout=60)
    blocked = event("task_created", {"taskId": "t1", "taskSubject": "Add login"})["blocked"]
    assert blocked["reason"] == "Task subject must start with a ticket number"
    assert event("cwd_changed", {"oldCwd": "/a", "newCwd": "/a/b"})["blocked"] is None
    assert json.loads(seen.read_text())["new_cwd"] == "/a/b"
    event("setup", {"trigger": "init"})
    assert json.loads((ws.dir / "setup.json").read_text())["trigger"] == "init"
    bad = sidecar.request("loop/event", {"threadId": started["threadId"], "event": "cwd_changed",
                                         "payload": {"oldCwd": "/a"}})
    assert bad["error"]["data"] == {"kind": "invalid_params", "field": "payload.newCwd"}


def test_if_rules_as_claude_codes_hooks_reference_tabulates_them(tmp_path):
    """The Bash rows of the reference's `if` table, and the path forms of the permissions reference."""
    from harness_sidecar.hooks.rules import compile_rule

    git, rm, push = compile_rule("Bash(git *)"), compile_rule("Bash(rm *)"), compile_rule("Bash(git push *)")
    bash = lambda rule, command: rule.matches("Bash", {"command": command}, str(tmp_path))  # noqa: E731
    assert bash(git, "FOO=bar git push") and bash(git, "npm test && git push")
    assert bash(rm, "echo $(rm -rf /)") and not bash(rm, "echo $(date)")
    assert bash(push, "echo $(date)")  # more than the command name: runs anyway on $()
    assert not bash(compile_rule("Bash(ls *)"), "lsof") and bash(compile_rule("Bash(ls*)"), "lsof")
    assert bash(compile_rule("Bash(npm run test:*)"), "npm run test --watch")
    edit = compile_rule("Edit(*.ts)")
    assert edit.matches("Edit", {"file_path": str(tmp_path / "src" / "a.ts")}, str(tmp_path))
    assert not edit.matches("Edit", {"file_path": str(tmp_path / "a.py")}, str(tmp_path))
    assert not edit.matches("Write", {"file_path": str(tmp_path / "a.ts")}, str(tmp_path))
    src = compile_rule("Read(./src/**)")
    assert src.matches("Read", {"file_path": str(tmp_path / "src" / "x" / "y.md")}, str(tmp_path))
    assert not src.matches("Read", {"file_path": str(tmp_path / "docs" / "y.md")}, str(tmp_path))
    assert compile_rule("Read(//etc/**)").matches("Read", {"file_path": "/etc/passwd"}, str(tmp_path))
    assert compile_rule("WebFetch(domain:github.com)").matches("WebFetch", {"url": "https://api.github.com/x"}, "/")
    assert compile_rule("mcp__github").matches("mcp__github__search", {}, "/")


def test_an_extension_handler_of_a_v4_loop_event_runs_and_fails_closed(spawn, ws):
    """api.on("task_created") gets the payload; one that raises is a HookFault naming the event, and
    (task_created can block) the event is blocked naming the fault."""
    write(ws.root / "extensions" / "tasks.py", '''
def created(event):
    if event["taskSubject"].startswith("["):
        return {"context": "ticket " + event["taskSubject"][1:4]}
    raise ValueError("no ticket number")

def activate(api):
    api.on("task_created", created)
''')
    ws.declare({})
    sidecar, started, editor = start(spawn, [ws.root], ws.dir, [], trustedExtensions=["tasks"])
    event = lambda subject: sidecar.call("loop/event", {  # noqa: E731
        "threadId": started["threadId"], "event": "task_created",
        "payload": {"taskId": "t1", "taskSubject": subject}}, timeout=60)
    assert event("[T-1] login")["additionalContext"] == ["ticket T-1"]
    assert event("login")["blocked"]["by"] == ["extension:tasks"]
    faults = notified(sidecar, "thread/diagnostic", lambda d: d.get("hook") == "task_created")
    assert any(f["kind"] == "throw" and "no ticket number" in f["message"] for f in faults if f.get("hook"))
