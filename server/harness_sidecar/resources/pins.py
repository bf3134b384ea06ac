"""Pins that hold when the code runs (protocol-v4 §1): the tree hash, links included, and the check
made at every start of pinned code.

**The tree hash** (protocol.md § Plugins, "The tree hash"). Every regular file and every symbolic
link under the tree, by its path relative to the tree with ``/`` separators, sorted by the UTF-8
bytes of that path; one line per entry — a file: ``<sha256 hex of its bytes>  <path>\\n``; a link:
``symlink <sha256 hex of its target text>  <path>\\n`` (the link is never followed, a link to a
folder is not entered) — and the pin is the sha256 of those lines. A tree without links hashes as
it did in v3. A link whose target (resolved from the link's folder) leaves the tree makes a pinned
tree refused: ``PinLinkEscape`` (``pin_link_escape``).

**Checked at start, not re-hashed.** Each entry's identity ``(dev, ino, size, mtime_ns, ctime_ns)``
is kept with its digest; an entry whose identity is unchanged is not read again, and a folder whose
identity is unchanged is not listed again, so checking a pin costs one ``lstat`` per entry.
``ctime`` cannot be set by a process (any write, rename or ``chmod`` moves it), and an entry
changed within ``_RACY_NS`` of being hashed is never taken from the cache (timestamps are coarser
than the clock: "racily clean", as git calls it). ``TreePin.start_check()`` is that check, made just
before each hook process and each MCP server start (first and restarts) of a pinned plugin;
``TreePin.end_check()`` compares the identities again once the hook answered (the server
initialized): a swap for the ``exec`` and back is caught there.

**A catalog scan** (``vouched``) does not walk a tree this process hashed to the pin when inotify,
armed on each of its folders before that hash listed it, has reported nothing since. Only what the
catalog says rests on that; starts always walk, and a pinned extension's bytes are compared with
the digests of the hash.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

LARGE = 1000  # a tree of this many files or more is checked in a worker thread, not on the event loop
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
_lock = threading.RLock()


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# tree -> folder (relative; "" is the tree) -> (its identity, its entries as (name, is a folder)), for
# the folders whose identity settled: one whose identity is unchanged holds the same names (adding,
# removing or renaming an entry moves the folder's mtime and ctime), so it costs an lstat, not a listing
_listings: dict[str, dict[str, tuple[tuple[int, int, int, int, int], list[tuple[str, bool]]]]] = {}


def _entries(top: str, arm: Callable[[str], bool] | None = None) -> list[tuple[str, str, os.stat_result]]:
    """(relative path, full path, lstat) of every regular file and link under ``top``, sorted by path bytes.

    ``arm(folder)`` (``_Watcher.arm``) is called for each folder before it is listed; a folder is
    listed again only when its identity changed (or changed within ``_RACY_NS`` of its last listing)."""
    found: list[tuple[str, str, os.stat_result]] = []
    append = found.append
    known = _listings.get(top, {})
    listings: dict[str, tuple[tuple[int, int, int, int, int], list[tuple[str, bool]]]] = {}
    settled_before = time.time_ns() - _RACY_NS
    pending = [("", top, os.lstat(top))]
    while pending:
        prefix, folder, folder_st = pending.pop()
        if not stat.S_ISDIR(folder_st.st_mode):
            raise NotADirectoryError(folder)
        if arm is not None:
            arm(folder)
        identity = _identity(folder_st)
        listed = known.get(prefix)
        if listed is not None and listed[0] == identity and arm is None:
            children = listed[1]
        else:
            with os.scandir(folder) as it:
                children = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        if folder_st.st_ctime_ns < settled_before:
            listings[prefix] = (identity, children)
        for name, is_dir in children:
            full = f"{folder}/{name}"
            st = os.lstat(full)
            mode = st.st_mode
            if stat.S_ISDIR(mode):
                pending.append((f"{prefix}{name}/", full, st))
            elif stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                append((prefix + name, full, st))
    with _lock:
        _listings[top] = listings
    found.sort(key=lambda item: item[0].encode("utf-8", "surrogateescape"))
    return found


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    # O_NONBLOCK: a file swapped for a FIFO after it was listed is refused, never waited on
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_link(top: str, full: str, rel: str, target: str) -> None:
    resolved = os.path.realpath(os.path.join(os.path.dirname(full), target))
    if resolved != top and not resolved.startswith(top.rstrip("/") + "/"):
        raise PinLinkEscape(rel, target)


class _Watcher:
    """inotify on every folder of each tree this process hashed, read synchronously (non-blocking) when
    asked: which trees nothing has touched since their last hash. Only ``vouched`` uses it — to answer
    a catalog scan's pin check without walking the tree again; a start of pinned code never does."""

    def __init__(self) -> None:
        self.inotify: Any = None
        self.unavailable = False
        self.mask = 0
        self.overflow = 0
        self.ignored = 0
        self.trees_of: dict[int, set[str]] = {}  # wd -> the trees it is a folder of
        self.armed: set[str] = set()  # trees whose every folder was watched at their last hash
        self.dirty: set[str] = set()  # trees touched since their last hash

    def _open(self) -> bool:
        if self.inotify is None and not self.unavailable:
            try:
                from inotify_simple import INotify, flags

                self.inotify = INotify(nonblocking=True)
            except (ImportError, OSError, AttributeError):
                self.unavailable = True
                return False
            self.mask = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.CLOSE_WRITE | flags.ATTRIB
                         | flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR
                         | flags.DONT_FOLLOW)
            self.overflow, self.ignored = flags.Q_OVERFLOW, flags.IGNORED
        return self.inotify is not None

    def drain(self) -> None:
        """Every event the kernel queued so far (it queues them within the writing system call)."""
        if self.inotify is None:
            return
        while True:
            try:
                events = self.inotify.read(timeout=0)
            except BlockingIOError:
                return
            except OSError:
                self.dirty |= self.armed
                return
            if not events:
                return
            for event in events:
                if event.mask & self.overflow:
                    self.dirty |= self.armed
                    continue
                self.dirty |= self.trees_of.get(event.wd, set())
                if event.mask & self.ignored:
                    for tree in self.trees_of.pop(event.wd, set()):
                        self.armed.discard(tree)

    def begin(self, top: str) -> Callable[[str], bool] | None:
        """A hash of ``top`` begins: its folders are armed as the walk reaches them (before listing)."""
        if not self._open():
            return None
        self.drain()
        self.dirty.discard(top)
        self.armed.add(top)

        def arm(folder: str) -> bool:
            with _lock:
                try:
                    wd = self.inotify.add_watch(folder, self.mask)
                except OSError:  # the kernel's watch limit, or gone meanwhile: this tree is never vouched for
                    self.armed.discard(top)
                    return False
                self.trees_of.setdefault(wd, set()).add(top)
                return True
        return arm

    def untouched(self, top: str) -> bool:
        self.drain()
        return top in self.armed and top not in self.dirty


_watcher = _Watcher()
_verdicts: dict[str, tuple[str, dict[str, str]]] = {}  # tree -> (hash, file digests) of its last hash
# (tree, pin) -> why: a pin that broke at a start of its code in this process stays broken here, even
# when the tree hashes to it again (swapped for a start and put back): its catalogs say untrusted
_tainted: dict[tuple[str, str], str] = {}


def tainted(path: str, expected: str) -> str | None:
    """Why the pinned tree at the real path ``path`` is not trusted again in this process, or None."""
    return _tainted.get((path, expected))


def vouched(top: str, expected: str) -> tuple[str, dict[str, str]] | None:
    """``tree_state(top)`` (``top``: the tree's real path) without walking the tree, when this process
    can vouch for it: its last hash
    was ``expected``, every folder of it has been watched since that hash began, and no event came
    (nor a hard-linked file, whose other names no watch here sees). ``None``: walk it (``tree_state``).

    For the catalog's pin check at ``thread/start`` only. The starts of pinned code check the tree
    themselves (``TreePin``), and a pinned extension's bytes are compared with these digests, so a
    change the kernel does not report to inotify (a write through a shared ``mmap`` of a file opened
    before) can make a catalog say "trusted" a moment too long, never run a byte that is not pinned."""
    with _lock:
        verdict = _verdicts.get(top)
        if verdict is None or verdict[0] != expected or (top, expected) in _tainted or not _watcher.untouched(top):
            return None
        return verdict


def tree_sha256(path: str, *, links_inside: bool = True) -> str:
    """The tree hash of ``path`` (a folder; its real path is used). Raises ``PinLinkEscape`` when
    ``links_inside`` and a link leaves the tree, ``OSError`` when the tree cannot be read."""
    return tree_state(path, links_inside=links_inside)[0]


def tree_state(path: str, *, links_inside: bool = True) -> tuple[str, dict[str, str]]:
    """``tree_sha256`` and, from the same pass, the digest of each regular file by relative path."""
    digest, files, _ = _hash(os.path.realpath(path), links_inside, watch=True)
    return digest, files


Identities = tuple[tuple[str, tuple[int, int, int, int, int]], ...]


def identities(path: str) -> Identities:
    """Each entry of the tree at the real path ``path``, by relative path, with its identity: equal twice means nothing under ``path`` changed between
    (any write, rename, link or ``chmod`` moves a ``ctime`` or an ``ino``)."""
    return tuple((rel, _identity(st)) for rel, _, st in _entries(path))


def _hash(top: str, links_inside: bool, watch: bool) -> tuple[str, dict[str, str], Identities]:
    """The hash of the tree at the real path ``top``. ``watch``: a catalog scan's hash, after which
    ``vouched`` may answer for the tree (its folders are watched from now on); a start's check only
    takes a verdict back when the tree no longer hashes to it."""
    try:
        return _hash_once(top, links_inside, watch)
    except BaseException:
        with _lock:
            _verdicts.pop(top, None)
        raise


def _hash_once(top: str, links_inside: bool, watch: bool) -> tuple[str, dict[str, str], Identities]:
    global _cached
    started = time.time_ns()
    before = _cache.get(top, {})
    seen: dict[str, _Seen] = {}
    outer = hashlib.sha256()
    arm = None
    if watch:
        with _lock:
            _verdicts.pop(top, None)  # until this hash ends well, nothing is vouched for
            arm = _watcher.begin(top)
    entries = _entries(top, arm)
    if arm is not None and any(st.st_nlink > 1 and stat.S_ISREG(st.st_mode) for _, _, st in entries):
        with _lock:
            _watcher.armed.discard(top)  # a file with other names elsewhere: written there, no watch here sees it
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
            _listings.clear()
            _cached = len(seen)
        _cache[top] = seen
        files = {rel: e.digest for rel, e in seen.items() if not e.link}
        if watch:
            _verdicts[top] = (outer.hexdigest(), files)
        elif top in _verdicts and _verdicts[top][0] != outer.hexdigest():
            del _verdicts[top]
    return outer.hexdigest(), files, tuple((rel, _identity(st)) for rel, _, st in entries)


@dataclass
class TreePin:
    """A pinned tree as its pin was checked: ``holds()`` checks it again before code of it starts.

    ``on_broken(why)`` is called once, the first time the tree no longer matches (the thread's
    catalog is scanned again, so the entry turns untrusted and ``catalog/changed`` says so); it may be
    called from a worker thread (a ``large`` tree's check)."""

    path: str  # the tree's real path
    expected: str  # the pin, lower-case hex
    what: str  # who pins it, for messages: "plugin 'fmt'"
    files: dict[str, str] = field(default_factory=dict, repr=False)  # relative path -> digest, as checked
    on_broken: Callable[[str], None] | None = None
    broken: str | None = None  # why it stopped matching, once it did (it never holds again)
    _reported: bool = field(default=False, repr=False)
    _known: Identities | None = field(default=None, repr=False)  # the identities of a check that held

    @property
    def large(self) -> bool:
        """Big enough (``LARGE`` files) that its checks are run off the event loop (``asyncio.to_thread``)."""
        return len(self.files) >= LARGE

    def holds(self) -> str | None:
        """``None`` when the tree still hashes to the pin; otherwise why not (and it stays broken)."""
        return self.start_check()[0]

    def start_check(self) -> tuple[str | None, Identities]:
        """Before a start: why the tree no longer matches (``None``: it does), and the identities the
        check saw, for ``end_check`` once the process has started (or answered)."""
        seen: Identities = ()
        if self.broken is None:
            try:
                taken = time.time_ns()
                seen = identities(self.path)
                if seen == self._known:  # every entry as a check that held saw it, long settled: unchanged
                    return None, seen
                actual, _, seen = _hash(self.path, True, watch=False)
            except PinLinkEscape as exc:
                self._break(f"{self.what} at {self.path} is no longer trusted: {exc} (pin_link_escape)")
            except OSError as exc:
                self._break(f"{self.what} at {self.path} cannot be hashed: {exc.strerror or exc}")
            else:
                if actual != self.expected:
                    self._break(f"{self.what} at {self.path} hashes to {actual}, not the pinned {self.expected} "
                                "(it changed after its pin was checked)")
                elif all(identity[4] < taken - _RACY_NS for _, identity in seen):
                    self._known = seen  # none changed within the clock's grain of this check: identity is content
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
            with _lock:
                _tainted.setdefault((self.path, self.expected), why)

    def _report(self) -> None:
        if self.broken is not None and not self._reported:
            self._reported = True
            if self.on_broken is not None:
                self.on_broken(self.broken)
