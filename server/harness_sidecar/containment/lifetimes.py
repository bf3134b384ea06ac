"""Lifetimes: nothing a thread's code starts outlives its owner, and no thread starts more than its share.

Every process the sidecar starts (through ``launcher``) is *fenced* here, by one of two mechanisms:

- **cgroups** (where the kernel lets us make them: cgroup v2 with a writable, delegated subtree, or
  the cgroup v1 ``pids`` hierarchy as root). The sidecar makes ``harness-sidecar-<pid>/`` under its
  own cgroup, one group per thread (``thread-1/``, and ``spare/`` for a host no thread has yet),
  and one per started process inside it (``thread-1/host-<pid>/``, ``thread-1/mcp-<pid>/``,
  ``thread-1/hook-<pid>/``). The child enters its group between fork and exec, before any foreign
  code runs; membership survives ``setsid``, double forks and reparenting. The thread's
  ``pids.max`` is ``limits.maxProcesses`` (a fork over it fails with EAGAIN in that thread's own
  processes). Ending a group: ``cgroup.kill`` (v2), or ``pids.max`` 0 (no more forks) and SIGKILL
  to each member until it is empty (v1).
- **subreapers** (no cgroups): the sidecar is a ``PR_SET_CHILD_SUBREAPER``, so a descendant whose
  parent dies (a ``setsid`` double fork, the children of a host that exited) is re-parented to the
  sidecar instead of ``init``. Every second the sidecar ends each child of its own that it did not
  start (with everything below it). Weaker: such a process is ended ~1–2 s after it leaves its
  owner's tree even while the owner runs, and ``maxProcesses`` is not enforced.

With cgroups, a started process cannot leave its group where Landlock is available (its domain may
write beneath its slot's ``g/`` alone of the cgroup file system: ``landlock``). Where it is not, the
serving sidecar (``containment.SERVING``) is a child subreaper too (only there), and its sweep (every ``SWEEP_S``,
and at each end) kills every descendant that is in no slot's ``g/`` of ours; ``close`` ends every
descendant; the reaper notes descendants every 0.5 s and ends them after the groups.

Either way a small **reaper** process (``reaper.py``, started directly, not by the launcher, in a
session of its own) outlives a SIGKILLed sidecar by moments: it waits for EOF on a pipe only the
sidecar holds, then ends the sidecar's groups (cgroups) or the sidecar's descendants as it last
saw them (subreapers; it looks every 0.5 s).

``available()`` says what is not fenced (``None``: everything is), for ``containment_reduced``.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from harness_sidecar.containment import reaper
from harness_sidecar.containment.strays import SWEEP_S, Strays  # noqa: F401 - SWEEP_S: named here too

if TYPE_CHECKING:
    import subprocess

logger = logging.getLogger(__name__)

STOP_DEADLINE_S = 2.2  # thread/close: a host or server still stopping gracefully then is ended with its group
END_RETRY_S = 0.05
END_TRIES = 60  # ~3 s of retries to empty and remove a group
# "off": behave as if the kernel offered no cgroups; "v1" / "v2": only that hierarchy (tests, diagnosis)
SWITCH = "HARNESS_SIDECAR_CGROUPS"
DEFAULT_MAX_PROCESSES = 128
HOST = "host"  # = launcher.HOST (not imported: the launcher imports us)
ENTER = "HARNESS_SIDECAR_CGROUP"  # a Python host's group: it enters it itself (``enter_own_group``)
_PR_SET_CHILD_SUBREAPER = 36
SHELL = "/bin/sh"
# A slot's processes' groups are in its folder ``g/``: a started process may write beneath that folder
# alone of the cgroup file system (Landlock, ``landlock.enter_domain``), so it can enter its own group
# but never another thread's, a group outside the sidecar's, nor its slot's ``pids.max``.
GROUPS = "g"
# $1: the group's path without the pid; $$ is the shell's pid, which exec keeps. Never run unfenced.
_ENTER_SCRIPT = 'd="$1-$$"; shift; { mkdir "$d" && echo 0 > "$d/cgroup.procs"; } 2>/dev/null || exit 126; exec "$@"'


@dataclass
class Cgroups:
    """The sidecar's own subtree: ``root`` = ``<mount>/<own cgroup>/harness-sidecar-<pid>``.

    A thread's processes share one *slot* (``slot-<n>/``), whose ``pids.max`` is the thread's
    limit. A spare host gets a slot of its own when it starts; the thread that takes it takes its
    slot too, so the host is not moved (moving a process between cgroups costs ~15 ms of kernel
    synchronisation when none was moved recently — on thread/start's clock)."""

    root: str
    version: int  # 1 (pids hierarchy) or 2
    limits: bool  # pids.max can be set per thread
    killable: bool  # cgroup.kill ends a group at once (v2, Linux ≥ 5.14)
    slots: dict[str, str] = field(default_factory=dict)  # owner (thread id) → its slot
    spares: dict[int, str] = field(default_factory=dict)  # a spare host's pid → its slot
    wanted: dict[str, int] = field(default_factory=dict)  # owner → limits.maxProcesses
    _next: int = 0
    relative: str = ""  # ``root`` as /proc/<pid>/cgroup names it (below the mount)

    def holds(self, pid: int) -> bool | None:
        """Whether ``pid`` is in a slot's groups folder of ours — where every started process is, and stays
        (None: it is gone, or cannot be read). Our root itself, or a slot's own group, is not one."""
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                lines = f.read().splitlines()
        except OSError:
            return None
        for line in lines:
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            if (self.version == 2 and parts[0] == "0" and parts[1] == "") or \
                    (self.version == 1 and "pids" in parts[1].split(",")):
                if not parts[2].startswith(self.relative + "/slot-"):
                    return False
                slot, _, rest = parts[2][len(self.relative) + 1:].partition("/")
                return slot[5:].isdigit() and (rest == GROUPS or rest.startswith(GROUPS + "/"))
        return None

    def new_slot(self, max_processes: int) -> str:
        self._next += 1
        path = os.path.join(self.root, f"slot-{self._next}")
        os.mkdir(path)
        if self.version == 2 and self.limits:
            _write(os.path.join(path, "cgroup.subtree_control"), "+pids", quiet=True)
        self.set_limit(path, max_processes)
        os.mkdir(os.path.join(path, GROUPS))
        return path

    def set_limit(self, path: str, max_processes: int) -> None:
        if self.limits:
            _write(os.path.join(path, "pids.max"), str(max_processes))

    def slot_of(self, owner: str) -> str:
        """The owner's slot, made now if it has none."""
        path = self.slots.get(owner)
        if path is None:
            path = self.slots[owner] = self.new_slot(self.wanted.get(owner, DEFAULT_MAX_PROCESSES))
        return path

    def members(self, path: str) -> list[int]:
        return reaper.members(path)

    def end(self, path: str) -> bool:
        """One pass: kill everything in ``path`` and below, remove the empty groups. True when gone."""
        return reaper.end_pass(path, self.killable, self.limits)


def _write(path: str, text: str, quiet: bool = False) -> bool:
    error = reaper.write(path, text)
    if error is not None and not quiet:
        logger.debug("cannot write %r to %s: %s", text, path, error)
    return error is None


def _own_cgroup(controller: str | None) -> str | None:
    """Our cgroup path in the v1 hierarchy of ``controller`` (None: the v2 one)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _id, controllers, path = line.rstrip("\n").split(":", 2)
                if (controller is None and _id == "0" and controllers == "") or \
                        (controller is not None and controller in controllers.split(",")):
                    return path
    except OSError:
        return None
    return None


def _mounts() -> list[tuple[str, str, str]]:
    out = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                    out.append((parts[1], parts[2], parts[3]))
    except OSError:
        pass
    return out


def _try_root(parent: str) -> str | None:
    root = os.path.join(parent, f"harness-sidecar-{os.getpid()}")
    try:
        os.mkdir(root)
    except FileExistsError:
        pass
    except OSError:
        return None
    # the child must be able to enter it: a group we can write cgroup.procs of
    if not os.access(os.path.join(root, "cgroup.procs"), os.W_OK):
        try:
            os.rmdir(root)
        except OSError:
            pass
        return None
    return root


def _relative(own: str) -> str:
    return own.rstrip("/") + f"/harness-sidecar-{os.getpid()}"


def find_cgroups() -> Cgroups | None:
    """The best cgroup subtree the kernel lets us make, or None."""
    only = os.environ.get(SWITCH, "").lower()
    if not sys.platform.startswith("linux") or only in ("off", "0", "no"):
        return None
    mounts = _mounts()
    v2 = [m for m in mounts if m[1] == "cgroup2" and only != "v1"]
    v1_pids = [m for m in mounts if m[1] == "cgroup" and "pids" in m[2].split(",") and only != "v2"]
    own2 = _own_cgroup(None)
    if v2 and own2 is not None:
        mount = v2[0][0]
        here = os.path.join(mount, own2.lstrip("/"))
        try:
            with open(os.path.join(here, "cgroup.controllers")) as f:
                has_pids = "pids" in f.read().split()
        except OSError:
            has_pids = False
        limits = has_pids and _write(os.path.join(here, "cgroup.subtree_control"), "+pids", quiet=True)
        if limits or not v1_pids:
            root = _try_root(here)
            if root is not None:
                if limits:
                    _write(os.path.join(root, "cgroup.subtree_control"), "+pids", quiet=True)
                killable = os.path.exists(os.path.join(root, "cgroup.kill"))
                limits = limits and os.path.exists(os.path.join(root, "cgroup.subtree_control"))
                if killable or limits:
                    return Cgroups(root, 2, limits, killable, relative=_relative(own2))
                os.rmdir(root)
    own1 = _own_cgroup("pids")
    if v1_pids and own1 is not None:
        root = _try_root(os.path.join(v1_pids[0][0], own1.lstrip("/")))
        if root is not None and os.path.exists(os.path.join(root, "pids.max")):
            return Cgroups(root, 1, True, False, relative=_relative(own1))
    return None


class Lifetimes:
    """The sidecar's one fence keeper (``get()``): groups or the subreaper sweep, and the reaper."""

    def __init__(self) -> None:
        self.cgroups = find_cgroups()
        self.subreaper = False  # the subreaper *mode*: no cgroups, orphans adopted and ended
        self.adopts = False  # we are a child subreaper (both modes: with cgroups, to end what escapes them)
        self.max_processes: dict[str, int] = {}  # owner → limits.maxProcesses (enforced with cgroups; paced always)
        self._launching: tuple[str, str, str] | None = None  # (kind, owner, slot) of the child being started
        self._groups: str | None = None  # the groups folder of the child being started (cgroups)
        self._host_enters = False
        self._wrapped = False
        self.reaper: "subprocess.Popen[bytes] | None" = None
        self._reaper_w = -1
        if sys.platform.startswith("linux"):
            # With cgroups too where Landlock is missing (in the sidecar: ``containment.SERVING``): a process
            # that leaves its group and whose parent dies is adopted by us, not by init, so that the sweep
            # still finds it. (With Landlock none can leave: nothing to look for, nothing paid.)
            from harness_sidecar import containment
            from harness_sidecar.containment import landlock

            escapable = containment.SERVING and landlock.abi() is None
            self.adopts = (self.cgroups is None or escapable) and _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            self.subreaper = self.adopts and self.cgroups is None
        # what we started and what strayed (a child writes its pid into its registry between fork and exec)
        self.strays = Strays(self.cgroups, self.adopts, lambda: self.reaper.pid if self.reaper is not None else -1)
        self._start_reaper()

    # -- what holds

    def available(self) -> str | None:
        if self.cgroups is not None:
            missing = []
            if not self.cgroups.limits:
                missing.append("limits.maxProcesses is not enforced (no pids controller in the delegated cgroup)")
            return "; ".join(missing) or None
        if self.subreaper:
            return ("no writable cgroups: processes are ended through a child subreaper instead — one that "
                    "leaves its owner's process tree (setsid and double fork) is ended within about 2 s even "
                    "while its owner runs, processes started in the last 0.5 s before a SIGKILL of the sidecar "
                    "may survive it, and limits.maxProcesses is not enforced")
        return ("no cgroups and no child subreaper: processes that leave their owner's process group may outlive "
                "it, and limits.maxProcesses is not enforced")

    # -- the launcher's side (parent, before fork) and the child's (between fork and exec)

    def host_slot(self, owner: str) -> str | None:
        """The group a Python host about to start enters *itself* (``ENTER``, before it says it is
        ready and long before it runs foreign code), so that the move's kernel synchronisation is not
        paid by the sidecar waiting in ``fork``/``exec``. None: the launcher fences it as any other."""
        if self.cgroups is None:
            return None
        try:
            where = self.cgroups.slot_of(owner) if owner else self.cgroups.new_slot(DEFAULT_MAX_PROCESSES)
        except OSError as exc:
            logger.error("cannot make the cgroup of %s: %s", owner or "a spare host", exc)
            raise
        self._launching = (HOST, owner, where)
        self._host_enters = True
        self._groups = os.path.join(where, GROUPS)
        return self._groups

    def argv(self, kind: str, owner: str, argv: list[str], env: dict[str, str] | None,
             cwd: str | None) -> list[str]:
        """``argv``, or (cgroups) ``/bin/sh -c ENTER group argv…``: the shell enters the group and
        ``exec``s the command — the same process, before any of its code runs. The command is looked
        up here, so a missing or non-executable one still fails the start with ``OSError``."""
        if self.cgroups is None or kind == HOST or not argv or not os.access(SHELL, os.X_OK):
            return argv
        program = argv[0]
        if "/" in program:
            path = program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
            if not os.path.exists(path):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
            if os.path.isdir(path) or not os.access(path, os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        else:
            found = shutil.which(program, path=(env if env is not None else os.environ).get("PATH", os.defpath))
            if found is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
            path = found
        try:
            where = self.cgroups.slot_of(owner) if owner else self.cgroups.new_slot(DEFAULT_MAX_PROCESSES)
        except OSError as exc:
            logger.error("cannot make the cgroup of %s: %s", owner or "a process without a thread", exc)
            raise
        self._wrapped = True
        self._groups = os.path.join(where, GROUPS)
        return [SHELL, "-c", _ENTER_SCRIPT, "harness-sidecar-enter", os.path.join(self._groups, kind), path, *argv[1:]]

    def child_setup(self, kind: str, owner: str, max_processes: int | None) -> Callable[[], None] | None:
        """Prepare the owner's group (parent side); the returned function runs in the child. Where we adopt
        orphans, the child also says its pid (the sweep then knows it is ours to leave alone)."""
        fence = self._group_setup(kind, owner, max_processes)
        if self.strays.registry_w < 0 or self.cgroups is None:
            return fence
        registry = self.strays.registry_w

        def register_and_fence() -> None:
            try:
                os.write(registry, b"%d\n" % os.getpid())
            except OSError:
                pass
            if fence is not None:
                fence()

        return register_and_fence

    def _group_setup(self, kind: str, owner: str, max_processes: int | None) -> Callable[[], None] | None:
        if self.cgroups is not None and kind == HOST and self._host_enters:
            self._host_enters = False  # host_slot() was asked: the host enters its group itself
            return None
        if self.cgroups is not None and self._wrapped:
            self._wrapped = False  # argv() wrapped it: the shell enters the group before exec
            return None
        if self.cgroups is not None:
            cgroups = self.cgroups
            try:
                where = cgroups.slot_of(owner) if owner else cgroups.new_slot(max_processes or DEFAULT_MAX_PROCESSES)
            except OSError as exc:
                logger.error("cannot make the cgroup of %s: %s", owner or "a spare host", exc)
                raise
            self._launching = (kind, owner, where)
            self._groups = os.path.join(where, GROUPS)
            prefix = os.path.join(self._groups, kind + "-")

            def enter() -> None:
                path = prefix + str(os.getpid())
                try:
                    os.mkdir(path)
                    fd = os.open(path + "/cgroup.procs", os.O_WRONLY)
                    os.write(fd, b"0")
                    os.close(fd)
                except OSError:
                    os._exit(126)  # never run unfenced

            return enter
        if self.strays.registry_w >= 0:
            registry = self.strays.registry_w

            def register() -> None:
                try:
                    os.write(registry, b"%d\n" % os.getpid())
                except OSError:
                    pass

            return register
        return None

    def take_groups(self) -> str | None:
        """The groups folder the child being started enters (its slot's ``g/``; None without cgroups):
        the one folder of the cgroup file system its Landlock domain lets it write beneath."""
        groups, self._groups = self._groups, None
        return groups

    def limit(self, owner: str, max_processes: int) -> None:
        """A thread's process limit, for its slot (thread/start, ahead of its first process)."""
        if owner:
            self.max_processes[owner] = max_processes
        if self.cgroups is not None and owner:
            self.cgroups.wanted[owner] = max_processes
            if owner in self.cgroups.slots:
                self.cgroups.set_limit(self.cgroups.slots[owner], max_processes)

    def max_processes_of(self, owner: str) -> int:
        """``owner``'s ``limits.maxProcesses`` (what its hooks' zygote paces itself by, cgroups or not)."""
        return self.max_processes.get(owner, DEFAULT_MAX_PROCESSES)

    def started_process(self, pid: int, kind: str, owner: str) -> None:
        """The launcher's child ``pid`` runs (called by whoever started it): a spare's slot is noted."""
        if self.cgroups is not None and not owner and self._launching is not None:
            self.cgroups.spares[pid] = self._launching[2]
        self._launching = None

    # -- handing over and ending

    def adopt(self, pid: int, kind: str, owner: str) -> None:
        """A spare host becomes ``owner``'s: its slot becomes the owner's (nothing is moved), or, when
        the owner has a slot already (its MCP servers started first), the host moves into it."""
        cgroups = self.cgroups
        if cgroups is None:
            return
        spare = cgroups.spares.pop(pid, None)
        if spare is None:
            return
        if owner not in cgroups.slots:
            cgroups.slots[owner] = spare
            cgroups.set_limit(spare, cgroups.wanted.get(owner, DEFAULT_MAX_PROCESSES))
            return
        new = os.path.join(cgroups.slots[owner], GROUPS, f"{kind}-{pid}")
        try:
            os.mkdir(new)
        except FileExistsError:
            pass
        for member in cgroups.members(spare):
            _write(os.path.join(new, "cgroup.procs"), str(member))
        self._end(spare)

    def end_process(self, pid: int, kind: str, owner: str) -> None:
        """The process ``pid`` exited or is stopped: end everything it started."""
        if self.cgroups is not None:
            spare = self.cgroups.spares.pop(pid, None) if not owner else None
            if spare is not None:
                self._end(spare)
            elif owner in self.cgroups.slots:
                self._end(os.path.join(self.cgroups.slots[owner], GROUPS, f"{kind}-{pid}"))
        self.sweep()  # its orphans were re-parented to us: end them now, not at the next tick

    def end_owner(self, owner: str) -> None:
        """A thread closed: end everything left in its group (hosts and servers were stopped first)."""
        if owner:  # its hooks' zygote (containment.zygote) ends its hooks' process groups, and itself
            for listener in _OWNER_ENDS:
                listener(owner)
        self.max_processes.pop(owner, None)
        if self.cgroups is not None and owner:
            self.cgroups.wanted.pop(owner, None)
            slot = self.cgroups.slots.pop(owner, None)
            if slot is not None:
                self._end(slot)
        self.sweep()

    def _end(self, path: str, tries: int = END_TRIES) -> None:
        assert self.cgroups is not None
        if self.cgroups.end(path) or tries <= 0:
            return
        try:
            import asyncio

            asyncio.get_running_loop().call_later(END_RETRY_S, self._end, path, tries - 1)
        except RuntimeError:  # no loop (shutting down): try a few times right here
            for _ in range(tries):
                time.sleep(END_RETRY_S)
                if self.cgroups.end(path):
                    return

    def close(self) -> None:
        """The sidecar is leaving: end every group now (the reaper would, moments later)."""
        if self.cgroups is not None:
            for _ in range(END_TRIES):
                if self.cgroups.end(self.cgroups.root):
                    break
                time.sleep(END_RETRY_S)
            if self.adopts:  # and whatever left its group: every descendant of ours but the reaper
                for _ in range(3):
                    if not self.strays.end_escaped(everything=True):
                        break
                    time.sleep(END_RETRY_S)
        elif self.subreaper:
            self.sweep()

    # -- the subreaper sweep (``strays``)

    def start_sweeping(self) -> None:
        """Subreaper mode: end adopted orphans every ``SWEEP_S``; with cgroups, end every descendant that
        left them (call from the event loop)."""
        if self.adopts:
            self.strays.start_sweeping()

    def sweep(self) -> None:
        if self.adopts:
            self.strays.sweep()

    # -- the reaper

    def _start_reaper(self) -> None:
        if not sys.platform.startswith("linux") or (self.cgroups is None and not self.subreaper):
            return
        import subprocess

        read, write = os.pipe()
        args = [sys.executable, "-I", "-S", os.path.join(os.path.dirname(__file__), "reaper.py"), str(os.getpid())]
        args += ["cgroup", self.cgroups.root, "1" if self.cgroups.killable else "0", "1" if self.adopts else "0"] \
            if self.cgroups else ["tree"]
        try:
            self.reaper = subprocess.Popen(args, stdin=read, stdout=subprocess.DEVNULL, start_new_session=True,
                                           close_fds=True)
        except OSError as exc:
            logger.warning("cannot start the reaper (nothing outlives a SIGKILLed sidecar by it): %s", exc)
            os.close(write)
        else:
            self._reaper_w = write  # held by us alone (close-on-exec): EOF when we are gone
            self.strays.started.add(self.reaper.pid)
        finally:
            os.close(read)


def _prctl(option: int, value: int) -> bool:
    from harness_sidecar.containment.private import libc_prctl

    prctl = libc_prctl()
    return prctl is not None and prctl(option, value, 0, 0, 0) == 0


_instance: Lifetimes | None = None
# what else ends with an owner (its hooks' zygote registers here: ``zygote.end``); called by ``end_owner``
_OWNER_ENDS: list[Callable[[str], None]] = []


def at_owner_end(listener: Callable[[str], None]) -> None:
    """Call ``listener(owner)`` when an owner (a thread) ends, before its groups go."""
    if listener not in _OWNER_ENDS:
        _OWNER_ENDS.append(listener)


def get() -> Lifetimes:
    """The sidecar's fence keeper, made on first use: before the first process it starts (the spare
    host, warmed after ``initialize``), so a sidecar that starts none pays nothing."""
    global _instance
    if _instance is None:
        _instance = Lifetimes()
        try:
            _instance.start_sweeping()
        except RuntimeError:  # no running loop: the caller sweeps (tests of the module)
            pass
    return _instance


def available() -> str | None:
    """What lifetime containment does not fence here (None: nothing is missing), for ``containment_reduced``."""
    return get().available()


def enter_own_group() -> None:
    """In a Python host, first thing: enter the group the sidecar named (``host_slot``), or exit."""
    where = os.environ.pop(ENTER, None)
    if not where:
        return
    path = os.path.join(where, f"{HOST}-{os.getpid()}")
    try:
        os.mkdir(path)
        _write_or_raise(os.path.join(path, "cgroup.procs"), "0")
    except OSError as exc:
        os.write(2, f"cannot enter the cgroup {path}: {exc}\n".encode())
        os._exit(126)  # never run unfenced


def _write_or_raise(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
