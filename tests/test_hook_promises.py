"""Hook-side promises of protocol-v4 (§1 "No path is shell syntax"; §2 "Hook text never costs a result",
"A hook's answer is read strictly", "Declared means listed", "SessionStart context reaches the model").

Every test drives the real sidecar process. Hooks are small shell scripts that record what they saw
into files of the test's temporary directory, so what ran — and what else ran — is seen from outside.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import write

BASH = {"name": "Bash", "description": "Run a shell command.",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
                        "additionalProperties": False}}


class Editor:
    """The editor's side: runs Bash calls (records them), answering with ``output`` (default: a short text)."""

    def __init__(self, output: str | None = None) -> None:
        self.ran: list[dict] = []
        self.output = output

    def __call__(self, message: dict) -> dict | None:
        if message["method"] == "item/tool/call":
            self.ran.append(message["params"]["arguments"])
            text = self.output if self.output is not None else "ran " + json.dumps(message["params"]["arguments"])
            return {"result": {"contentItems": [{"type": "inputText", "text": text}], "success": True}}
        return {"error": {"code": -32601, "message": "no"}}


def start_sidecar(spawn, editor: Editor, *args: str, **process):
    from harness_sidecar.console.client import sidecar_command

    process.setdefault("command", sidecar_command() + list(args))
    sidecar = spawn(initialize=False, on_request=editor, **process)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "protocolVersion": "4", "capabilities": {}})
    return sidecar


def bash(sidecar, thread_id: str, command: str = "ls", call_id: str = "c1") -> dict:
    return sidecar.call("tools/call", {"threadId": thread_id,
                                       "call": {"id": call_id, "name": "Bash", "arguments": {"command": command}}},
                        timeout=120)["result"]


def diagnostics(sidecar, kind: str) -> list[dict]:
    return [n["params"] for n in sidecar.notifications
            if n["method"] == "thread/diagnostic" and n["params"].get("kind") == kind]


def script(path: Path, body: str) -> str:
    write(path, "#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def group(matcher: str | None, *handlers: dict) -> list[dict]:
    out: dict = {"hooks": list(handlers)}
    if matcher is not None:
        out["matcher"] = matcher
    return [out]


def cmd(command: str, **more) -> dict:
    return {"type": "command", "command": command, **more}


# -- §1 No path is shell syntax -----------------------------------------------------------------------

# Folder names an attacker (a cloned repository, an archive) can choose. Each would run `touch <canary>`
# in the hook's cwd if the sidecar pasted the path into the shell script.
HOSTILE_NAMES = [
    "fmt$(touch canary1)",
    "fmt`touch canary2`",
    "a b; touch canary3; c",
    "q'uo\"te$(touch canary4)",
    "x'$(touch canary5)'y",
    'x"$(touch canary6)"y',
    "new\nline$(touch canary7)",
    "fmt$(touch canary8)'\"`touch canary9`;&|<>*?[]{}~#!\\",
]


def _canaries(top: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(top) for f in files if f.startswith("canary")]


def _records(trace: Path) -> list[tuple[str, ...]]:
    """What the recording hook wrote: one record per run ($0, $1, $2, $3), NUL-free separators."""
    if not trace.exists():
        return []
    return [tuple(r.split("\x1f")) for r in trace.read_text().split("\x1e") if r]


def _hostile_name_case(spawn, top: Path, name: str, **process) -> None:
    """A project folder and a plugin folder named ``name`` under ``top``; the root's and the plugin's hooks use
    the placeholders bare, in double quotes (as real plugins write them), in single quotes, inside ``$(…)`` and
    in exec form. Each hook at that path runs with the path as one argument; nothing else runs."""
    trace = top / "trace"
    recorder = "printf '%s\\037%s\\037%s\\037%s\\036' \"$0\" \"$1\" \"$2\" \"$3\" >> " + str(trace) + "\n"
    project = top / name
    plugin = project / "plugins" / ("fmt" + name)
    script(project / "hooks" / "x.sh", recorder)
    script(plugin / "hooks" / "x.sh", recorder)
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "fmt"}))
    write(plugin / "hooks" / "hooks.json", json.dumps({"hooks": {"PreToolUse": group(
        "Bash",
        cmd('"${CLAUDE_PLUGIN_ROOT}/hooks/x.sh" plugin-dq "${CLAUDE_PROJECT_DIR}"'),
        cmd("${CLAUDE_PLUGIN_ROOT}/hooks/x.sh plugin-bare ${CLAUDE_PLUGIN_DATA}"),
        cmd("${PLUGIN_ROOT}/hooks/x.sh", args=["plugin-exec", "${PLUGIN_DATA}"]))}}))
    write(project / "hooks.json", json.dumps({"hooks": {"PreToolUse": group(
        "Bash",
        cmd('"${CLAUDE_PROJECT_DIR}/hooks/x.sh" root-dq'),
        cmd("${CLAUDE_PROJECT_DIR}/hooks/x.sh root-bare"),
        cmd("$CLAUDE_PROJECT_DIR/hooks/x.sh root-nobrace \"$CLAUDE_PROJECT_DIR\" '$CLAUDE_PROJECT_DIR'"),
        cmd("sh '${CLAUDE_PROJECT_DIR}/hooks/x.sh' root-sq 'in ${CLAUDE_PROJECT_DIR} quotes'"),
        cmd("cd \"$(dirname \"${CLAUDE_PROJECT_DIR}/hooks/x.sh\")\" && ./x.sh root-subst"),
        cmd("${CLAUDE_PROJECT_DIR}/hooks/x.sh", args=["root-exec", "${CLAUDE_PROJECT_DIR}"]))}}))
    for path in [top, *top.rglob("*")]:  # an injected command could write anywhere here (as any user)
        if path.is_dir():
            path.chmod(0o777)
    editor = Editor()
    sidecar = start_sidecar(spawn, editor, **process)
    started = sidecar.call("thread/start", {
        "roots": [str(project)], "cwd": str(project), "dynamicTools": [BASH], "watch": False,
        "trustedHooks": [{"path": str(project / "hooks.json")}], "trustedPlugins": [{"name": "fmt"}]}, timeout=120)
    result = bash(sidecar, started["threadId"])
    assert not result["isError"], result
    assert editor.ran == [{"command": "ls"}]
    assert _canaries(top) == []
    root_hook, plugin_hook = str(project / "hooks" / "x.sh"), str(plugin / "hooks" / "x.sh")
    runs = _records(trace)
    by_label = {r[1]: r for r in runs}
    assert len(runs) == 9 and set(by_label) == {"plugin-dq", "plugin-bare", "plugin-exec", "root-dq", "root-bare",
                                                "root-nobrace", "root-sq", "root-subst", "root-exec"}, runs
    assert by_label["root-nobrace"] == (root_hook, "root-nobrace", str(project), "$CLAUDE_PROJECT_DIR")
    assert by_label["plugin-dq"][:3] == (plugin_hook, "plugin-dq", str(project))
    assert by_label["plugin-bare"][0] == plugin_hook and by_label["plugin-bare"][2]
    assert by_label["plugin-exec"][0] == plugin_hook and by_label["plugin-exec"][2] == by_label["plugin-bare"][2]
    assert by_label["root-dq"][0] == by_label["root-bare"][0] == by_label["root-sq"][0] == root_hook
    assert by_label["root-sq"][2] == f"in {project} quotes"
    assert by_label["root-subst"][0] == "./x.sh"
    assert by_label["root-exec"][:3] == (root_hook, "root-exec", str(project))


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=[f"name{i}" for i in range(len(HOSTILE_NAMES))])
def test_a_folder_name_is_never_shell_code_in_any_form_of_a_hook_command(spawn, tmp_path, name):
    _hostile_name_case(spawn, tmp_path, name)


SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(SYSTEM_PYTHON),
                    reason="needs root, setpriv and a system Python to become an ordinary user")
def test_as_the_editors_ordinary_user_a_folder_name_is_never_shell_code(spawn):
    """The same as the editor's (ordinary) user: a sidecar run as nobody, every folder writable by it."""
    import site

    from harness_sidecar.console.client import child_env

    top = Path(tempfile.mkdtemp(prefix="harness-hook-names-"))
    try:
        top.chmod(0o777)
        env = child_env()
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])
        env["HARNESS_SIDECAR_STATE_DIR"] = str(top / "state")
        env["HOME"] = str(top)
        for i, name in enumerate((HOSTILE_NAMES[3], HOSTILE_NAMES[6], HOSTILE_NAMES[7])):
            case = top / f"case{i}"
            case.mkdir()
            _hostile_name_case(spawn, case, name, env=env,
                               command=[*AS_NOBODY, SYSTEM_PYTHON, "-P", "-m", "harness_sidecar"])
    finally:
        shutil.rmtree(top, ignore_errors=True)


# -- §2 A hook's answer is read strictly ---------------------------------------------------------------

def _answering_root(tmp_path: Path, event: str, answers: dict[str, bytes], matcher: str | None = "Bash") -> Path:
    """A root whose ``event`` hooks each print one answer's exact bytes (one handler per answer)."""
    root = tmp_path / "project"
    handlers = []
    for label, data in answers.items():
        (tmp_path / "answers").mkdir(parents=True, exist_ok=True)
        (tmp_path / "answers" / label).write_bytes(data)
        handlers.append(cmd(f"cat {tmp_path / 'answers' / label}"))
    write(root / "hooks.json", json.dumps({"hooks": {event: group(matcher, *handlers)}}))
    return root


def _thread(sidecar, root: Path, **more) -> str:
    return sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "dynamicTools": [BASH], "watch": False,
                                         "trustedHooks": [{"path": str(root / "hooks.json")}], **more},
                        timeout=120)["threadId"]


BOM = b"\xef\xbb\xbf"
UNDEFINED_ANSWERS = {  # label: (stdout, the field the diagnostic names)
    "decision-deny": (b'{"decision": "deny", "reason": "no"}', "decision"),
    "permission-Deny": (b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "Deny"}}',
                        "hookSpecificOutput.permissionDecision"),
    "permission-number": (b'{"hookSpecificOutput": {"permissionDecision": 0}}', "hookSpecificOutput.permissionDecision"),
    "bom-decision-Block": (BOM + b'{"decision": "Block"}', "decision"),
}


@pytest.mark.parametrize("label", sorted(UNDEFINED_ANSWERS))
def test_an_undefined_decision_value_blocks_and_names_its_field(spawn, tmp_path, label):
    data, field = UNDEFINED_ANSWERS[label]
    root = _answering_root(tmp_path, "PreToolUse", {label: data})
    editor = Editor()
    sidecar = start_sidecar(spawn, editor)
    result = bash(sidecar, _thread(sidecar, root))
    assert result["isError"] and editor.ran == []
    assert result["details"]["blocked"]["kind"] == "hook_failed"
    assert f"'{field}'" in result["details"]["blocked"]["reason"]
    [said] = diagnostics(sidecar, "hook_failed")
    assert said["field"] == field and said["event"] == "PreToolUse"


def test_a_bom_before_the_answer_is_skipped_and_defined_values_still_decide(spawn, tmp_path):
    deny = BOM + b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", ' \
                 b'"permissionDecisionReason": "not with a BOM either"}}'
    editor = Editor()
    sidecar = start_sidecar(spawn, editor)
    result = bash(sidecar, _thread(sidecar, _answering_root(tmp_path / "a", "PreToolUse", {"deny": deny})))
    assert result["isError"] and editor.ran == []
    assert result["details"]["blocked"] == {"kind": "hook", "reason": "not with a BOM either",
                                            "by": [f"root:{tmp_path / 'a' / 'project' / 'hooks.json'}"]}
    allowing = {"approve": b'{"decision": "approve"}', "null": b'{"decision": null}',
                "allow": BOM + b'{"hookSpecificOutput": {"permissionDecision": "allow", "additionalContext": "bom ok"}}'}
    result = bash(sidecar, _thread(sidecar, _answering_root(tmp_path / "b", "PreToolUse", allowing)), call_id="c2")
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert result["details"]["hookContext"] == ["bom ok"]
    assert diagnostics(sidecar, "hook_failed") == []


def test_an_undefined_value_with_failures_open_lets_the_call_go_on_but_is_said(spawn, tmp_path):
    root = _answering_root(tmp_path, "PreToolUse", {"x": b'{"decision": "deny"}'})
    editor = Editor()
    sidecar = start_sidecar(spawn, editor)
    result = bash(sidecar, _thread(sidecar, root, limits={"commandHookFailure": "open"}))
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert [d["field"] for d in diagnostics(sidecar, "hook_failed")] == ["decision"]


@pytest.mark.parametrize("decision,field", [({"behavior": "Allow"}, "hookSpecificOutput.decision.behavior"),
                                            ("deny", "hookSpecificOutput.decision")])
def test_a_permission_request_behavior_is_read_strictly(spawn, tmp_path, decision, field):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}).encode()
    root = _answering_root(tmp_path, "PermissionRequest", {"x": answer})
    sidecar = start_sidecar(spawn, Editor())
    thread_id = _thread(sidecar, root)
    said = sidecar.call("loop/event", {"threadId": thread_id, "event": "permission_request",
                                       "payload": {"toolName": "Bash", "toolInput": {"command": "ls"}}})
    assert said["decision"] == "deny" and said["blocked"] is not None
    assert f"'{field}'" in said["blocked"]["reason"]
    assert [d["field"] for d in diagnostics(sidecar, "hook_failed")] == [field]


# -- §2 Declared means listed --------------------------------------------------------------------------

def test_unsupported_handlers_are_listed_with_supported_false_and_never_run(spawn, tmp_path):
    """An unknown and a missing type, and (v4 §3) the types Claude Code does not run on an event — prompt and
    agent on SessionStart, http on SessionStart — each listed (supported: false), each with its
    hook_type_unsupported diagnostic; the command handler beside them runs, and only it. (v3 listed http, prompt,
    agent and mcp_tool as unsupported everywhere; v4 runs them: tests/test_hook_types.py.)"""
    ran = tmp_path / "ran"
    root = tmp_path / "project"
    unsupported = [{"type": "carrier-pigeon", "command": f"echo pigeon >> {ran}"}, {"command": f"echo untyped >> {ran}"}]
    write(root / "hooks.json", json.dumps({"hooks": {
        "PreToolUse": group("Bash", cmd(f"echo command >> {ran}"), *unsupported),
        "SessionStart": group(None, {"type": "prompt", "prompt": "Say hi"},
                              {"type": "agent", "prompt": "Review it", "timeout": 30},
                              {"type": "http", "url": "http://127.0.0.1:9/hook"})}}))
    editor = Editor()
    sidecar = start_sidecar(spawn, editor)
    started = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "dynamicTools": [BASH],
                                            "watch": False, "trustedHooks": [{"path": str(root / "hooks.json")}]})
    source = f"root:{root / 'hooks.json'}"
    listed = started["catalog"]["hooks"]
    assert listed == [
        {"source": source, "event": "PreToolUse", "matcher": "Bash", "command": f"echo command >> {ran}",
         "trusted": True},
        {"source": source, "event": "PreToolUse", "matcher": "Bash", "command": f"echo pigeon >> {ran}",
         "type": "carrier-pigeon", "supported": False, "trusted": True},
        {"source": source, "event": "PreToolUse", "matcher": "Bash", "command": f"echo untyped >> {ran}",
         "supported": False, "trusted": True},
        {"source": source, "event": "SessionStart", "matcher": None, "type": "prompt", "prompt": "Say hi",
         "supported": False, "trusted": True},
        {"source": source, "event": "SessionStart", "matcher": None, "timeout": 30, "type": "agent",
         "prompt": "Review it", "supported": False, "trusted": True},
        {"source": source, "event": "SessionStart", "matcher": None, "type": "http", "url": "http://127.0.0.1:9/hook",
         "supported": False, "trusted": True}]
    unsupported_said = [d for d in started["diagnostics"] if d["kind"] == "hook_type_unsupported"]
    assert sorted(d["type"] for d in unsupported_said) == sorted(["carrier-pigeon", "None", "prompt", "agent", "http"])
    assert "hookContext" not in started
    result = bash(sidecar, started["threadId"])
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert ran.read_text().splitlines() == ["command"]


def test_a_plugins_unsupported_handlers_are_listed_too(spawn, tmp_path):
    plugin = tmp_path / "plugins" / "fmt"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "fmt"}))
    write(plugin / "hooks" / "hooks.json", json.dumps({"hooks": {
        "PostToolUse": group("Edit", {"type": "telegraph", "url": "https://example.invalid/hook"})}}))
    sidecar = start_sidecar(spawn, Editor())
    started = sidecar.call("thread/start", {"roots": [str(tmp_path)], "watch": False})
    assert started["catalog"]["hooks"] == [{"source": "plugin:fmt", "event": "PostToolUse", "matcher": "Edit",
                                            "type": "telegraph", "url": "https://example.invalid/hook",
                                            "supported": False, "trusted": False}]
    assert [d["kind"] for d in started["diagnostics"]] == ["hook_type_unsupported"]
    assert diagnostics(sidecar, "hook_untrusted") == []  # nothing of it could run anyway


# -- §2 SessionStart context reaches the model ---------------------------------------------------------

def test_session_start_context_is_in_the_system_prompt_for_the_threads_life(spawn, tmp_path):
    """Plain stdout and additionalContext of two sources: in thread/start.hookContext and, in sections naming
    each source, in every context/build — after a thread/refresh too."""
    root = tmp_path / "project"
    plain = script(tmp_path / "plain.sh", "echo 'Remember: the staging database is read-only.'\n")
    json_answer = script(tmp_path / "json.sh", "printf '%s' '{\"hookSpecificOutput\": {\"hookEventName\": "
                                               "\"SessionStart\", \"additionalContext\": \"Team style: tabs.\"}}'\n")
    write(root / "hooks.json", json.dumps({"hooks": {"SessionStart": group("startup", cmd(plain))}}))
    plugin = tmp_path / "plugins" / "style"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "style"}))
    write(plugin / "hooks" / "hooks.json", json.dumps({"hooks": {"SessionStart": group(None, cmd(json_answer))}}))
    write(root / "AGENTS.md", "# Project\n\nBe brief.\n")
    sidecar = start_sidecar(spawn, Editor())
    started = sidecar.call("thread/start", {"roots": [str(root)], "plugins": [str(plugin)], "cwd": str(root),
                                            "watch": False, "trustedHooks": [{"path": str(root / "hooks.json")}],
                                            "trustedPlugins": [{"name": "style"}]}, timeout=120)
    assert started["hookContext"] == ["Remember: the staging database is read-only.", "Team style: tabs."]
    thread_id = started["threadId"]
    expected = (f"# Hook context (SessionStart: root:{root / 'hooks.json'})\n\n"
                "Remember: the staging database is read-only.\n\n"
                "# Hook context (SessionStart: plugin:style)\n\nTeam style: tabs.\n")
    prompt = sidecar.call("context/build", {"threadId": thread_id})["systemPrompt"]
    assert prompt.startswith(f"# Instructions ({root / 'AGENTS.md'})") and prompt.endswith("\n" + expected)
    sidecar.call("thread/refresh", {"threadId": thread_id})
    assert sidecar.call("context/build", {"threadId": thread_id})["systemPrompt"].endswith("\n" + expected)


def test_untrusted_session_start_hooks_add_nothing_to_the_system_prompt(spawn, tmp_path):
    root = tmp_path / "project"
    write(root / "hooks.json", json.dumps({"hooks": {"SessionStart": group(None, cmd("echo injected"))}}))
    sidecar = start_sidecar(spawn, Editor())
    started = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "watch": False})
    assert "hookContext" not in started
    assert "injected" not in sidecar.call("context/build", {"threadId": started["threadId"]})["systemPrompt"]


# -- §2 Hook text never costs a result -----------------------------------------------------------------

CUT_MARK = "… [hook text cut by the sidecar: "


def _wire_size(value) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _answers_of(tmp_path: Path, event: str, texts: list[str], key: str = "additionalContext") -> list[dict]:
    """One handler per text, each answering it as ``hookSpecificOutput.<key>`` (or top-level systemMessage)."""
    handlers = []
    for i, text in enumerate(texts):
        path = tmp_path / "answers" / f"{event}-{key}-{i}.json"
        body = {"systemMessage": text} if key == "systemMessage" else \
            {"hookSpecificOutput": {"hookEventName": event, key: text}}
        write(path, json.dumps(body))
        handlers.append(cmd(f"cat {path}"))
    return handlers


def test_forty_hooks_adding_a_megabyte_each_never_cost_the_tools_result(spawn, tmp_path):
    """The v3 case: 40 PostToolUse hooks adding 1 MB additionalContext turned a successful call into too_large.
    Now the core's result is whole, every hook's text is there (cut to fit and marked), the answer fits, and one
    hook_text_truncated says so. PreToolUse's additionalContext and systemMessage are cut alike."""
    limit = 4 * 1024 * 1024
    core_text = "CORE " + "c" * 500_000
    post = [f"{i:02d}:" + "p" * 1_000_000 for i in range(40)]
    root = tmp_path / "project"
    write(root / "hooks.json", json.dumps({"hooks": {
        "PostToolUse": group("Bash", *_answers_of(tmp_path, "PostToolUse", post)),
        "PreToolUse": group("Bash", *_answers_of(tmp_path, "PreToolUse", ["pre-context " + "q" * 1_000_000]),
                            *_answers_of(tmp_path, "PreToolUse", ["pre-message " + "m" * 1_000_000], "systemMessage"))}}))
    editor = Editor(output=core_text)
    sidecar = start_sidecar(spawn, editor, "--max-result-bytes", str(limit))
    thread_id = _thread(sidecar, root)
    for call_id in ("c1", "c2"):  # and it keeps serving
        result = bash(sidecar, thread_id, call_id=call_id)
        assert not result["isError"] and result["details"].get("kind") != "too_large", str(result)[:600]
        assert result["content"][0] == {"type": "text", "text": core_text}  # the core's result, whole
        assert _wire_size({"result": result}) <= limit
        feedback = result["details"]["hookFeedback"]
        assert len(feedback) == 40 and [item["text"] for item in result["content"][1:]] == [
            f"[hook {f['source']}] {f['text']}" for f in feedback]  # every hook's say, in declaration order
        cut = [i for i, f in enumerate(feedback) if f["text"] != post[i]]
        assert cut and feedback[0]["text"].startswith("00:p")
        for i in cut:  # each cut is marked and keeps a prefix of that hook's text (nothing, at worst)
            text = feedback[i]["text"]
            assert CUT_MARK in text and text.endswith("more bytes did not fit --max-result-bytes]")
            assert post[i].startswith(text[:text.index(CUT_MARK)])
        assert result["details"]["hookContext"][0].startswith("pre-context ")
        assert result["details"]["hookMessages"][0].startswith("pre-message ")
    said = diagnostics(sidecar, "hook_text_truncated")
    assert len(said) == 2 and said[0]["limit"] == limit and said[0]["cut"] >= len(cut)


def test_hook_text_that_fits_is_untouched_and_nothing_is_said(spawn, tmp_path):
    root = tmp_path / "project"
    write(root / "hooks.json", json.dumps({"hooks": {
        "PostToolUse": group("Bash", *_answers_of(tmp_path, "PostToolUse", ["fits " + "f" * 10_000]))}}))
    sidecar = start_sidecar(spawn, Editor(), "--max-result-bytes", str(64 * 1024))
    result = bash(sidecar, _thread(sidecar, root))
    assert result["details"]["hookFeedback"][0]["text"] == "fits " + "f" * 10_000
    assert diagnostics(sidecar, "hook_text_truncated") == []


def test_a_blocked_calls_hook_context_is_cut_to_fit_too(spawn, tmp_path):
    root = tmp_path / "project"
    path = tmp_path / "deny.json"
    write(path, json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                   "permissionDecisionReason": "no",
                                                   "additionalContext": "why " + "w" * 300_000}}))
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": group("Bash", cmd(f"cat {path}"))}}))
    limit = 128 * 1024
    sidecar = start_sidecar(spawn, Editor(), "--max-result-bytes", str(limit))
    result = bash(sidecar, _thread(sidecar, root))
    assert result["isError"] and result["details"]["blocked"]["reason"] == "no"
    [context] = result["details"]["hookContext"]
    assert context.startswith("why w") and CUT_MARK in context and _wire_size({"result": result}) <= limit
    assert len(diagnostics(sidecar, "hook_text_truncated")) == 1


def test_session_start_and_prompt_context_are_cut_to_fit_their_answers(spawn, tmp_path):
    """thread/start.hookContext, the system prompt's hook section and input/submit's hookContext: each answer
    fits, the catalog and the message are whole, each cut is marked."""
    limit = 256 * 1024
    root = tmp_path / "project"
    write(root / "AGENTS.md", "# Project\n\n" + "Keep this instruction whole. " * 2000 + "\n")
    write(root / "hooks.json", json.dumps({"hooks": {
        "SessionStart": group(None, *_answers_of(tmp_path, "SessionStart", ["start " + "s" * 200_000] * 1
                                                 + ["second " + "t" * 200_000])),
        "UserPromptSubmit": group(None, *_answers_of(tmp_path, "UserPromptSubmit", ["prompt " + "u" * 400_000]))}}))
    sidecar = start_sidecar(spawn, Editor(), "--max-result-bytes", str(limit))
    started = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "watch": False,
                                            "trustedHooks": [{"path": str(root / "hooks.json")}]}, timeout=120)
    assert _wire_size(started) <= limit
    first, second = started["hookContext"]
    assert first == "start " + "s" * 200_000 and second.startswith("second t") and CUT_MARK in second
    prompt = sidecar.call("context/build", {"threadId": started["threadId"]})["systemPrompt"]
    assert _wire_size({"systemPrompt": prompt}) <= limit
    assert ("Keep this instruction whole. " * 2000).strip() in prompt  # the method's own text, whole
    assert f"# Hook context (SessionStart: root:{root / 'hooks.json'})\n\nstart s" in prompt and CUT_MARK in prompt
    submitted = sidecar.call("input/submit", {"threadId": started["threadId"], "text": "hello " + "h" * 100_000})
    assert submitted["message"] == {"role": "user", "content": "hello " + "h" * 100_000}
    [context] = submitted["hookContext"]
    assert context.startswith("prompt u") and CUT_MARK in context and _wire_size(submitted) <= limit
    assert [d["message"].split(" were cut")[0].split(" of ")[-1]
            for d in diagnostics(sidecar, "hook_text_truncated")] == ["thread/start", "context/build", "input/submit"]


def test_loop_event_context_and_messages_are_cut_to_fit(spawn, tmp_path):
    root = tmp_path / "project"
    write(root / "hooks.json", json.dumps({"hooks": {"Stop": group(
        None, *_answers_of(tmp_path, "Stop", ["stop-context " + "k" * 300_000]),
        *_answers_of(tmp_path, "Stop", ["stop-message " + "n" * 300_000], "systemMessage"))}}))
    limit = 200 * 1024
    sidecar = start_sidecar(spawn, Editor(), "--max-result-bytes", str(limit))
    said = sidecar.call("loop/event", {"threadId": _thread(sidecar, root), "event": "stop",
                                       "payload": {"stopHookActive": False}})
    assert said["blocked"] is None and _wire_size(said) <= limit
    [context], [message] = said["additionalContext"], said["systemMessages"]
    for text, said_text in (("stop-context " + "k" * 300_000, context), ("stop-message " + "n" * 300_000, message)):
        assert said_text == text or (CUT_MARK in said_text and text.startswith(said_text[:said_text.index(CUT_MARK)]))
    assert CUT_MARK in context + message and context.startswith("stop-context k")
    assert [d["cut"] for d in diagnostics(sidecar, "hook_text_truncated")] == [len([t for t in (context, message)
                                                                                     if CUT_MARK in t])]


def test_a_result_that_leaves_no_room_keeps_the_result_and_leaves_the_hooks_text_out(spawn, tmp_path):
    """The core's result alone nearly fills --max-result-bytes: not even a cut mark fits beside it. The result is
    answered whole (never too_large for the hooks), the hooks' text is left out, and that is said."""
    limit = 64 * 1024
    core_text = "CORE " + "c" * (limit - 1500)
    root = tmp_path / "project"
    write(root / "hooks.json", json.dumps({"hooks": {
        "PostToolUse": group("Bash", *_answers_of(tmp_path, "PostToolUse", [f"post{i} " + "p" * 5000 for i in range(8)]))}}))
    sidecar = start_sidecar(spawn, Editor(output=core_text), "--max-result-bytes", str(limit))
    result = bash(sidecar, _thread(sidecar, root))
    assert not result["isError"] and result["content"] == [{"type": "text", "text": core_text}]
    assert "hookFeedback" not in result["details"]
    [said] = diagnostics(sidecar, "hook_text_truncated")
    assert said["cut"] == 8 and "left out whole" in said["message"]
