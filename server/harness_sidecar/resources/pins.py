"""Pins that hold when the code runs (protocol-v4 §1): the tree hash, links included, and the check
made at every start of pinned code.

**The tree hash** (protocol.md § Plugins, "The tree hash"). Every regular file and every symbolic
link under the tree, by its path relative to the tree with ``/`` separators, sorted by the UTF-8
bytes of that path; one line per entry — a file: ``<sha256 hex of its bytes>  <path>\\n``; a link:
``symlink <sha256 hex of its target text>  <path>\\n`` (the link is never followed, a link to a
folder is not entered) — and the pin is the sha256 of those lines. A tree without links hashes as
it did in v3. A link whose target (resolved from the link's folder) leaves the tree makes a pinned
tree refused: ``PinLinkEscape`` (``pin_link_escape``).

**Checked at start, not re-hashed.** ``tree_sha256`` keeps, per tree, each entry's identity
``(dev, ino, size, mtime_ns, ctime_ns)`` and digest; an entry whose identity is unchanged is not
read again, so checking a pin costs one ``lstat`` per entry (a ``scandir`` per folder). ``ctime``
cannot be set by a process (any write, rename or ``chmod`` moves it), and an entry changed within
``_RACY_NS`` of being hashed is never taken from the cache (the timestamps are coarser than the
clock: "racily clean", as git calls it). ``TreePin.holds()`` is that check, made just before each
hook process, MCP server (first start and restarts) of a pinned plugin is started.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

_RACY_NS = 100_000_000  # an entry whose ctime is this close to the hash's start is read again next time
_MAX_CACHED = 200_000  # entries kept over all trees; beyond it the cache starts over


class PinLinkEscape(Exception):
    """A link of a pinned tree points out of it."""

    def __init__(self, link: str, target: str) -> None:
        super().__init__(f"{link} is a link to {target!r}, which leaves the pinned tree")
        self.link, self.target = link, target


@dataclass(frozen=True)
class _Seen:
    link: bool
    identity: tuple[int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns
    digest: str  # sha256 hex of the file's bytes, or of the link's target text
    settled: bool  # changed long enough before it was hashed for its identity to stand for its bytes


_cache: dict[str, dict[str, _Seen]] = {}  # the tree's real path -> relative path -> what was seen
_cached = 0
_lock = threading.Lock()


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _entries(top: str) -> list[tuple[str, str, os.stat_result]]:
    """(relative path, full path, lstat) of every regular file and link under ``top``, sorted by path bytes."""
    found: list[tuple[str, str, os.stat_result]] = []
    pending = [("", top)]
    while pending:
        prefix, folder = pending.pop()
        with os.scandir(folder) as it:
            for entry in it:
                rel = prefix + entry.name
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    pending.append((rel + "/", entry.path))
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    found.append((rel, entry.path, st))
    found.sort(key=lambda item: item[0].encode("utf-8", "surrogateescape"))
    return found


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_link(top: str, full: str, rel: str, target: str) -> None:
    resolved = os.path.realpath(os.path.join(os.path.dirname(full), target))
    if resolved != top and not resolved.startswith(top.rstrip("/") + "/"):
        raise PinLinkEscape(rel, target)


def tree_sha256(path: str, *, links_inside: bool = True) -> str:
    """The tree hash of ``path`` (a folder; its real path is used). Raises ``PinLinkEscape`` when
    ``links_inside`` and a link leaves the tree, ``OSError`` when the tree cannot be read."""
    return tree_state(path, links_inside=links_inside)[0]


def tree_state(path: str, *, links_inside: bool = True) -> tuple[str, dict[str, str]]:
    """``tree_sha256`` and, from the same pass, the digest of each regular file by relative path."""
    global _cached
    top = os.path.realpath(path)
    started = time.time_ns()
    before = _cache.get(top, {})
    seen: dict[str, _Seen] = {}
    outer = hashlib.sha256()
    for rel, full, st in _entries(top):
        link = stat.S_ISLNK(st.st_mode)
        identity = _identity(st)
        old = before.get(rel)
        if old is not None and old.settled and old.link == link and old.identity == identity:
            entry = old
        else:
            if link:
                digest = hashlib.sha256(os.fsencode(os.readlink(full))).hexdigest()
            else:
                digest = _file_digest(full)
            # read again next time unless it last changed well before this hash began
            entry = _Seen(link, identity, digest, st.st_ctime_ns < started - _RACY_NS)
        if link and links_inside:
            _check_link(top, full, rel, os.readlink(full))
        seen[rel] = entry
        line = f"symlink {entry.digest}  {rel}\n" if link else f"{entry.digest}  {rel}\n"
        outer.update(line.encode("utf-8", "surrogateescape"))
    with _lock:
        _cached += len(seen) - len(before)
        if _cached > _MAX_CACHED:
            _cache.clear()
            _cached = len(seen)
        _cache[top] = seen
    return outer.hexdigest(), {rel: e.digest for rel, e in seen.items() if not e.link}


@dataclass
class TreePin:
    """A pinned tree as its pin was checked: ``holds()`` checks it again before code of it starts.

    ``on_broken(why)`` is called once, the first time the tree no longer matches (the thread's
    catalog is scanned again, so the entry turns untrusted and ``catalog/changed`` says so)."""

    path: str  # the tree's real path
    expected: str  # the pin, lower-case hex
    what: str  # who pins it, for messages: "plugin 'fmt'"
    files: dict[str, str] = field(default_factory=dict, repr=False)  # relative path -> digest, as checked
    on_broken: Callable[[str], None] | None = None
    broken: str | None = None  # why it stopped matching, once it did (it never holds again)
    _reported: bool = field(default=False, repr=False)

    def holds(self) -> str | None:
        """``None`` when the tree still hashes to the pin; otherwise why not (and it stays broken)."""
        if self.broken is None:
            try:
                actual = tree_sha256(self.path)
            except PinLinkEscape as exc:
                self.broken = f"{self.what} at {self.path} is no longer trusted: {exc} (pin_link_escape)"
            except OSError as exc:
                self.broken = f"{self.what} at {self.path} cannot be hashed: {exc.strerror or exc}"
            else:
                if actual != self.expected:
                    self.broken = (f"{self.what} at {self.path} hashes to {actual}, not the pinned {self.expected} "
                                   "(it changed after its pin was checked)")
        if self.broken is not None and not self._reported:
            self._reported = True
            if self.on_broken is not None:
                self.on_broken(self.broken)
        return self.broken
