"""bench/corpus_peers: the corpus is laid out from the lock file and mirrors alone (a missing mirror
or commit is said, never skipped silently), and the sidecar's reading of a plugin is what its
catalog says. The peers themselves (npm CLIs) are not needed here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SAMPLE_DETAILS = """hookify 0.1.0
  Easily create hooks to prevent unwanted behaviors by analyzing conversation patterns
  Source: hookify@inline

Component inventory
  Skills (5)  configure, help, hookify, list, writing-rules
  Agents (1)  conversation-analyzer
  Hooks (4)  PreToolUse, PostToolUse, Stop, UserPromptSubmit  (harness-only — no model context cost)
  MCP servers (1)  mcp-search  (tool schemas resolved at runtime; not counted)
  LSP servers (0)
"""


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _mirror(tmp: Path) -> tuple[Path, str]:
    work = tmp / "src"
    _write(work / "plugins/good/.claude-plugin/plugin.json", '{"name": "good", "version": "1.0.0"}')
    _write(work / "plugins/good/skills/x/SKILL.md", "---\nname: x\ndescription: Use for x.\n---\nBody.\n")
    _write(work / "plugins/bare/skills/y/SKILL.md", "---\nname: y\ndescription: Use for y.\n---\nBody.\n")
    _write(work / ".claude-plugin/marketplace.json", json.dumps({"name": "acme", "plugins": [
        {"name": "good", "source": "./plugins/good"},
        {"name": "bare", "source": "./plugins/bare", "strict": False},
        {"name": "far", "source": {"source": "github", "repo": "acme/far"}}]}))
    os.symlink("x/SKILL.md", work / "plugins/good/skills/link.md")
    _git(tmp, "init", "-q", str(work))
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "corpus")
    commit = _git(work, "rev-parse", "HEAD")
    mirrors = tmp / "mirrors"
    _git(tmp, "clone", "-q", "--bare", str(work), str(mirrors / "acme+plugins" / "repo"))
    return mirrors, commit


def _fetch(tmp: Path, mirrors: Path, lock: dict) -> subprocess.CompletedProcess:
    (tmp / "lock.json").write_text(json.dumps(lock))
    env = {**os.environ, "HARNESS_CORPUS_MIRRORS": str(mirrors), "HARNESS_CORPUS_CACHE": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-m", "bench.corpus_peers.fetch", "--lock", str(tmp / "lock.json")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_fetch_lays_out_locked_repositories_and_names_the_ones_it_cannot(tmp_path):
    mirrors, commit = _mirror(tmp_path)
    result = _fetch(tmp_path, mirrors, {"repositories": [
        {"repo": "acme/plugins", "commit": commit},
        {"repo": "ghost/missing", "commit": "0" * 40},
        {"repo": "acme/plugins2", "commit": commit}]})
    assert result.returncode == 0, result.stderr
    assert "SKIPPED ghost/missing" in result.stderr and "no mirror" in result.stderr
    assert "SKIPPED acme/plugins2" in result.stderr
    index = json.loads((tmp_path / "cache" / "plugins.json").read_text())
    assert [s["repo"] for s in index["skipped"]] == ["ghost/missing", "acme/plugins2"]
    ids = {p["id"]: p for p in index["plugins"]}
    assert set(ids) == {"acme+plugins/plugins/good", "acme+plugins/plugins/bare#bare"}
    assert ids["acme+plugins/plugins/bare#bare"]["manifests"] == []
    assert index["repositories"][0]["remoteEntries"] == 1
    tree = tmp_path / "cache" / "repos" / "acme+plugins"
    assert (tree / "plugins/good/skills/x/SKILL.md").read_text().startswith("---\nname: x")
    assert os.readlink(tree / "plugins/good/skills/link.md") == "x/SKILL.md"


def test_fetch_says_when_the_mirror_lacks_the_locked_commit(tmp_path):
    mirrors, _ = _mirror(tmp_path)
    result = _fetch(tmp_path, mirrors, {"repositories": [{"repo": "acme/plugins", "commit": "1" * 40}]})
    assert result.returncode == 0
    assert "SKIPPED acme/plugins" in result.stderr and "lacks the locked commit" in result.stderr


def test_the_sidecar_reading_is_its_catalog(tmp_path, monkeypatch):
    mirrors, commit = _mirror(tmp_path)
    assert _fetch(tmp_path, mirrors, {"repositories": [{"repo": "acme/plugins", "commit": commit}]}).returncode == 0
    monkeypatch.setenv("HARNESS_CORPUS_CACHE", str(tmp_path / "cache"))
    sys.path.insert(0, str(REPO))
    from bench.corpus_peers.compare import compare_one, read_sidecar, Reading

    index = json.loads((tmp_path / "cache" / "plugins.json").read_text())
    readings = read_sidecar(index["plugins"], tmp_path / "cache" / "repos")
    good, bare = readings["acme+plugins/plugins/good"], readings["acme+plugins/plugins/bare#bare"]
    assert good.loads and good.names == ["x"] and good.hook_handlers == 0 and good.mcp == []
    # v4 (issue 29): a marketplace entry without a manifest is a plugin, as Claude Code loads it
    assert bare.loads and bare.names == ["y"] and not [d for d in bare.diagnostics if d["kind"] == "not_a_plugin"]
    bare_plugin = next(p for p in index["plugins"] if p["manifests"] == [])
    verdict = compare_one("claude", bare_plugin, bare, Reading(loads=True, names=["y"]))
    assert verdict["load"]["agree"] and verdict["skills"]["agree"]
    refused = Reading(loads=False, diagnostics=[{"kind": "not_a_plugin", "path": "", "name": None, "message": ""}])
    verdict = compare_one("claude", bare_plugin, refused, Reading(loads=True, names=["y"]))
    assert not verdict["load"]["agree"] and "marketplace entry without a manifest" in verdict["load"]["cause"]


def test_claude_details_inventory_is_parsed():
    sys.path.insert(0, str(REPO))
    from bench.corpus_peers.compare import parse_details

    parsed = parse_details(SAMPLE_DETAILS)
    assert parsed["Skills"] == ["configure", "help", "hookify", "list", "writing-rules"]
    assert parsed["Hooks"] == ["PreToolUse", "PostToolUse", "Stop", "UserPromptSubmit"]
    assert parsed["MCP servers"] == ["mcp-search"]
    assert parse_details('Plugin "x" not found. Run `claude plugin list`') is None


def test_a_plugin_with_both_manifests_that_the_peers_read_differently_is_left_out_of_the_agreeing_row():
    # superpowers' layout: Claude Code runs hooks/hooks.json (SessionStart), Codex's manifest says "hooks": {}
    sys.path.insert(0, str(REPO))
    from bench.corpus_peers.compare import Reading, table
    from bench.corpus_peers.peers import contradictions

    both = {"id": "obra+superpowers/.", "dialect": "both"}
    claude_only = {"id": "acme+p/plugins/x", "dialect": "claude"}
    readings = {"sidecar": {both["id"]: Reading(loads=True, names=["brainstorming"], skills=["brainstorming"]),
                            claude_only["id"]: Reading(loads=True)},
                "claude": {both["id"]: Reading(loads=True, names=["brainstorming"], hook_events=["SessionStart"]),
                           claude_only["id"]: Reading(loads=True, hook_events=["Stop"])},
                "codex": {both["id"]: Reading(loads=True, names=["brainstorming"]),
                          claude_only["id"]: Reading(loads=True)}}
    found = contradictions([both, claude_only], readings)
    assert list(found) == [both["id"]] and list(found[both["id"]]) == ["hooks"]  # skills agree; one manifest: never
    disagree = {"load": {"agree": True}, "skills": {"agree": True}, "hooks": {"agree": False}, "mcp": {"agree": True}}
    comparisons = {both["id"]: disagree, claude_only["id"]: disagree}
    raw = table([both, claude_only], comparisons, "claude", subset=True)
    agreeing = table([both, claude_only], comparisons, "claude", subset=True, leave_out=found)
    assert raw["hooks"] == {"agree": 0, "of": 2, "pct": 0.0}
    assert agreeing["hooks"] == {"agree": 0, "of": 1, "pct": 0.0} and agreeing["skills"]["of"] == 2
