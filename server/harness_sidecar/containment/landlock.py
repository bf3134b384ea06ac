"""Landlock: every process the sidecar starts runs in a Landlock domain of its own.

A process in a domain cannot ptrace, read ``/proc/<pid>/mem`` or ``/proc/<pid>/fd/*`` of, or copy
descriptors (``pidfd_getfd``) from, any process outside its domain — the sidecar, other threads'
processes, the editor — whatever its uid or capabilities (ABI 1). From ABI 6 the domain is also
*scoped*: it cannot signal processes outside it, nor connect to their abstract UNIX sockets. What
it starts inherits its domain, so its own children stay reachable to it. The file system is not
restricted but for one thing: no file of the cgroup file system can be opened for writing (the domain
handles ``WRITE_FILE`` and grants it beneath everything else: every entry of ``/``, and of each folder
on the way to a cgroup mount, that is not one), except beneath the one folder the launch names — its
slot's groups folder (``lifetimes.GROUPS``), where the process enters its own group. So a started
process, even as root, cannot move itself (or anything) into another ``cgroup.procs``, raise its
thread's ``pids.max``, or write a v1 ``release_agent``; nor can it mount another cgroup file system
(a domain cannot mount). A file or folder made at ``/`` (or beside a cgroup mount) after the thread's
first process started is not writable to that thread's processes. Below ABI 6 the domain also handles
``MAKE_FIFO`` and grants it beneath ``/``.

Through ``ctypes`` syscalls (the numbers are the generic ones, shared by x86_64 and aarch64):
importing ``ctypes`` costs ~2 ms; the ``landlock`` PyPI binding ~16 ms and has no scopes.

Testing switches, in the sidecar's environment: ``HARNESS_SIDECAR_LANDLOCK=off`` makes Landlock
count as unavailable; ``HARNESS_SIDECAR_LANDLOCK=N`` uses at most ABI ``N`` (``5``: what a kernel
without scopes gives). They show what an editor on an older kernel gets.
"""

from __future__ import annotations

import os
import sys

SWITCH = "HARNESS_SIDECAR_LANDLOCK"

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_ACCESS_FS_WRITE_FILE = 1 << 1  # handled always: granted beneath everything but the cgroup file system
_ACCESS_FS_MAKE_FIFO = 1 << 10  # handled below ABI 6 too (granted beneath "/")
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1
_PR_SET_NO_NEW_PRIVS = 38
_SUPPORTED_MACHINES = ("x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "loongarch64")

_state: dict[str, object] = {}


def _libc():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.prctl.restype = ctypes.c_int
    return libc


def abi() -> int | None:
    """The kernel's Landlock ABI version, or ``None`` (not Linux, not enabled, or switched off)."""
    if "abi" not in _state:
        _state["abi"] = _query_abi()
    return _state["abi"]  # type: ignore[return-value]


def _query_abi() -> int | None:
    switch = os.environ.get(SWITCH, "").strip().lower()
    if switch in ("off", "0", "no", "false"):
        return None
    if not sys.platform.startswith("linux") or os.uname().machine not in _SUPPORTED_MACHINES:
        return None
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return None
    if version <= 0:
        return None
    return min(int(version), int(switch)) if switch.isdigit() else int(version)


def scoped() -> bool:
    """Whether domains are scoped (signals, abstract UNIX sockets): ABI 6 and later."""
    version = abi()
    return version is not None and version >= 6


RULESETS_KEPT = 32  # rulesets made (one per slot's groups folder), the oldest closed past this


def _ruleset_fd(writable: str | None) -> int | None:
    """The ruleset a started process enforces (each enforcement makes a new domain), made once per
    ``writable`` (the groups folder of a slot: one per thread)."""
    made: dict = _state.setdefault("fds", {})  # type: ignore[assignment]
    if writable in made:
        return made[writable]
    if len(made) >= RULESETS_KEPT:
        oldest = next(iter(made))
        fd = made.pop(oldest)
        if fd is not None:
            os.close(fd)
    fd = _make_ruleset(writable)  # an OSError propagates: nothing kept, the start fails
    made[writable] = fd
    return fd


def cgroup_mounts() -> list[str]:
    """The mount points of every cgroup file system (v1 hierarchies and v2)."""
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] in ("cgroup", "cgroup2"):
                    found.append(os.path.realpath(parts[1].replace("\\040", " ")))
    except OSError:
        pass
    return found


def write_grants(denied: list[str]) -> list[str]:
    """Paths beneath which writing is granted so that everything is writable but ``denied`` (and what is
    beneath them): each entry of ``/``, and of every folder on the way to a denied path, that is neither
    denied nor on the way to one. An entry that is a link to a denied path (or its ancestor) is left out."""
    denied = sorted({os.path.normpath(d) for d in denied})
    if "/" in denied:
        return []

    def touches(path: str) -> tuple[bool, bool]:  # (in or equal to a denied path, an ancestor of one)
        inside = any(path == d or path.startswith(d + "/") for d in denied)
        above = any(d.startswith(path.rstrip("/") + "/") for d in denied)
        return inside, above

    grants: list[str] = []

    def walk(folder: str) -> None:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            return
        for entry in entries:
            path = os.path.join(folder, entry)
            inside, above = touches(path)
            if inside:
                continue
            if above:
                if os.path.isdir(path) and not os.path.islink(path):
                    walk(path)
                continue
            real_inside, real_above = touches(os.path.realpath(path))
            if not real_inside and not real_above:
                grants.append(path)

    if not denied:
        return ["/"]
    walk("/")
    return grants


def _make_ruleset(writable: str | None) -> int | None:
    import ctypes

    version = abi()
    if version is None:
        return None
    libc = _libc()
    handled = _ACCESS_FS_WRITE_FILE | (_ACCESS_FS_MAKE_FIFO if version < 6 else 0)
    if version >= 6:
        attr = (ctypes.c_uint64 * 3)(handled, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    else:
        attr = (ctypes.c_uint64 * 1)(handled)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        return None
    fd = int(fd)

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    def grant(path: str, access: int) -> bool:
        try:
            where = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            return True  # gone meanwhile: nothing to grant
        try:
            if not os.path.isdir(path):
                access &= _ACCESS_FS_WRITE_FILE  # a file takes file rights only
            rule = PathBeneath(access, where)
            return libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) == 0
        finally:
            os.close(where)

    rules = [(path, _ACCESS_FS_WRITE_FILE) for path in write_grants(cgroup_mounts())]
    if writable is not None:
        rules.append((writable, _ACCESS_FS_WRITE_FILE))
    if version < 6:
        rules.append(("/", _ACCESS_FS_MAKE_FIFO))
    try:
        for path, access in rules:
            if not grant(path, access):
                os.close(fd)
                return None
    except OSError:  # no descriptors left (EMFILE): the start fails, never unfenced (nor half-granted)
        os.close(fd)
        raise
    return fd


class Enforcer:
    """What a forked child calls, before ``exec``, to enter a domain of its own (prepared in the parent,
    so the child only makes two system calls)."""

    def __init__(self, writable: str | None = None) -> None:
        self.fd = _ruleset_fd(writable)
        self._libc = _libc() if self.fd is not None else None

    def __call__(self) -> None:
        if self.fd is None or self._libc is None:
            return
        if self._libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 \
                or self._libc.syscall(_SYS_RESTRICT_SELF, self.fd, 0) != 0:
            # Never run foreign code unfenced where the sidecar said it is fenced.
            os.write(2, b"harness-sidecar: cannot enter a Landlock domain; not starting\n")
            os._exit(125)


_enforcers: dict[str | None, Enforcer] = {}


def enter_domain(writable: str | None = None) -> Enforcer:
    """The callable that puts a freshly forked child in a domain of its own (a no-op without Landlock),
    which may write beneath ``writable`` (its slot's groups folder) and nowhere else in the cgroups."""
    enforcer = _enforcers.get(writable)
    if enforcer is None or enforcer.fd != _state.get("fds", {}).get(writable, -1):  # type: ignore[union-attr]
        if len(_enforcers) >= RULESETS_KEPT:
            _enforcers.clear()
        enforcer = _enforcers[writable] = Enforcer(writable)
    return enforcer


def reduced() -> str | None:
    """What is not fenced on this machine, in a sentence; ``None`` when nothing is missing."""
    version = abi()
    if version is None:
        return ("Landlock is not available: processes this thread starts can signal and reach the abstract "
                "UNIX sockets of the sidecar, other threads' processes and the editor, and (where they run "
                "with CAP_SYS_PTRACE, e.g. as root) read their memory and descriptors")
    if version < 6:
        return (f"Landlock ABI {version} (< 6): processes this thread starts can signal, and reach the abstract "
                f"UNIX sockets of, the sidecar, other threads' processes and the editor")
    return None
