"""The catalog: instructions, skills and templates found under ordered roots.

Finding resources never runs code and never reads a skill's body: a skill costs one
directory entry, one ``open`` and a bounded read of its frontmatter. The earlier root
wins a resource of the same kind and name; everything left out is a ``Diagnostic``.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import time
from typing import Any, Callable

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.frontmatter import FrontmatterError, Problem
from harness_sidecar.base.names import name_problem
from harness_sidecar.resources.paths import decode_utf8, is_within, read_contained
from harness_sidecar.base.diagnostics import Diagnostic  # noqa: F401 - the catalog's diagnostics, named here too
from harness_sidecar.base.records import Record

logger = logging.getLogger(__name__)

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
# O_NONBLOCK: a FIFO (or device) named SKILL.md is opened at once and reported, never waited on;
# reads of a regular file are not changed by it
_O_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class Root(Record):
    """A root of a thread; never changed once made (hashable)."""

    __slots__ = ("path", "real", "index")

    def __init__(self, path: str, real: str, index: int) -> None:
        self.path = path  # as given, normalised
        self.real = real  # links resolved: the boundary every resource is checked against
        self.index = index

    def __hash__(self) -> int:
        return hash((self.path, self.real, self.index))


def root_origin(root: Root) -> dict[str, Any]:
    """Provenance (``source`` on the wire) of what a root holds: ``{kind: "root", root}``."""
    return {"kind": "root", "root": root.path}


class SkillEntry(Record):
    __slots__ = ("name", "description", "root", "source", "directory", "stamp", "origin", "local_name", "dialect")
    _uncompared = frozenset(["stamp"])

    def __init__(self, name: str, description: str, root: Root, source: str, directory: str,
                 stamp: tuple | None = None, origin: dict[str, Any] | None = None) -> None:
        self.name = name
        self.local_name = name  # the name it is served under; a plugin's skill is listed as <plugin>:<local_name>
        self.dialect: str | None = None  # a plugin's skill: whose naming rule chose its name (check_skill_as)
        self.origin = origin  # provenance: None for a root's skill (root_origin), else resources.plugins sets it
        self.description = description
        self.root = root
        self.source = source  # <root>/skills/<name>/SKILL.md, as found under the root
        self.directory = directory
        # SKILL.md's identity and version when scanned (device, inode, size, mtime, ctime): an
        # edit of the body alone changes it, and the catalog diff reports the skill changed
        self.stamp = stamp

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "root": self.root.path, "path": self.source,
                "source": self.origin or root_origin(self.root)}


class TemplateEntry(Record):
    __slots__ = ("name", "description", "root", "source", "variables", "stamp")
    _uncompared = frozenset(["stamp"])

    def __init__(self, name: str, description: str | None, root: Root, source: str, variables: list[str],
                 stamp: int | None = None) -> None:
        self.name = name
        self.description = description
        self.root = root
        self.source = source
        self.variables = variables
        self.stamp = stamp  # a hash of the body when scanned

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out.update(root=self.root.path, path=self.source, source=root_origin(self.root),
                   variables=list(self.variables))
        return out


class Instructions(Record):
    __slots__ = ("root", "source", "text")

    def __init__(self, root: Root, source: str, text: str) -> None:
        self.root = root
        self.source = source
        self.text = text  # snapshot taken at thread/start

    def to_wire(self) -> dict[str, Any]:
        return {"root": self.root.path, "path": self.source, "source": root_origin(self.root)}


class Catalog(Record):
    __slots__ = ("roots", "instructions", "skills", "templates", "diagnostics", "plugins", "scanned_at_ns")
    _uncompared = frozenset(["scanned_at_ns"])

    def __init__(self, roots: list[Root], instructions: list[Instructions], skills: dict[str, SkillEntry],
                 templates: dict[str, TemplateEntry], diagnostics: list[Diagnostic]) -> None:
        self.roots = roots
        self.instructions = instructions
        self.skills = skills  # sorted by name
        self.templates = templates  # sorted by name
        self.diagnostics = diagnostics
        # resources.plugins.PluginSet: the plugins and what they and the roots' commands/ bring
        # (command templates, agents, declared hooks and MCP servers); set by plugins.attach
        self.plugins: Any = None
        self.scanned_at_ns: int | None = None  # time.time_ns() before the roots were read (build_catalog)

    def to_wire(self) -> dict[str, Any]:
        out = {
            "instructions": [i.to_wire() for i in self.instructions],
            "skills": [s.to_wire() for s in self.skills.values()],
            "templates": [t.to_wire() for t in self.templates.values()],
        }
        if self.plugins is not None:
            out.update(self.plugins.to_wire())
        return out


def resolve_roots(paths: list[str], diagnostics: list[Diagnostic]) -> list[Root]:
    """Keep the roots that exist, in order; report missing, non-directory and repeated ones."""
    roots: list[Root] = []
    seen: dict[str, str] = {}
    for given in paths:
        path = os.path.normpath(given)
        real = os.path.realpath(path)
        if not os.path.exists(real):
            # a root the user has not made (yet): information, not a problem (a default root
            # such as ~/.agents often does not exist)
            diagnostics.append(Diagnostic("root_missing", f"root {path} does not exist; it contributes nothing "
                                          "until it is made", path,
                                          f"create {path} (with skills/<name>/SKILL.md in it) to use it",
                                          extra={"severity": "info"}))
            continue
        if not os.path.isdir(real):
            diagnostics.append(Diagnostic("root_not_directory", f"root {path} is not a directory; it contributes "
                                          "nothing", path, "point this root at a folder in your editor's roots setting"))
            continue
        if real in seen:
            diagnostics.append(Diagnostic("duplicate_root", f"root {path} is the same directory as root {seen[real]}",
                                          path))
            continue
        seen[real] = path
        roots.append(Root(path, real, len(roots)))
    return roots


def find_placeholders(text: str) -> list[str]:
    """Variable names in order of first appearance."""
    return list(dict.fromkeys(m.group(1) for m in PLACEHOLDER.finditer(text)))


def _open_in(directory: str, directory_real: str, name: str, root: Root) -> int:
    """Open ``directory/name`` for reading; follow a link only if it stays inside the root."""
    path = f"{directory_real}/{name}"
    try:
        return os.open(path, _O_FLAGS)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.EMLINK):
            raise
    if not os.path.exists(path):  # a link whose target does not exist: broken_link, wherever it points
        raise FileNotFoundError(errno.ENOENT, "a dangling link", path)
    real = os.path.realpath(path)
    if not is_within(real, root.real):
        raise DomainError("path_escape", f"{os.path.join(directory, name)} is a link to {real}, outside the root "
                                         f"{root.path}", resolved=real)
    return os.open(real, _O_FLAGS)


def _scan_skill(root: Root, skills_dir: str, skills_real: str, name: str, is_link: bool, limits: Limits,
                diagnostics: list[Diagnostic], dialect: str | None = None, probe: bool = True) -> SkillEntry | None:
    """The skill in ``skills_dir/name``; ``dialect`` (a plugin's): served under its peer's name
    (``frontmatter.check_skill_as``). ``probe``: look the header up by ``lstat`` first (False when
    no header was known as the scan began: no entry can be this file's)."""
    directory = f"{skills_dir}/{name}"
    source = f"{directory}/SKILL.md"
    if is_link or not is_within(skills_real, root.real):
        real_dir = os.path.realpath(directory)
        if not is_within(real_dir, root.real):
            diagnostics.append(Diagnostic(
                "path_escape", f"skill directory {directory} resolves to {real_dir}, outside the root {root.path}",
                directory, "skills must live inside their root; copy the skill instead of linking it",
                extra={"resolved": real_dir}))
            return None
    else:
        real_dir = f"{skills_real}/{name}"
    if probe and _HEADERS:
        # a header parsed before (by this process or, through header_cache, an earlier one): the
        # file's identity and version from lstat suffice (a regular file, not a link, in a directory
        # inside the root: what the no-follow open below would open); nothing is read
        try:
            st = os.lstat(f"{real_dir}/SKILL.md")
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size <= limits.max_file_bytes:
            cached = _HEADERS.get(_header_key(st, name, limits, dialect))
            if cached is not None:
                return _entry(root, name, source, directory, st, cached, diagnostics, dialect)
    try:
        fd = _open_in(directory, real_dir, "SKILL.md", root)
    except DomainError as exc:
        diagnostics.append(Diagnostic.from_error(exc, source))
        return None
    except FileNotFoundError:
        diagnostics.append(_missing_skill_file(directory, real_dir))
        return None
    except OSError as exc:
        diagnostics.append(Diagnostic("unreadable", f"{source} cannot be opened: {exc.strerror}", source))
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            diagnostics.append(Diagnostic("unreadable", f"{source} is not a regular file", source))
            return None
        if st.st_size > limits.max_file_bytes:
            diagnostics.append(Diagnostic(
                "too_large", f"{source} is {st.st_size} bytes; maxFileBytes is {limits.max_file_bytes}", source,
                "shorten the body or move material into resource files", extra={"size": st.st_size}))
            return None
        header = _skill_header(fd, st, name, limits, dialect)
    finally:
        os.close(fd)
    return _entry(root, name, source, directory, st, header, diagnostics, dialect)


def _entry(root: Root, name: str, source: str, directory: str, st: os.stat_result,
           header: tuple, diagnostics: list[Diagnostic], dialect: str | None = None) -> SkillEntry | None:
    description, problems = header[0], header[1]
    served = header[2] if len(header) > 2 and header[2] else name  # a plugin's skill: its peer's name
    if description is None:
        diagnostics.extend(Diagnostic.from_problem(p, source) for p in problems)
        return None
    # a valid skill's problems are warnings: it is served
    diagnostics.extend(Diagnostic.from_problem(p, source, severity="warning") for p in problems)
    entry = SkillEntry(served, description, root, source, directory,
                       (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    entry.dialect = dialect
    return entry


def _missing_skill_file(directory: str, real_dir: str) -> Diagnostic:
    """Why a skill directory has no SKILL.md: none at all, the wrong case, or a broken link."""
    source = f"{directory}/SKILL.md"
    if os.path.islink(f"{real_dir}/SKILL.md"):
        return _broken_link(source, f"{real_dir}/SKILL.md")
    try:
        names = os.listdir(real_dir)
    except OSError:
        names = []
    misnamed = sorted(n for n in names if n.lower() == "skill.md" and n != "SKILL.md")
    if misnamed:
        return Diagnostic("missing_skill_file", f"skill directory {directory} has {misnamed[0]} but no SKILL.md: the "
                          "name is case-sensitive", f"{directory}/{misnamed[0]}",
                          f"rename {misnamed[0]} to SKILL.md", extra={"found": misnamed[0]})
    return Diagnostic("missing_skill_file", f"skill directory {directory} has no SKILL.md", directory,
                      "add SKILL.md with name and description frontmatter")


def _broken_link(path: str, real_path: str) -> Diagnostic:
    """A link that leads nowhere: its target is missing, or it loops."""
    try:
        target = os.readlink(real_path)
    except OSError:
        target = "?"
    try:
        os.stat(real_path)
        why = "cannot be followed"
    except FileNotFoundError:
        why = "does not exist"
    except OSError as exc:
        why = "loops back on itself" if exc.errno == errno.ELOOP else f"cannot be followed ({exc.strerror})"
    return Diagnostic("broken_link", f"{path} is a link to {target}, which {why}; it is skipped", path,
                      "remove the link, or point it at a directory inside the root", extra={"target": target})


def _hidden_folder(skills_dir: str, skills_real: str, name: str) -> Diagnostic | None:
    """A folder under skills/ whose name starts with a dot, when it holds skills (it is skipped)."""
    path = f"{skills_dir}/{name}"
    real = f"{skills_real}/{name}"
    if os.path.isfile(f"{real}/SKILL.md"):
        return Diagnostic("hidden_folder", f"skill folder {path} is skipped: its name starts with a dot", path,
                          f"rename it to skills/{name.lstrip('.')}", extra={"skills": [name]})
    try:
        with os.scandir(real) as it:
            held = sorted(e.name for e in it if not e.name.startswith(".") and os.path.isfile(f"{e.path}/SKILL.md"))
    except OSError:
        return None
    if not held:
        return None
    shown = ", ".join(held[:5]) + (f", … ({len(held)} in all)" if len(held) > 5 else "")
    return Diagnostic("hidden_folder", f"{path} holds {len(held)} skill folder{'s' if len(held) != 1 else ''} "
                      f"({shown}), skipped because its name starts with a dot; only skills/<name>/SKILL.md is read",
                      path, "move or link each skill folder to skills/<name>/ (links that stay inside the root "
                      "are followed)", extra={"skills": held})


# Parsed SKILL.md headers by file identity and version. An entry is trusted only while the
# file's (device, inode, size, mtime, ctime) are unchanged, and only files untouched for
# RACY_SECONDS are remembered: a file rewritten within the kernel's timestamp granularity
# could otherwise keep its old stamp. Repeated thread/starts on the same roots (every new
# chat in an editor) then cost an open and an fstat per skill instead of a read and a parse.
_HEADERS: dict[tuple, tuple[str | None, tuple[Problem, ...]]] = {}  # description is None: rejected
MAX_CACHED_HEADERS = 50_000
RACY_SECONDS = 2.0


def _header_key(st: os.stat_result, name: str, limits: Limits, dialect: str | None = None) -> tuple:
    # a plugin's skill is read by its dialect's naming rule: "<folder>\0<dialect>" (no file name holds a NUL)
    named = name if dialect is None else f"{name}\0{dialect}"
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, named, limits.max_frontmatter_bytes)


def _skill_header(fd: int, st: os.stat_result, name: str, limits: Limits, dialect: str | None = None) -> tuple:
    """``(description, problems)`` of the open SKILL.md ``fd``; reads only its frontmatter.

    With a description the skill is valid and the problems are warnings; without one they
    are why it is rejected.
    """
    key = _header_key(st, name, limits, dialect)
    cached = _HEADERS.get(key)
    if cached is not None:
        return cached
    data, eof = frontmatter.read_prefix(fd, limits.max_frontmatter_bytes)
    if (dialect == "claude" and not frontmatter.has_frontmatter(data) and not name_problem(name)
            and frontmatter.first_paragraph(data)):
        # Claude Code serves a SKILL.md without frontmatter: its folder's name, its first paragraph
        result: tuple = (frontmatter.first_paragraph(data)[:frontmatter.MAX_DESCRIPTION_CHARS], (Problem(
            "no_frontmatter", "SKILL.md has no frontmatter; served under its folder's name with its first "
            "paragraph as the description (Claude Code's rule)",
            hint=f"add '---\nname: {name}\ndescription: <when to use it>\n---' at the top", line=1),))
        if time.time() - st.st_ctime > RACY_SECONDS:
            if len(_HEADERS) >= MAX_CACHED_HEADERS:
                _HEADERS.clear()
            _HEADERS[key] = result
        return result
    try:
        fm = frontmatter.parse(data, eof, limits.max_frontmatter_bytes, required=True)
        assert fm is not None
        errors, named, served = frontmatter.check_skill_as(fm, name, dialect)
        problems = tuple(errors)
        result: tuple = (None, problems) if problems else (frontmatter.one_line(fm.data["description"]),
                                                           tuple(named + frontmatter.skill_warnings(fm)))
        if served != name and not problems:
            result += (served,)
    except FrontmatterError as exc:
        result = (None, (exc.problem,))
    if time.time() - st.st_ctime > RACY_SECONDS:
        if len(_HEADERS) >= MAX_CACHED_HEADERS:
            _HEADERS.clear()
        _HEADERS[key] = result
    return result


def scan_skills(root: Root, limits: Limits, diagnostics: list[Diagnostic], folder: str = "skills",
                dialect: str | None = None, probe: bool | None = None) -> list[SkillEntry]:
    """The skills of ``root``'s ``folder`` (a plugin's manifest may name other folders than ``skills``).
    ``probe`` (``_scan_skill``): by default, whether any header is known now."""
    if probe is None:
        probe = bool(_HEADERS)
    skills_dir = os.path.join(root.path, folder)
    try:
        with os.scandir(os.path.join(root.real, folder)) as it:
            entries = sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        if os.path.islink(os.path.join(root.real, folder)):
            diagnostics.append(_broken_link(skills_dir, os.path.join(root.real, folder)))
        return []
    except OSError as exc:
        diagnostics.append(Diagnostic("unreadable", f"{skills_dir} cannot be listed: {exc.strerror}", skills_dir))
        return []
    skills_real = os.path.realpath(os.path.join(root.real, folder))
    found: list[SkillEntry] = []
    counted = 0
    ahead = None if probe else _readahead(root, skills_real, entries, limits)
    for entry in entries:
        if ahead is not None:
            ahead.advance(counted)
        try:
            is_dir = entry.is_dir()
        except OSError:  # a link that loops
            is_dir = False
        if entry.name.startswith("."):
            if is_dir and not entry.is_symlink():
                hidden = _hidden_folder(skills_dir, skills_real, entry.name)
                if hidden is not None:
                    diagnostics.append(hidden)
            continue
        if not is_dir:
            if entry.is_symlink() and not os.path.exists(entry.path):
                diagnostics.append(_broken_link(os.path.join(skills_dir, entry.name), entry.path))
            elif entry.name.endswith(".md"):
                diagnostics.append(Diagnostic(
                    "not_a_skill", f"{os.path.join(skills_dir, entry.name)} is a file; a skill is a directory",
                    os.path.join(skills_dir, entry.name),
                    f"move it to skills/{entry.name[:-3]}/SKILL.md"))
            continue
        if counted >= limits.max_skills_per_root:
            diagnostics.append(Diagnostic(
                "too_many_skills", f"root {root.path} has more than maxSkillsPerRoot ({limits.max_skills_per_root}) "
                f"skills; {entry.name} was not read", os.path.join(skills_dir, entry.name),
                "raise limits.maxSkillsPerRoot or remove unused skills"))
            continue
        counted += 1
        try:
            skill = _scan_skill(root, skills_dir, skills_real, entry.name, entry.is_symlink(), limits, diagnostics,
                                dialect, probe)
        except OSError as exc:
            diagnostics.append(Diagnostic.unreadable(exc, os.path.join(skills_dir, entry.name, "SKILL.md")))
            continue
        if skill is not None:
            found.append(skill)
    return found


def _readahead(root: Root, skills_real: str, entries: list[os.DirEntry], limits: Limits) -> Any:
    """A ``readahead.Readahead`` over the SKILL.md files the loop will open, when their data is not in
    memory (a cold disk); ``None`` otherwise. Only plain folders inside the root: the files the scan
    opens as they are (a linked folder is resolved and checked first, one at a time)."""
    if len(entries) < 16 or not is_within(skills_real, root.real):
        return None
    from harness_sidecar.resources import readahead

    paths = []
    for entry in entries:  # the loop's order and count: advance(counted) is the next file it opens
        try:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
        except OSError:
            continue
        paths.append(f"{skills_real}/{entry.name}/SKILL.md" if not entry.is_symlink() else "")  # "": not asked
    samples = [p for p in (paths[0], paths[len(paths) // 2], paths[-1]) if p] if paths else []
    if not readahead.cold(samples):
        return None
    return readahead.Readahead(paths, min(frontmatter.FIRST_CHUNK, limits.max_frontmatter_bytes + 16))


def skill_in_root(root: Root, name: str, limits: Limits) -> SkillEntry | None:
    """The valid skill ``name`` of one root, or ``None`` (absent, invalid, escaping, unreadable).

    One directory's worth of the scan, for callers that ask about a single name (the LSP
    mode's shadowing checks on every keystroke) instead of listing whole roots.
    """
    directory = os.path.join(root.path, "skills", name)
    if name_problem(name) or not os.path.isdir(directory):
        return None
    try:
        return _scan_skill(root, os.path.join(root.path, "skills"),
                           os.path.realpath(os.path.join(root.real, "skills")), name, os.path.islink(directory),
                           limits, [])
    except OSError:
        return None


def template_in_root(root: Root, name: str, limits: Limits) -> TemplateEntry | None:
    """The valid template ``name`` of one root, or ``None``."""
    path = os.path.join(root.path, "templates", name + ".md")
    if name_problem(name) or not os.path.lexists(path):
        return None
    try:
        description, body = read_template(path, root, limits)
    except (DomainError, OSError):
        return None
    return TemplateEntry(name, description, root, path, find_placeholders(body))


def read_template(path: str, root: Root, limits: Limits) -> tuple[str | None, str]:
    """Read a template file inside ``root``: ``(description, body)``. Raises ``DomainError``."""
    _, data = read_contained(path, root.real, limits.max_file_bytes, "template")
    try:
        fm = frontmatter.parse(data, True, limits.max_frontmatter_bytes, required=False)
    except FrontmatterError as exc:
        raise DomainError(exc.problem.kind if exc.problem.kind in ("not_utf8", "too_large") else "invalid_frontmatter",
                          f"template {path}: {exc.problem.message}", path=path, line=exc.problem.line) from None
    description = None
    body_start = 0
    if fm is not None:
        problem = frontmatter.description_problem(fm.data.get("description"), fm.lines.get("description"),
                                                  required=False)
        if problem:
            raise DomainError("invalid_frontmatter", f"template {path}: {problem.message}", path=path,
                              line=problem.line)
        if fm.data.get("description") is not None:
            description = frontmatter.one_line(fm.data["description"])
        body_start = fm.body_start
    body = decode_utf8(data, path, "template", body_start)
    return description, body.lstrip("\r\n") if fm is not None else body


def scan_templates(root: Root, limits: Limits, diagnostics: list[Diagnostic]) -> list[TemplateEntry]:
    templates_dir = os.path.join(root.path, "templates")
    try:
        with os.scandir(os.path.join(root.real, "templates")) as it:
            names = sorted(e.name for e in it if e.name.endswith(".md") and not e.name.startswith("."))
    except FileNotFoundError:
        return []
    except OSError as exc:
        diagnostics.append(Diagnostic("unreadable", f"{templates_dir} cannot be listed: {exc.strerror}",
                                      templates_dir))
        return []
    found = []
    for filename in names:
        name = filename[:-3]
        path = os.path.join(templates_dir, filename)
        why = name_problem(name)
        if why:
            diagnostics.append(Diagnostic("invalid_name", f"template name '{name}' {why}", path,
                                          "rename the file to a lower-case, hyphenated name"))
            continue
        try:
            description, body = read_template(path, root, limits)
        except DomainError as exc:
            if exc.kind == "resource_not_found" and not os.path.lexists(path):
                continue
            diagnostics.append(Diagnostic.from_error(exc, path))
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic.unreadable(exc, path))
            continue
        found.append(TemplateEntry(name, description, root, path, find_placeholders(body), hash(body)))
    return found


def read_instructions(root: Root, limits: Limits, diagnostics: list[Diagnostic]) -> Instructions | None:
    path = os.path.join(root.path, "AGENTS.md")
    if not os.path.lexists(path):
        return None
    try:
        _, data = read_contained(path, root.real, limits.max_file_bytes, "instructions")
        text = decode_utf8(data, path, "instructions")
    except DomainError as exc:
        diagnostics.append(Diagnostic.from_error(exc, path))
        return None
    except OSError as exc:
        diagnostics.append(Diagnostic.unreadable(exc, path))
        return None
    return Instructions(root, path, text)


def _merge(kind: str, per_root: list[list[Any]], diagnostics: list[Diagnostic]) -> dict[str, Any]:
    winners: dict[str, Any] = {}
    for found in per_root:
        for item in found:
            winner = winners.get(item.name)
            if winner is None:
                winners[item.name] = item
            else:
                diagnostics.append(Diagnostic(
                    "shadowed", f"{kind} '{item.name}' at {item.source} is shadowed by {winner.source} "
                    f"(an earlier root wins)", item.source, extra={"name": item.name, "shadowedBy": winner.source}))
    return dict(sorted(winners.items()))


# Set by wire.early_scan in a serving sidecar: ``(roots, limits) -> (catalog, new headers)`` of the
# scan its helper made for the first thread/start, or None (then the scan runs here).
first_scan: Callable[[list[str], Limits], tuple[Catalog, dict[tuple, Any]] | None] | None = None


def build_catalog(root_paths: list[str], limits: Limits, persist: bool = False) -> Catalog:
    """The catalog of ``root_paths``. ``persist``: remember SKILL.md headers across processes too
    (resources.header_cache; a thread's first scan in a fresh sidecar)."""
    if persist:
        from harness_sidecar.resources import header_cache

        # the process's first scan, made while it imported (wire.early_scan sets first_scan when serving)
        early = first_scan(root_paths, limits) if first_scan is not None else None
        if early is not None:
            catalog, headers = early
            if len(_HEADERS) + len(headers) <= MAX_CACHED_HEADERS:
                for key, header in headers.items():
                    _HEADERS.setdefault(key, header)
            return catalog
        header_cache.load(_HEADERS)
        try:
            return build_catalog(root_paths, limits)
        finally:
            header_cache.save(_HEADERS)
    scanned_at_ns = time.time_ns()
    diagnostics: list[Diagnostic] = []
    roots = resolve_roots(root_paths, diagnostics)
    instructions = [i for i in (read_instructions(r, limits, diagnostics) for r in roots) if i is not None]
    # a fresh process with no header cache: no lstat per skill for an entry that cannot be there
    probe = bool(_HEADERS)
    skills = _merge("skill", [scan_skills(r, limits, diagnostics, probe=probe) for r in roots], diagnostics)
    templates = _merge("template", [scan_templates(r, limits, diagnostics) for r in roots], diagnostics)
    catalog = Catalog(roots, instructions, skills, templates, diagnostics)
    catalog.scanned_at_ns = scanned_at_ns
    return catalog
