"""Plugins as Claude Code and Codex ship them, through the real sidecar process.

The plugins under tests/fixtures/plugins/ are public ones used unchanged (SOURCE.md beside each
names repository, commit, path and licence): example-plugin, commit-commands and
explanatory-output-style (anthropics/claude-plugins-official; Claude Code manifests),
debugging-toolkit and block-no-verify (wshobson/agents; both manifests), build-macos-apps
(openai/plugins; Codex manifest), superpowers (obra/superpowers; both manifests, hooks).
tests/fixtures/own-plugins/echo-mcp is our own, marked as such: no public plugin ships a stdio MCP
server that runs offline with python3 or node alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from helpers import REPO, add_skill, changes_until, error_kind, write

from harness_sidecar.console.client import child_env, sidecar_command
from harness_sidecar.base.names import TOOL_NAME, qualified_name_problem
from harness_sidecar.resources.plugins import tree_sha256

FIXTURES = REPO / "tests" / "fixtures" / "plugins"
OWN = REPO / "tests" / "fixtures" / "own-plugins"
REAL = ["block-no-verify", "build-macos-apps", "commit-commands", "debugging-toolkit", "example-plugin",
        "explanatory-output-style", "superpowers"]


def root_with_plugins(tree, names=REAL, source=FIXTURES, claude_only=()) -> Path:
    """``names`` copied into a root's plugins/; those in ``claude_only`` without their .codex-plugin/
    (the plugin as Claude Code reads it: superpowers' Codex manifest turns its hooks off)."""
    root = tree("project")
    for name in names:
        shutil.copytree(source / name, root / "plugins" / name, symlinks=True)
        if name in claude_only:
            shutil.rmtree(root / "plugins" / name / ".codex-plugin")
    return root


def start(spawn, root: Path, **params):
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False, **params})
    return sidecar, result


def by_name(entries):
    return {e["name"]: e for e in entries}


def kinds(result):
    return [(d["kind"], d.get("path", "")) for d in result["diagnostics"]]


def test_real_plugins_of_both_dialects_bring_their_skills_commands_agents_hooks_and_servers(spawn, tree):
    root = root_with_plugins(tree)
    _, result = start(spawn, root)
    catalog = result["catalog"]
    plugins = by_name(catalog["plugins"])
    assert sorted(plugins) == REAL
    # .codex-plugin wins where both manifests exist, with a diagnostic naming the one ignored
    assert plugins["superpowers"]["dialect"] == "codex" and plugins["superpowers"]["version"] == "6.2.0"
    assert plugins["debugging-toolkit"]["dialect"] == "codex"
    assert plugins["example-plugin"]["dialect"] == "claude"
    assert plugins["build-macos-apps"]["dialect"] == "codex"
    both = [d for d in result["diagnostics"] if d["kind"] == "plugin_manifest_both"]
    assert sorted(Path(d["ignored"]).parts[-3] for d in both) == ["block-no-verify", "debugging-toolkit",
                                                                  "superpowers"]
    skills = by_name(catalog["skills"])
    assert {"superpowers:executing-plans", "superpowers:verification-before-completion",
            "build-macos-apps:swiftui-patterns", "example-plugin:example-skill",
            "block-no-verify:block-no-verify-hook"} <= set(skills)
    commands = by_name(catalog["commandTemplates"])
    assert {"commit-commands:commit", "commit-commands:commit-push-pr", "debugging-toolkit:smart-debug",
            "build-macos-apps:test-macos-app", "example-plugin:example-command",
            "commit-commands:clean_gone"} <= set(commands)
    assert commands["example-plugin:example-command"]["argumentHint"] == "<required-arg> [optional-arg]"
    assert commands["example-plugin:example-command"]["allowedTools"] == ["Read", "Glob", "Grep", "Bash"]
    assert commands["commit-commands:commit"]["unsupported"] == ["shell"] * 4
    # v4: clean_gone.md is served as Claude Code serves it (v3 refused the '_' as invalid_name)
    assert not [k for k in kinds(result) if k[0] == "invalid_name"]
    agents = {(a["plugin"], a["name"]) for a in catalog["agents"]}
    assert agents == {("debugging-toolkit", "debugging-toolkit-debugger"),
                      ("debugging-toolkit", "debugging-toolkit-dx-optimizer")}
    assert by_name(catalog["agents"])["debugging-toolkit-debugger"]["description"].startswith("Debugging specialist")
    hooks = [(h["source"], h["event"], h["trusted"]) for h in catalog["hooks"]]
    assert ("plugin:explanatory-output-style", "SessionStart", False) in hooks
    # v4: superpowers is read through its Codex manifest, whose "hooks": {} turns hooks off (as in Codex)
    assert not [h for h in hooks if h[0] == "plugin:superpowers"] and plugins["superpowers"]["hooks"] == 0
    servers = by_name(catalog["mcpServers"])
    assert servers["plugin_example-plugin_example-server"]["transport"] == "http"
    # v4: a remote (http/sse) server is supported: listed, and started only when trusted (v3 said
    # mcp_transport_unsupported for it)
    assert not [k for k in kinds(result) if k[0] == "mcp_transport_unsupported"]
    assert servers["plugin_example-plugin_example-server"]["trusted"] is False
    # declared is not running: no tool of any plugin server
    assert not [t for t in result["tools"] if t["name"].startswith("mcp__")]


def test_a_plugins_skill_and_the_users_skill_of_one_name_are_two_entries_each_activated_by_its_name(spawn, tree):
    root = root_with_plugins(tree, ["superpowers"])
    add_skill(root, "executing-plans", "Use when running this project's own plan.", "OUR OWN PLAN BODY\n")
    sidecar, result = start(spawn, root)
    skills = by_name(result["catalog"]["skills"])
    assert skills["executing-plans"]["source"] == {"kind": "root", "root": str(root)}
    assert skills["superpowers:executing-plans"]["source"]["kind"] == "plugin"
    assert not [d for d in result["diagnostics"] if d["kind"] == "shadowed"]
    ours = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "executing-plans"})
    theirs = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "superpowers:executing-plans"})
    assert ours["skill"]["body"] == "OUR OWN PLAN BODY\n"
    real_body = (FIXTURES / "superpowers/skills/executing-plans/SKILL.md").read_text()
    assert theirs["skill"]["body"].strip() in real_body and "OUR OWN" not in theirs["skill"]["body"]
    loaded = sidecar.call("tools/call", {"threadId": result["threadId"], "call": {
        "id": "c1", "name": "load_skill", "arguments": {"name": "superpowers:verification-before-completion"}}})
    assert not loaded["result"]["isError"]
    assert "Skill directory: " + str(root / "plugins/superpowers/skills/verification-before-completion") in \
        loaded["result"]["content"][0]["text"]
    missing = sidecar.request("skills/activate", {"threadId": result["threadId"], "name": "other:executing-plans"})
    assert error_kind(missing) == "skill_not_found"
    bad = sidecar.request("skills/activate", {"threadId": result["threadId"], "name": "a:b:c"})
    assert error_kind(bad) == "invalid_arguments"


def test_every_catalog_entry_says_where_it_comes_from(spawn, tree):
    root = root_with_plugins(tree, ["example-plugin", "debugging-toolkit"])
    add_skill(root, "review", "Use when reviewing.")
    write(root / "templates/note.md", "Note {{what}}\n")
    write(root / "commands/deploy.md", "Deploy $1\n")
    _, result = start(spawn, root)
    catalog = result["catalog"]
    example = {"kind": "plugin", "root": str(root),
               "plugin": {"name": "example-plugin", "path": str(root / "plugins/example-plugin")}}
    debugging = {"kind": "plugin", "root": str(root),
                 "plugin": {"name": "debugging-toolkit", "version": "1.2.1",
                            "path": str(root / "plugins/debugging-toolkit")}}
    assert by_name(catalog["plugins"])["debugging-toolkit"]["version"] == "1.2.1"
    mine = {"kind": "root", "root": str(root)}
    assert by_name(catalog["skills"])["example-plugin:example-skill"]["source"] == example
    assert by_name(catalog["skills"])["review"]["source"] == mine
    assert by_name(catalog["templates"])["note"]["source"] == mine
    assert by_name(catalog["commandTemplates"])["deploy"]["source"] == mine
    assert by_name(catalog["commandTemplates"])["debugging-toolkit:smart-debug"]["source"] == debugging
    assert {a["source"]["plugin"]["name"] for a in catalog["agents"]} == {"debugging-toolkit"}
    assert all(a["source"] == debugging for a in catalog["agents"])
    assert by_name(catalog["mcpServers"])["plugin_example-plugin_example-server"]["source"] == example
    for kind in ("skills", "templates", "commandTemplates", "agents", "mcpServers", "plugins"):
        assert all(e["source"]["kind"] in ("root", "plugin") for e in catalog[kind]), kind


def test_plugins_the_editor_lists_are_found_where_they_are_and_disabled_ones_are_left_out(spawn, tree):
    root = tree("project")
    paths = [str(FIXTURES / "build-macos-apps"), str(FIXTURES / "commit-commands")]
    _, result = start(spawn, root, plugins=paths)
    plugins = by_name(result["catalog"]["plugins"])
    assert sorted(plugins) == ["build-macos-apps", "commit-commands"]
    assert "root" not in plugins["build-macos-apps"]["source"]
    assert plugins["build-macos-apps"]["source"]["plugin"]["path"] == paths[0]
    _, result = start(spawn, root, plugins=paths, disabledPlugins=["commit-commands"])
    assert [p["name"] for p in result["catalog"]["plugins"]] == ["build-macos-apps"]
    assert not [c for c in result["catalog"]["commandTemplates"] if c["name"].startswith("commit-commands:")]
    _, result = start(spawn, root, plugins=[str(root / "nowhere")])
    assert ("plugin_not_found", str(root / "nowhere")) in kinds(result)


def test_a_broken_manifest_leaves_the_plugin_out_whole_with_path_and_line(spawn, tree):
    root = tree("project")
    write(root / "plugins/not-json/.claude-plugin/plugin.json", '{\n  "name": "not-json",\n  "version": 1.0.0\n}\n')
    write(root / "plugins/nameless/.codex-plugin/plugin.json", '{\n  "version": "1.0.0"\n}\n')
    write(root / "plugins/again/.claude-plugin/plugin.json",
          '{\n  "name": "again",\n  "hooks": "./hooks/hooks.json"\n}\n')
    for name in ("not-json", "nameless", "again"):
        add_skill(root / "plugins" / name, "inside", "Use when testing.")
        write(root / "plugins" / name / "hooks/hooks.json", '{"hooks": {}}')
    write(root / "plugins/fine/.claude-plugin/plugin.json", '{"name": "fine"}')
    add_skill(root / "plugins/fine", "inside", "Use when testing.")
    _, result = start(spawn, root)
    # v4: a manifest 'hooks' naming the default file loads the plugin (Claude Code 2.1 does), with a warning
    assert [p["name"] for p in result["catalog"]["plugins"]] == ["again", "fine"]
    assert [s["name"] for s in result["catalog"]["skills"]] == ["again:inside", "fine:inside"]
    found = {d["path"]: d for d in result["diagnostics"] if d["kind"] in ("invalid_manifest", "duplicate_hooks_file")}
    not_json = found[str(root / "plugins/not-json/.claude-plugin/plugin.json")]
    assert (not_json["kind"], not_json["line"]) == ("invalid_manifest", 3)
    nameless = found[str(root / "plugins/nameless/.codex-plugin/plugin.json")]
    assert nameless["kind"] == "invalid_manifest" and "name" in nameless["message"] and nameless["line"] == 1
    again = found[str(root / "plugins/again/.claude-plugin/plugin.json")]
    assert (again["kind"], again["line"], again["severity"]) == ("duplicate_hooks_file", 3, "warning")


def test_manifest_paths_follow_claude_codes_rules(spawn, tree):
    root = tree("project")
    plugin = root / "plugins/paths"
    write(plugin / ".claude-plugin/plugin.json", json.dumps({
        "name": "paths", "skills": ["./extra-skills/", "./single"], "commands": ["./cmds/only.md"],
        "agents": "./people/", "mcpServers": "../outside.json"}))
    add_skill(plugin, "default-skill", "Use when testing.")
    write(plugin / "extra-skills/added/SKILL.md", "---\nname: added\ndescription: Use when testing.\n---\nbody\n")
    write(plugin / "single/SKILL.md", "---\nname: single\ndescription: Use when testing.\n---\nbody\n")
    write(plugin / "commands/replaced.md", "never listed\n")
    write(plugin / "cmds/only.md", "listed\n")
    write(plugin / "cmds/other.md", "not named by the manifest\n")
    write(plugin / "agents/replaced.md", "---\nname: replaced\ndescription: no\n---\n")
    write(plugin / "people/helper.md", "---\nname: helper\ndescription: Helps.\n---\nbody\n")
    write(root / "outside.json", '{"mcpServers": {"x": {"command": "true"}}}')
    _, result = start(spawn, root)
    catalog = result["catalog"]
    assert sorted(s["name"] for s in catalog["skills"]) == ["paths:added", "paths:default-skill", "paths:single"]
    assert [c["name"] for c in catalog["commandTemplates"]] == ["paths:only"]
    assert [(a["name"], a["description"]) for a in catalog["agents"]] == [("helper", "Helps.")]
    assert catalog["mcpServers"] == []
    assert "path_escape" in [d["kind"] for d in result["diagnostics"]]


def _shell_tree_hash(path: Path) -> str:
    """The method protocol.md documents, run by the shell, not by the sidecar's code: its pipeline is
    read out of protocol.md (v4: links hashed as links; tests/test_pins_at_start.py has trees with them)."""
    import re

    text = (REPO / "protocol.md").read_text()
    pipeline = re.search(r"```sh\n(.*?)```", text[text.index("**The tree hash**"):], re.S).group(1)
    out = subprocess.run(["bash", "-c", pipeline.replace("cd PLUGIN", 'cd "$PLUGIN"')], capture_output=True,
                         text=True, check=True, env={**os.environ, "PLUGIN": str(path)})
    return out.stdout.split()[0]


def test_the_tree_hash_is_the_documented_shell_pipeline(tmp_path):
    plugin = tmp_path / "p"
    shutil.copytree(FIXTURES / "superpowers", plugin)
    write(plugin / "Zed.md", "upper case sorts first\n")
    write(plugin / "a b/ü.txt", "a space and a non-ASCII name\n")
    assert tree_sha256(str(plugin)) == _shell_tree_hash(plugin)


def test_trust_is_granted_in_parts_and_data_needs_none(spawn, tree):
    root = root_with_plugins(tree, ["superpowers", "explanatory-output-style"], claude_only=["superpowers"])
    sidecar, result = start(spawn, root)
    plugins = by_name(result["catalog"]["plugins"])
    assert plugins["superpowers"]["trusted"] == {"hooks": False, "mcpServers": [], "extensions": []}
    assert "superpowers:executing-plans" in by_name(result["catalog"]["skills"])  # data: always served
    sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "superpowers:executing-plans"})

    _, result = start(spawn, root, trustedPlugins=[{"name": "superpowers"},
                                                   {"name": "explanatory-output-style", "hooks": False}])
    hooks = {h["source"]: h["trusted"] for h in result["catalog"]["hooks"]}
    assert hooks == {"plugin:superpowers": True, "plugin:explanatory-output-style": False}
    assert by_name(result["catalog"]["plugins"])["superpowers"]["trusted"]["hooks"] is True

    pin = _shell_tree_hash(root / "plugins/superpowers")
    _, result = start(spawn, root, trustedPlugins=[{"name": "superpowers", "sha256": pin.upper()}])
    assert by_name(result["catalog"]["plugins"])["superpowers"]["sha256"] == pin
    assert {h["source"]: h["trusted"] for h in result["catalog"]["hooks"]}["plugin:superpowers"] is True

    write(root / "plugins/superpowers/hooks/session-start", "#!/bin/sh\necho changed after it was pinned\n")
    _, result = start(spawn, root, trustedPlugins=[{"name": "superpowers", "sha256": pin}])
    mismatch = [d for d in result["diagnostics"] if d["kind"] == "hash_mismatch"]
    assert mismatch and mismatch[0]["expected"] == pin and mismatch[0]["actual"] != pin
    assert {h["source"]: h["trusted"] for h in result["catalog"]["hooks"]}["plugin:superpowers"] is False
    assert "superpowers:executing-plans" in by_name(result["catalog"]["skills"])


def test_a_real_plugins_session_start_hook_fires_only_when_its_hooks_are_trusted(spawn, tree, tmp_path):
    """superpowers' own SessionStart hook (hooks/run-hook.cmd session-start, bash): it answers Claude
    Code's JSON only when it sees CLAUDE_PLUGIN_ROOT, so its context arriving shows the plugin's variables
    reached it; untrusted (or trusted with ``hooks: false``) it never runs and the editor is told."""
    root = root_with_plugins(tree, ["superpowers"], claude_only=["superpowers"])
    state = tmp_path / "state"
    spawn_here = lambda: spawn(env=child_env({"HARNESS_SIDECAR_STATE_DIR": str(state)}))  # noqa: E731
    for trusted in ([], [{"name": "superpowers", "hooks": False}]):
        sidecar = spawn_here()
        result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False, "trustedPlugins": trusted})
        assert "hookContext" not in result
        [said] = [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"
                  and n["params"]["kind"] == "hook_untrusted"]
        assert said["source"] == "plugin:superpowers" and "trustedPlugins" in said["message"]
        assert not list(state.glob("plugin-data/superpowers*"))  # its data folder: made on first use only

    sidecar = spawn_here()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False,
                                           "trustedPlugins": [{"name": "superpowers"}]}, timeout=60)
    [context] = result["hookContext"]
    assert context.startswith("<EXTREMELY_IMPORTANT>\nYou have superpowers.")
    assert not [n for n in sidecar.notifications if n["method"] == "thread/diagnostic"
                and n["params"]["kind"] in ("hook_untrusted", "hook_failed")]
    # CLAUDE_PLUGIN_DATA, under the state directory, keyed by the plugin's folder plus its name (protocol-v4 §1)
    [data] = state.glob("plugin-data/superpowers-*")
    assert data.is_dir() and len(data.name) == len("superpowers-") + 16


def test_trusted_plugins_is_checked_like_every_param(spawn, tree):
    sidecar = spawn()
    root = tree("project")
    for bad, field in (([{"name": "Bad Name"}], "trustedPlugins[0].name"),
                       ([{"name": "a"}, {"name": "a"}], "trustedPlugins[1].name"),
                       ([{"name": "a", "mcpServers": "all"}], "trustedPlugins[0].mcpServers"),
                       ([{"name": "a", "sha256": "abc"}], "trustedPlugins[0].sha256")):
        response = sidecar.request("thread/start", {"roots": [str(root)], "trustedPlugins": bad})
        assert error_kind(response) == "invalid_params" and response["error"]["data"]["field"] == field


def _echo_root(tree) -> Path:
    return root_with_plugins(tree, ["echo-mcp"], OWN)


def test_a_plugins_mcp_servers_start_only_when_trusted(spawn, tree):
    root = _echo_root(tree)
    sidecar, result = start(spawn, root)
    assert not [t for t in result["tools"] if t["name"].startswith("mcp__")]
    servers = by_name(result["catalog"]["mcpServers"])
    assert sorted(servers) == ["plugin_echo-mcp_echo", "plugin_echo-mcp_inline", "plugin_echo-mcp_remote"]
    assert not any(s["trusted"] for s in servers.values())

    sidecar, result = start(spawn, root, trustedPlugins=[{"name": "echo-mcp"}])
    tools = [t["name"] for t in result["tools"] if t["name"].startswith("mcp__")]
    assert tools == ["mcp__plugin_echo-mcp_echo__echo", "mcp__plugin_echo-mcp_inline__echo"]
    # v4: the trusted sse server is started (v3: mcp_transport_unsupported); its host does not resolve, so
    # it is unavailable, said by name, and the thread runs without it
    assert not [k for k in kinds(result) if k[0] == "mcp_transport_unsupported"]
    assert [d["name"] for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"] == \
        ["plugin_echo-mcp_remote"]
    answer = sidecar.call("tools/call", {"threadId": result["threadId"], "call": {
        "id": "c1", "name": "mcp__plugin_echo-mcp_echo__echo", "arguments": {"text": "hello"}}})["result"]
    plugin_root = str(root / "plugins/echo-mcp")
    # ${CLAUDE_PLUGIN_ROOT} substituted in args and env; the server runs in the plugin's folder
    assert answer["content"][0]["text"] == f"echo in {os.path.realpath(plugin_root)} (from {plugin_root}): hello"
    sidecar.call("thread/close", {"threadId": result["threadId"]})

    _, result = start(spawn, root, trustedPlugins=[{"name": "echo-mcp", "mcpServers": ["inline"]}])
    assert [t["name"] for t in result["tools"] if t["name"].startswith("mcp__")] == \
        ["mcp__plugin_echo-mcp_inline__echo"]
    _, result = start(spawn, root, trustedPlugins=[{"name": "echo-mcp", "mcpServers": False}])
    assert not [t for t in result["tools"] if t["name"].startswith("mcp__")]


def test_names_widen_exactly_for_the_plugin_forms():
    long_plugin = "a-" * 30 + "plugin"
    assert TOOL_NAME.fullmatch(f"mcp__plugin_{long_plugin}_server__tool")
    assert not TOOL_NAME.fullmatch("x" * 65)
    assert not TOOL_NAME.fullmatch(f"mcp__plugin_{long_plugin.upper()}_server__tool")
    assert not TOOL_NAME.fullmatch(f"mcp__other_{long_plugin}_server__tool")
    assert qualified_name_problem("superpowers:executing-plans") is None
    assert qualified_name_problem("plain-name") is None
    for bad in ("a:b:c", "A:b", "a:", ":b", "a:b_c"):
        assert qualified_name_problem(bad) is not None, bad


def test_check_lints_plugins_like_skills(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "commit-commands", root / "plugins/commit-commands")
    write(root / "plugins/broken/.claude-plugin/plugin.json", '{\n  "name": "broken",\n}\n')
    write(root / "plugins/hooky/.claude-plugin/plugin.json", '{"name": "hooky"}')
    write(root / "plugins/hooky/hooks/hooks.json", '{"PreToolUse": []}')
    write(root / "plugins/hooky/.mcp.json", '{"mcpServers": {"s": {"args": ["x"]}}}')
    out = subprocess.run(sidecar_command() + ["check", str(root)], capture_output=True, text=True, env=child_env(),
                         timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 1
    text = out.stdout
    assert f"{root}/plugins/broken/.claude-plugin/plugin.json:3:1" in text and "invalid_manifest" in text
    assert f"{root}/plugins/hooky/hooks/hooks.json" in text and "invalid_hooks" in text
    assert f"{root}/plugins/hooky/.mcp.json" in text and "invalid_mcp_servers" in text
    assert "commands/clean_gone.md" in text and "template_feature_unsupported" in text
    assert "plugin        commit-commands" in text
    assert "command       commit-commands:commit" in text


def test_a_changed_plugin_reaches_the_editor_at_refresh(spawn, tree):
    root = root_with_plugins(tree, ["commit-commands", "superpowers"], claude_only=["superpowers"])
    sidecar, result = start(spawn, root)
    thread = result["threadId"]
    command = root / "plugins/commit-commands/commands/commit.md"
    command.write_text(command.read_text() + "\nOne more line.\n")
    (root / "plugins/superpowers/hooks/hooks.json").write_text('{"hooks": {}}')
    refreshed = sidecar.call("thread/refresh", {"threadId": thread})
    assert refreshed["revision"] == 2
    [change] = [n["params"] for n in sidecar.notifications if n["method"] == "catalog/changed"]
    assert {"kind": "commandTemplate", "name": "commit-commands:commit"} in change["changed"]
    assert {"kind": "plugin", "name": "superpowers"} in change["changed"]
    assert not [h for h in refreshed["catalog"]["hooks"] if h["source"] == "plugin:superpowers"]
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "commit-commands:commit", "text": ""})
    assert rendered["message"]["content"].endswith("One more line.\n")


def test_a_plugins_extension_is_imported_only_when_trusted(spawn, tree):
    root = root_with_plugins(tree, ["greeter"], OWN)
    _, result = start(spawn, root)
    [entry] = result["catalog"]["extensions"]
    assert (entry["id"], entry["status"]) == ("greeter:hello", "skipped_untrusted")
    assert "greet" not in [t["name"] for t in result["tools"]]
    assert by_name(result["catalog"]["plugins"])["greeter"]["extensions"] == ["greeter:hello"]

    _, result = start(spawn, root, trustedPlugins=[{"name": "greeter", "extensions": ["other"]}])
    assert result["catalog"]["extensions"][0]["status"] == "skipped_untrusted"

    sidecar, result = start(spawn, root, trustedPlugins=[{"name": "greeter"}])
    [entry] = result["catalog"]["extensions"]
    assert (entry["id"], entry["status"]) == ("greeter:hello", "loaded")
    assert by_name(result["catalog"]["plugins"])["greeter"]["trusted"]["extensions"] == ["greeter:hello"]
    [tool] = [t for t in result["tools"] if t["name"] == "greet"]
    assert tool["origin"] == {"kind": "extension", "id": "greeter:hello"}
    answer = sidecar.call("tools/call", {"threadId": result["threadId"], "call": {
        "id": "c1", "name": "greet", "arguments": {"name": "Ada"}}})["result"]
    assert answer["content"] == [{"type": "text", "text": "Hello from a plugin, Ada!"}]


def test_a_workspace_plugin_runs_nothing_without_the_editors_trust(spawn, tree, tmp_path):
    """An attacker's plugin in the project: every way it declares code would leave a mark if it ran."""
    root = tree("project")
    mark = tmp_path / "ran"
    touch = f"touch {mark}"
    plugin = root / "plugins/evil"
    write(plugin / ".claude-plugin/plugin.json", json.dumps({
        "name": "evil", "hooks": {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": touch}]}]}},
        "mcpServers": {"inline": {"command": "sh", "args": ["-c", touch]}}}))
    write(plugin / ".mcp.json", json.dumps({"mcpServers": {"file": {"command": "sh", "args": ["-c", touch]}}}))
    write(plugin / "hooks/hooks.json", json.dumps({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": touch}]}]}}))
    write(plugin / "extensions/boom.py", f"import pathlib\npathlib.Path({str(mark)!r}).touch()\n"
                                         "def activate(api):\n    pass\n")
    add_skill(plugin, "readme", "Use when reading the plugin's notes.")
    sidecar, result = start(spawn, root, trustedPlugins=[{"name": "other"}])
    thread = result["threadId"]
    assert "evil:readme" in by_name(result["catalog"]["skills"])
    assert {h["trusted"] for h in result["catalog"]["hooks"]} == {False}
    assert {s["trusted"] for s in result["catalog"]["mcpServers"]} == {False}
    sidecar.call("skills/activate", {"threadId": thread, "name": "evil:readme"})
    sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "load_skill",
                                                             "arguments": {"name": "evil:readme"}}})
    sidecar.call("input/submit", {"threadId": thread, "text": "hello"})
    sidecar.call("thread/close", {"threadId": thread})
    assert sidecar.close() == 0
    assert not mark.exists()


def test_plugins_and_commands_in_a_root_are_watched(spawn, tree):
    root = root_with_plugins(tree, ["commit-commands", "example-plugin"])
    sidecar = spawn()
    sidecar.call("thread/start", {"roots": [str(root)]})
    # at once: the watch starts after the answer, and catches up with what changed meanwhile
    write(root / "plugins/commit-commands/commands/amend.md", "Amend the last commit: $ARGUMENTS\n")
    changes_until(sidecar, lambda c: {"kind": "commandTemplate", "name": "commit-commands:amend"} in c["added"])
    write(root / "commands/deploy.md", "Deploy $1\n")
    changes_until(sidecar, lambda c: {"kind": "commandTemplate", "name": "deploy"} in c["added"])
    manifest = root / "plugins/example-plugin/.claude-plugin/plugin.json"
    manifest.write_text(manifest.read_text().replace('"name"', '"version": "9.9.9",\n  "name"', 1))
    changes_until(sidecar, lambda c: {"kind": "plugin", "name": "example-plugin"} in c["changed"])


def test_tools_say_where_they_come_from(spawn, tree):
    root = root_with_plugins(tree, ["echo-mcp", "greeter"], OWN)
    write(root / "extensions/local.py", "def activate(api):\n    api.register_tool(name='local', description='d', "
                                        "input_schema={'type': 'object'}, execute=lambda i, a: {'content': 'x'})\n")
    _, result = start(spawn, root, trustedPlugins=[{"name": "echo-mcp"}, {"name": "greeter"}],
                      trustedExtensions=["local"], dynamicTools=[{"name": "pick"}])
    sources = {t["name"]: t.get("source") for t in result["tools"]}
    echo = by_name(result["catalog"]["plugins"])["echo-mcp"]["source"]
    assert sources["mcp__plugin_echo-mcp_echo__echo"] == echo and echo["plugin"]["name"] == "echo-mcp"
    assert sources["greet"]["plugin"]["name"] == "greeter"
    assert sources["local"] == {"kind": "root", "root": str(root)}
    assert sources["pick"] == {"kind": "editor"}
    assert sources["load_skill"] is None
