"""Skills as people write them, through the real process (protocol v2 §4): the skill's folder and
files, binary resources, suggestions for a mistyped resource, and ``find_skills`` when the
catalog budget leaves skills out."""

from __future__ import annotations

import base64
import os

import pytest
from helpers import add_skill, error_kind, write


@pytest.fixture
def pdf_root(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "pdf", "Use for PDF forms.", "See REFERENCE.md, then run `python scripts/fill_form.py`.\n")
    skill = root / "skills/pdf"
    write(skill / "reference.md", "# Reference\n")
    write(skill / "scripts/fill_form.py", "print('fill')\n")
    write(skill / "fonts/Font.ttf", bytes(range(256)) * 8)
    write(skill / ".secret", "never listed\n")
    write(tmp_path / "outside.md", "outside\n")
    os.symlink(tmp_path / "outside.md", skill / "outside.md")
    return root


def tool_call(sidecar, thread, name, arguments, call_id="c1"):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                    "arguments": arguments}})["result"]


def test_activate_answers_directory_files_and_binary_resources(spawn, pdf_root):
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(pdf_root)], "limits": {"maxListedFiles": 3}})["threadId"]
    skill = sidecar.call("skills/activate", {"threadId": thread, "name": "pdf",
                                             "resources": ["reference.md", "fonts/Font.ttf"]})["skill"]
    assert skill["directory"] == str(pdf_root / "skills/pdf")
    assert [f["path"] for f in skill["files"]] == ["SKILL.md", "fonts/Font.ttf", "reference.md"]
    assert skill["filesOmitted"] == 1  # scripts/fill_form.py; the dot-file and the escaping link are never counted
    text, font = skill["resources"]
    assert text["content"] == "# Reference\n" and "encoding" not in text
    assert (font["encoding"], font["mimeType"]) == ("base64", "font/ttf")
    assert base64.b64decode(font["content"]) == (pdf_root / "skills/pdf/fonts/Font.ttf").read_bytes()


def test_a_mistyped_resource_gets_suggestions_on_the_wire(spawn, pdf_root):
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(pdf_root)]})["threadId"]
    response = sidecar.request("skills/activate", {"threadId": thread, "name": "pdf", "resources": ["REFERENCE.md"]})
    assert error_kind(response) == "resource_not_found"
    assert response["error"]["data"]["suggestions"][0] == "reference.md"
    assert response["error"]["data"]["request"] == "REFERENCE.md"


def test_load_skill_ends_with_the_directory_and_the_listing(spawn, pdf_root):
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(pdf_root)]})["threadId"]
    result = tool_call(sidecar, thread, "load_skill", {"name": "pdf"})
    assert not result["isError"]
    text = result["content"][0]["text"]
    assert text.startswith("See REFERENCE.md")
    assert f"Skill directory: {pdf_root / 'skills/pdf'}\n" in text
    assert text.endswith("- fonts/Font.ttf (2048)\n- reference.md (12)\n- scripts/fill_form.py (14)\n")
    assert ".secret" not in text and "outside.md" not in text
    assert result["details"]["directory"] == str(pdf_root / "skills/pdf")
