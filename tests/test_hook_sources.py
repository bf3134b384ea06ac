"""Where people keep hooks (protocol-v4 §3): a root's settings.json / settings.local.json (Claude Code's
``.claude/`` layout), config.toml ``[hooks]`` and ``.codex/hooks.json`` (Codex's) are hooks sources,
each trusted by its own ``trustedHooks`` entry — through the real sidecar and the real ``check``.

The hook that decides is hookify's own ``pretooluse.py`` (tests/fixtures/hooks/hookify, Apache-2.0,
unchanged) with its ``dangerous-rm`` rule, declared where a Claude Code user keeps it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write
from test_command_hooks import BASH, Editor, bash, diagnostics

from harness_sidecar.console.client import child_env, sidecar_command

HOOKIFY = Path(__file__).parent / "fixtures" / "hooks" / "hookify"


def hookify_command() -> str:
    """hookify's PreToolUse hook as a user's settings name it (the plugin's folder as CLAUDE_PLUGIN_ROOT)."""
    return f"CLAUDE_PLUGIN_ROOT={HOOKIFY} {sys.executable} {HOOKIFY}/hooks/pretooluse.py"


def hookify_settings(extra: dict | None = None) -> str:
    return json.dumps({"permissions": {"allow": ["Bash(ls *)"]}, **(extra or {}),
                       "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                           {"type": "command", "command": hookify_command(), "timeout": 10}]}]}})


def project(tmp_path: Path) -> Path:
    """A project whose ``.claude/`` holds hookify's dangerous-rm rule (hookify reads it from its cwd)."""
    work = tmp_path / "work"
    write(work / ".claude" / "hookify.dangerous-rm.local.md",
          (HOOKIFY / "examples" / "dangerous-rm.local.md").read_text())
    return work


def start(spawn, roots: list[Path], cwd: Path, trusted: list[dict], ui: bool = False, editor: Editor | None = None):
    editor = editor or Editor()
    sidecar = spawn(initialize=False, on_request=editor)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "protocolVersion": "2",
                                "capabilities": {"ui": {"notify": True}} if ui else {}})
    started = sidecar.call("thread/start", {"roots": [str(r) for r in roots], "cwd": str(cwd),
                                            "dynamicTools": [BASH], "trustedHooks": trusted})
    return sidecar, started, editor


def check(*roots: Path) -> subprocess.CompletedProcess:
    return subprocess.run(sidecar_command() + ["check", *map(str, roots)], capture_output=True, text=True,
                          env=child_env(), timeout=120, stdin=subprocess.DEVNULL)


def test_check_lists_a_claude_roots_settings_hook_that_it_used_to_miss(tmp_path):
    claude = tmp_path / "work" / ".claude"
    write(claude / "settings.json", hookify_settings())
    out = check(claude)
    assert out.returncode == 0, out.stderr
    assert "hook          PreToolUse [Bash]:" in out.stdout and f"root:{claude / 'settings.json'}" in out.stdout
    listed = json.loads(check_json(claude))["catalog"]["hooks"]
    assert [(h["source"], h["event"], h["matcher"]) for h in listed] == [
        (f"root:{claude / 'settings.json'}", "PreToolUse", "Bash")]


def check_json(*roots: Path) -> str:
    done = subprocess.run(sidecar_command() + ["check", "--json", *map(str, roots)], capture_output=True,
                          text=True, env=child_env(), timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_hookify_in_claude_settings_blocks_rm_rf_with_its_own_words(spawn, tmp_path):
    work = project(tmp_path)
    settings = write(work / ".claude" / "settings.json", hookify_settings())
    sidecar, started, editor = start(spawn, [work / ".claude"], work, [{"path": str(settings)}], ui=True)
    assert [h["trusted"] for h in started["catalog"]["hooks"]] == [True]
    result = bash(sidecar, started, "rm -rf /tmp/important")
    assert result["isError"] and editor.ran == []
    blocked = result["details"]["blocked"]
    assert blocked["by"] == [f"root:{settings}"]
    assert "Dangerous rm command detected" in blocked["reason"]  # hookify's systemMessage, not "blocked"
    assert "Dangerous rm command detected" in result["content"][0]["text"]
    assert any("Dangerous rm command detected" in m for m in result["details"]["hookMessages"])
    notes = [n["params"] for n in sidecar.notifications if n["method"] == "ui/notify"]
    assert any(n["level"] == "warning" and "Dangerous rm command" in n["message"] for n in notes)
    assert not bash(sidecar, started, "ls -la", call_id="c2")["isError"]
    assert editor.ran == [{"command": "ls -la"}]


def test_a_project_roots_claude_settings_are_read_and_need_their_own_grant(spawn, tmp_path):
    """A project root: its .claude/settings.json and .claude/settings.local.json, each its own source."""
    work = project(tmp_path)
    shared = write(work / ".claude" / "settings.json", hookify_settings())
    local = write(work / ".claude" / "settings.local.json", json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": f"echo local >> {tmp_path}/local-ran"}]}]}}))
    sidecar, started, editor = start(spawn, [work], work, [{"path": str(shared)}])
    listed = {h["source"]: h["trusted"] for h in started["catalog"]["hooks"]}
    assert listed == {f"root:{shared}": True, f"root:{local}": False}
    assert bash(sidecar, started, "rm -rf /")["isError"]
    assert not (tmp_path / "local-ran").exists()  # the local file was not granted: it never ran
    untrusted = diagnostics(sidecar, "hook_untrusted")
    assert [d["source"] for d in untrusted] == [f"root:{local}"]


def test_disable_all_hooks_turns_that_settings_files_hooks_off(spawn, tmp_path):
    work = project(tmp_path)
    settings = write(work / ".claude" / "settings.json", hookify_settings({"disableAllHooks": True}))
    sidecar, started, editor = start(spawn, [work / ".claude"], work, [{"path": str(settings)}])
    assert started["catalog"]["hooks"] == []
    said = [d for d in started["diagnostics"] if d["kind"] == "hooks_disabled"]
    assert len(said) == 1 and said[0]["path"] == str(settings) and said[0]["severity"] == "info"
    assert not bash(sidecar, started, "rm -rf /tmp/x")["isError"]  # nothing blocks: its hooks are off
    assert editor.ran == [{"command": "rm -rf /tmp/x"}]


def test_settings_without_hooks_say_nothing_and_malformed_hooks_are_a_diagnostic(tmp_path):
    quiet = tmp_path / "quiet" / ".claude"
    write(quiet / "settings.json", json.dumps({"permissions": {"deny": ["Read(./.env)"]}, "env": {}}))
    out = json.loads(check_json(quiet))
    assert out["diagnostics"] == [] and out["catalog"]["hooks"] == []
    broken = tmp_path / "broken" / ".claude"
    path = write(broken / "settings.local.json", json.dumps({"hooks": [{"matcher": "Bash"}]}))
    run = check(broken)
    assert run.returncode == 1 and "hook_invalid" in run.stdout and str(path) in run.stdout


def test_a_settings_pin_that_no_longer_matches_keeps_its_hooks_from_running(spawn, tmp_path):
    work = project(tmp_path)
    settings = write(work / ".claude" / "settings.json", hookify_settings())
    pinned = hashlib.sha256(settings.read_bytes()).hexdigest()
    write(settings, hookify_settings({"model": "changed"}))
    sidecar, started, editor = start(spawn, [work / ".claude"], work, [{"path": str(settings), "sha256": pinned}])
    assert [h["trusted"] for h in started["catalog"]["hooks"]] == [False]
    assert not bash(sidecar, started, "rm -rf /tmp/x")["isError"]
    assert "sha256" in diagnostics(sidecar, "hook_untrusted")[0]["message"]


CODEX_TOML = """model = "gpt-5"

[[hooks.PreToolUse]]
matcher = "Bash"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "{command}"
timeout = 10
"""


@pytest.mark.parametrize("layout", ["codex-root", "project-root"])
def test_codex_config_toml_hooks_tables_run(spawn, tmp_path, layout):
    work = tmp_path / "work"
    codex = work / ".codex"
    deny = write(tmp_path / "deny.sh", "#!/bin/sh\ncat > /dev/null\n"
                 "echo '{\"decision\": \"block\", \"reason\": \"codex says no\"}'\n")
    deny.chmod(0o755)
    toml = write(codex / "config.toml", CODEX_TOML.format(command=deny))
    root = codex if layout == "codex-root" else work
    sidecar, started, editor = start(spawn, [root], work, [{"path": str(toml)}])
    assert [(h["source"], h["event"], h["trusted"]) for h in started["catalog"]["hooks"]] == [
        (f"root:{toml}", "PreToolUse", True)]
    result = bash(sidecar, started, "ls")
    assert result["isError"] and result["details"]["blocked"]["reason"] == "codex says no" and editor.ran == []


def test_codex_features_hooks_false_turns_config_toml_hooks_off(tmp_path):
    codex = tmp_path / ".codex"
    write(codex / "config.toml", "[features]\nhooks = false\n\n" + CODEX_TOML.format(command="true"))
    out = json.loads(check_json(codex))
    assert out["catalog"]["hooks"] == [] and [d["kind"] for d in out["diagnostics"]] == ["hooks_disabled"]


def test_a_project_roots_codex_hooks_json_is_a_source(spawn, tmp_path):
    work = tmp_path / "work"
    hooks = write(work / ".codex" / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "cat >/dev/null; echo 'not from codex' >&2; exit 2"}]}]}}))
    sidecar, started, editor = start(spawn, [work], work, [{"path": str(hooks)}])
    result = bash(sidecar, started, "ls")
    assert result["details"]["blocked"] == {"kind": "hook", "reason": "not from codex", "by": [f"root:{hooks}"]}


def test_a_bad_config_toml_with_hooks_is_a_diagnostic_and_one_without_hooks_is_not_ours(tmp_path):
    bad = tmp_path / "bad" / ".codex"
    write(bad / "config.toml", "[[hooks.PreToolUse]\nmatcher = \n")
    out = json.loads(check_json(bad))
    assert [d["kind"] for d in out["diagnostics"]] == ["hook_invalid"]
    plain = tmp_path / "plain" / ".codex"
    write(plain / "config.toml", "model = 'gpt-5'\n[profiles.x]\nmodel = 'o3'\n")
    assert json.loads(check_json(plain))["diagnostics"] == []


def test_a_watched_claude_roots_settings_change_is_announced_and_applies_at_refresh(spawn, tmp_path):
    work = project(tmp_path)
    settings = write(work / ".claude" / "settings.json", json.dumps({"permissions": {}}))
    sidecar, started, editor = start(spawn, [work / ".claude"], work, [{"path": str(settings)}])
    assert started["catalog"]["hooks"] == []
    write(settings, hookify_settings())
    deadline = time.monotonic() + 30
    while not any(n["method"] == "catalog/changed" for n in sidecar.notifications) and time.monotonic() < deadline:
        sidecar.call("tools/list", {"threadId": started["threadId"]})
        time.sleep(0.1)
    changed = next(n["params"] for n in sidecar.notifications if n["method"] == "catalog/changed")
    assert {"kind": "hooks", "name": str(settings)} in changed["changed"]
    refreshed = sidecar.call("thread/refresh", {"threadId": started["threadId"]}, timeout=60)
    assert [h["source"] for h in refreshed["catalog"]["hooks"]] == [f"root:{settings}"]
    assert bash(sidecar, started, "rm -rf /tmp/x")["isError"] and editor.ran == []
