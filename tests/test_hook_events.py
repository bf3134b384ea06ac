"""Every event the formats define is accepted, and what a hook says is kept (protocol-v4 §3) — through
the real sidecar: handlers of all of Claude Code's events load; those the sidecar fires run
(``PostToolUseFailure`` after a failed core, ``InstructionsLoaded`` at thread/start, ``UserPromptExpansion``
when a command template expands); the rest are
listed ``dormant``; a block's reason, ``systemMessage`` and ``continue: false`` reach the editor.
"""

from __future__ import annotations

import json

from helpers import write
from test_command_hooks import Editor, Workspace, _json_hook, bash, one, open_thread

# Claude Code's hook events (its hooks reference and settings schema, 2.1.x), written out here on purpose:
# the test does not read the sidecar's own list.
CLAUDE_CODE_EVENTS = [
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "PermissionRequest", "PermissionDenied",
    "Notification", "UserPromptSubmit", "UserPromptExpansion", "Stop", "StopFailure", "SubagentStart",
    "SubagentStop", "PreCompact", "PostCompact", "Elicitation", "ElicitationResult", "TeammateIdle", "TaskCreated",
    "TaskCompleted", "Setup", "InstructionsLoaded", "CwdChanged", "FileChanged", "ConfigChange", "WorktreeCreate",
    "WorktreeRemove", "SessionStart", "SessionEnd", "PreModelSwitch", "PostModelSwitch", "MessageDisplay",
    "DirectoryAdded"]
FIRED = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "Notification", "UserPromptSubmit",
         "UserPromptExpansion", "ConfigChange",
         "Stop", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "InstructionsLoaded", "SessionStart",
         "SessionEnd",
         # fired by the editor through loop/event's v4 names (elicitation, task_created, cwd_changed, …, setup)
         "Elicitation", "ElicitationResult", "TaskCreated", "TaskCompleted", "CwdChanged", "FileChanged",
         "PostToolBatch", "StopFailure", "TeammateIdle", "WorktreeCreate", "WorktreeRemove", "PermissionDenied",
         "Setup"}


def test_every_claude_code_and_codex_event_loads_and_the_unfired_ones_are_dormant(spawn, tmp_path):
    ws = Workspace(tmp_path)
    events = CLAUDE_CODE_EVENTS + ["Interrupt"]  # Codex's own
    ws.declare({event: one(None, "true") for event in events})
    sidecar, started, editor = open_thread(spawn, ws)
    listed = {h["event"]: h for h in started["catalog"]["hooks"]}
    assert set(listed) == set(events)
    assert {e for e, h in listed.items() if h.get("dormant")} == set(events) - FIRED
    assert all("dormant" not in listed[e] for e in FIRED)
    kinds = [d for d in started["diagnostics"] if d.get("source") == f"root:{ws.hooks_file}"]
    assert {d["kind"] for d in kinds} == {"hook_dormant"}  # no failure of any kind
    assert all(d["severity"] == "info" for d in kinds) and len(kinds) == len(set(events) - FIRED)
    assert sorted(d["event"] for d in kinds) == sorted(set(events) - FIRED)
    (tmp_path / "other").mkdir()
    unknown = Workspace(tmp_path / "other")
    unknown.declare({"PreToolUze": one(None, "true")})
    _, other, _ = open_thread(spawn, unknown)
    assert [d["kind"] for d in other["diagnostics"] if d.get("source")] == ["hook_invalid"]


class FailingEditor(Editor):
    """Bash fails when the command is ``false``."""

    def __call__(self, message: dict) -> dict | None:
        if message["method"] == "item/tool/call" and message["params"]["arguments"]["command"] == "false":
            self.ran.append(message["params"]["arguments"])
            return {"result": {"contentItems": [{"type": "inputText", "text": "exit status 1"}], "success": False}}
        return super().__call__(message)


def test_post_tool_use_failure_runs_after_a_failed_core_only(spawn, tmp_path):
    ws = Workspace(tmp_path)
    seen = ws.script("fail.sh", f"cat >> {tmp_path}/failures.jsonl; echo >> {tmp_path}/failures.jsonl\n"
                                "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"try true\"}}'\n")
    ws.declare({"PostToolUseFailure": one("Bash", seen),
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": (
                    "read x; case \"$x\" in *blocked-one*) echo no >&2; exit 2;; esac")}]}]})
    sidecar, started, editor = open_thread(spawn, ws, FailingEditor())
    assert not bash(sidecar, started, "true")["isError"]
    assert not (tmp_path / "failures.jsonl").exists()  # a success: no PostToolUseFailure
    assert bash(sidecar, started, "echo blocked-one", call_id="c2")["details"]["blocked"]["reason"] == "no"
    assert not (tmp_path / "failures.jsonl").exists()  # blocked before the core: not a failure of the core
    failed = bash(sidecar, started, "false", call_id="c3")
    assert failed["isError"]
    lines = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines() if line]
    assert len(lines) == 1
    assert lines[0]["hook_event_name"] == "PostToolUseFailure" and lines[0]["tool_name"] == "Bash"
    assert lines[0]["tool_input"] == {"command": "false"} and lines[0]["tool_use_id"] == "c3"
    assert "exit status 1" in lines[0]["error"]
    assert failed["details"]["hookFeedback"] == [{"source": f"root:{ws.hooks_file}", "kind": "context",
                                                  "text": "try true"}]


def test_instructions_loaded_runs_once_per_instructions_file_at_thread_start(spawn, tmp_path):
    ws = Workspace(tmp_path)
    write(ws.root / "AGENTS.md", "# be kind\n")
    ws.declare({"InstructionsLoaded": one("session_start", ws.script("i.sh", f"cat >> {tmp_path}/loaded\n"
                                                                             f"echo >> {tmp_path}/loaded\n"))})
    sidecar, started, editor = open_thread(spawn, ws)
    lines = [json.loads(line) for line in (tmp_path / "loaded").read_text().splitlines() if line]
    assert [(x["hook_event_name"], x["file_path"], x["load_reason"]) for x in lines] == [
        ("InstructionsLoaded", str(ws.root / "AGENTS.md"), "session_start")]


def test_a_dormant_event_never_runs(spawn, tmp_path):
    ws = Workspace(tmp_path)
    ws.declare({"TeammateIdle": one(None, f"touch {tmp_path}/ran"), "PostToolBatch": one(None, f"touch {tmp_path}/ran"),
                "PreToolUse": one("Bash", "cat > /dev/null")})
    sidecar, started, editor = open_thread(spawn, ws)
    bash(sidecar, started, "ls")
    sidecar.call("loop/event", {"threadId": started["threadId"], "event": "stop",
                                "payload": {"stopHookActive": False}})
    assert not (tmp_path / "ran").exists()


# -- what a hook says is kept ------------------------------------------------------------------------------

def test_the_block_reason_is_what_the_hook_said_in_the_documented_order(spawn, tmp_path):
    ws = Workspace(tmp_path)
    answers = {
        "pdr": {"reason": "r", "systemMessage": "s", "hookSpecificOutput": {
            "permissionDecision": "deny", "permissionDecisionReason": "the permission reason"}},
        "reason": {"decision": "block", "reason": "the reason", "systemMessage": "s"},
        "message": {"hookSpecificOutput": {"permissionDecision": "deny"}, "systemMessage": "only the message"},
    }
    stderr_only = ws.script("stderr.sh", "cat > /dev/null; echo 'said on stderr' >&2\n"
                                         "echo '{\"decision\": \"block\"}'\n")
    groups = [{"matcher": name, "hooks": [{"type": "command", "command": _json_hook(ws, f"{name}.sh", answer)}]}
              for name, answer in answers.items()]
    groups.append({"matcher": "stderr", "hooks": [{"type": "command", "command": stderr_only}]})
    ws.declare({"PreToolUse": groups})
    tools = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in [*answers, "stderr"]]
    sidecar, started, editor = open_thread(spawn, ws, dynamicTools=tools)
    reasons = {}
    for name in [*answers, "stderr"]:
        result = sidecar.call("tools/call", {"threadId": started["threadId"],
                                             "call": {"id": name, "name": name, "arguments": {}}}, timeout=60)["result"]
        reasons[name] = result["details"]["blocked"]["reason"]
    assert reasons == {"pdr": "the permission reason", "reason": "the reason", "message": "only the message",
                       "stderr": "said on stderr"}


def test_a_system_message_reaches_the_user_as_a_warning_also_when_the_call_goes_on(spawn, tmp_path):
    ws = Workspace(tmp_path)
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "m.sh", {"systemMessage": "formatting after this"}))})
    editor = Editor()
    sidecar = spawn(initialize=False, on_request=editor)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "protocolVersion": "2",
                                "capabilities": {"ui": {"notify": True}}})
    started = sidecar.call("thread/start", {"roots": [str(ws.root)], "cwd": str(tmp_path),
                                            "dynamicTools": [{"name": "Bash", "description": "sh", "inputSchema": {
                                                "type": "object"}}],
                                            "trustedHooks": [{"path": str(ws.hooks_file)}]})
    result = bash(sidecar, started, "ls")
    assert not result["isError"] and result["details"]["hookMessages"] == ["formatting after this"]
    notes = [n["params"] for n in sidecar.notifications if n["method"] == "ui/notify"]
    assert notes == [{"threadId": started["threadId"], "extensionId": f"root:{ws.hooks_file}", "level": "warning",
                      "message": "formatting after this"}]


def test_continue_false_stops_the_turn_and_every_answer_says_so(spawn, tmp_path):
    ws = Workspace(tmp_path)
    stop = {"continue": False, "stopReason": "build is red: fix it first"}
    ws.declare({"PreToolUse": one("Bash", _json_hook(ws, "pre.sh", stop)),
                "UserPromptSubmit": one(None, _json_hook(ws, "prompt.sh", stop)),
                "SubagentStop": one(None, _json_hook(ws, "sub.sh", stop)),
                "PreCompact": one(None, _json_hook(ws, "compact.sh", {"continue": False}))})
    sidecar, started, editor = open_thread(spawn, ws)
    source = f"root:{ws.hooks_file}"
    said = {"reason": "build is red: fix it first", "by": [source]}
    result = bash(sidecar, started, "ls")
    assert result["isError"] and editor.ran == []
    assert result["details"]["stopTurn"] == said
    assert result["details"]["blocked"]["reason"] == "build is red: fix it first"
    refused = sidecar.request("input/submit", {"threadId": started["threadId"], "text": "go on"})
    assert refused["error"]["data"]["kind"] == "input_blocked" and refused["error"]["data"]["stopTurn"] == said
    loop = sidecar.call("loop/event", {"threadId": started["threadId"], "event": "subagent_stop",
                                       "payload": {"agentType": "x"}}, timeout=60)
    assert loop["stopTurn"] == said and loop["blocked"]["reason"] == "build is red: fix it first"
    observed = sidecar.call("loop/event", {"threadId": started["threadId"], "event": "compact_before",
                                           "payload": {"trigger": "auto"}}, timeout=60)
    assert observed["blocked"] is None  # an observer event is not blocked, but the turn still stops
    assert observed["stopTurn"] == {"reason": "a hook stopped the turn", "by": [source]}


def test_user_prompt_expansion_runs_when_a_command_template_expands(spawn, tmp_path):
    ws = Workspace(tmp_path)
    write(ws.root / "commands" / "deploy.md", "---\ndescription: Deploy.\n---\nDeploy $ARGUMENTS now.\n")
    write(ws.root / "commands" / "wipe.md", "---\ndescription: Wipe.\n---\nWipe everything.\n")
    ws.declare({"UserPromptExpansion": one("deploy", ws.script("x.sh", f"cat > {tmp_path}/expansion.json\n"
                                                                       "echo 'staging is frozen today'\n"))
                + one("wipe", _json_hook(ws, "no.sh", {"decision": "block", "reason": "not from chat"}))})
    sidecar, started, editor = open_thread(spawn, ws)
    thread = started["threadId"]
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/deploy api"}, timeout=60)
    assert answer["action"] == "send" and "Deploy api now." in answer["message"]["content"]
    assert answer["hookContext"] == ["staging is frozen today"]
    seen = json.loads((tmp_path / "expansion.json").read_text())
    assert {k: seen[k] for k in ("hook_event_name", "expansion_type", "command_name", "command_args", "prompt")} == {
        "hook_event_name": "UserPromptExpansion", "expansion_type": "slash_command", "command_name": "deploy",
        "command_args": "api", "prompt": "/deploy api"}
    refused = sidecar.request("input/submit", {"threadId": thread, "text": "/wipe"}, timeout=60)
    assert refused["error"]["data"]["kind"] == "input_blocked" and "not from chat" in refused["error"]["message"]
    plain = sidecar.call("input/submit", {"threadId": thread, "text": "just words"}, timeout=60)
    assert "hookContext" not in plain


def test_config_change_hooks_decide_whether_a_changed_settings_file_applies_at_refresh(spawn, tmp_path):
    """The thread's current ConfigChange hooks see each changed hooks file at thread/refresh; a block keeps
    the old hooks (the change stays pending, config_change_blocked says so); an allow lets it apply."""
    ws = Workspace(tmp_path)
    gate = ws.script("gate.sh", f"cat > {tmp_path}/change.json\n"
                                f"if [ -e {tmp_path}/locked ]; then echo 'settings are locked' >&2; exit 2; fi\n")
    ws.declare({"ConfigChange": one("local_settings", gate)})
    local = ws.root / ".claude" / "settings.local.json"
    write(local, json.dumps({"hooks": {}}))
    (tmp_path / "locked").touch()
    sidecar, started, editor = open_thread(spawn, ws, trusted=[{"path": str(ws.hooks_file)}, {"path": str(local)}],
                                           watch=False)
    thread = started["threadId"]
    write(local, json.dumps({"hooks": {"PreToolUse": one("Bash", "cat >/dev/null; echo 'no shell' >&2; exit 2")}}))
    refreshed = sidecar.call("thread/refresh", {"threadId": thread}, timeout=60)
    assert [h["event"] for h in refreshed["catalog"]["hooks"]] == ["ConfigChange"]  # the change did not apply
    seen = json.loads((tmp_path / "change.json").read_text())
    assert (seen["hook_event_name"], seen["source"], seen["file_path"]) == ("ConfigChange", "local_settings",
                                                                            str(local))
    [said] = [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"
              and n["params"]["kind"] == "config_change_blocked"]
    assert said["path"] == str(local) and "settings are locked" in said["message"]
    assert not bash(sidecar, started, "ls")["isError"]
    (tmp_path / "locked").unlink()
    refreshed = sidecar.call("thread/refresh", {"threadId": thread}, timeout=60)
    assert [h["event"] for h in refreshed["catalog"]["hooks"]] == ["ConfigChange", "PreToolUse"]
    assert bash(sidecar, started, "ls", call_id="c2")["details"]["blocked"]["reason"] == "no shell"
