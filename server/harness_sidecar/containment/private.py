"""Private to itself: the sidecar and every Python host make themselves non-dumpable at start.

A non-dumpable process's ``/proc/<pid>/fd/*``, ``/proc/<pid>/mem`` and ``pidfd_getfd`` are refused
to other processes of the same user that lack ``CAP_SYS_PTRACE`` (and its ``/proc`` files become
root's), so an extension cannot write answers into the sidecar's stdin, read the editor-bound pipe
or another host's memory. Root with ``CAP_SYS_PTRACE`` passes this check; Landlock (``landlock``)
is what refuses it there.

A host run by root also gives up ``CAP_SYS_ADMIN`` before any extension code (``drop_sys_admin``):
with it, a process holding a copy of the host's channel could claim the host's pid in
``SCM_CREDENTIALS`` and answer a step as the host (protocol-v4 §2, "Only the host answers").
"""

from __future__ import annotations

import sys
from typing import Any

_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3


def libc_prctl() -> Any:
    """libc's ``prctl``, typed, for every fence that needs it (None where there is none: not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def make_private() -> bool:
    """Make this process non-dumpable; whether it now is."""
    prctl = libc_prctl()
    if prctl is None:
        return False
    prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    return prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def is_private() -> bool:
    prctl = libc_prctl()
    return prctl is not None and prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAP_SYS_ADMIN = 21
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def drop_sys_admin() -> bool:
    """Give up ``CAP_SYS_ADMIN`` for good: from the bounding set (so no exec regains it) and from the
    effective, permitted and inheritable sets; ambient capabilities cleared. Whether this process is
    now without it (also ``True`` for a process that never had it, e.g. an ordinary user's)."""
    prctl = libc_prctl()
    if prctl is None:
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(_LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return False
    prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    prctl(_PR_CAPBSET_DROP, _CAP_SYS_ADMIN, 0, 0, 0)  # EPERM without CAP_SETPCAP: then it was never ours
    bit = 1 << _CAP_SYS_ADMIN  # (in the first 32 capabilities: data[0])
    if (data[0].effective | data[0].permitted | data[0].inheritable) & bit:
        data[0].effective &= ~bit
        data[0].permitted &= ~bit
        data[0].inheritable &= ~bit
        header.version, header.pid = _LINUX_CAPABILITY_VERSION_3, 0
        if libc.capset(ctypes.byref(header), data) != 0:
            return False
    header.version, header.pid = _LINUX_CAPABILITY_VERSION_3, 0
    check = (Data * 2)()
    return libc.capget(ctypes.byref(header), check) == 0 and not check[0].effective & bit \
        and not check[0].permitted & bit
