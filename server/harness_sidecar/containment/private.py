"""Private to itself: the sidecar and every Python host make themselves non-dumpable at start.

A non-dumpable process's ``/proc/<pid>/fd/*``, ``/proc/<pid>/mem`` and ``pidfd_getfd`` are refused
to other processes of the same user that lack ``CAP_SYS_PTRACE`` (and its ``/proc`` files become
root's), so an extension cannot write answers into the sidecar's stdin, read the editor-bound pipe
or another host's memory. Root with ``CAP_SYS_PTRACE`` passes this check; Landlock (``landlock``)
is what refuses it there.
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
