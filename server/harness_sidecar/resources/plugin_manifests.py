"""Finding plugins (``resources.plugins``): the folders named (roots' ``plugins/``, ``thread/start.plugins``,
marketplace entries), each one's manifest read and checked, and the ``_Reader`` that resolves each folder
once and reads a plugin's small files (never waiting on a FIFO)."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.names import name_problem
from harness_sidecar.resources import catalog as C
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.catalog import Root
from harness_sidecar.resources.paths import is_within, read_contained
from harness_sidecar.resources.plugin_records import DEFAULT_HOOKS, MANIFESTS

# -- finding plugins --------------------------------------------------------------------------------

def _key_line(text: str, key: str) -> int:
    """The 1-based line of the first ``"key":`` in ``text`` (1 when absent)."""
    match = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


# O_NONBLOCK: a FIFO named like a manifest is refused (not a regular file), never waited on
_O_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class _Reader:
    """Reads a plugin's small files, resolving each directory once (an ``lstat`` per new directory
    instead of a ``realpath`` of every file): what keeps 50 plugins near the cost of plain roots."""

    def __init__(self) -> None:
        self.dirs: dict[str, str] = {}  # path as found -> its real path
        # a marketplace file -> (its text, [(entry, the real folder its local source names)]), or None when it
        # cannot be read: read and resolved once for all the folders it may name (claude-plugins-official's
        # 16 manifest-less entries each looked through its ~250 entries: 4,000 realpaths, 40% of the scan)
        self.marketplaces: dict[str, tuple[str, list[tuple[Any, str | None]]] | None] = {}

    def known(self, path: str, real: str) -> None:
        self.dirs[path] = real

    def real_dir(self, path: str) -> str:
        """``os.path.realpath(path)`` of a normalised path, one ``lstat`` per directory not met before (an
        absolute path's parents are resolved, and remembered, first: plugins side by side share them)."""
        real = self.dirs.get(path)
        if real is None:
            parent, name = os.path.split(path)
            if parent != path and parent not in self.dirs and os.path.isabs(parent) and name not in ("", ".", ".."):
                self.real_dir(parent)
            if parent == path or parent not in self.dirs:
                real = os.path.realpath(path)
            else:
                below = f"{self.dirs[parent].rstrip('/')}/{name}"  # "/" and a name: one slash
                try:
                    real = os.path.realpath(path) if stat.S_ISLNK(os.lstat(below).st_mode) else below
                except OSError:
                    real = below  # missing: reading it says so
            self.dirs[path] = real
        return real

    def read(self, path: str, boundary: Root, max_bytes: int, what: str) -> bytes:
        """A whole regular file inside ``boundary`` (``DomainError`` as ``paths.read_contained``)."""
        directory, name = os.path.split(path)
        real_dir = self.real_dir(directory)
        if not is_within(real_dir, boundary.real):
            raise DomainError("path_escape", f"{what} {path} resolves to {real_dir}/{name}, outside {boundary.path}",
                              path=path)
        try:
            fd = os.open(f"{real_dir}/{name}", _O_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # the file is a link: check where it leads
                return read_contained(path, boundary.real, max_bytes, what)[1]
            raise DomainError("resource_not_found", f"{what} {path} cannot be opened: {exc.strerror}",
                              path=path) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise DomainError("resource_not_found", f"{what} {path} is not a regular file", path=path)
            if st.st_size > max_bytes:
                raise DomainError("too_large", f"{what} {path} is {st.st_size} bytes; the limit is {max_bytes}",
                                  path=path, size=st.st_size, limit=max_bytes)
            return os.read(fd, max_bytes + 1) if st.st_size < 65536 else read_contained(path, boundary.real,
                                                                                         max_bytes, what)[1]
        finally:
            os.close(fd)

    def prefix(self, path: str, boundary: Root, limits: Limits) -> bytes:
        """Just enough of a file inside ``boundary`` to hold its frontmatter."""
        directory, name = os.path.split(path)
        real_dir = self.real_dir(directory)
        if not is_within(real_dir, boundary.real):
            raise DomainError("path_escape", f"{path} resolves outside {boundary.path}", path=path)
        fd = C._open_in(directory, real_dir, name, boundary)
        try:
            return frontmatter.read_prefix(fd, limits.max_frontmatter_bytes)[0]
        finally:
            os.close(fd)


def _candidates(roots: list[Root], paths: list[str], diagnostics: list[Diagnostic],
                reader: _Reader) -> list[tuple[str, str, Root | None]]:
    """``(path, real path, root)`` of every plugin folder, in order."""
    found: list[tuple[str, str, Root | None]] = []
    for root in roots:
        folder = os.path.join(root.real, "plugins")
        try:
            with os.scandir(folder) as it:
                entries = sorted(((e.name, e.is_symlink()) for e in it if not e.name.startswith(".") and e.is_dir()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic("unreadable", f"{folder} cannot be listed: {exc.strerror}", folder))
            continue
        folder_real = os.path.realpath(folder)
        for name, is_link in entries:
            path = os.path.join(root.path, "plugins", name)
            real = os.path.realpath(path) if is_link or folder_real != folder else f"{folder_real}/{name}"
            if not is_within(real, root.real):
                diagnostics.append(Diagnostic("path_escape", f"plugin folder {path} resolves outside the root "
                                              f"{root.path}", path, "copy the plugin into the root instead of "
                                              "linking it, or list its path in thread/start.plugins"))
                continue
            found.append((path, real, root))
    for given in paths:
        path = os.path.normpath(given)
        if not os.path.isdir(path):
            diagnostics.append(Diagnostic("plugin_not_found", f"plugin {path} is not an existing directory", path,
                                          "check the path the editor sends in thread/start.plugins"))
            continue
        found.append((path, reader.real_dir(path), None))
    return found


def _read_manifest(path: str, real: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader,
                   root: Root | None = None, entries: list[Any] | None = None,
                   ) -> tuple[str, str, dict[str, Any], str, frozenset[str]] | None:
    """``(dialect, manifest path, manifest, text)``, or ``None`` with a diagnostic. A folder without a
    manifest that a marketplace entry names: ``None``, and ``entries`` gets each such entry."""
    try:
        top = set(os.listdir(real))
    except OSError as exc:
        diagnostics.append(Diagnostic("unreadable", f"{path} cannot be listed: {exc.strerror}", path))
        return None
    present = [(d, rel) for d, rel in MANIFESTS
               if rel.split("/")[0] in top and os.path.isfile(os.path.join(real, rel))]
    if not present and entries is not None:
        entries.extend(_marketplace_entries(path, real, root, limits, diagnostics, reader))
        if entries:
            return None
    if not present:
        diagnostics.append(Diagnostic("not_a_plugin", f"{path} has neither .claude-plugin/plugin.json nor "
                                      ".codex-plugin/plugin.json; it is skipped", path,
                                      "add .claude-plugin/plugin.json with at least {\"name\": ...}"))
        return None
    dialect, rel = present[0]
    manifest_path = os.path.join(path, rel)
    try:
        data = reader.read(manifest_path, Root(path, real, -1), limits.max_file_bytes, "plugin manifest")
        text = data.decode("utf-8")
    except DomainError as exc:
        diagnostics.append(Diagnostic.from_error(exc, manifest_path))
        return None
    except UnicodeDecodeError as exc:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} is not UTF-8 ({exc.reason}); the "
                                      "plugin is left out", manifest_path, line=data.count(b"\n", 0, exc.start) + 1))
        return None
    except OSError as exc:
        diagnostics.append(Diagnostic.unreadable(exc, manifest_path))
        return None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} is not JSON: {exc.msg}; the plugin is "
                                      "left out", manifest_path, "fix the JSON (a trailing comma, a missing quote)",
                                      line=exc.lineno, column=exc.colno))
        return None
    if not isinstance(manifest, dict):
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} must be a JSON object; the plugin is "
                                      "left out", manifest_path, line=1))
        return None
    name = manifest.get("name")
    if not isinstance(name, str):
        what = "lacks 'name'" if name is None else "has a 'name' that is not a string"
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} {what}; the plugin is left out",
                                      manifest_path, "add \"name\": \"<kebab-case name>\"",
                                      line=_key_line(text, "name") if name is not None else 1))
        return None
    why = name_problem(name)
    if why:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path}: plugin name {name!r} {why}; the "
                                      "plugin is left out", manifest_path, line=_key_line(text, "name")))
        return None
    if len(present) > 1:
        other = os.path.join(path, present[1][1])
        other_name = _manifest_name(other, real, limits, reader)
        if other_name != name:
            said = f"names {other_name!r}" if other_name is not None else "names no plugin it can be read as"
            diagnostics.append(Diagnostic(
                "manifest_conflict", f"{manifest_path} names plugin {name!r} but {other} {said}: a plugin has one "
                "name, so this one is left out", manifest_path,
                "make both manifests name the same plugin, or remove one of them",
                extra={"name": name, "otherName": other_name, "paths": [manifest_path, other]}))
            return None
        diagnostics.append(Diagnostic("plugin_manifest_both", f"{path} has both .codex-plugin/plugin.json and "
                                      ".claude-plugin/plugin.json; the Codex manifest is read, the other ignored",
                                      manifest_path, extra={"ignored": other, "severity": "warning"}))
    hooks = manifest.get("hooks")
    for entry in hooks if isinstance(hooks, list) else [hooks]:
        if isinstance(entry, str) and os.path.normpath(entry) == DEFAULT_HOOKS and dialect == "claude":
            diagnostics.append(Diagnostic(
                "duplicate_hooks_file", f"{manifest_path} points 'hooks' at {entry}, which is loaded by default; "
                "it is read once (Claude Code 2.1 does the same)", manifest_path,
                "remove the 'hooks' field: hooks/hooks.json is read without it", line=_key_line(text, "hooks"),
                extra={"severity": "warning"}))
    return dialect, manifest_path, manifest, text, frozenset(top)


MARKETPLACES = (("claude", ".claude-plugin/marketplace.json"), ("codex", ".agents/plugins/marketplace.json"))
MARKETPLACE_ENTRY = "\0marketplace"  # set in the manifest made of a marketplace entry (no JSON key is a NUL)
MARKETPLACE_LEVELS = 4  # how far above a folder without a manifest its marketplace is looked for


def _entry_source(entry: dict[str, Any], base: str) -> str | None:
    """The folder a marketplace entry's local ``source`` names (``None``: remote, or no source)."""
    source = entry.get("source")
    if isinstance(source, dict) and source.get("source") == "local":
        source = source.get("path")
    if not isinstance(source, str) or not source or "://" in source or os.path.isabs(source):
        return None
    return os.path.realpath(os.path.join(base, source))


def _marketplace(file: str, base: str, limits: Limits,
                 reader: _Reader) -> tuple[str, list[tuple[Any, str | None]]] | None:
    """A marketplace file's text and its entries (objects only) with the real folder each local source
    names; ``None`` when there is none or it cannot be read. Once per file and ``_Reader``."""
    if file in reader.marketplaces:
        return reader.marketplaces[file]
    read: tuple[str, list[tuple[Any, str | None]]] | None = None
    if os.path.isfile(file):
        try:
            text = reader.read(file, Root(base, base, -1), limits.max_file_bytes, "marketplace").decode("utf-8")
            data = json.loads(text)
        except (DomainError, OSError, UnicodeDecodeError, ValueError, RecursionError):
            data = None
        if data is not None:
            listed = data.get("plugins") if isinstance(data, dict) else None
            read = (text, [(entry, _entry_source(entry, base)) for entry in (listed if isinstance(listed, list) else [])
                           if isinstance(entry, dict)])
    reader.marketplaces[file] = read
    return read


def _marketplace_entries(path: str, real: str, root: Root | None, limits: Limits, diagnostics: list[Diagnostic],
                         reader: _Reader) -> list[tuple[str, str, dict[str, Any], str, frozenset[str]]]:
    """Each entry of the nearest marketplace (``.claude-plugin/marketplace.json``, Codex's
    ``.agents/plugins/marketplace.json``) in the folder or up to MARKETPLACE_LEVELS above it (inside its
    root, for a root's ``plugins/``) whose local ``source`` is this folder: Claude Code's ``strict: false``
    entries and entries whose source has no manifest. The entry is the plugin's manifest; its paths are
    relative to the folder."""
    found: list[tuple[str, str, dict[str, Any], str, frozenset[str]]] = []
    base = real
    target = os.path.realpath(real)
    for _ in range(MARKETPLACE_LEVELS + 1):
        if root is not None and not is_within(base, root.real):
            break
        for dialect, rel in MARKETPLACES:
            file = os.path.join(base, rel)
            read = _marketplace(file, base, limits, reader)
            if read is None:
                continue
            text, listed = read
            for entry, source in listed:
                if source != target:
                    continue
                name = entry.get("name")
                shown = os.path.join(path, os.path.relpath(file, real)) if is_within(file, real) else file
                why = name_problem(name)
                if why:
                    diagnostics.append(Diagnostic("invalid_manifest", f"{shown}: marketplace entry {name!r} names "
                                                  f"{path}, but its name {why}; it is left out", shown,
                                                  line=_key_line(text, "name")))
                    continue
                manifest = {k: v for k, v in entry.items() if k not in ("source", "strict")}
                manifest[MARKETPLACE_ENTRY] = shown
                found.append((dialect, shown, manifest, text, frozenset(os.listdir(real))))
        if found:
            return found
        parent = os.path.dirname(base)
        if parent == base:
            break
        base = parent
    return found


def _manifest_name(manifest_path: str, real: str, limits: Limits, reader: _Reader) -> str | None:
    """The ``name`` a plugin's other manifest gives (``None`` when it cannot be read as one)."""
    try:
        data = json.loads(reader.read(manifest_path, Root(os.path.dirname(os.path.dirname(manifest_path)), real, -1),
                                      limits.max_file_bytes, "plugin manifest").decode("utf-8"))
    except (DomainError, OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None
