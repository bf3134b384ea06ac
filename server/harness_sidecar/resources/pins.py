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
    digest, files, _ = _hash(path, links_inside)
    return digest, files


Identities = tuple[tuple[str, tuple[int, int, int, int, int]], ...]


def identities(path: str) -> Identities:
    """Each entry's relative path and identity: equal twice means nothing under ``path`` changed between
    (any write, rename, link or ``chmod`` moves a ``ctime`` or an ``ino``)."""
    return tuple((rel, _identity(st)) for rel, _, st in _entries(os.path.realpath(path)))


def _hash(path: str, links_inside: bool) -> tuple[str, dict[str, str], Identities]:
    global _cached
    top = os.path.realpath(path)
    started = time.time_ns()
    before = _cache.get(top, {})
    seen: dict[str, _Seen] = {}
    outer = hashlib.sha256()
    entries = _entries(top)
    for rel, full, st in entries:
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
    return (outer.hexdigest(), {rel: e.digest for rel, e in seen.items() if not e.link},
            tuple((rel, _identity(st)) for rel, _, st in entries))


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
        return self.start_check()[0]

    def start_check(self) -> tuple[str | None, Identities]:
        """Before a start: why the tree no longer matches (``None``: it does), and the identities the
        check saw, for ``end_check`` once the process has started (or answered)."""
        seen: Identities = ()
        if self.broken is None:
            try:
                actual, _, seen = _hash(self.path, True)
            except PinLinkEscape as exc:
                self._break(f"{self.what} at {self.path} is no longer trusted: {exc} (pin_link_escape)")
            except OSError as exc:
                self._break(f"{self.what} at {self.path} cannot be hashed: {exc.strerror or exc}")
            else:
                if actual != self.expected:
                    self._break(f"{self.what} at {self.path} hashes to {actual}, not the pinned {self.expected} "
                                "(it changed after its pin was checked)")
        self._report()
        return self.broken, seen

    def end_check(self, seen: Identities) -> str | None:
        """After a start that ``start_check`` let through: why its answer cannot be trusted — something
        under the tree changed between the check and now (swapped in for the ``exec`` and back, say) —
        else ``None``. Costs one ``lstat`` per entry; nothing is read."""
        if self.broken is None:
            try:
                now: Identities | None = identities(self.path)
            except OSError:
                now = None
            if now != seen:
                changed = sorted({rel for rel, _ in set(now or ()) ^ set(seen)}) or ["the folder"]
                self._break(f"{self.what} at {self.path} changed while its code started ({', '.join(changed[:5])}"
                            f"{', …' if len(changed) > 5 else ''}): what it answered is not trusted")
        self._report()
        return self.broken

    def _break(self, why: str) -> None:
        if self.broken is None:
            self.broken = why

    def _report(self) -> None:
        if self.broken is not None and not self._reported:
            self._reported = True
            if self.on_broken is not None:
                self.on_broken(self.broken)
