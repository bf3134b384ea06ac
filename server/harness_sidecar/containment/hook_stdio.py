"""A command hook's stdin, stdout and stderr as the sidecar holds them, for the hooks a zygote starts.

``HookStdio`` owns the pipes of one zygote's hooks: a start's pipes, made as its request is sent (or a
spare set of three, made while the loop is idle, at the zygote's start and after a hook's answer), and,
once the zygote has the start, our ends handed to the hook's transport as ``_ReadPipe``/``_WritePipe``
(read and written straight from the loop's callbacks) with its given stdin written (what fits the pipe
now; the rest as it drains). It never touches the control socket, the start queue or the processes:
``zygote.Zygote`` decides when a start is sent and tells it; the transport (``zygote._Transport``, used
here only through ``loop``, ``protocol``, ``pipes`` and ``finish``) owns the pipes once attached.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from typing import Any

logger = logging.getLogger(__name__)

SPARE_DELAY_S = 0.001  # a hook's answer is written well within this after its exit is read: the next pipes then


def _pipe(n: int) -> tuple[int, int]:
    """A pipe for the hook's fd ``n``: (our end, non-blocking; the hook's end, blocking as any program
    expects it)."""
    read, write = os.pipe2(os.O_CLOEXEC)  # both blocking, then ours not: one fcntl
    ours, theirs = (write, read) if n == 0 else (read, write)
    try:
        fcntl.fcntl(ours, fcntl.F_SETFL, os.O_NONBLOCK)
    except OSError:
        os.close(read)
        os.close(write)
        raise
    return ours, theirs


def _spare_pipes() -> dict[int, int] | None:
    """Three pipes for the next command hook (None where they cannot be made now: it makes its own)."""
    made: dict[int, int] = {}
    try:
        for n in range(3):
            made[n], made[-1 - n] = _pipe(n)
    except OSError:
        for fd in made.values():
            os.close(fd)
        return None
    return made


def _close_all(ours: dict[int, int] | None, theirs: list[int] | None) -> None:
    for fd in [*(ours or {}).values(), *(theirs or [])]:
        try:
            os.close(fd)
        except OSError:
            pass


class _ReadPipe(asyncio.ReadTransport):
    """The sidecar's end of a hook's stdout or stderr."""

    def __init__(self, transport: Any, number: int, fd: int) -> None:
        super().__init__()
        self.transport, self.number, self.fd = transport, number, fd
        self.closed = False
        self.paused = False
        transport.loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self.transport.protocol.pipe_data_received(self.number, data)
        else:
            self.close()

    def pause_reading(self) -> None:
        if not self.closed and not self.paused:
            self.paused = True
            self.transport.loop.remove_reader(self.fd)

    def resume_reading(self) -> None:
        if not self.closed and self.paused:
            self.paused = False
            self.transport.loop.add_reader(self.fd, self._readable)

    def is_reading(self) -> bool:
        return not self.closed and not self.paused

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.transport.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.transport.protocol.pipe_connection_lost(self.number, None)
        self.transport.finish()


class _WritePipe(asyncio.WriteTransport):
    """The sidecar's end of a hook's stdin: what fits the pipe is written at once, the rest when it drains."""

    def __init__(self, transport: Any, fd: int) -> None:
        super().__init__()
        self.transport, self.fd = transport, fd
        self.buffer = bytearray()
        self.eof = False
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed or self.eof:
            raise RuntimeError("the hook's stdin is closed")
        if not self.buffer:
            try:
                data = data[os.write(self.fd, data):]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:  # the hook closed its stdin: its business
                self.close()
                return
            if not data:
                return
            self.transport.loop.add_writer(self.fd, self._writable)
        self.buffer += data

    def _writable(self) -> None:
        try:
            del self.buffer[:os.write(self.fd, self.buffer)]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        if not self.buffer:
            self.transport.loop.remove_writer(self.fd)
            if self.eof:
                self.close()

    def write_eof(self) -> None:
        self.eof = True
        if not self.buffer:
            self.close()

    def can_write_eof(self) -> bool:
        return True

    def get_write_buffer_size(self) -> int:
        return len(self.buffer)

    def is_closing(self) -> bool:
        return self.closed or self.eof

    def abort(self) -> None:
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.transport.loop.remove_writer(self.fd)
        os.close(self.fd)
        self.transport.protocol.pipe_connection_lost(0, None)
        self.transport.finish()


class HookStdio:
    """The pipes of one zygote's hooks (see the module's docstring): the spare set, and each start's."""

    def __init__(self, owner: str) -> None:
        self.owner = owner  # the thread, for what is logged
        # a command hook's stdin, stdout and stderr pipes, made while the loop is idle (at the zygote's start,
        # and after a hook's answer): {n: our end, -1-n: the hook's end}
        self.spare: dict[int, int] | None = None
        self.spare_timer: asyncio.TimerHandle | None = None
        self.closed = False

    def make_spare(self) -> None:
        self.spare_timer = None
        if self.spare is None and not self.closed:
            self.spare = _spare_pipes()


    def take(self, start: Any) -> tuple[dict[int, int], list[int]]:
        """Our ends and the hook's of ``start``'s pipes (a command hook's three: the spare ones, if made)."""
        spare = self.spare if start.given is not None and start.pipes == (0, 1, 2) else None
        if spare is not None:  # a command hook's three pipes, made while the loop was idle
            self.spare = None
            theirs = [spare.pop(-1 - n) for n in range(3)]
            return spare, theirs
        ours: dict[int, int] = {}
        theirs = []
        try:
            for n in start.pipes:
                ours[n], end = _pipe(n)
                theirs.append(end)
        except OSError:
            _close_all(ours, theirs)
            raise
        return ours, theirs

    def attach(self, start: Any) -> None:
        """The zygote has ``start``: its stdin written (what fits; the rest as the pipe drains), its pipes
        the transport's — made while the zygote starts the hook (off the hook's clock)."""
        transport, ours, given = start.transport, start.ours or {}, start.given
        start.ours = None
        if callable(given):
            try:
                given = given()
            except Exception as exc:  # the payload could not be made: the hook gets EOF
                logger.warning("the stdin of a command hook of %s could not be made: %s", self.owner, exc)
                given = b""
        unwritten = b""  # what of a given stdin did not fit the pipe
        if given is not None and 0 in ours:  # what fits, now
            try:
                unwritten = given[os.write(ours[0], given):]
            except BlockingIOError:
                unwritten = given
            except OSError:  # the hook's end is gone (its start failed, or it closed it): nothing to give
                unwritten = b""
            if not unwritten:  # all of it: nothing of ours left to watch
                os.close(ours.pop(0))
        for n, fd in ours.items():
            if n == 0:
                pipe = transport.pipes[0] = _WritePipe(transport, fd)
                if given is not None:
                    pipe.write(unwritten)
                    pipe.write_eof()
            else:
                transport.pipes[n] = _ReadPipe(transport, n, fd)

    def close(self) -> None:
        """The zygote has ended: the spare pipes close and no more are made."""
        self.closed = True
        if self.spare_timer is not None:
            self.spare_timer.cancel()
            self.spare_timer = None
        if self.spare is not None:
            for fd in self.spare.values():
                os.close(fd)
            self.spare = None
