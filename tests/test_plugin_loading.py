"""Plugins load as their peer loads them (protocol-v4 §3, issue 29): real plugin layouts from the
corpus (tests/fixtures/plugin-loading/, each with SOURCE.md: repository, commit, licence, the files
copied unchanged), read by the real sidecar process."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import write

from harness_sidecar.resources.plugins import tree_sha256

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "plugin-loading"


def _start(spawn, tmp_path: Path, *names: str, **params):
    paths = []
    for name in names:
        shutil.copytree(FIXTURES / name, tmp_path / name, symlinks=True)
        paths.append(str(tmp_path / name))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [], "plugins": paths, "watch": False, **params})
    return sidecar, result


def _by_name(items):
    return {i["name"]: i for i in items}


def test_marketplace_entries_without_a_manifest_are_plugins_each_with_its_own_skills(spawn, tmp_path):
    # anthropics/skills: no plugin.json, three strict:false entries with source "./" and a skills list
    sidecar, result = _start(spawn, tmp_path, "anthropics-skills")
    plugins = _by_name(result["catalog"]["plugins"])
    assert sorted(plugins) == ["claude-api", "document-skills", "example-skills"]
    assert not [d for d in result["diagnostics"] if d["kind"] == "not_a_plugin"]
    skills = _by_name(result["catalog"]["skills"])
    # the entry's skills replace skills/: internal-comms is example-skills' only (as both peers serve it)
    assert [s for s in skills if s.endswith(":internal-comms")] == ["example-skills:internal-comms"]
    body = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "example-skills:internal-comms"})
    assert body["skill"]["name"] == "example-skills:internal-comms" and body["skill"]["body"]


def test_a_skill_named_unlike_its_folder_is_served_under_its_peers_name_with_a_warning(spawn, tmp_path):
    # hookify (Claude): frontmatter 'writing-hookify-rules' in skills/writing-rules -> the folder's name;
    # coderabbit (Codex): 'code-review' in skills/coderabbit-review -> the frontmatter's name
    sidecar, result = _start(spawn, tmp_path, "hookify", "coderabbit")
    skills = _by_name(result["catalog"]["skills"])
    assert {"hookify:writing-rules", "coderabbit:code-review"} <= set(skills)
    assert "hookify:writing-hookify-rules" not in skills and "coderabbit:coderabbit-review" not in skills
    warned = [d for d in result["diagnostics"] if d["kind"] == "name_mismatch"]
    assert len(warned) == 2 and all(d["severity"] == "warning" for d in warned)
    for name in ("hookify:writing-rules", "coderabbit:code-review"):
        activated = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": name})
        assert activated["skill"]["name"] == name and activated["skill"]["body"]


def test_an_mcp_server_named_with_a_space_is_listed_with_a_normalised_name(spawn, tmp_path):
    _, result = _start(spawn, tmp_path, "finance")
    servers = {m["server"]: m for m in result["catalog"]["mcpServers"] if m["plugin"] == "finance"}
    assert "google calendar" in servers
    assert servers["google calendar"]["name"] == "plugin_finance_google_calendar"  # as Claude Code names it
    assert not [d for d in result["diagnostics"] if d["kind"] == "invalid_mcp_servers"]


def test_a_codex_manifests_hooks_replace_the_default_file(spawn, tmp_path):
    # claude-mem/plugin: .codex-plugin names ./hooks/codex-hooks.json (5 handlers); hooks/hooks.json has 7
    _, result = _start(spawn, tmp_path, "claude-mem")
    [plugin] = result["catalog"]["plugins"]
    assert plugin["dialect"] == "codex" and plugin["hooks"] == 5
    paths = {h.get("path") for h in result["catalog"]["hooks"] if h["source"] == "plugin:claude-mem"}
    assert not [p for p in paths if p and p.endswith("/hooks/hooks.json")]


def test_a_codex_manifests_empty_hooks_turn_hooks_off(spawn, tmp_path):
    shutil.copytree(FIXTURES / "claude-mem", tmp_path / "src")
    manifest = tmp_path / "src/.codex-plugin/plugin.json"
    manifest.write_text(manifest.read_text().replace('"./hooks/codex-hooks.json"', "{}"))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [], "plugins": [str(tmp_path / "src")], "watch": False})
    [plugin] = result["catalog"]["plugins"]
    assert plugin["hooks"] == 0


def test_a_claude_skill_without_frontmatter_is_served_by_its_folder_and_first_paragraph(spawn, tmp_path):
    # equity-research's catalyst-calendar/SKILL.md opens with '# Catalyst Calendar', no '---' block
    sidecar, result = _start(spawn, tmp_path, "equity-research")
    skills = _by_name(result["catalog"]["skills"])
    plugin = next(iter(_by_name(result["catalog"]["plugins"])))
    served = skills[f"{plugin}:catalyst-calendar"]
    assert served["description"].startswith("description: Build and maintain a calendar of upcoming catalysts")
    assert f"{plugin}:earnings-analysis" in skills
    [warned] = [d for d in result["diagnostics"] if d["kind"] == "no_frontmatter"]
    assert warned["severity"] == "warning" and warned["path"].endswith("catalyst-calendar/SKILL.md")
    body = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": f"{plugin}:catalyst-calendar"})
    assert body["skill"]["body"].startswith("# Catalyst Calendar")


def test_a_codex_plugins_skill_below_a_skills_subfolder_is_served_as_codex_finds_it(spawn, tmp_path):
    # moody-s keeps a shared skill at skills/shared/citations/SKILL.md; Codex lists it as 'citations'
    sidecar, result = _start(spawn, tmp_path, "moody-s")
    skills = _by_name(result["catalog"]["skills"])
    assert "moody-s:citations" in skills
    assert skills["moody-s:citations"]["path"].endswith("skills/shared/citations/SKILL.md")
    body = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "moody-s:citations"})
    assert "citation" in body["skill"]["body"].lower()


def test_unknown_or_ill_typed_manifest_fields_never_refuse_a_plugin(spawn, tmp_path):
    shutil.copytree(FIXTURES / "hookify", tmp_path / "hookify")
    manifest = tmp_path / "hookify/.claude-plugin/plugin.json"
    data = json.loads(manifest.read_text())
    data.update({"$schema": "https://json.schemastore.org/claude-code-plugin-manifest.json", "category": "x",
                 "lspServers": {"a": {"command": "a"}}, "interface": {"displayName": 1}, "agents": 7})
    manifest.write_text(json.dumps(data))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [], "plugins": [str(tmp_path / "hookify")], "watch": False})
    assert [p["name"] for p in result["catalog"]["plugins"]] == ["hookify"]
    assert "hookify:writing-rules" in _by_name(result["catalog"]["skills"])
    ill = [d for d in result["diagnostics"] if d["kind"] == "invalid_manifest_path"]
    assert ill and all(d["severity"] == "warning" for d in ill)  # 'agents': 7 is said, not fatal


OWN = Path(__file__).resolve().parent / "fixtures" / "own-plugins"


def test_a_trusted_server_named_with_a_space_runs_and_its_tools_are_named_as_claude_code_names_them(spawn, tmp_path):
    # our own echo-mcp (tests/fixtures/own-plugins: no public plugin ships a stdio server), its key renamed
    shutil.copytree(OWN / "echo-mcp", tmp_path / "echo-mcp")
    mcp = tmp_path / "echo-mcp/.mcp.json"
    data = json.loads(mcp.read_text())
    data["mcpServers"] = {"google calendar": data["mcpServers"]["echo"]}
    mcp.write_text(json.dumps(data))
    manifest = tmp_path / "echo-mcp/.claude-plugin/plugin.json"
    if manifest.exists():
        plugin = json.loads(manifest.read_text())
        plugin.pop("mcpServers", None)
        manifest.write_text(json.dumps(plugin))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [], "plugins": [str(tmp_path / "echo-mcp")], "watch": False,
                                           "trustedPlugins": [{"name": "echo-mcp",
                                                               "mcpServers": ["google calendar"]}]}, timeout=60)
    tools = [t["name"] for t in result["tools"] if t["name"].startswith("mcp__")]
    assert tools == ["mcp__plugin_echo-mcp_google_calendar__echo"]
    answer = sidecar.call("tools/call", {"threadId": result["threadId"], "call": {
        "id": "c1", "name": tools[0], "arguments": {"text": "hello"}}})["result"]
    assert answer["content"][0]["text"].endswith(": hello")


def test_several_folders_of_one_marketplace_are_each_their_entry_and_a_refresh_reads_it_again(spawn, tmp_path):
    # claude-plugins-official: 13 LSP plugins are strict:false entries without a manifest, all named by the
    # one marketplace.json (286 entries); each folder is its own entry, and an edited entry is seen anew
    top = tmp_path / "claude-plugins-official"
    shutil.copytree(FIXTURES / "claude-plugins-official", top, symlinks=True)
    folders = [str(top / "plugins" / name) for name in ("pyright-lsp", "gopls-lsp")]
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [], "plugins": folders, "watch": False})
    plugins = _by_name(result["catalog"]["plugins"])
    assert sorted(plugins) == ["gopls-lsp", "pyright-lsp"]
    assert {n: (p["version"], p["path"], p["manifest"]) for n, p in plugins.items()} == {
        name: ("1.0.0", folder, str(top / ".claude-plugin/marketplace.json"))
        for name, folder in zip(("pyright-lsp", "gopls-lsp"), folders)}
    assert not [d for d in result["diagnostics"] if d["kind"] in ("not_a_plugin", "invalid_manifest")]
    market = top / ".claude-plugin/marketplace.json"
    data = json.loads(market.read_text())
    for entry in data["plugins"]:
        if entry["name"] == "gopls-lsp":
            entry["version"] = "1.1.0"
    market.write_text(json.dumps(data))
    refreshed = sidecar.call("thread/refresh", {"threadId": result["threadId"]})
    assert {p["name"]: p["version"] for p in refreshed["catalog"]["plugins"]} == {"gopls-lsp": "1.1.0",
                                                                                "pyright-lsp": "1.0.0"}


def test_a_fifo_named_like_a_plugin_file_is_reported_and_never_waited_on(spawn, tmp_path):
    """A cloned repository whose plugin.json, hooks file, MCP servers file, marketplace.json or a pinned
    plugin's extension is a FIFO: opening one for reading would wait for a writer forever, and the
    thread/start with it. Each is reported (or left out) and the plugins beside it are served."""
    def plugin(name: str, **manifest) -> Path:
        folder = tmp_path / name
        write(folder / ".claude-plugin/plugin.json", json.dumps({"name": name, **manifest}))
        write(folder / "skills/review/SKILL.md", "---\nname: review\ndescription: Use when reviewing.\n---\nBody.\n")
        return folder

    good = plugin("good")
    fifo_manifest = tmp_path / "fifo-manifest"
    (fifo_manifest / ".claude-plugin").mkdir(parents=True)
    os.mkfifo(fifo_manifest / ".claude-plugin/plugin.json")
    hooks = plugin("fifo-hooks", hooks="./hooks/more.json", mcpServers="./servers.json")
    (hooks / "hooks").mkdir()
    os.mkfifo(hooks / "hooks/more.json")
    os.mkfifo(hooks / "servers.json")
    market = plugin("fifo-market")
    os.mkfifo(market / ".claude-plugin/marketplace.json")
    pinned = plugin("pinned")
    (pinned / "extensions").mkdir()
    os.mkfifo(pinned / "extensions/trap.py")
    pin = tree_sha256(str(pinned))
    paths = [str(p) for p in (good, fifo_manifest, hooks, market, pinned)]
    sidecar = spawn()
    for _ in range(2):  # and again: nothing was left waiting
        result = sidecar.call("thread/start", {"roots": [], "plugins": paths, "watch": False, "marketplaces": [str(market)],
                                               "trustedPlugins": [{"name": "fifo-hooks"},
                                                                  {"name": "pinned", "sha256": pin}]}, timeout=30)
        skills = {s["name"] for s in result["catalog"]["skills"]}
        assert {"good:review", "fifo-hooks:review", "fifo-market:review", "pinned:review"} <= skills
        found = {(d["kind"], d.get("path")) for d in result["diagnostics"]}
        assert ("not_a_plugin", str(fifo_manifest)) in found
        assert ("invalid_hooks", str(hooks / "hooks/more.json")) in found
        assert ("invalid_mcp_servers", str(hooks / "servers.json")) in found
        assert ("marketplace_not_found", str(market)) in found
        assert ("resource_not_found", str(pinned / "extensions/trap.py")) in found
