"""Watching a thread's roots for changes, with the kernel's notifications, on the event loop.

``WatchHub.subscribe(roots, callback)`` watches what makes a catalog — each root's
``AGENTS.md``, ``skills/`` and every skill folder in it (for its ``SKILL.md``),
``templates/``, ``commands/`` (and a ``.codex`` root's ``prompts/``), ``plugins/``, its hooks
sources, and ``extensions/`` with its packages — and calls ``callback(change)`` on
the event loop once a burst of changes has settled (``debounce_s`` of quiet, at most
``max_delay_s`` after the first). The callback rescans; this module only says *that*
something relevant changed (and where), never what the catalog now is.

Linux inotify through ``inotify_simple``, read with ``loop.add_reader``: no thread, no
polling loop, no CPU while nothing changes. Subscribers with the same roots share one
watch; ``handle.close()`` releases it (the last one removes its kernel watches). A root
that is missing (or deleted later) is waited for by watching its nearest existing parent
for that one name, so a root deleted and re-created is watched again. A link under
``skills/`` is watched only when it resolves inside its root: one created later that leads
out of the root is reported (the rescan rejects it with a diagnostic) but never followed.
Files that cannot change the catalog (a skill's other files, ``__pycache__``, a root's other
files) are ignored.

The inotify binding is imported at the first ``subscribe``, not with this module.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness_sidecar.resources.paths import is_within

logger = logging.getLogger(__name__)

# hooks sources at a root's top (hooks.declared.ROOT_FILES): a .claude root's settings files, a .codex root's config.toml
ROOT_NAMES = frozenset(["AGENTS.md", "skills", "templates", "extensions", "hooks.json", "commands", "plugins",
                        "settings.json", "settings.local.json", "config.toml",
                        "prompts"])  # a .codex root's custom prompts (elsewhere a false alarm: one quiet rescan)
SKIP_DIRS = frozenset([".git", "__pycache__", "node_modules"])
MAX_EXTENSION_DIRS = 2000  # directories watched under one root's extensions/, at most


class WatchUnavailable(Exception):
    """No native file notifications here (not Linux, or the kernel refused an inotify instance)."""


@dataclass(frozen=True)
class Change:
    """A settled burst of changes under a subscription's roots."""

    paths: frozenset[str]  # the files and folders the kernel reported (for logs and tests)
    problems: tuple[str, ...] = ()  # what cannot be watched (e.g. the kernel's watch limit was reached)


Callback = Callable[[Change], Any]

# What each watched folder is, for telling relevant names from the rest.
ROOT, SKILLS, SKILL, HIDDEN, TEMPLATES, EXTENSIONS, WAITING = (
    "root", "skills", "skill", "hidden", "templates", "extensions", "waiting")
PLUGINS = "plugins"  # plugins/ and every folder under it (manifests, hooks, .mcp.json, skills, commands, agents)


@dataclass
class _Entry:
    kind: str
    real: str
    wd: int
    want: frozenset[str] = frozenset()  # names whose appearance matters: a missing root on its way


class WatchHandle:
    """One subscription; ``close()`` releases it (idempotent)."""

    def __init__(self, watch: "_RootsWatch", callback: Callback) -> None:
        self._watch: _RootsWatch | None = watch
        self.callback = callback

    def close(self) -> None:
        if self._watch is not None:
            watch, self._watch = self._watch, None
            watch.unsubscribe(self)


class WatchHub:
    """The watches of one event loop: one inotify instance, shared by every subscription."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None, debounce_s: float = 0.05,
                 max_delay_s: float = 0.5) -> None:
        self.loop = loop or asyncio.get_running_loop()
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self._inotify: Any = None
        self._flags: Any = None
        self._watches: dict[tuple[str, ...], _RootsWatch] = {}
        self._wd_owners: dict[int, set[_RootsWatch]] = {}
        self._wd_refs: dict[int, int] = {}

    # -- subscriptions --------------------------------------------------------------------------

    def subscribe(self, roots: Iterable[str], callback: Callback, plugins: Iterable[str] = (),
                  since_ns: int | None = None) -> WatchHandle:
        """Watch ``roots`` (absolute paths) and the plugin folders ``plugins`` (``thread/start.plugins``:
        each folder and every folder under it, as a root's ``plugins/``); ``callback(change)`` runs on
        the loop after each settled burst.

        ``since_ns`` (``time.time_ns()`` when the caller read the roots): a change made between
        that read and the kernel's watches being in place is not lost — once they are, the watched
        folders and the files that matter in them are looked at (off the loop), and anything
        changed since then is reported like a kernel event. Raises ``WatchUnavailable`` when the
        system offers no native notifications.
        """
        self._open()
        key = tuple(sorted({os.path.normpath(r) for r in roots}))
        folders = tuple(sorted({os.path.normpath(p) for p in plugins}))
        if folders:
            key = (*key, "\0plugins", *folders)  # "\0" never starts a path: the two lists stay apart
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = _RootsWatch(self, key)
            watch.sync()
        handle = WatchHandle(watch, callback)
        watch.handles.append(handle)
        if since_ns is not None:
            watch.catch_up(since_ns)
        return handle

    @property
    def watched_folders(self) -> int:
        """How many kernel watches are held (for tests and diagnostics)."""
        return len(self._wd_refs)

    def close(self) -> None:
        for watch in list(self._watches.values()):
            for handle in list(watch.handles):
                handle.close()
        self._close_inotify()

    # -- the kernel side ------------------------------------------------------------------------

    def _open(self) -> None:
        if self._inotify is not None:
            return
        try:
            from inotify_simple import INotify, flags
        except (ImportError, OSError) as exc:
            raise WatchUnavailable(f"no inotify binding: {exc}") from None
        try:
            self._inotify = INotify(nonblocking=True)  # close-on-exec: no child inherits it
        except (OSError, AttributeError) as exc:  # not Linux, or the instance limit is reached
            raise WatchUnavailable(f"inotify is not available: {exc}") from None
        self._flags = flags
        self._dir_mask = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.CLOSE_WRITE | flags.ATTRIB
                          | flags.MOVED_FROM | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF
                          | flags.ONLYDIR)
        self.loop.add_reader(self._inotify.fileno(), self._read)

    def _close_inotify(self) -> None:
        if self._inotify is not None:
            self.loop.remove_reader(self._inotify.fileno())
            self._inotify.close()
            self._inotify = None
            self._wd_owners.clear()
            self._wd_refs.clear()

    def _add(self, owner: "_RootsWatch", path: str) -> int:
        wd = self._inotify.add_watch(path, self._dir_mask)
        self._wd_refs[wd] = self._wd_refs.get(wd, 0) + 1
        self._wd_owners.setdefault(wd, set()).add(owner)
        return wd

    def _release(self, owner: "_RootsWatch", wd: int, owner_still_uses: bool) -> None:
        refs = self._wd_refs.get(wd)
        if refs is None:
            return
        if not owner_still_uses:
            self._wd_owners.get(wd, set()).discard(owner)
        if refs > 1:
            self._wd_refs[wd] = refs - 1
            return
        del self._wd_refs[wd]
        self._wd_owners.pop(wd, None)
        try:
            self._inotify.rm_watch(wd)
        except OSError:
            pass  # already gone with its folder

    def _forget(self, wd: int) -> None:
        """The kernel dropped ``wd`` (its folder is gone)."""
        self._wd_refs.pop(wd, None)
        for owner in self._wd_owners.pop(wd, set()):
            owner.forget(wd)

    def _read(self) -> None:
        try:
            events = self._inotify.read(timeout=0)
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                logger.warning("reading file notifications failed: %s", exc)
            return
        flags = self._flags
        for event in events:
            if event.mask & flags.Q_OVERFLOW:
                for watch in self._watches.values():
                    watch.overflowed()
                continue
            owners = self._wd_owners.get(event.wd, ())
            for owner in list(owners):
                owner.event(event.wd, event.mask, event.name)
            if event.mask & flags.IGNORED:
                self._forget(event.wd)


class _RootsWatch:
    """The watched folders of one set of roots, and its subscribers."""

    def __init__(self, hub: WatchHub, key: tuple[str, ...]) -> None:
        self.hub = hub
        self.key = key
        split = key.index("\0plugins") if "\0plugins" in key else len(key)
        self.roots = key[:split]
        self.plugin_folders = key[split + 1:]  # thread/start.plugins: watched like a root's plugins/
        self.handles: list[WatchHandle] = []
        self.entries: dict[str, _Entry] = {}  # path -> entry
        self.by_wd: dict[int, list[str]] = {}
        self.pending: set[str] = set()
        self.problems: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._first: float | None = None
        self._resync = False

    # -- which folders to watch ----------------------------------------------------------------------

    def plan(self) -> dict[str, tuple[str, str, frozenset[str]]]:
        """``path -> (kind, real path, names waited for)`` of every folder to watch now."""
        planned: dict[str, tuple[str, str, frozenset[str]]] = {}
        waiting: list[tuple[str, str]] = []
        none: frozenset[str] = frozenset()
        for root in self.roots:
            real_root = os.path.realpath(root)
            if not os.path.isdir(real_root):
                nearest = _nearest_directory(root)
                if nearest is not None:
                    waiting.append(nearest)
                continue
            planned[root] = (ROOT, real_root, none)
            skills = os.path.join(root, "skills")
            skills_real = _inside(skills, real_root)
            if skills_real is not None:
                planned[skills] = (SKILLS, skills_real, none)
                try:
                    with os.scandir(skills) as it:
                        for entry in it:
                            if entry.name in SKIP_DIRS or not _is_dir(entry):
                                continue
                            # a folder's real path is under skills/' real path (the root may be reached
                            # through a link, e.g. ~/.agents -> ~/dotfiles/agents); a link's is its target's
                            real = (os.path.realpath(entry.path) if entry.is_symlink()
                                    else os.path.join(skills_real, entry.name))
                            if is_within(real, real_root):  # a link out of the root is never followed
                                kind = HIDDEN if entry.name.startswith(".") else SKILL
                                planned[entry.path] = (kind, real, none)
                except OSError:
                    pass
            templates = os.path.join(root, "templates")
            templates_real = _inside(templates, real_root)
            if templates_real is not None:
                planned[templates] = (TEMPLATES, templates_real, none)
            commands = os.path.join(root, "commands")  # command templates: the same rule as templates/
            commands_real = _inside(commands, real_root)
            if commands_real is not None:
                planned[commands] = (TEMPLATES, commands_real, none)
            if _is_codex_home(root):  # Codex's prompts/<name>.md, served as prompts:<name>
                prompts = os.path.join(root, "prompts")
                prompts_real = _inside(prompts, real_root)
                if prompts_real is not None:
                    planned[prompts] = (TEMPLATES, prompts_real, none)
            plugins = os.path.join(root, "plugins")
            plugins_real = _inside(plugins, real_root)
            if plugins_real is not None:
                for directory, real in _plugin_dirs(plugins, plugins_real, real_root):
                    planned[directory] = (PLUGINS, real, none)
            extensions = os.path.join(root, "extensions")
            extensions_real = _inside(extensions, real_root)
            if extensions_real is not None:
                for directory, real in _extension_dirs(extensions, extensions_real, real_root):
                    planned[directory] = (EXTENSIONS, real, none)
        for folder in self.plugin_folders:
            real_folder = os.path.realpath(folder)
            if os.path.isdir(real_folder):
                for directory, real in _plugin_dirs(folder, real_folder, real_folder):
                    planned.setdefault(directory, (PLUGINS, real, none))
        for parent, want in waiting:  # a folder may also be another root's, or another missing root's way
            kind, real, wanted = planned.get(parent, (WAITING, os.path.realpath(parent), none))
            planned[parent] = (kind, real, wanted | {want})
        return planned

    def sync(self) -> bool:
        """Watch what the plan says, no more; ``True`` when the set of watched folders changed.

        Repeated until stable, so a folder created while watches were being added is not missed.
        """
        moved = False
        for _ in range(5):
            planned = self.plan()
            stale = [p for p, e in self.entries.items() if planned.get(p) != (e.kind, e.real, e.want)]
            for path in stale:
                self._drop(path)
            added = False
            for path, (kind, real, want) in planned.items():
                if path in self.entries:
                    continue
                try:
                    wd = self.hub._add(self, path)
                except OSError as exc:
                    if exc.errno == errno.ENOSPC:
                        self._problem("the kernel's limit of file watches (fs.inotify.max_user_watches) is reached: "
                                      "some folders are not watched; raise it, or use thread/refresh")
                    continue  # gone meanwhile: the next plan will see it
                self.entries[path] = _Entry(kind, real, wd, want)
                self.by_wd.setdefault(wd, []).append(path)
                added = True
            moved = moved or added or bool(stale)
            if not added and not stale:
                break
        return moved

    def catch_up(self, since_ns: int) -> None:
        """Report what changed under the watched folders since ``since_ns``, before their watches existed.

        The folders and their relevant entries are stat'ed in the loop's executor (one ``scandir``
        per folder); a folder or entry whose mtime or ctime is not older than ``since_ns`` (less a
        margin for the kernel's coarse file clock) is marked as changed, which rescans. A rescan
        that finds nothing new says nothing, so a false alarm costs one quiet rescan.
        """
        folders = [(path, entry.kind) for path, entry in self.entries.items()]
        threshold = since_ns - CATCH_UP_MARGIN_NS

        def changed() -> list[str]:
            found = []
            for path, kind in folders:
                try:
                    if _newer(os.stat(path), threshold):
                        found.append(path)
                    with os.scandir(path) as it:
                        for item in it:
                            if _relevant(_Entry(kind, "", -1), item.name) and \
                                    _newer(item.stat(follow_symlinks=False), threshold):
                                found.append(item.path)
                except OSError:
                    found.append(path)  # gone or unreadable meanwhile: the rescan says what it is now
            return found

        def report(future: asyncio.Future) -> None:
            if future.cancelled() or future.exception() is not None or not self.handles:
                return
            for path in future.result():
                self._mark(path, resync=True)

        self.hub.loop.run_in_executor(None, changed).add_done_callback(report)

    def _drop(self, path: str) -> None:
        entry = self.entries.pop(path)
        paths = self.by_wd.get(entry.wd, [])
        if path in paths:
            paths.remove(path)
        if not paths:
            self.by_wd.pop(entry.wd, None)
        self.hub._release(self, entry.wd, owner_still_uses=bool(paths))

    def forget(self, wd: int) -> None:
        for path in self.by_wd.pop(wd, []):
            self.entries.pop(path, None)
        self._mark(None, resync=True)

    def _problem(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)

    # -- events ----------------------------------------------------------------------------------

    def event(self, wd: int, mask: int, name: str) -> None:
        flags = self.hub._flags
        for path in self.by_wd.get(wd, ()):
            entry = self.entries[path]
            if mask & (flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED):
                self._mark(path, resync=True)
                continue
            if not (name in entry.want or _relevant(entry, name)):
                continue
            structural = bool(mask & (flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO))
            self._mark(os.path.join(path, name) if name else path,
                       resync=structural and (entry.kind in (ROOT, SKILLS, HIDDEN, EXTENSIONS, PLUGINS)
                                              or name in entry.want))

    def overflowed(self) -> None:
        """The kernel's event queue overflowed: anything may have changed."""
        self._mark(None, resync=True)

    def _mark(self, path: str | None, resync: bool) -> None:
        if path is not None:
            self.pending.add(path)
        self._resync = self._resync or resync
        loop = self.hub.loop
        now = loop.time()
        if self._first is None:
            self._first = now
        due = min(now + self.hub.debounce_s, self._first + self.hub.max_delay_s)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(due, self._fire)

    def _fire(self) -> None:
        self._timer, self._first = None, None
        if self._resync:
            self._resync = False
            self.sync()  # before the callbacks: their rescan must not miss a later change
        change = Change(frozenset(self.pending), tuple(self.problems))
        self.pending = set()
        for handle in list(self.handles):
            try:
                outcome = handle.callback(change)
                if inspect.isawaitable(outcome):
                    asyncio.ensure_future(outcome)
            except Exception:  # noqa: BLE001 - one subscriber's bug must not stop the others
                logger.exception("a catalog watch callback failed")

    # -- lifetime ----------------------------------------------------------------------------------

    def unsubscribe(self, handle: WatchHandle) -> None:
        if handle in self.handles:
            self.handles.remove(handle)
        if self.handles:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for path in list(self.entries):
            self._drop(path)
        self.hub._watches.pop(self.key, None)
        if not self.hub._watches:
            self.hub._close_inotify()


# The kernel stamps files with a coarse clock (a tick or so behind time.time_ns()): a change just
# after the roots were read may carry a time just before it.
CATCH_UP_MARGIN_NS = 50_000_000


def _newer(st: os.stat_result, threshold_ns: int) -> bool:
    return st.st_mtime_ns >= threshold_ns or st.st_ctime_ns >= threshold_ns


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _nearest_directory(path: str) -> tuple[str, str] | None:
    """``(the nearest existing folder above path, the name in it that leads to path)``."""
    child = path
    parent = os.path.dirname(path)
    while parent != child:
        if os.path.isdir(parent):
            return parent, os.path.basename(child)
        child, parent = parent, os.path.dirname(parent)
    return None


def _inside(path: str, real_root: str) -> str | None:
    """The real path of the folder ``path`` when it is one and resolves inside ``real_root``, else ``None``."""
    if not os.path.isdir(path):
        return None
    real = os.path.realpath(path)
    return real if is_within(real, real_root) else None


def _extension_dirs(extensions: str, extensions_real: str, real_root: str) -> list[tuple[str, str]]:
    """``(path, real path)`` of ``extensions/`` and the folders of its packages (their files are hashed), within
    bounds; dot-folders aside."""
    return _folders(extensions, extensions_real, real_root, dot_folders=False)


def _plugin_dirs(plugins: str, plugins_real: str, real_root: str) -> list[tuple[str, str]]:
    """``(path, real path)`` of ``plugins/`` and every folder under it (dot-folders too: a manifest lives
    in ``.claude-plugin/``)."""
    return _folders(plugins, plugins_real, real_root, dot_folders=True)


def _folders(top: str, top_real: str, real_root: str, dot_folders: bool) -> list[tuple[str, str]]:
    """``top`` and the folders under it, ``.git``, ``node_modules`` and links out of the root aside, at most
    ``MAX_EXTENSION_DIRS``."""
    found = [(top, top_real)]
    stack = [top]
    while stack and len(found) < MAX_EXTENSION_DIRS:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    if entry.name in SKIP_DIRS or (not dot_folders and entry.name.startswith(".")) \
                            or not entry.is_dir(follow_symlinks=False):
                        continue
                    real = os.path.realpath(entry.path)
                    if is_within(real, real_root):
                        found.append((entry.path, real))
                        stack.append(entry.path)
        except OSError:
            continue
    return found


def _is_codex_home(path: str) -> bool:
    """A root that is a Codex home (``.codex``), whose ``prompts/`` holds command templates: the rule of
    resources.command_templates.is_codex_home, on a path."""
    return os.path.basename(os.path.normpath(path)) == ".codex"


def _relevant(entry: _Entry, name: str) -> bool:
    """Whether a change of ``name`` in the watched folder can change the catalog or its diagnostics."""
    if not name:
        return True
    kind = entry.kind
    if kind == ROOT:
        return name in ROOT_NAMES
    if kind == SKILL:
        return name.lower() == "skill.md"  # SKILL.md, and skill.md in the wrong case (a diagnostic)
    if kind == HIDDEN:
        return True  # a skill folder appearing in a dot-folder (its diagnostic names them)
    if kind == TEMPLATES:
        return name.endswith(".md")
    if kind == EXTENSIONS:
        return not (name.startswith(".") or name == "__pycache__" or name.endswith(".pyc"))
    if kind == WAITING:
        return False  # only the names waited for
    if kind == PLUGINS:
        return not (name in SKIP_DIRS or name.endswith(".pyc"))
    return True  # SKILLS: any entry may be (or stop being) a skill, a link, a stray .md
