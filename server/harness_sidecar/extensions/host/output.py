"""Frames to the sidecar (``Output``), and the way out after a MemoryError (``out_of_memory``)."""

from __future__ import annotations

import _thread
import os
import socket
import threading
from typing import Any

from harness_sidecar.extensions import channel

EXIT_OUT_OF_MEMORY = 3


class _Registered:
    """``len()``: threading's live threads, where it keeps no ``_active`` registry."""

    def __len__(self) -> int:
        return threading.active_count()


_REGISTERED = getattr(threading, "_active", None) or _Registered()  # thread id → Thread; len() is atomic


class Output:
    """Frames to the sidecar, written whole under a lock.

    An *urgent* frame is written at once, with everything written before it. Every step
    announcement is urgent: foreign code runs right after it and may freeze or end this
    process, and the sidecar must have it first (v3 §2; ``channel`` says why).

    A frame that is not urgent (an exchange's outcome, ``done``) waits only while no foreign
    code can run before it is written: it is written by the reading thread, and this process
    has no thread but ours (the reading thread, the monitor, a reader parked for good) — no
    job the reading passed on from, no event loop for coroutines, no thread extension code
    started. Then nothing runs before the reading thread's next step announcement (which
    carries it along: a pipelined call's outcome and the next call's first step share one
    write) or before it flushes to wait on the channel. Otherwise it is written at once.
    An outcome whose exchange's board cell says it ended (``ended``: a plain outcome, which the
    sidecar can take from the board alone) may also wait past a step announced on the board.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.pending: list[bytes] = []
        self.ended: set[int] = set()  # exchanges whose waiting outcome their board cell also tells
        self.must = False  # something waits that no board cell tells: written before foreign code runs
        self.reader: threading.Thread | None = None  # the thread that flushes before it reads
        self.parked = 0  # our threads that wait for ever (a demoted main thread)

    def send(self, tag: str, ident: int, body: Any, urgent: bool = True) -> None:
        self.send_bytes(channel.encode(tag, ident, body), urgent)

    def send_bytes(self, data: bytes, urgent: bool = True, ended: int = 0) -> bool:
        """Write ``data`` now or, if it is not urgent, when the rules above allow; True if it waits.
        ``ended``: the exchange whose board cell tells this outcome (then it may wait longer)."""
        with self.lock:
            self.pending.append(data)
            # Ours: the reader, the monitor, the parked. Counted without threading.active_count()'s lock:
            # _thread._count() counts every thread started (a bare _thread.start_new_thread's too) but
            # the main one; threading's registry has the main thread and threads made outside Python
            # that registered (a thread in its limbo is still being started by one counted here).
            if urgent or threading.current_thread() is not self.reader or \
                    _thread._count() > 1 + self.parked or len(_REGISTERED) > 2 + self.parked:
                self._flush_locked()
                return False
            if ended:
                self.ended.add(ended)
            else:
                self.must = True
            return True

    def flush(self) -> None:
        if self.pending:
            with self.lock:
                self._flush_locked()

    def _flush_locked(self) -> None:
        if not self.pending:
            return
        data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
        self.pending.clear()
        self.ended.clear()
        self.must = False
        try:
            self.sock.sendall(data)
        except OSError:  # the sidecar is gone: nothing to say to anyone
            os._exit(0)


_output: Output | None = None  # the host's, so that what waits in it is written before the process leaves


def install(output: Output) -> Output:
    """Make ``output`` the host's: the one ``out_of_memory`` writes out."""
    global _output
    _output = output
    return output


def out_of_memory() -> None:
    """After a MemoryError nothing in this process can be trusted: leave; the sidecar restarts us."""
    try:
        if _output is not None and _output.lock.acquire(timeout=0.1):
            _output._flush_locked()  # an outcome that waited for the next step still reaches the sidecar
        os.write(2, b"extension host: out of memory (limits.hostMemoryMb); exiting\n")
    finally:
        os._exit(EXIT_OUT_OF_MEMORY)
