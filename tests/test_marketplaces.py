"""Marketplaces, read (protocol-v4 §3) through the real sidecar: a root that is a marketplace checkout and a
``thread/start.marketplaces`` folder are listed in ``catalog.marketplaces``; their local plugins are served
as they are checked out; network sources are listed, never fetched."""

from __future__ import annotations

import json

from helpers import add_skill, write


def _plugin_skill_names(started: dict) -> list[str]:
    return sorted(s["name"] for s in started["catalog"]["skills"] if ":" in s["name"])


def test_a_root_that_is_a_marketplace_checkout_lists_it_and_serves_its_local_plugins(spawn, tmp_path):
    root = tmp_path / "market"
    write(root / ".claude-plugin" / "marketplace.json", json.dumps({
        "name": "team-tools", "owner": {"name": "Team"},
        "plugins": [
            {"name": "fmt", "source": "./plugins/fmt", "description": "Formatting", "version": "1.2.0"},
            {"name": "lint", "source": "./tools/lint", "strict": False, "description": "Linting"},
            {"name": "remote", "source": {"source": "github", "repo": "example/remote"}},
            {"name": "escape", "source": "../outside"}]}))
    write(root / "plugins" / "fmt" / ".claude-plugin" / "plugin.json", json.dumps({"name": "fmt"}))
    add_skill(root / "plugins" / "fmt", "style")
    add_skill(root / "tools" / "lint", "check")  # no manifest: the marketplace entry is its manifest
    add_skill(tmp_path / "outside", "never")
    sidecar = spawn()
    started = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    assert started["catalog"]["marketplaces"] == [{
        "name": "team-tools", "path": str(root / ".claude-plugin" / "marketplace.json"), "plugins": [
            {"name": "fmt", "source": str(root / "plugins" / "fmt"), "description": "Formatting", "version": "1.2.0",
             "installed": True},
            {"name": "lint", "source": str(root / "tools" / "lint"), "description": "Linting", "installed": True},
            {"name": "remote", "source": {"source": "github", "repo": "example/remote"}, "installed": False},
            {"name": "escape", "source": str(tmp_path / "outside"), "installed": False}]}]
    assert _plugin_skill_names(started) == ["fmt:style", "lint:check"]
    assert sorted(p["name"] for p in started["catalog"]["plugins"]) == ["fmt", "lint"]
    escapes = [d for d in started["diagnostics"] if d["kind"] == "path_escape"]
    assert len(escapes) == 1 and "escape" in escapes[0]["message"]
    assert not [d for d in started["diagnostics"] if d["kind"] == "shadowed"]  # fmt is found once, not twice


def test_thread_start_marketplaces_names_a_codex_checkout_and_a_claude_file(spawn, tmp_path):
    codex = tmp_path / "codex-market"
    write(codex / ".agents" / "plugins" / "marketplace.json", json.dumps({
        "name": "openai-curated", "plugins": [
            {"name": "notes", "source": {"source": "local", "path": "./plugins/notes"}, "category": "Productivity"}]}))
    write(codex / "plugins" / "notes" / ".codex-plugin" / "plugin.json", json.dumps({"name": "notes",
                                                                                     "version": "0.1.0"}))
    add_skill(codex / "plugins" / "notes", "summarize")
    claude = tmp_path / "claude-market"
    file = write(claude / ".claude-plugin" / "marketplace.json", json.dumps({
        "name": "with-root", "metadata": {"pluginRoot": "./plugins"},
        "plugins": [{"name": "deploy", "source": "deploy"}]}))  # pluginRoot prefixes a bare source
    write(claude / "plugins" / "deploy" / ".claude-plugin" / "plugin.json", json.dumps({"name": "deploy"}))
    write(claude / "plugins" / "deploy" / "commands" / "ship.md", "---\ndescription: Ship it\n---\nShip $ARGUMENTS\n")
    project = tmp_path / "project"
    project.mkdir()
    sidecar = spawn()
    started = sidecar.call("thread/start", {"roots": [str(project)], "watch": False,
                                            "marketplaces": [str(codex), str(file), str(tmp_path / "nowhere")]})
    listed = started["catalog"]["marketplaces"]
    assert [(m["name"], m["path"]) for m in listed] == [
        ("openai-curated", str(codex / ".agents" / "plugins" / "marketplace.json")), ("with-root", str(file))]
    assert listed[0]["plugins"] == [{"name": "notes", "source": str(codex / "plugins" / "notes"), "installed": True}]
    assert listed[1]["plugins"] == [{"name": "deploy", "source": str(claude / "plugins" / "deploy"),
                                     "installed": True}]
    assert _plugin_skill_names(started) == ["notes:summarize"]
    assert [c["name"] for c in started["catalog"]["commandTemplates"]] == ["deploy:ship"]
    [missing] = [d for d in started["diagnostics"] if d["kind"] == "marketplace_not_found"]
    assert missing["path"] == str(tmp_path / "nowhere")
    # a disabled plugin stays listed, not installed
    again = sidecar.call("thread/start", {"roots": [str(project)], "watch": False, "marketplaces": [str(codex)],
                                          "disabledPlugins": ["notes"]})
    assert again["catalog"]["marketplaces"][0]["plugins"][0]["installed"] is False
    assert _plugin_skill_names(again) == []


def test_a_broken_marketplace_is_said_and_a_thread_without_one_lists_none(spawn, tmp_path):
    root = tmp_path / "root"
    write(root / ".claude-plugin" / "marketplace.json", "{ not json")
    sidecar = spawn()
    started = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    assert "marketplaces" not in started["catalog"]
    assert [d["kind"] for d in started["diagnostics"]] == ["marketplace_invalid"]
    plain = tmp_path / "plain"
    add_skill(plain, "x")
    assert "marketplaces" not in sidecar.call("thread/start", {"roots": [str(plain)], "watch": False})["catalog"]


def test_check_lists_a_roots_marketplace(tmp_path):
    import subprocess

    from harness_sidecar.console.client import child_env, sidecar_command

    root = tmp_path / "market"
    write(root / ".claude-plugin" / "marketplace.json", json.dumps({"name": "m", "plugins": [
        {"name": "a", "source": "./plugins/a"}, {"name": "b", "source": {"source": "github", "repo": "x/y"}}]}))
    write(root / "plugins" / "a" / ".claude-plugin" / "plugin.json", json.dumps({"name": "a"}))
    done = subprocess.run(sidecar_command() + ["check", str(root)], text=True, env=child_env(), capture_output=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0
    assert (f"  marketplace   m: 2 plugin(s), 1 served from here  ({root / '.claude-plugin' / 'marketplace.json'})"
            in done.stdout.splitlines())
