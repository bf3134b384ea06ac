"""The protocol stream's writer thread: frames leave the event loop, and a large answer holds no small one up.

``transport.Writer`` (with an event loop) hands each turn's frames here. A batch that surely fits the
pipe's free room (``fits``: a pipe's capacity less what the editor has not read yet, less a margin
for partly filled pages) is written at once on the loop — the common case, no thread hand-over on a
tool call's clock. Everything else is written by one thread of its own (``harness-stdout``), from
two lanes:

- ``ordered``: every frame but a large answer, in the order written;
- ``answers``: answers (responses to the editor's requests) of more than ``LARGE`` bytes, in order.

The thread takes the whole ordered lane before each large answer, so thread B's small answer, made
while thread A's 16 MB result waits or is being written, goes out right after the frame being
written (JSON-RPC answers need no order; frames are never interleaved: one ``write_bytes`` at a time,
under the writer's lock). An editor that reads slowly then holds up the thread, not the loop: only
what it has not read waits — up to ``MAX_QUEUED`` bytes; past that the loop waits too (memory stays
bounded, as when every write was the loop's). ``drain`` (before the process exits) waits until
everything is written or the stream is broken (EPIPE: ``Writer.broken``, everything after dropped).
"""

from __future__ import annotations

import collections
import fcntl
import os
import stat
import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

LARGE = 64 * 1024  # an answer longer than this takes the answers lane (it could never fit an idle pipe's room)
MAX_QUEUED = 64 * 1024 * 1024  # bytes waiting for the editor before the loop itself waits
PAGE = 4096
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032  # Linux's (elsewhere they fail: every batch goes to the thread)
_FIONREAD = 0x541B  # Linux's (termios.FIONREAD, without importing termios on the way to the first answer)
PIPE_SIZE = 1024 * 1024  # asked for (the default pipe-max-size) once a large answer goes: 16 wake-ups per 16 MB, not 256


class Outbox:
    """Frames waiting for the protocol fd, and the thread that writes them (started at the first)."""

    def __init__(self, fd: int, write_bytes: Callable[[bytes], None], broken: Callable[[], bool]) -> None:
        self.fd = fd
        self.write_bytes = write_bytes  # one whole frame (or batch) under the writer's lock; EPIPE noted there
        self.broken = broken
        self._cond = threading.Condition(threading.Lock())
        self.ordered: collections.deque[bytes] = collections.deque()
        self.answers: collections.deque[bytes | list[bytes | memoryview]] = collections.deque()  # a list: pieces
        self.queued = 0  # bytes in both lanes and being written by the thread
        self.writing = False  # the thread is in write_bytes
        self._thread: threading.Thread | None = None
        self._grown = False
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            mode = 0
        self.pipe = stat.S_ISFIFO(mode)
        # the pipe's size, read once (only we grow it; an editor that shrank it would have a write of ours
        # wait on the loop until it reads, as every write did before the writer thread)
        self.capacity = 0
        self.regular = stat.S_ISREG(mode)  # a write to a file never waits for a reader

    # -- from the event loop

    def idle(self) -> bool:
        return not self.queued

    def fits(self, size: int) -> bool:
        """Whether a write of ``size`` bytes returns at once: a file, or a pipe with the room for it."""
        if self.regular:
            return True
        if not self.pipe or size > PIPE_SIZE:
            return False
        try:
            if not self.capacity:
                self.capacity = fcntl.fcntl(self.fd, _F_GETPIPE_SZ)
            unread = int.from_bytes(fcntl.ioctl(self.fd, _FIONREAD, b"\0\0\0\0"), sys.byteorder)
        except OSError:
            return False
        # the unread bytes hold at most ceil(unread / PAGE) + 1 pages, ours at most ceil(size / PAGE) + 1
        return size + unread + 3 * PAGE <= self.capacity

    def put(self, data: bytes | list[bytes | memoryview], answer: bool) -> None:
        """``data`` (whole frames, or one frame's pieces) to be written by the thread: an answer over ``LARGE``
        in its own lane."""
        if self.broken():
            return
        size = len(data) if type(data) is bytes else sum(map(len, data))
        if answer and size > LARGE and not self._grown:
            self._grown = True
            if self.pipe:
                try:  # the editor's pipe, larger: a 16 MB answer crosses it in 16 turns, not 256
                    if fcntl.fcntl(self.fd, _F_GETPIPE_SZ) < PIPE_SIZE:
                        fcntl.fcntl(self.fd, _F_SETPIPE_SZ, PIPE_SIZE)
                    self.capacity = 0  # read again at the next fits
                except OSError:  # over the user's pipe-user-pages-soft, or not allowed: as it is
                    pass
        with self._cond:
            while self.queued > MAX_QUEUED and not self.broken():  # the editor is far behind: we wait too
                self._cond.wait(0.5)
            (self.answers if answer and size > LARGE else self.ordered).append(data)
            self.queued += size
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="harness-stdout", daemon=True)
                self._thread.start()
            elif not self.writing:
                self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every frame handed here is written (or the stream broke)."""
        with self._cond:
            while self.queued and not self.broken() and self._thread is not None and self._thread.is_alive():
                self._cond.wait(0.5)

    # -- the thread

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self.ordered and not self.answers:
                    self._cond.wait()
                if self.ordered:  # every small frame (and large non-answer), before the next large answer
                    data = self.ordered[0] if len(self.ordered) == 1 else b"".join(self.ordered)
                    self.ordered.clear()
                else:
                    data = self.answers.popleft()
                self.writing = True
            try:
                self.write_bytes(data)
            finally:
                with self._cond:
                    self.writing = False
                    self.queued -= len(data) if type(data) is bytes else sum(map(len, data))
                    if self.broken():
                        self.ordered.clear()
                        self.answers.clear()
                        self.queued = 0
                    self._cond.notify_all()
