"""The step board: where a host announces the steps it begins, in memory the sidecar shares.

A step must be announced before its code runs, so that the sidecar, should the host freeze or
die inside it, blames that step and answers by its stage and deadline (``channel``). Written as a
``step`` frame, that is a ``send`` per step — three or four per tool call, the largest share of a
host's CPU per call — and a frame for the sidecar to read and decode. So a step that carries
nothing (no result, no faults) is written here instead: one 8-byte store into a page the sidecar
maps too, which survives the host's death.

The board is a sealed ``memfd`` (it cannot shrink under the sidecar's mapping: a host cannot make
the sidecar fault) of ``CELLS`` cells, each ``(exchange id << 16) | step index`` or 0 (free).
The host takes a cell for an exchange when it begins its first step and frees it when the
exchange ends; with no cell free, or a step index past 16 bits, it sends frames as before. A
cell is one aligned 8-byte store, which no reader sees half-written.

An exchange that ended with a *plain* outcome — a call already answered (its first observer's
frame carried the result) whose observers raised nothing — leaves its cell at step ``ENDED``
while that outcome's ``done`` frame waits in the host to go out with the next frame: the sidecar
takes the outcome from the board if the host freezes or dies first. Cells are reused first freed,
first taken, and a cell still telling a waiting outcome is not overwritten before it went out.

The sidecar reads the board every ``extensions.sidecar.steps.WATCH_S`` while exchanges are in flight, before it
judges a deadline, when a host asks the user something, when a thread closes and when a host
has died; a step it finds there begins by its own clock then, as a frame's step does when read.
What a host writes here is worth no more than what it writes in a frame: step indices only move
forward within the plan, and a host can only ever misreport its own thread's exchanges.
"""

from __future__ import annotations

import collections
import mmap
import os
from typing import Callable

CELLS = 64
BYTES = CELLS * 8
INDEX_BITS = 16
ENDED = (1 << INDEX_BITS) - 1  # the step index of an exchange that ended with a plain outcome
MAX_INDEX = ENDED - 1


def create() -> tuple[int, memoryview] | None:
    """The sidecar's side: a sealed memfd for a host (to pass to it) and its cells; None where the
    kernel has no memfd or seals (the host then announces every step by frame)."""
    try:
        import fcntl

        fd = os.memfd_create("harness-sidecar-board", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError, ImportError):
        return None
    try:
        os.ftruncate(fd, BYTES)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        cells = memoryview(mmap.mmap(fd, BYTES)).cast("Q")
    except (AttributeError, OSError, ValueError):
        os.close(fd)
        return None
    return fd, cells


def announced(cells: memoryview) -> list[tuple[int, int]]:
    """``(exchange id, step index)`` of every cell in use."""
    return [(value >> INDEX_BITS, value & ENDED) for value in cells.tolist() if value]


class HostBoard:
    """The host's side: cells taken and freed by exchanges, written as steps begin."""

    def __init__(self, fd: int) -> None:
        self.map = mmap.mmap(fd, BYTES)
        self.cells = memoryview(self.map).cast("Q")
        os.close(fd)
        # first freed, first taken: an ENDED cell lasts. No lock: a deque's popleft and append are
        # each atomic (one C call under the GIL), and each cell is in it at most once.
        self.free = collections.deque(range(CELLS))

    def unshare_at_fork(self) -> "Callable[[], None]":
        """What a child forked from the host runs first: the board becomes private memory of its own (mapped
        over the shared one, at the same address), so nothing the child writes reaches the sidecar. Made
        here, in the host, so that the child only calls ``mmap`` (no library lookup after a fork)."""
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        remap = libc.mmap
        remap.restype = ctypes.c_void_p
        remap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        view = ctypes.c_char.from_buffer(self.map)
        address = ctypes.addressof(view)
        del view
        protection = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10  # MAP_FIXED

        def unshare() -> None:
            if remap(address, BYTES, protection, flags, -1, 0) != address:
                os._exit(70)  # the child cannot be kept off the board: it does not live on
        return unshare

    def take(self) -> int:
        """A free cell, or -1 when all are in use."""
        try:
            return self.free.popleft()
        except IndexError:
            return -1

    def give(self, cell: int, keep: bool = False) -> None:
        """``cell`` is free; zeroed unless ``keep`` (it says ENDED until it is taken again)."""
        if not keep:
            self.cells[cell] = 0
        self.free.append(cell)


def attach(argv: list[str]) -> HostBoard | None:
    """The host's board, when the sidecar passed one (the host's third argument: its fd)."""
    if len(argv) < 3:
        return None
    try:
        return HostBoard(int(argv[2]))
    except (ValueError, OSError):
        return None
