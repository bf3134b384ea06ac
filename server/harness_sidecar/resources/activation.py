"""Skill activation: the body enters the conversation only here, read afresh and re-checked.

An activation also lists the skill's folder (``files``), so that a model reading "run
``scripts/fill_form.py``" or "see reference.md" knows where that is and what exists.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.catalog import Catalog, root_origin
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.base.names import qualified_name_problem
from harness_sidecar.resources.paths import (
    decode_utf8,
    is_within,
    join_within,
    read_contained,
    realpath_within,
)
from harness_sidecar.base.records import Record

_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


class SkillResource(Record):
    __slots__ = ("request", "source", "content", "mime_type", "size", "origin")

    def __init__(self, request: str, source: str, content: str, mime_type: str | None = None,
                 size: int = 0) -> None:
        self.request = request
        self.source = source  # canonical path (``path`` on the wire)
        self.content = content  # the text, or the bytes in base64 when ``mime_type`` is set
        self.mime_type = mime_type  # set for a file that is not UTF-8 text
        self.size = size  # bytes on disk
        self.origin: dict[str, Any] | None = None  # its skill's provenance (``source`` on the wire)

    def to_wire(self) -> dict[str, Any]:
        # One name, one shape (v4 §2): ``path`` the file, ``source`` the provenance, as in the catalog
        if self.mime_type is None:
            return {"request": self.request, "path": self.source, "source": self.origin, "content": self.content}
        return {"request": self.request, "path": self.source, "source": self.origin, "encoding": "base64",
                "mimeType": self.mime_type, "content": self.content}


class SkillFile(Record):
    __slots__ = ("path", "size")

    def __init__(self, path: str, size: int) -> None:
        self.path = path  # relative to the skill directory, with '/'
        self.size = size


class ActivatedSkill(Record):
    __slots__ = ("name", "description", "root", "source", "body", "resources", "directory", "files",
                 "files_omitted", "dot_entries", "origin", "via", "located")

    def __init__(self, name: str, description: str, root: str, source: str, body: str,
                 resources: list[SkillResource] | None = None, directory: str = "",
                 files: list[SkillFile] | None = None, files_omitted: int = 0,
                 dot_entries: list[str] | None = None, origin: dict[str, Any] | None = None) -> None:
        self.name = name
        self.description = description
        self.root = root
        self.source = source  # its SKILL.md as found under the root (``path`` on the wire)
        self.origin = origin  # provenance, the catalog entry's (``source`` on the wire)
        self.body = body
        self.resources: list[SkillResource] = [] if resources is None else resources
        self.directory = directory
        self.files: list[SkillFile] = [] if files is None else files
        self.files_omitted = files_omitted
        self.dot_entries: list[str] = [] if dot_entries is None else dot_entries  # not listed, but named
        # protocol-v4 §5: how it came in ("activate": skills/activate, its body is in context/build; "load_skill":
        # the tool result holds it, context/build only names it), and whether a path locator chose it
        self.via = "activate"
        self.located = False

    def active_to_wire(self) -> dict[str, str]:
        """Its entry in context/build's ``activeSkills``."""
        return {"name": self.name, "path": self.source, "via": self.via}

    def to_wire(self) -> dict[str, Any]:
        out = {
            "name": self.name, "description": self.description, "root": self.root, "path": self.source,
            "source": self.origin,
            "body": self.body, "resources": [r.to_wire() for r in self.resources], "directory": self.directory,
            "files": [{"path": f.path, "size": f.size} for f in self.files],
        }
        if self.files_omitted:
            out["filesOmitted"] = self.files_omitted
        out["dotEntries"] = list(self.dot_entries)
        return out

    def load_skill_text(self) -> str:
        """What the builtin ``load_skill`` answers: the body, then where the skill lives and what is in it."""
        lines = [self.body.rstrip("\n"), "", "---",
                 f"Skill directory: {self.directory}",
                 "Files in it (paths relative to the skill directory; sizes in bytes):"]
        lines += [f"- {f.path} ({f.size})" for f in self.files]
        if self.files_omitted:
            lines.append(f"- … and {self.files_omitted} more file{'s' if self.files_omitted != 1 else ''} not listed")
        if self.dot_entries:
            lines.append("Dot-entries (names starting with '.', not listed above): " + ", ".join(self.dot_entries))
        return "\n".join(lines) + "\n"


def check_skill_name(name: object) -> str:
    """Refuse a malformed name before any file is touched."""
    why = qualified_name_problem(name)  # a plugin's skill is <plugin>:<name>
    if why:
        raise DomainError("invalid_arguments", f"skill name {name!r} {why}", name=name if isinstance(name, str) else None)
    return name  # type: ignore[return-value]


def candidate(catalog: Catalog, name: str, path: str | None, limits: Limits) -> Any:
    """The catalog entry of skill ``name``: the winner, or with ``path`` (a candidate's SKILL.md) the same-name
    candidate there — the winner or one a root earlier in the list shadows. A path that is no candidate of
    ``name`` is ``skill_not_found`` naming it: never the winner in its place (protocol-v4 §5)."""
    winner = catalog.skills.get(name)
    if path is None:
        if winner is None:
            raise DomainError("skill_not_found", f"no skill named '{name}' in this thread's catalog", name=name)
        return winner
    wanted = os.path.normpath(path)
    if winner is not None and os.path.normpath(winner.source) == wanted:
        return winner
    from harness_sidecar.resources.catalog import skill_in_root

    if ":" not in name:  # a root's skill: <root>/skills/<name>/SKILL.md of one of the thread's roots
        for root in catalog.roots:
            found = skill_in_root(root, name, limits)
            if found is not None and os.path.normpath(found.source) == wanted:
                return found
    raise DomainError("skill_not_found", f"no candidate of skill '{name}' at {path}: name a SKILL.md the catalog "
                                         f"lists or shadows (the winner is not used in its place)", name=name,
                      path=path)


def activate(catalog: Catalog, name: object, resources: list[str], limits: Limits,
             path: str | None = None) -> ActivatedSkill:
    """Read the skill ``name`` of the catalog snapshot (with ``path``: that candidate) and the requested
    resource files.

    The skill directory and SKILL.md must still resolve inside the skill's root and the
    frontmatter ``name`` must still match; resources must stay inside the skill directory
    lexically and after resolving links.
    """
    name = check_skill_name(name)
    entry = candidate(catalog, name, path, limits)
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
    if entry.dialect == "claude" and not frontmatter.has_frontmatter(data):
        return _activated(entry, name, entry.description, decode_utf8(data, entry.source, "SKILL.md", 0),
                          directory_real, resources, limits)  # listed so: no frontmatter (Claude Code's rule)
    try:
        fm = frontmatter.parse(data, True, limits.max_frontmatter_bytes, required=True)
    except FrontmatterError as exc:
        raise DomainError(exc.problem.kind if exc.problem.kind in ("not_utf8", "too_large") else "invalid_frontmatter",
                          f"skill '{name}': {exc.problem.message}", name=name, path=entry.source,
                          line=exc.problem.line) from None
    assert fm is not None
    if entry.dialect is None:
        problems = frontmatter.check_skill(fm, entry.local_name)
    else:  # a plugin's skill: served under its peer's name, which must still be the one it was listed under
        problems, _, served = frontmatter.check_skill_as(fm, os.path.basename(entry.directory), entry.dialect)
        if not problems and served != entry.local_name:
            problems = [frontmatter.Problem("name_mismatch", f"its name is now '{served}', not '{entry.local_name}'",
                                            line=fm.lines.get("name"))]
    if problems:
        problem = problems[0]
        kind = "name_mismatch" if problem.kind in ("name_mismatch", "invalid_name") else "invalid_frontmatter"
        raise DomainError(kind, f"skill '{name}': {problem.message}", name=name, path=entry.source,
                          line=problem.line)
    body = decode_utf8(data, entry.source, "SKILL.md", fm.body_start)
    return _activated(entry, name, fm.data["description"], body, directory_real, resources, limits)


def _activated(entry: Any, name: str, description: str, body: str, directory_real: str, resources: list[str],
               limits: Limits) -> ActivatedSkill:
    loaded = [read_resource(entry.directory, directory_real, request, limits) for request in dict.fromkeys(resources)]
    dot_entries: list[str] = []
    files, omitted = list_files(directory_real, limits.max_listed_files, dot_entries)
    origin = entry.origin or root_origin(entry.root)
    for resource in loaded:
        resource.origin = origin
    return ActivatedSkill(name, description, entry.root.path, entry.source,
                          _LEADING_BLANK_LINES.sub("", body), loaded, os.path.normpath(entry.directory),
                          files, omitted, dot_entries, origin)


def read_resource(directory: str, directory_real: str, request: str, limits: Limits) -> SkillResource:
    if not request:
        raise DomainError("invalid_arguments", "a resource request must not be empty", request=request)
    path = join_within(os.path.normpath(directory), request)
    try:
        real, data = read_contained(path, directory_real, limits.max_file_bytes, "resource")
    except DomainError as exc:
        exc.data.setdefault("request", request)
        if exc.kind == "resource_not_found" and not os.path.lexists(path):
            close = suggestions(request, [f.path for f in list_files(directory_real, MAX_WALK)[0]])
            exc.data["suggestions"] = close
            if close:
                exc.message += f"; did you mean {' or '.join(close[:3])}?"
                exc.args = (exc.message,)
        raise
    if b"\x00" not in data:
        try:
            return SkillResource(request, real, decode_utf8(data, path, "resource", keep_bom=True), None, len(data))
        except DomainError:
            pass
    import base64

    return SkillResource(request, real, base64.b64encode(data).decode("ascii"), mime_type(path), len(data))


# -- the skill's folder ------------------------------------------------------------------------------

MAX_WALK = 20_000  # directory entries looked at for one listing, at most


def list_files(directory_real: str, limit: int,
               dot_entries: list[str] | None = None) -> tuple[list[SkillFile], int]:
    """Every regular file under the skill directory, sorted by path: ``(the first limit, how many more)``.

    Paths are relative, with '/'. Left out: dot-files and anything under a dot-directory,
    links that resolve outside the skill directory (a resource must stay inside it), broken
    links, and anything that is not a regular file. A link to a directory inside the skill
    is followed unless it leads back to one of its own ancestors. At most ``MAX_WALK``
    directory entries are looked at. ``dot_entries``, when given, receives the relative path of
    each dot-entry met (itself, not what is under it), sorted.
    """
    found: list[tuple[str, int]] = []
    seen = 0
    stack: list[tuple[str, str, tuple[str, ...]]] = [("", directory_real, (directory_real,))]
    while stack and seen < MAX_WALK:
        prefix, real, ancestors = stack.pop()
        try:
            it = os.scandir(real)
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if seen > MAX_WALK:
                    break
                relative = prefix + entry.name
                if entry.name.startswith("."):
                    if dot_entries is not None:
                        dot_entries.append(relative)
                    continue
                try:
                    if entry.is_symlink():
                        target = os.path.realpath(entry.path)
                        if not is_within(target, directory_real):
                            continue
                        st = os.stat(target)
                        if stat.S_ISDIR(st.st_mode):
                            if target not in ancestors:
                                stack.append((relative + "/", target, ancestors + (target,)))
                        elif stat.S_ISREG(st.st_mode):
                            found.append((relative, st.st_size))
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append((relative + "/", entry.path, ancestors + (entry.path,)))
                    elif entry.is_file(follow_symlinks=False):
                        found.append((relative, entry.stat(follow_symlinks=False).st_size))
                except OSError:
                    continue
    found.sort()
    if dot_entries is not None:
        dot_entries.sort()
    return [SkillFile(path, size) for path, size in found[:limit]], max(0, len(found) - limit)


def suggestions(request: str, available: list[str], limit: int = 5) -> list[str]:
    """Files of the skill close to ``request``: the same path in another case first, then the same
    file name elsewhere, then similar spellings."""
    import difflib

    wanted = os.path.normpath(request).replace(os.sep, "/")
    lower = wanted.lower()
    base = lower.rsplit("/", 1)[-1]
    same_case_insensitive = [p for p in available if p.lower() == lower]
    same_name = [p for p in available if p.rsplit("/", 1)[-1].lower() == base]
    similar = difflib.get_close_matches(wanted, available, n=limit, cutoff=0.6)
    similar += difflib.get_close_matches(lower, [p.lower() for p in available], n=limit, cutoff=0.6)
    by_lower = {p.lower(): p for p in available}
    ordered = same_case_insensitive + same_name + [by_lower.get(p, p) for p in similar]
    return [p for p in dict.fromkeys(ordered) if p != wanted][:limit]


# Types Python's own table lacks that skills ship (fonts, office documents, archives).
_MIME_TYPES = {
    ".ttf": "font/ttf", ".otf": "font/otf", ".woff": "font/woff", ".woff2": "font/woff2",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".gz": "application/gzip", ".tgz": "application/gzip", ".bz2": "application/x-bzip2",
    ".xz": "application/x-xz", ".7z": "application/x-7z-compressed", ".jar": "application/java-archive",
    ".webp": "image/webp", ".sqlite": "application/vnd.sqlite3", ".db": "application/vnd.sqlite3",
    ".parquet": "application/vnd.apache.parquet",
}


def mime_type(path: str) -> str:
    """The media type of a file by its extension: the table above, then Python's ``mimetypes``
    table (its built-in one unless something in the process loaded the system's), else
    ``application/octet-stream``. Never the file's content: nothing is sniffed."""
    import mimetypes

    extension = os.path.splitext(path)[1].lower()
    return _MIME_TYPES.get(extension) or mimetypes.types_map.get(extension) or "application/octet-stream"
