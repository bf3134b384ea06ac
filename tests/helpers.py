"""Helpers shared by the tests: building resource trees and reading responses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORKSPACE = REPO / "client-examples" / "workspace"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, description: str = "Use when testing.", body: str = "Body of the skill.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def add_skill(root: Path, name: str, description: str = "Use when testing.", body: str = "Body of the skill.\n",
              directory: str | None = None) -> Path:
    return write(root / "skills" / (directory or name) / "SKILL.md", skill_text(name, description, body))


def error_kind(response: dict[str, Any]) -> str:
    assert "error" in response, response
    return response["error"]["data"]["kind"]


def kinds_by_path(diagnostics: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in diagnostics:
        out.setdefault(d.get("path", ""), set()).add(d["kind"])
    return out
