"""Skill activation: the body enters the conversation only here, read afresh and re-checked."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.errors import DomainError
from harness_sidecar.limits import Limits
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.catalog import Catalog
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.resources.names import name_problem
from harness_sidecar.resources.paths import (
    decode_utf8,
    join_within,
    read_contained,
    realpath_within,
)

_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


@dataclass
class SkillResource:
    request: str
    source: str  # canonical path
    content: str

    def to_wire(self) -> dict[str, Any]:
        return {"request": self.request, "source": self.source, "content": self.content}


@dataclass
class ActivatedSkill:
    name: str
    description: str
    root: str
    source: str
    body: str
    resources: list[SkillResource] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "root": self.root, "source": self.source,
            "body": self.body, "resources": [r.to_wire() for r in self.resources],
        }


def check_skill_name(name: object) -> str:
    """Refuse a malformed name before any file is touched."""
    why = name_problem(name)
    if why:
        raise DomainError("invalid_arguments", f"skill name {name!r} {why}", name=name if isinstance(name, str) else None)
    return name  # type: ignore[return-value]


def activate(catalog: Catalog, name: object, resources: list[str], limits: Limits) -> ActivatedSkill:
    """Read the skill ``name`` of the catalog snapshot and the requested resource files.

    The skill directory and SKILL.md must still resolve inside the skill's root and the
    frontmatter ``name`` must still match; resources must stay inside the skill directory
    lexically and after resolving links.
    """
    name = check_skill_name(name)
    entry = catalog.skills.get(name)
    if entry is None:
        raise DomainError("skill_not_found", f"no skill named '{name}' in this thread's catalog", name=name)
    root_real = entry.root.real
    directory_real = realpath_within(entry.directory, root_real, "skill directory")
    if not os.path.isdir(directory_real):
        raise DomainError("skill_not_found", f"skill '{name}' no longer exists at {entry.directory}", name=name,
                          path=entry.directory)
    try:
        _, data = read_contained(entry.source, root_real, limits.max_file_bytes, "SKILL.md")
    except DomainError as exc:
        if exc.kind == "resource_not_found":
            raise DomainError("skill_not_found", f"skill '{name}' has no SKILL.md at {entry.source} any more",
                              name=name, path=entry.source) from None
        raise
    try:
        fm = frontmatter.parse(data, True, limits.max_frontmatter_bytes, required=True)
    except FrontmatterError as exc:
        raise DomainError(exc.problem.kind if exc.problem.kind in ("not_utf8", "too_large") else "invalid_frontmatter",
                          f"skill '{name}': {exc.problem.message}", name=name, path=entry.source,
                          line=exc.problem.line) from None
    assert fm is not None
    problems = frontmatter.check_skill(fm, name)
    if problems:
        problem = problems[0]
        kind = "name_mismatch" if problem.kind in ("name_mismatch", "invalid_name") else "invalid_frontmatter"
        raise DomainError(kind, f"skill '{name}': {problem.message}", name=name, path=entry.source,
                          line=problem.line)
    body = decode_utf8(data, entry.source, "SKILL.md", fm.body_start)
    loaded = [read_resource(entry.directory, directory_real, request, limits) for request in dict.fromkeys(resources)]
    return ActivatedSkill(name, fm.data["description"].strip(), entry.root.path, entry.source,
                          _LEADING_BLANK_LINES.sub("", body), loaded)


def read_resource(directory: str, directory_real: str, request: str, limits: Limits) -> SkillResource:
    if not request:
        raise DomainError("invalid_arguments", "a resource request must not be empty", request=request)
    path = join_within(os.path.normpath(directory), request)
    try:
        real, data = read_contained(path, directory_real, limits.max_file_bytes, "resource")
    except DomainError as exc:
        exc.data.setdefault("request", request)
        raise
    return SkillResource(request, real, decode_utf8(data, path, "resource"))
