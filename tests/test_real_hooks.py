"""Public command hooks, used unchanged (tests/fixtures/hooks/*/SOURCE.md), behave as their authors intended
through the real sidecar: the editor names its shell tool ``Bash`` as Claude Code does, and the safety
hooks refuse ``rm -rf /`` and let ``ls`` through.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import write
from test_command_hooks import Editor, bash

from harness_sidecar.console.client import child_env

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
BASH = {"name": "Bash", "description": "Run a shell command.",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}


def start(spawn, tmp_path: Path, root: Path, cwd: Path) -> tuple:
    editor = Editor()
    env = {**child_env(), "HOME": str(tmp_path / "home")}  # what the hooks write under $HOME stays here
    sidecar = spawn(on_request=editor, env=env)
    started = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(cwd), "dynamicTools": [BASH],
                                            "trustedHooks": [{"path": str(root / "hooks.json")}]})
    return sidecar, started, editor


def start_declared(spawn, tmp_path: Path, hooks: dict) -> tuple:
    """``start`` on a root whose hooks.json declares ``hooks``, working in an empty folder of its own."""
    root = tmp_path / "root"
    write(root / "hooks.json", json.dumps({"hooks": hooks}))
    work = tmp_path / "work"
    work.mkdir()
    return start(spawn, tmp_path, root, work)


def refuses_rm_rf_root_and_lets_ls_through(sidecar, started, editor, reason: str) -> None:
    refused = bash(sidecar, started, "rm -rf /")
    assert refused["isError"] and refused["details"]["blocked"]["kind"] == "hook"
    assert reason in refused["details"]["blocked"]["reason"]
    allowed = bash(sidecar, started, "ls", call_id="c2")
    assert not allowed["isError"]
    assert editor.ran == [{"command": "ls"}]  # rm -rf / never reached the editor


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_safety_net_node_plugin_denies_rm_rf_root(spawn, tmp_path):
    """kenryu42/claude-code-safety-net: a JSON permissionDecision "deny" on stdout."""
    plugin = FIXTURES / "safety-net"
    declared = json.loads((plugin / "hooks.json").read_text())
    assert declared["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    # A root declares the plugin's very command; the plugin folder is the project (${CLAUDE_PLUGIN_ROOT}
    # is a plugin's variable: here the command names the folder itself).
    handler = declared["hooks"]["PreToolUse"][0]["hooks"][0]
    command = handler["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
    sidecar, started, editor = start_declared(spawn, tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": command}]}]})
    refuses_rm_rf_root_and_lets_ls_through(sidecar, started, editor, "BLOCKED by Safety Net")


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_deny_check_bash_hook_from_its_own_settings_file(spawn, tmp_path):
    """Green-March/bank's deny-check.sh, declared by that repository's own .claude/settings.json (same
    shape as hooks.json) as ``$CLAUDE_PROJECT_DIR/.claude/hooks/deny-check.sh``: exit code 2, stderr."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "deny-check", project)  # it logs under $CLAUDE_PROJECT_DIR/.claude/hooks/logs
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(project / ".claude" / "settings.json", root / "hooks.json")
    sidecar, started, editor = start(spawn, tmp_path, root, project)
    events = {h["event"]: h for h in started["catalog"]["hooks"]}
    assert events["SessionStart"]["matcher"] == "clear"  # declared, listed, never matches "startup"
    refuses_rm_rf_root_and_lets_ls_through(sidecar, started, editor, "destructive rm pattern detected")
    assert "rm -rf /" in (project / ".claude" / "hooks" / "logs" / "deny-check.log").read_text()


def test_rm_guard_python_hook_and_its_bare_hooks_file(spawn, tmp_path):
    """elertan/claude-code-rm-guard: exit code 2 with the reason on stderr. Its own hooks.json lacks the
    ``{"hooks": …}`` wrapper: a diagnostic, never a guess."""
    plugin = FIXTURES / "rm-guard"
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(plugin / "hooks" / "hooks.json", bare / "hooks.json")
    sidecar, started, editor = start(spawn, tmp_path, bare, tmp_path)
    assert started["catalog"]["hooks"] == []
    assert any(d["kind"] == "hook_invalid" and "wrapper" in d["message"] for d in started["diagnostics"])

    # The same declaration in the wrapper, its plugin variable naming the fixture's folder.
    declared = json.loads((plugin / "hooks" / "hooks.json").read_text())
    handler = declared["PreToolUse"][0]["hooks"][0]
    handler["command"] = handler["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
    sidecar, started, editor = start_declared(spawn, tmp_path, declared)
    refuses_rm_rf_root_and_lets_ls_through(sidecar, started, editor, "rm targets path outside working directory")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_safety_net_as_a_plugin_guards_bash_only_when_the_editor_trusts_it(spawn, tmp_path):
    """kenryu42/claude-code-safety-net laid out as its repository ships it (``hooks/hooks.json`` naming
    ``${CLAUDE_PLUGIN_ROOT}/dist/bin/cc-safety-net.js``; both files unchanged) under a root's ``plugins/``,
    with a one-line manifest of ours: the sidecar substitutes the plugin's folder and runs it."""
    plugin = tmp_path / "project" / "plugins" / "safety-net"
    shutil.copytree(FIXTURES / "safety-net" / "dist", plugin / "dist")
    write(plugin / "hooks" / "hooks.json", (FIXTURES / "safety-net" / "hooks.json").read_text())
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "safety-net"}))
    work = tmp_path / "work"
    work.mkdir()

    def thread(trusted: list) -> tuple:
        editor = Editor()
        sidecar = spawn(on_request=editor, env={**child_env(), "HOME": str(tmp_path / "home")})
        started = sidecar.call("thread/start", {"roots": [str(plugin.parent.parent)], "cwd": str(work),
                                                "dynamicTools": [BASH], "trustedPlugins": trusted})
        return sidecar, started, editor

    sidecar, started, editor = thread([{"name": "safety-net"}])
    [entry] = started["catalog"]["hooks"]
    assert (entry["source"], entry["event"], entry["matcher"], entry["trusted"]) == \
        ("plugin:safety-net", "PreToolUse", "Bash", True)
    refuses_rm_rf_root_and_lets_ls_through(sidecar, started, editor, "BLOCKED by Safety Net")
    refused = bash(sidecar, started, "rm -rf /", call_id="c3")
    assert refused["details"]["blocked"]["by"] == ["plugin:safety-net"]

    sidecar, started, editor = thread([{"name": "safety-net", "hooks": False}])
    assert [h["trusted"] for h in started["catalog"]["hooks"]] == [False]
    assert not bash(sidecar, started, "rm -rf /")["isError"]  # not trusted: the editor's own shell decides
    assert editor.ran == [{"command": "rm -rf /"}]
