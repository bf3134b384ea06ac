"""Command hooks (protocol-v3 §5) through the real sidecar: one test per contract rule.

Hooks here are small shell scripts declared in a root's ``hooks.json``; they record what they
saw into files of the test's temporary directory, so what ran (and with which stdin) is observed
from outside. The editor names its shell tool ``Bash`` (a dynamic tool) as Claude Code does.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from helpers import add_skill, end_deciding_call, write

from harness_sidecar.hooks.matcher import BadMatcher, compile_matcher

BASH = {"name": "Bash", "description": "Run a shell command.",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
                        "additionalProperties": False}}


class Editor:
    """The editor's side: runs Bash calls (records them) and answers ui/confirm as told."""

    def __init__(self, confirm: bool | None = None) -> None:
        self.ran: list[dict] = []
        self.confirm = confirm
        self.asked: list[dict] = []

    def __call__(self, message: dict) -> dict | None:
        if message["method"] == "item/tool/call":
            self.ran.append(message["params"]["arguments"])
            text = "ran " + json.dumps(message["params"]["arguments"], sort_keys=True)
            return {"result": {"contentItems": [{"type": "inputText", "text": text}], "success": True}}
        if message["method"] == "ui/confirm":
            self.asked.append(message["params"])
            return {"result": {"confirmed": bool(self.confirm)}}
        return {"error": {"code": -32601, "message": "no"}}


class Workspace:
    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.hooks_file = self.root / "hooks.json"

    def declare(self, events: dict, raw: str | None = None) -> Path:
        write(self.hooks_file, raw if raw is not None else json.dumps({"hooks": events}))
        return self.hooks_file

    def script(self, name: str, body: str) -> str:
        """A hook script in the workspace; returns the command that runs it."""
        path = write(self.dir / "scripts" / name, "#!/bin/sh\n" + body)
        path.chmod(0o755)
        return str(path)

    def trace(self, name: str) -> list[str]:
        path = self.dir / name
        return path.read_text().splitlines() if path.exists() else []

    def sha256(self) -> str:
        return hashlib.sha256(self.hooks_file.read_bytes()).hexdigest()


@pytest.fixture
def ws(tmp_path):
    return Workspace(tmp_path)


def one(matcher: str | None, *commands: str, **handler) -> list[dict]:
    group: dict = {"hooks": [{"type": "command", "command": c, **handler} for c in commands]}
    if matcher is not None:
        group["matcher"] = matcher
    return [group]


def open_thread(spawn, ws: Workspace, editor: Editor | None = None, *, trusted: bool | list = True,
                limits: dict | None = None, ui: bool = False, **extra):
    editor = editor or Editor()
    sidecar = spawn(initialize=False, on_request=editor)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "protocolVersion": "2",
                                "capabilities": {"ui": {"confirm": True}} if ui else {}})
    if trusted is True:
        trusted = [{"path": str(ws.hooks_file)}]
    params = {"roots": [str(ws.root)], "cwd": str(ws.dir), "dynamicTools": [BASH], "trustedHooks": trusted or [],
              **extra}
    if limits:
        params["limits"] = limits
    started = sidecar.call("thread/start", params)
    return sidecar, started, editor


def bash(sidecar, started, command: str, call_id: str = "c1") -> dict:
    return sidecar.call("tools/call", {"threadId": started["threadId"],
                                       "call": {"id": call_id, "name": "Bash", "arguments": {"command": command}}},
                        timeout=60)["result"]


def diagnostics(sidecar, kind: str) -> list[dict]:
    return [n["params"] for n in sidecar.notifications
            if n["method"] == "thread/diagnostic" and n["params"].get("kind") == kind]


# -- matchers ------------------------------------------------------------------------------------------

def test_matcher_forms_as_claude_code_states_them():
    for everything in (None, "", "*"):
        assert compile_matcher(everything).matches("anything")
    names = compile_matcher("Edit|Write, Read")
    assert [names.matches(n) for n in ("Edit", "Write", "Read", "EditX", "Bash")] == [True, True, True, False, False]
    regex = compile_matcher("mcp__fs__.*")  # not only names: a regular expression, unanchored
    assert regex.matches("mcp__fs__read") and not regex.matches("mcp__git__log")
    assert compile_matcher("^Note").matches("NotebookEdit") and not compile_matcher("^Note").matches("ANote")
    with pytest.raises(BadMatcher):
        compile_matcher("(unclosed")


def test_only_matching_hooks_run_and_a_bad_regex_is_a_diagnostic(spawn, ws):
    record = lambda tag: ws.script(f"{tag}.sh", f"echo {tag} >> {ws.dir}/ran\n")  # noqa: E731
    ws.declare({"PreToolUse": [
        {"matcher": "Edit|Bash", "hooks": [{"type": "command", "command": record("names")}]},
        {"matcher": "^Ba", "hooks": [{"type": "command", "command": record("regex")}]},
        {"matcher": "Write", "hooks": [{"type": "command", "command": record("other")}]},
        {"hooks": [{"type": "command", "command": record("all")}]},
        {"matcher": "(", "hooks": [{"type": "command", "command": record("broken")}]},
    ]})
    sidecar, started, editor = open_thread(spawn, ws)
    assert not bash(sidecar, started, "ls")["isError"]
    assert sorted(ws.trace("ran")) == ["all", "names", "regex"]
    assert any(d["kind"] == "hook_invalid" and "regular expression" in d["message"] for d in started["diagnostics"])


# -- answers -------------------------------------------------------------------------------------------

def test_exit_2_blocks_with_stderr_as_reason_and_the_tool_never_runs(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("no.sh", "cat > /dev/null; echo 'not today' >&2; exit 2\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["isError"] and editor.ran == []
    assert result["details"]["blocked"] == {"kind": "hook", "reason": "not today", "by": [f"root:{ws.hooks_file}"]}


def test_the_hook_reads_the_documented_stdin_and_environment(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("see.sh", f"cat > {ws.dir}/stdin.json; "
                                                              f"echo \"$CLAUDE_PROJECT_DIR|$PWD\" > {ws.dir}/env\n"))
                + [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/bin/sh",
                                                  "args": ["-c", "echo \"$0\" > " + str(ws.dir / "args"),
                                                           "${CLAUDE_PROJECT_DIR}/x"]}]}]})
    sidecar, started, editor = open_thread(spawn, ws)
    bash(sidecar, started, "ls -l", call_id="call-7")
    seen = json.loads((ws.dir / "stdin.json").read_text())
    assert seen == {"session_id": started["threadId"], "transcript_path": None, "cwd": str(ws.dir),
                    "hook_event_name": "PreToolUse", "permission_mode": "default", "tool_name": "Bash",
                    "tool_input": {"command": "ls -l"}, "tool_use_id": "call-7"}
    assert ws.trace("env") == [f"{ws.dir}|{ws.dir}"]
    assert ws.trace("args") == [f"{ws.dir}/x"]  # ${CLAUDE_PROJECT_DIR} substituted in args (no shell)


def _json_hook(ws: Workspace, name: str, answer: dict) -> str:
    return ws.script(name, "cat > /dev/null\ncat <<'EOF'\n" + json.dumps(answer) + "\nEOF\n")


def test_json_deny_blocks_with_every_denying_reason_in_declaration_order(spawn, ws):
    deny = lambda n, why: _json_hook(ws, n, {"hookSpecificOutput": {  # noqa: E731
        "permissionDecision": "deny", "permissionDecisionReason": why}})
    ws.declare({"PreToolUse": one("Bash", deny("a.sh", "first"), _json_hook(ws, "ok.sh", {}),
                                  ws.script("slowdeny.sh", "sleep 0.3; echo '{\"decision\": \"block\", "
                                                           "\"reason\": \"second\"}'\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"]["reason"] == "first; second"  # the slow one finished last: order stays
    assert editor.ran == []


def test_json_allow_lets_the_call_through_and_additional_context_is_kept(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "a.sh", {"hookSpecificOutput": {
        "permissionDecision": "allow", "additionalContext": "alpha"}}), _json_hook(ws, "b.sh", {
            "hookSpecificOutput": {"additionalContext": "beta"}}))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert result["details"]["hookContext"] == ["alpha", "beta"]


@pytest.mark.parametrize("answer", [True, False])
def test_json_ask_asks_the_user_once_naming_the_hooks(spawn, ws, answer):
    ask = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "a.sh", ask), _json_hook(ws, "b.sh", ask))})
    sidecar, started, editor = open_thread(spawn, ws, Editor(confirm=answer), ui=True)
    result = bash(sidecar, started, "ls")
    assert len(editor.asked) == 1 and str(ws.hooks_file) in editor.asked[0]["message"]
    assert result["isError"] is (not answer)
    assert editor.ran == ([{"command": "ls"}] if answer else [])


def test_ask_without_ui_is_blocked(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "a.sh", {"hookSpecificOutput": {
        "permissionDecision": "defer"}}))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"]["kind"] == "hook" and editor.ran == []


def test_one_updated_input_is_applied_and_checked_against_the_schema(spawn, ws):
    rewrite = lambda n, value: _json_hook(ws, n, {"hookSpecificOutput": {"updatedInput": value}})  # noqa: E731
    ws.declare({"PreToolUse": one("Bash", rewrite("a.sh", {"command": "ls -a"}), rewrite("b.sh", {"command": "ls -a"}))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert editor.ran == [{"command": "ls -a"}]  # two hooks, the same rewrite: applied once
    assert result["details"]["hookRewrittenBy"] == [f"root:{ws.hooks_file}"]

    ws.declare({"PreToolUse": one("Bash", rewrite("c.sh", {"command": 42}))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"]["kind"] == "hook" and "inputSchema" in result["details"]["blocked"]["reason"]
    assert editor.ran == []


def test_two_different_rewrites_are_a_hook_conflict(spawn, ws):
    rewrite = lambda n, value: _json_hook(ws, n, {"hookSpecificOutput": {"updatedInput": value}})  # noqa: E731
    ws.declare({"PreToolUse": one("Bash", rewrite("a.sh", {"command": "ls -a"}), rewrite("b.sh", {"command": "ls -l"}))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"]["kind"] == "hook_conflict" and editor.ran == []


# -- failures ------------------------------------------------------------------------------------------

FAILURES = {
    "crash": "cat > /dev/null; echo 'Traceback: boom' >&2; exit 1\n",
    "signal": "cat > /dev/null; kill -9 $$\n",
    "bad_json": "cat > /dev/null; echo '{\"decision\": '\n",
    "huge_stdout": "cat > /dev/null; printf '{\"x\": \"'; head -c 1100000 /dev/zero | tr '\\0' a; echo '\"}'\n",
}


@pytest.mark.parametrize("how", sorted(FAILURES))
def test_a_failing_blocking_hook_blocks_unless_failures_are_open(spawn, ws, how):
    ws.declare({"PreToolUse": one("Bash", ws.script("fail.sh", FAILURES[how]))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"]["kind"] == "hook_failed" and editor.ran == []
    if how == "crash":
        assert "Traceback: boom" in result["details"]["blocked"]["reason"]  # the stderr tail

    sidecar, started, editor = open_thread(spawn, ws, limits={"commandHookFailure": "open"})
    result = bash(sidecar, started, "ls")
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert len(diagnostics(sidecar, "hook_failed")) == 1


def test_the_deadline_kills_the_hooks_process_group(spawn, ws):
    pidfile = ws.dir / "child.pid"
    ws.declare({"PreToolUse": one("Bash", ws.script("hang.sh", f"sleep 300 & echo $! > {pidfile}; wait\n"),
                                  timeout=1)})
    sidecar, started, editor = open_thread(spawn, ws)
    began = time.monotonic()
    result = bash(sidecar, started, "ls")
    assert time.monotonic() - began < 20  # the 1 s deadline, not the 300 s sleep
    assert result["details"]["blocked"]["kind"] == "hook_failed" and "1000 ms" in result["details"]["blocked"]["reason"]
    child = int(pidfile.read_text())
    for _ in range(50):
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the hook's child survived its deadline")


def test_timeouts_are_capped_by_max_command_hook_timeout(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("slow.sh", "sleep 30\n"), timeout=500)})
    sidecar, started, editor = open_thread(spawn, ws, limits={"maxCommandHookTimeoutMs": 500})
    began = time.monotonic()
    result = bash(sidecar, started, "ls")
    assert time.monotonic() - began < 15
    assert "500 ms" in result["details"]["blocked"]["reason"]


# -- trust ---------------------------------------------------------------------------------------------

def test_untrusted_hooks_are_listed_reported_once_and_never_run(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("t.sh", f"echo ran >> {ws.dir}/ran; exit 2\n"))})
    sidecar, started, editor = open_thread(spawn, ws, trusted=False)
    assert started["catalog"]["hooks"] == [{"source": f"root:{ws.hooks_file}", "event": "PreToolUse", "matcher": "Bash",
                                            "command": str(ws.dir / "scripts" / "t.sh"), "trusted": False}]
    bash(sidecar, started, "ls")
    bash(sidecar, started, "ls", call_id="c2")
    assert editor.ran == [{"command": "ls"}] * 2 and ws.trace("ran") == []
    untrusted = diagnostics(sidecar, "hook_untrusted")
    assert len(untrusted) == 1 and untrusted[0]["source"] == f"root:{ws.hooks_file}"


def test_a_sha256_pin_must_match_the_file(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("t.sh", "exit 2\n"))})
    sidecar, started, editor = open_thread(spawn, ws, trusted=[{"path": str(ws.hooks_file), "sha256": "0" * 64}])
    assert not bash(sidecar, started, "ls")["isError"]
    assert "pinned" in diagnostics(sidecar, "hook_untrusted")[0]["message"]
    assert started["catalog"]["hooks"][0]["trusted"] is False

    sidecar, started, editor = open_thread(spawn, ws, trusted=[{"path": str(ws.hooks_file), "sha256": ws.sha256()}])
    assert bash(sidecar, started, "ls")["isError"]


def test_a_changed_hooks_file_is_announced_applies_at_refresh_and_breaks_its_pin(spawn, ws):
    ws.declare({"PreToolUse": one("Bash", ws.script("ok.sh", "exit 0\n"))})
    sidecar, started, editor = open_thread(spawn, ws, trusted=[{"path": str(ws.hooks_file), "sha256": ws.sha256()}])
    assert not bash(sidecar, started, "ls")["isError"]
    ws.declare({"PreToolUse": one("Bash", ws.script("no.sh", "exit 2\n"))})
    deadline = time.monotonic() + 20
    while not any(n["method"] == "catalog/changed" for n in sidecar.notifications) and time.monotonic() < deadline:
        sidecar.call("tools/list", {"threadId": started["threadId"]})
        time.sleep(0.1)
    changed = next(n["params"] for n in sidecar.notifications if n["method"] == "catalog/changed")
    assert {"kind": "hooks", "name": str(ws.hooks_file)} in changed["changed"]
    assert not bash(sidecar, started, "ls", "c2")["isError"]  # not applied before thread/refresh
    refreshed = sidecar.call("thread/refresh", {"threadId": started["threadId"]})
    assert refreshed["catalog"]["hooks"][0]["command"].endswith("no.sh")
    assert refreshed["catalog"]["hooks"][0]["trusted"] is False  # the pin no longer matches
    assert not bash(sidecar, started, "ls", "c3")["isError"] and len(editor.ran) == 3
    assert any("pinned" in d["message"] for d in diagnostics(sidecar, "hook_untrusted"))


def test_declaration_problems_are_diagnostics(spawn, ws):
    ws.declare({}, raw=json.dumps({"PreToolUse": one("Bash", "exit 2")}))  # no "hooks" wrapper
    sidecar, started, editor = open_thread(spawn, ws)
    assert any(d["kind"] == "hook_invalid" and "wrapper" in d["message"] for d in started["diagnostics"])
    assert started["catalog"]["hooks"] == []
    # v4 §3: an unknown type is listed and never run; a prompt hook no model can answer blocks (test_hook_types.py)
    ws.declare({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "carrier-pigeon", "prompt": "Is it safe?"}]}]})
    sidecar, started, editor = open_thread(spawn, ws)
    assert [d["kind"] for d in started["diagnostics"]] == ["hook_type_unsupported"]
    assert not bash(sidecar, started, "ls")["isError"]


# -- many hooks ---------------------------------------------------------------------------------------

def test_matching_hooks_run_in_parallel(spawn, ws):
    log = ws.dir / "times"
    body = (f"python3 -c 'import time; print(\"start\", time.time())' >> {log}; sleep 0.5; "
            f"python3 -c 'import time; print(\"end\", time.time())' >> {log}\n")
    ws.declare({"PreToolUse": one("Bash", *(ws.script(f"h{i}.sh", body) for i in range(4)))})
    sidecar, started, editor = open_thread(spawn, ws)
    assert not bash(sidecar, started, "ls")["isError"]
    times = [line.split() for line in log.read_text().splitlines()]
    starts = [float(t) for what, t in times if what == "start"]
    ends = [float(t) for what, t in times if what == "end"]
    assert len(starts) == len(ends) == 4
    assert max(starts) < min(ends)  # all four were running at once


def test_identical_handlers_run_once(spawn, ws):
    command = ws.script("count.sh", f"echo x >> {ws.dir}/count\n")
    ws.declare({"PreToolUse": one("Bash", command, command) + one("*", command)
                + [{"hooks": [{"type": "command", "command": command, "args": ["other"]}]}]})
    sidecar, started, editor = open_thread(spawn, ws)
    bash(sidecar, started, "ls")
    assert len(ws.trace("count")) == 2  # the shell form once, the form with args once


# -- the other boundaries ----------------------------------------------------------------------------------

def test_pre_tool_use_covers_every_kind_of_tool(spawn, ws):
    add_skill(ws.root, "review", "Use when reviewing.", "BODY\n")
    ws.declare({"PreToolUse": one("load_skill", ws.script("no.sh", "echo 'skills are off' >&2; exit 2\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": "1", "name": "load_skill", "arguments": {"name": "review"}}})["result"]
    assert result["details"]["blocked"]["reason"] == "skills are off"


def test_post_tool_use_feedback_is_appended_and_listed(spawn, ws):
    ws.declare({"PostToolUse": one("Bash", ws.script("post.sh", f"cat > {ws.dir}/post.json\n"
                                                              "echo '{\"decision\": \"block\", \"reason\": \"lint failed\","
                                                              " \"hookSpecificOutput\": {\"additionalContext\": "
                                                              "\"3 warnings\"}}'\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    result = bash(sidecar, started, "ls")
    source = f"root:{ws.hooks_file}"
    assert result["content"][0]["text"] == 'ran {"command": "ls"}'  # the result itself is unchanged
    assert [c["text"] for c in result["content"][1:]] == [f"[hook {source}] lint failed", f"[hook {source}] 3 warnings"]
    assert result["details"]["hookFeedback"] == [{"source": source, "kind": "block", "text": "lint failed"},
                                                 {"source": source, "kind": "context", "text": "3 warnings"}]
    assert json.loads((ws.dir / "post.json").read_text())["tool_response"]["content"][0]["text"].startswith("ran")


def test_user_prompt_submit_adds_context_or_blocks(spawn, ws):
    ws.declare({"UserPromptSubmit": one(None, ws.script("p.sh", "grep -q secret && { echo 'no secrets' >&2; exit 2; }; "
                                                                "echo 'branch: main'\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    answer = sidecar.call("input/submit", {"threadId": started["threadId"], "text": "hello"})
    assert answer == {"action": "send", "message": {"role": "user", "content": "hello"}, "hookContext": ["branch: main"]}
    refused = sidecar.request("input/submit", {"threadId": started["threadId"], "text": "my secret"})
    assert refused["error"]["data"]["kind"] == "input_blocked" and "no secrets" in refused["error"]["message"]


def test_session_start_and_session_end(spawn, ws):
    ws.declare({"SessionStart": one("startup", ws.script("s.sh", "echo 'welcome back'\n"))
                + one("clear", ws.script("c.sh", f"echo clear >> {ws.dir}/clear\n")),
                "SessionEnd": one(None, ws.script("e.sh", f"cat > {ws.dir}/end.json\n"),
                                  ws.script("slow.sh", f"sleep 30; echo late >> {ws.dir}/late\n"))})
    sidecar, started, editor = open_thread(spawn, ws, limits={"sessionEndBudgetMs": 700})
    assert started["hookContext"] == ["welcome back"] and ws.trace("clear") == []
    began = time.monotonic()
    sidecar.call("thread/close", {"threadId": started["threadId"]})
    assert time.monotonic() - began < 15  # the budget, not the 30 s sleep
    assert json.loads((ws.dir / "end.json").read_text())["hook_event_name"] == "SessionEnd"
    assert len(diagnostics(sidecar, "hook_failed")) == 1  # the slow one: reported, it cannot block a close
    time.sleep(0.2)
    assert ws.trace("late") == []


def test_no_hooks_file_means_no_hooks_and_an_empty_listing(spawn, ws):
    sidecar, started, editor = open_thread(spawn, ws, trusted=False)
    assert started["catalog"]["hooks"] == [] and "hookContext" not in started
    assert not bash(sidecar, started, "ls")["isError"]
    assert os.listdir(ws.root) == []


def test_pre_tool_use_decides_before_the_extensions_before_hooks(spawn, ws):
    trace = ws.dir / "order"
    write(ws.root / "extensions" / "gate.py", f'''
def note(call_id, arguments):
    with open({str(trace)!r}, "a") as f:
        f.write("core " + arguments["text"] + "\\n")
    return "noted"

def before(event):
    with open({str(trace)!r}, "a") as f:
        f.write("extension " + event["call"]["arguments"]["text"] + "\\n")

def activate(api):
    api.register_tool(name="note", description="Take a note.", input_schema={{"type": "object",
                      "properties": {{"text": {{"type": "string"}}}}}}, execute=note)
    api.on("tool_call", before)
''')
    ws.declare({"PreToolUse": one("note", ws.script("pre.sh", f"""input=$(cat)
echo "command hook" >> {trace}
case "$input" in *forbidden*) echo 'not that' >&2; exit 2;; esac
echo '{{"hookSpecificOutput": {{"updatedInput": {{"text": "rewritten"}}}}}}'
"""))})
    sidecar, started, editor = open_thread(spawn, ws, trustedExtensions=["gate"])
    call = lambda text, i: sidecar.call("tools/call", {"threadId": started["threadId"], "call": {  # noqa: E731
        "id": i, "name": "note", "arguments": {"text": text}}})["result"]
    assert not call("hello", "1")["isError"]
    assert ws.trace("order") == ["command hook", "extension rewritten", "core rewritten"]
    assert call("forbidden", "2")["details"]["blocked"]["kind"] == "hook"
    assert ws.trace("order")[3:] == ["command hook"]  # blocked: neither the extension's hook nor the core ran


# -- the seams for loop/event and plugins ---------------------------------------------------------------

def test_loop_event_hooks_give_verdicts_for_the_one_merge(tmp_path):
    """``run_event_hooks`` (what loop/event calls) runs the Stop hooks as processes; their verdicts merge
    with any other source's (an extension's here) by the same rule."""
    import asyncio

    from harness_sidecar.hooks.boundaries import ThreadHooks, run_event_hooks
    from harness_sidecar.hooks.declared import HookSource, read_file
    from harness_sidecar.hooks.decision import DENY, Verdict, merge

    ws = Workspace(tmp_path)
    ws.declare({"Stop": one(None, ws.script("stop.sh", f"cat > {tmp_path}/stop.json; "
                                                       "echo '{\"decision\": \"block\", \"reason\": \"tests fail\"}'\n")),
                "Notification": one("permission_prompt", ws.script("n.sh", f"cat > {tmp_path}/n.json\n"))})
    declared = read_file(HookSource(f"root:{ws.hooks_file}", str(ws.hooks_file), trusted=True))
    notes: list[dict] = []
    hooks = ThreadHooks("thread-9", str(tmp_path), [declared], 60000, 600000, False, 1500, notes.append)

    async def go():
        stop = await run_event_hooks("stop", {"stopHookActive": False, "lastAssistantMessage": "done"}, hooks)
        idle = await run_event_hooks("notification", {"message": "waiting", "type": "idle_prompt"}, hooks)
        asked = await run_event_hooks("notification", {"message": "allow?", "type": "permission_prompt"}, hooks)
        return stop, idle, asked

    stop, idle, asked = asyncio.run(go())
    assert json.loads((tmp_path / "stop.json").read_text()) == {
        "session_id": "thread-9", "transcript_path": None, "cwd": str(tmp_path), "hook_event_name": "Stop",
        "permission_mode": "default", "stop_hook_active": False, "last_assistant_message": "done"}
    decision = merge([Verdict("extension:keeper", context=["keep going"]), *stop])
    assert decision.outcome == "blocked" and decision.reason == "tests fail"
    assert decision.by == [f"root:{ws.hooks_file}"] and decision.context == ["keep going"]
    assert stop[0].decision == DENY and idle == [] and len(asked) == 1
    assert json.loads((tmp_path / "n.json").read_text())["notification_type"] == "permission_prompt"


def test_a_plugin_source_gets_its_variables(tmp_path, monkeypatch):
    """The plugin seam: ``read_hooks`` with a ``plugin:<name>`` source; ``${CLAUDE_PLUGIN_ROOT}`` and the
    data folder reach the hook (here the real safety-net plugin's hooks.json, unchanged)."""
    import asyncio
    import shutil

    from harness_sidecar.hooks.boundaries import ThreadHooks
    from harness_sidecar.hooks.declared import Declared, HookSource, read_hooks

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    plugin = Path(__file__).parent / "fixtures" / "hooks" / "safety-net"
    data = tmp_path / "state" / "plugins" / "safety-net"
    source = HookSource("plugin:safety-net", str(plugin / "hooks.json"), plugin_root=str(plugin),
                        plugin_data=str(data), trusted=True)
    handlers, problems = read_hooks(source, json.loads((plugin / "hooks.json").read_text()))
    assert problems == [] and [h.to_wire()["source"] for h in handlers] == ["plugin:safety-net"]
    hooks = ThreadHooks("thread-1", str(tmp_path), [Declared(source, handlers)], 60000, 600000, False, 1500,
                        lambda params: None)
    monkeypatch.setenv("HOME", str(tmp_path))  # the plugin logs under $HOME (the hook inherits the environment)
    verdicts = asyncio.run(hooks.run("PreToolUse", hooks.matching("PreToolUse", "Bash"), {
        "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "1"}))
    assert verdicts[0].decision == "deny" and "Safety Net" in verdicts[0].reason
    assert data.is_dir()  # CLAUDE_PLUGIN_DATA is created on first use


def test_check_lists_and_lints_a_roots_hooks(ws):
    import subprocess

    from harness_sidecar.console.client import child_env, sidecar_command

    ws.declare({"PreToolUse": one("Bash", "exit 0") + [{"hooks": [{"type": "agent", "prompt": "Review it"},
                                                                  {"type": "telegraph", "url": "x"}]}]})
    done = subprocess.run(sidecar_command() + ["check", "--json", str(ws.root)], text=True, env=child_env(),
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    report = json.loads(done.stdout)
    assert done.returncode == 1
    # v4 "Declared means listed": the agent handler is listed too (v3 left it out); v4 §3: an agent handler is a
    # handler type of its own (check has no editor to answer hook/prompt: a thread lists it supported: false)
    assert report["catalog"]["hooks"] == [{"source": f"root:{ws.hooks_file}", "event": "PreToolUse",
                                           "matcher": "Bash", "command": "exit 0", "trusted": False},
                                          {"source": f"root:{ws.hooks_file}", "event": "PreToolUse", "matcher": None,
                                           "type": "agent", "prompt": "Review it", "trusted": False},
                                          {"source": f"root:{ws.hooks_file}", "event": "PreToolUse", "matcher": None,
                                           "type": "telegraph", "url": "x", "supported": False, "trusted": False}]
    assert [d["kind"] for d in report["diagnostics"]] == ["hook_type_unsupported"]


def test_mcp_tools_are_matched_by_their_sidecar_names(spawn, ws):
    from mcp_helpers import sdk_server

    ws.declare({"PreToolUse": one("mcp__srv__.*", ws.script("mcp.sh", f"cat > {ws.dir}/mcp.json; "
                                                                      "echo 'no MCP pings' >&2; exit 2\n"))})
    sidecar, started, editor = open_thread(spawn, ws, mcpServers=[{"name": "srv", "command": sdk_server(),
                                                                    "required": True}])
    result = sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": "m1", "name": "mcp__srv__ping", "arguments": {}}}, timeout=60)["result"]
    assert result["details"]["blocked"]["reason"] == "no MCP pings"
    assert json.loads((ws.dir / "mcp.json").read_text())["tool_name"] == "mcp__srv__ping"


def test_permission_request_hooks_answer_allow_or_deny(tmp_path):
    """Claude Code's PermissionRequest answer ``hookSpecificOutput.decision.behavior`` is read too."""
    import asyncio

    from harness_sidecar.hooks.boundaries import ThreadHooks, run_event_hooks
    from harness_sidecar.hooks.declared import HookSource, read_file
    from harness_sidecar.hooks.decision import merge

    ws = Workspace(tmp_path)
    ws.declare({"PermissionRequest": one("Bash", _json_hook(ws, "deny.sh", {"hookSpecificOutput": {
        "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "not on main"}}}))
        + one("Read", _json_hook(ws, "allow.sh", {"hookSpecificOutput": {"decision": {"behavior": "allow"}}}))})
    declared = read_file(HookSource(f"root:{ws.hooks_file}", str(ws.hooks_file), trusted=True))
    hooks = ThreadHooks("thread-1", str(tmp_path), [declared], 60000, 600000, False, 1500, lambda params: None)
    ask = lambda tool: asyncio.run(run_event_hooks("permission_request", {  # noqa: E731
        "toolName": tool, "toolInput": {"command": "git push"}}, hooks))
    denied, allowed, unknown = merge(ask("Bash")), merge(ask("Read")), merge(ask("Write"))
    assert denied.outcome == "blocked" and denied.reason == "not on main"
    assert allowed.outcome == "allow" and allowed.allowed_by == [f"root:{ws.hooks_file}"]
    assert unknown.outcome == "allow" and unknown.allowed_by == []


def _wait_for_file(path: Path, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    pytest.fail(f"{path} was never written")


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["thread/close", "$/cancelRequest"])
def test_a_call_whose_pre_tool_use_hook_is_deciding_ends_at_close_or_cancel(spawn, ws, how):
    """thread/close answers the call blocked "closed"; $/cancelRequest answers it cancelled; either way the
    hook's process is killed, the tool never runs, and the sidecar keeps serving."""
    pidfile = ws.dir / "deciding.pid"
    ws.declare({"PreToolUse": one("Bash", ws.script("decide.sh", f"echo $$ > {pidfile}; exec sleep 300\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    call = sidecar.request_async("tools/call", {"threadId": started["threadId"],
                                                "call": {"id": "c1", "name": "Bash", "arguments": {"command": "ls"}}})
    hook = int(_wait_for_file(pidfile))
    end_deciding_call(sidecar, started["threadId"], call, how)
    assert _gone(hook), "the deciding hook survived"
    assert editor.ran == []
    assert sidecar.call("thread/start", {"roots": [str(ws.root)], "cwd": str(ws.dir)})["threadId"]  # still serving
