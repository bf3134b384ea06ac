"""Marketplaces, read (protocol-v4 §3 "Marketplaces, read"): the catalogs of plugins Claude Code and
Codex install from, listed, and their local plugins served as they are checked out.

Where: a root's ``.claude-plugin/marketplace.json`` (Claude Code's) and ``.agents/plugins/marketplace.json``
(Codex's), and each ``thread/start.marketplaces`` path — the file itself, or a folder holding one of
the two. A marketplace's *base* is the folder its relative sources are read from: the one holding
``.claude-plugin/`` (Claude Code) or ``.agents/`` (Codex).

What: ``{name, plugins: [{name, source, description?, version?, …}]}``. A *local* source — a relative
path (``"./plugins/fmt"``; Claude Code's ``metadata.pluginRoot`` prefixes a bare ``"fmt"``), or
Codex's ``{"source": "local", "path": …}`` — names a folder inside the base: that folder is loaded as a
plugin (``resources.plugins``: its manifest, else the marketplace entry as its manifest), so a
marketplace checkout is usable as is. Any other source (``github``, ``url``, ``git-subdir``, ``npm``)
is listed and never fetched: installing from the network stays the editor's. Each entry is listed with
``installed``: whether the thread serves that plugin from that folder.

A marketplace file that cannot be read or is not one is a ``marketplace_invalid`` diagnostic; a local
source outside the base is ``path_escape``, one that is not a folder ``plugin_not_found`` (both warnings,
the entry is listed ``installed: false``). Reading never runs code.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.marketplace_files import files_of as _files_of
from harness_sidecar.resources.paths import is_within

MAX_BYTES = 4 * 1024 * 1024


@dataclass
class Entry:
    name: str
    source: Any  # a local one: the folder's path; any other: as declared
    description: str | None = None
    version: str | None = None
    folder: str | None = None  # a local source's real path, when it is a folder inside the base
    installed: bool = False

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source}
        if self.description is not None:
            out["description"] = self.description
        if self.version is not None:
            out["version"] = self.version
        out["installed"] = self.installed
        return out


@dataclass
class Marketplace:
    name: str
    path: str  # the marketplace.json
    base: str  # the folder relative sources are read from
    root: Any = None  # resources.catalog.Root when it is a root's; None: thread/start.marketplaces
    entries: list[Entry] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "plugins": [e.to_wire() for e in self.entries]}


def _base_of(file: str) -> str:
    """The folder a marketplace file's relative sources start from."""
    parent = os.path.dirname(file)
    if os.path.basename(parent) == ".claude-plugin":
        return os.path.dirname(parent)
    if os.path.basename(parent) == "plugins" and os.path.basename(os.path.dirname(parent)) == ".agents":
        return os.path.dirname(os.path.dirname(parent))
    return parent


def find(roots: list[Any], given: list[str], diagnostics: list[Diagnostic]) -> list[Marketplace]:
    """Every marketplace of the roots (in root order), then of ``given`` (``thread/start.marketplaces``);
    each file once."""
    files: list[tuple[str, Any]] = [(file, root) for root in roots for _, file in _files_of(root.path)]
    for path in given:
        path = os.path.normpath(path)
        if os.path.isfile(path):
            files.append((path, None))
            continue
        inside = _files_of(path) if os.path.isdir(path) else []
        if not inside:
            diagnostics.append(Diagnostic("marketplace_not_found", f"thread/start.marketplaces names {path}, which is "
                                          "neither a marketplace.json nor a folder holding .claude-plugin/"
                                          "marketplace.json or .agents/plugins/marketplace.json", path,
                                          extra={"severity": "warning"}))
        files += [(file, None) for _, file in inside]
    out: list[Marketplace] = []
    seen: set[str] = set()
    for file, root in files:
        real = os.path.realpath(file)
        if real in seen:
            continue
        seen.add(real)
        market = _read(file, root, diagnostics)
        if market is not None:
            out.append(market)
    return out


def _read(file: str, root: Any, diagnostics: list[Diagnostic]) -> Marketplace | None:
    def invalid(why: str) -> None:
        diagnostics.append(Diagnostic("marketplace_invalid", f"{file}: {why}; its plugins are not listed", file))

    try:
        # O_NONBLOCK: a FIFO swapped in after it was found is refused (not a regular file), never waited on
        fd = os.open(file, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return invalid("it is not a regular file")
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        return invalid(f"it cannot be read ({exc.strerror})")
    if len(data) > MAX_BYTES:
        return invalid(f"it is larger than {MAX_BYTES} bytes")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return invalid(f"it is not JSON ({exc})")
    listed = document.get("plugins") if isinstance(document, dict) else None
    if not isinstance(listed, list):
        return invalid("a marketplace is an object with a 'plugins' list")
    base = _base_of(file)
    name = document.get("name")
    market = Marketplace(name if isinstance(name, str) and name else os.path.basename(base), file, base, root)
    metadata = document.get("metadata")
    plugin_root = metadata.get("pluginRoot") if isinstance(metadata, dict) else None
    plugin_root = plugin_root if isinstance(plugin_root, str) else None
    real_base = os.path.realpath(base)
    for item in listed:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        entry = Entry(item["name"], item.get("source"),
                      item.get("description") if isinstance(item.get("description"), str) else None,
                      item.get("version") if isinstance(item.get("version"), str) else None)
        relative = local_source(item.get("source"), plugin_root)
        if relative is not None:
            folder = os.path.normpath(os.path.join(base, relative))
            entry.source = folder
            real = os.path.realpath(folder)
            if not is_within(real, real_base):
                diagnostics.append(Diagnostic("path_escape", f"{file}: plugin {entry.name!r} names {relative!r}, "
                                              "outside the marketplace's folder; it is listed, not loaded", file,
                                              extra={"name": entry.name, "severity": "warning"}))
            elif not os.path.isdir(real):
                diagnostics.append(Diagnostic("plugin_not_found", f"{file}: plugin {entry.name!r} names {folder}, "
                                              "which is not a folder; it is listed, not loaded", file,
                                              extra={"name": entry.name, "severity": "warning"}))
            else:
                entry.folder = real
        market.entries.append(entry)
    return market


def local_source(source: Any, plugin_root: str | None = None) -> str | None:
    """The relative folder a marketplace entry's ``source`` names, or None (a network source, or none)."""
    if isinstance(source, dict) and source.get("source") == "local":
        source = source.get("path")
    if not isinstance(source, str) or not source or "://" in source or os.path.isabs(source) \
            or source.startswith(("git@", "github:")):
        return None
    if plugin_root is not None and not source.startswith(("./", "../")) and source != ".":
        return os.path.join(plugin_root, source)
    return source


def folders(marketplaces: list[Marketplace]) -> list[tuple[str, Any]]:
    """The local plugin folders to load, ``(path, its marketplace's root or None)``, each once, in order."""
    out: dict[str, tuple[str, Any]] = {}
    for market in marketplaces:
        for entry in market.entries:
            if entry.folder is not None and entry.folder not in out:
                out[entry.folder] = (entry.source, market.root)
    return list(out.values())


def mark_installed(marketplaces: list[Marketplace], plugins: list[Any], entry_key: str) -> None:
    """``installed`` for each entry the thread serves: a plugin of that name from that folder (a plugin with a
    manifest of its own counts under any entry naming its folder)."""
    if not marketplaces:
        return
    # a plugin's boundary is its folder's real path (resources.plugins resolved it once)
    served = [(p.boundary.real, p.name, bool(p.manifest.get(entry_key))) for p in plugins]
    for market in marketplaces:
        for entry in market.entries:
            entry.installed = entry.folder is not None and any(
                real == entry.folder and (name == entry.name or not from_entry) for real, name, from_entry in served)
