"""The sidecar's stderr: one writer that never blocks the sidecar.

Lines from extension hosts, MCP servers and command hooks (each with its prefix), and the
sidecar's own log, are queued here and written to fd 2 by one daemon thread. An editor that
does not read the sidecar's stderr fills the pipe; the writer thread then waits, the queue fills
up to ``MAX_QUEUED_BYTES``, and further lines are dropped and counted per thread (``owner``)
instead of blocking the event loop. ``on_dropped(owner, count)`` is told at the first drop and
then at most once a minute per owner (``thread/diagnostic`` kind ``stderr_dropped``).

Before the sidecar exits, ``flush(timeout)`` gives the writer a moment to write what is queued.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from collections.abc import Callable

MAX_QUEUED_BYTES = 1 << 20
MAX_LINE_BYTES = 65536  # a longer line is cut, and says so
REPORT_EVERY_S = 60.0


class Sink:
    """A bounded queue of bytes for one fd, written by a daemon thread."""

    def __init__(self, fd: int = 2, limit: int = MAX_QUEUED_BYTES) -> None:
        self.fd = fd
        self.limit = limit
        self.queued = 0
        self.on_dropped: Callable[[str, int], None] | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._writing = False
        self._thread: threading.Thread | None = None
        self._dropped: dict[str, int] = {}  # owner → lines dropped since the last report
        self._reported: dict[str, float] = {}  # owner → when the last report went out

    def write(self, data: bytes, owner: str = "") -> bool:
        """Queue ``data`` (whole lines); False when it was dropped because the queue is full."""
        if not data:
            return True
        with self._lock:
            if self.queued + len(data) > self.limit:
                dropped = True
            else:
                dropped = False
                self._chunks.append(data)
                self.queued += len(data)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="stderr", daemon=True)
                    self._thread.start()
                self._ready.notify()
        if dropped:
            self._drop(owner, data.count(b"\n") or 1)
        return not dropped

    def line(self, prefix: bytes, line: bytes, owner: str = "") -> bool:
        """Queue one line with its prefix, cut at ``MAX_LINE_BYTES``."""
        if len(line) > MAX_LINE_BYTES:
            line = line[:MAX_LINE_BYTES] + b" [cut: %d bytes]" % len(line)
        return self.write(prefix + line + b"\n", owner)

    def _drop(self, owner: str, lines: int) -> None:
        self._dropped[owner] = self._dropped.get(owner, 0) + lines
        now = time.monotonic()
        last = self._reported.get(owner)
        if last is not None and now - last < REPORT_EVERY_S:
            return
        self._reported[owner] = now
        count = self._dropped.pop(owner)
        if self.on_dropped is not None and owner:
            self.on_dropped(owner, count)

    def dropped_since_report(self, owner: str) -> int:
        """Lines of ``owner`` dropped and not yet reported."""
        return self._dropped.get(owner, 0)

    def forget(self, owner: str) -> None:
        """``owner`` (a thread) is gone: its counts go with it."""
        self._dropped.pop(owner, None)
        self._reported.pop(owner, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._chunks:
                    self._writing = False
                    self._idle.notify_all()
                    self._ready.wait()
                data = b"".join(self._chunks)
                self._chunks.clear()
                self._writing = True
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                pass  # stderr closed: nothing more can be said there
            with self._lock:
                self.queued -= len(data)

    def flush(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for what is queued to be written."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._chunks or self._writing:
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None:
                    return
                self._idle.wait(left)


class SinkStream:
    """A text stream on a ``Sink`` for ``sys.stderr`` and logging: writes never block."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._partial = ""

    def write(self, text: str) -> int:
        if not text:
            return 0
        text = self._partial + text
        head, newline, self._partial = text.rpartition("\n")
        if newline:
            self.sink.write((head + "\n").encode("utf-8", "replace"))
        if len(self._partial) > MAX_LINE_BYTES:
            self.sink.write(self._partial.encode("utf-8", "replace") + b"\n")
            self._partial = ""
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self.sink.write(self._partial.encode("utf-8", "replace"))
            self._partial = ""

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.sink.fd

    @property
    def encoding(self) -> str:
        return "utf-8"


SINK = Sink()
