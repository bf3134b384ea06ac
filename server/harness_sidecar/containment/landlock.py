"""Landlock: every process the sidecar starts runs in a Landlock domain of its own.

A process in a domain cannot ptrace, read ``/proc/<pid>/mem`` or ``/proc/<pid>/fd/*`` of, or copy
descriptors (``pidfd_getfd``) from, any process outside its domain — the sidecar, other threads'
processes, the editor — whatever its uid or capabilities (ABI 1). From ABI 6 the domain is also
*scoped*: it cannot signal processes outside it, nor connect to their abstract UNIX sockets. What
it starts inherits its domain, so its own children stay reachable to it. The file system is not
restricted: below ABI 6 the domain handles one file-system right and grants it beneath ``/``,
which is what it takes to have a domain at all.

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
_ACCESS_FS_MAKE_FIFO = 1 << 10  # the one right handled below ABI 6 (granted beneath "/")
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


def _ruleset_fd() -> int | None:
    """The ruleset every started process enforces (each enforcement makes a new domain), made once."""
    if "fd" in _state:
        return _state["fd"]  # type: ignore[return-value]
    _state["fd"] = fd = _make_ruleset()
    return fd


def _make_ruleset() -> int | None:
    import ctypes

    version = abi()
    if version is None:
        return None
    libc = _libc()
    if version >= 6:
        attr = (ctypes.c_uint64 * 3)(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
        fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
        return int(fd) if fd >= 0 else None
    attr1 = (ctypes.c_uint64 * 1)(_ACCESS_FS_MAKE_FIFO)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr1), ctypes.sizeof(attr1), 0)
    if fd < 0:
        return None

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    root = os.open("/", os.O_PATH | os.O_CLOEXEC)
    try:
        rule = PathBeneath(_ACCESS_FS_MAKE_FIFO, root)
        if libc.syscall(_SYS_ADD_RULE, int(fd), _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            os.close(fd)
            return None
    finally:
        os.close(root)
    return int(fd)


class Enforcer:
    """What a forked child calls, before ``exec``, to enter a domain of its own (prepared in the parent,
    so the child only makes two system calls)."""

    def __init__(self) -> None:
        self.fd = _ruleset_fd()
        self._libc = _libc() if self.fd is not None else None

    def __call__(self) -> None:
        if self.fd is None or self._libc is None:
            return
        if self._libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 \
                or self._libc.syscall(_SYS_RESTRICT_SELF, self.fd, 0) != 0:
            # Never run foreign code unfenced where the sidecar said it is fenced.
            os.write(2, b"harness-sidecar: cannot enter a Landlock domain; not starting\n")
            os._exit(125)


_enforcer: list[Enforcer] = []


def enter_domain() -> Enforcer:
    """The callable that puts a freshly forked child in a domain of its own (a no-op without Landlock)."""
    if not _enforcer:
        _enforcer.append(Enforcer())
    return _enforcer[0]


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
