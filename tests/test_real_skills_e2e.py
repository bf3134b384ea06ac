"""Real skills served exactly, through the real process (protocol v3 §3): descriptions across lines,
byte-exact files with a BOM, dot-entries named, dangling links as ``broken_link``, a missing root as
information. The skills are public ones copied unchanged (tests/fixtures/real-skills/SOURCE.md)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import error_kind

REAL = Path(__file__).parent / "fixtures" / "real-skills"
DAVILA = REAL / "davila7-claude-code-templates"
ALIREZA = REAL / "alirezarezvani-claude-skills"
COPILOT = REAL / "github-awesome-copilot"


def frontmatter_description(path: Path) -> str:
    """What the reference reading (YAML's safe loader) gives for the file's description."""
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n", 2)[1])["description"]


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def started(spawn):
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(DAVILA), str(ALIREZA), str(COPILOT)]})
    return sidecar, result


@pytest.mark.parametrize("root, name, style", [
    (DAVILA, "debugger", "'quoted' across lines, with blank lines"),
    (DAVILA, "humanizer", "| block with a blank line"),
    (ALIREZA, "coverage", ">- folded block"),
    (COPILOT, "geofeed-tuner", "> folded block"),
])
def test_a_description_across_lines_is_served(started, root, name, style):
    sidecar, result = started
    source = root / "skills" / name / "SKILL.md"
    written = frontmatter_description(source)
    listed = {s["name"]: s for s in result["catalog"]["skills"]}
    assert name in listed, (style, [d for d in result["diagnostics"] if name in d.get("path", "")])
    assert listed[name]["description"] == one_line(written)  # the catalog: one line, whitespace joined
    assert "\n" not in listed[name]["description"]
    skill = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": name})["skill"]
    assert skill["description"] == written  # activation: as written
    assert not [d for d in result["diagnostics"] if d.get("path") == str(source)]


def test_every_real_skill_is_served_and_nothing_else_is_reported(started):
    _, result = started
    assert sorted(s["name"] for s in result["catalog"]["skills"]) == [
        "coverage", "debugger", "geofeed-tuner", "humanizer", "terraform-azurerm-set-diff-analyzer"]
    assert result["diagnostics"] == []


def test_a_file_with_a_bom_comes_back_byte_exact(started):
    sidecar, result = started
    path = COPILOT / "skills/geofeed-tuner/references/rfc8805.txt"
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    skill = sidecar.call("skills/activate", {"threadId": result["threadId"], "name": "geofeed-tuner",
                                             "resources": ["references/rfc8805.txt"]})["skill"]
    (resource,) = skill["resources"]
    assert "encoding" not in resource
    assert resource["content"].startswith("\ufeff")
    assert resource["content"].encode("utf-8") == data


def test_dot_entries_are_not_listed_but_named(started):
    sidecar, result = started
    thread = result["threadId"]
    skill = sidecar.call("skills/activate", {"threadId": thread,
                                             "name": "terraform-azurerm-set-diff-analyzer"})["skill"]
    assert skill["dotEntries"] == ["scripts/.gitignore"]
    assert "scripts/.gitignore" not in [f["path"] for f in skill["files"]]
    assert "scripts/analyze_plan.py" in [f["path"] for f in skill["files"]]
    loaded = sidecar.call("tools/call", {"threadId": thread, "call": {
        "id": "c1", "name": "load_skill", "arguments": {"name": "terraform-azurerm-set-diff-analyzer"}}})["result"]
    assert loaded["details"]["dotEntries"] == ["scripts/.gitignore"]
    assert "scripts/.gitignore" in loaded["content"][0]["text"]
    plain = sidecar.call("skills/activate", {"threadId": thread, "name": "debugger"})["skill"]
    assert plain["dotEntries"] == []


def test_a_dangling_link_is_broken_link_not_path_escape(spawn):
    """The real link points out of the root to a file that does not exist."""
    gemini = ALIREZA / ".gemini"
    link = gemini / "skills/gdpr-dsgvo-expert/SKILL.md"
    assert os.path.islink(link) and not os.path.exists(link)
    result = spawn().call("thread/start", {"roots": [str(gemini)]})
    assert [(d["kind"], d["path"]) for d in result["diagnostics"]] == [("broken_link", str(link))]
    assert result["diagnostics"][0]["target"] == os.readlink(link)


def test_a_dangling_resource_link_is_broken_link(spawn, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(DAVILA / "skills/debugger", root / "skills/debugger")
    os.symlink("/nonexistent/elsewhere/notes.md", root / "skills/debugger/notes.md")  # would leave the root
    os.symlink("missing.md", root / "skills/debugger/inside.md")  # would stay inside
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)]})["threadId"]
    for request in ("notes.md", "inside.md"):
        response = sidecar.request("skills/activate", {"threadId": thread, "name": "debugger", "resources": [request]})
        assert error_kind(response) == "broken_link", response
    # an existing target outside the root is still an escape
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", root / "skills/debugger/secret.md")
    response = sidecar.request("skills/activate", {"threadId": thread, "name": "debugger", "resources": ["secret.md"]})
    assert error_kind(response) == "path_escape"
    assert "secret" not in str(response.get("result"))


def test_a_missing_root_is_information(spawn, tmp_path):
    result = spawn().call("thread/start", {"roots": [str(tmp_path / "not-made"), str(DAVILA)]})
    (diagnostic,) = result["diagnostics"]
    assert diagnostic["kind"] == "root_missing" and diagnostic["severity"] == "info"
    assert len(result["catalog"]["skills"]) == 2
