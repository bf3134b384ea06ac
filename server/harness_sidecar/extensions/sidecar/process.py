"""One extension host process from the sidecar's side (``HostProcess``: spawned with its channel, its
output forwarded, its exit noticed, what it writes read without ever blocking the event loop), and the
spare started ahead of need (``Spares``). Nothing here imports or runs extension code.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from typing import Any, Callable

from harness_sidecar.base.stderr import SINK
from harness_sidecar.containment import launcher, lifetimes, pythonpath
from harness_sidecar.extensions import board, channel

logger = logging.getLogger("harness_sidecar.extensions.sidecar.supervisor")

FRAME_SLACK = 1 << 20  # a frame's own fields beside the largest result it may carry
READS_PER_TURN = 8  # channel reads of up to 1 MiB each per event-loop turn
DRAIN_READS = 128  # and before a deadline is judged or after an exit (a host still flooding is its own fault)
CLOSE_GRACE_S = 2.0
# What every host's channel is read into (the event loop's thread is the only reader): ``recv`` of
# 1 MiB allocated, shrank and freed a fresh 1 MiB buffer per read — three syscalls (mmap, mremap,
# munmap) beside each recv, several per call when calls are pipelined.
_READ_BUFFER = bytearray(1 << 20)
_READ_VIEW = memoryview(_READ_BUFFER)


def _loop_time(loop: asyncio.AbstractEventLoop, monotonic_at: float) -> float:
    """A ``time.monotonic()`` instant on the event loop's clock (the same clock on Linux)."""
    return monotonic_at - time.monotonic() + loop.time()


GATHERED = 256  # at most this many frames and lines go to one sendmsg as they are (IOV_MAX is 1024)


class HostProcess:
    """One host process: spawned with its channel; its output forwarded; its exit noticed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        ours, theirs = socket.socketpair()
        # Only the host answers (v4 §2): every write on the channel comes with its writer's pid, and what
        # another process holding a copy of the host's end writes (a child its code forked) is dropped.
        self._peer_checked = _pass_credentials(ours)
        env = dict(os.environ)
        env["MALLOC_ARENA_MAX"] = "2"  # per-thread malloc arenas would eat an address-space limit
        env.pop("PYTHONSTARTUP", None)
        # No workspace code ahead of the standard library: -P, and no relative or workspace PYTHONPATH entry
        path = pythonpath.host_pythonpath(env.pop("PYTHONPATH", None), os.getcwd())
        if path is not None:
            env["PYTHONPATH"] = path
        slot = lifetimes.get().host_slot("")  # a spare: its own group, which the thread taking it takes
        if slot is not None:
            env[lifetimes.ENTER] = slot
        argv = [sys.executable, "-P", "-m", "harness_sidecar.extensions.host.main", str(theirs.fileno()),
                str(os.getpid())]
        shared = board.create()  # the step board (``board``): where the host announces the steps it begins
        passed = (theirs.fileno(),)
        self.board: memoryview | None = None
        if shared is not None:
            argv.append(str(shared[0]))
            passed += (shared[0],)
            self.board = shared[1]
        try:
            self.proc = launcher.popen(launcher.Launch(argv, launcher.HOST, env=env, pass_fds=passed),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finally:
            theirs.close()
            if shared is not None:
                os.close(shared[0])
        self.pid = self.proc.pid
        self.owner = ""  # a spare until a thread takes it (``adopt``)
        lifetimes.get().started_process(self.pid, launcher.HOST, self.owner)
        self.sock = ours
        ours.setblocking(False)
        self.label = f"extension host {self.pid}"
        self._answer_limit = channel.MAX_FRAME_BYTES  # set with the thread's --max-result-bytes (frame_limit)
        self.owner = ""  # the thread it serves, once a thread took it (its dropped stderr is counted there)
        self.ready: asyncio.Future = loop.create_future()
        self.on_frame: Callable[[str, int, Any], None] | None = None
        self.on_exit: Callable[["HostProcess"], None] | None = None
        self.exited = False
        self.returncode: int | None = None
        self._splitter = channel.LineSplitter()
        self._out: list[bytes | memoryview] = []
        self._flush_scheduled = False
        self._writer = False
        self._pipes: dict[int, bytearray] = {}
        self._foreigners: set[int | None] = set()
        loop.add_reader(ours.fileno(), self._readable)
        for pipe in (self.proc.stdout, self.proc.stderr):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
            self._pipes[pipe.fileno()] = bytearray()
            loop.add_reader(pipe.fileno(), self._pipe_readable, pipe.fileno())
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(self.pid)
            loop.add_reader(self._pidfd, self._reap)
        except (AttributeError, OSError):  # no pidfd: EOF on the channel tells us instead
            self._pidfd = None

    # -- sending

    def send(self, tag: str, ident: int, body: Any) -> None:
        if self.exited:
            return
        self._out.append(channel.encode(tag, ident, body))
        if not self._flush_scheduled and not self._writer:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)

    def send_lines(self, lines: list[bytes]) -> None:
        """Raw lines after a frame that announces them (``init``'s ``stateLines``): each a compact JSON text,
        which holds no newline byte. Joined with the frames around them at the next flush, never encoded."""
        if self.exited:
            return
        for line in lines:
            self._out += (line, b"\n")
        if not self._flush_scheduled and not self._writer:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if not out or self.exited:
            return
        if len(out) > GATHERED:
            out[:] = [b"".join(out)]
        try:  # gathered by the kernel as they are: no join of a resume's 100s of KB of state lines
            sent = self.sock.sendmsg(out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            return  # the host is gone; its exit is noticed elsewhere
        done = 0
        while done < len(out) and sent >= len(out[done]):
            sent -= len(out[done])
            done += 1
        del out[:done]
        if out:
            if sent:
                out[0] = memoryview(out[0])[sent:]  # the rest of a part the socket took the start of
            if not self._writer:
                self._writer = True
                self.loop.add_writer(self.sock.fileno(), self._writable)

    def _writable(self) -> None:
        self.loop.remove_writer(self.sock.fileno())
        self._writer = False
        self.flush()

    # -- receiving

    def frame_limit(self, max_result_bytes: int) -> None:
        """Frames carrying a result (step, done, loaded) longer than any answer may be are refused unparsed;
        a notification or question may be longer (its text is cut by the host to --max-result-bytes
        characters, which JSON escaping can double), and the sidecar cuts it to fit a line."""
        self._answer_limit = max_result_bytes + FRAME_SLACK
        self._splitter.limit = min(4 * max_result_bytes + FRAME_SLACK, channel.MAX_FRAME_BYTES)

    def _readable(self, all_of_it: bool = False) -> bool:
        """Read and handle what the host wrote. On the loop's wake-up a short read is all there was
        (no second ``recv`` to learn so: a wake-up per step frame is the common case), and a turn reads
        at most ``READS_PER_TURN`` MiB, so a flooding host cannot starve the other threads; ``all_of_it``
        reads until nothing is left (before a deadline is judged, after an exit), at most ``DRAIN_READS`` MiB."""
        for _ in range(DRAIN_READS if all_of_it else READS_PER_TURN):
            try:
                if self._peer_checked:
                    # one writer's bytes per read: the kernel never joins writes of different processes
                    size, ancillary, _flags, _address = self.sock.recvmsg_into((_READ_BUFFER,), _CREDENTIALS_SPACE)
                    if size and _writer(ancillary) != self.pid:
                        self._foreign(_writer(ancillary))
                        continue
                else:
                    size = self.sock.recv_into(_READ_BUFFER)
            except (BlockingIOError, InterruptedError):
                return True
            except OSError:
                size = 0
            data = _READ_VIEW[:size].tobytes()
            if not data:
                self.loop.remove_reader(self.sock.fileno())
                self._channel_closed()
                return True
            for line in self._splitter.feed(data):
                if isinstance(line, channel.TooLong) or (len(line) > self._answer_limit and _carries_result(line)) \
                        or channel.too_many_values(line, self._splitter.commas_of(line)) is not None:  # cheap first
                    head = channel.peek_id(line.head if isinstance(line, channel.TooLong) else line)
                    if self.on_frame is not None and head is not None:
                        self.on_frame("tooLarge", head[1], head[0])  # body: the refused frame's tag
                    continue
                try:
                    tag, ident, body = channel.decode(line)
                except channel.FrameError as exc:
                    logger.error("%s broke the channel (%s); killing it", self.label, exc)
                    self.kill()
                    return True
                if tag == channel.READY and not self.ready.done():
                    self.ready.set_result(body)
                elif self.on_frame is not None:
                    self.on_frame(tag, ident, body)
            if len(data) < 1 << 20 and not all_of_it:
                return True
        return False  # the turn's share is read; more may wait

    def _foreign(self, pid: int | None) -> None:
        """Bytes on the channel that the host did not write: dropped, unread (said once per writer)."""
        if pid not in self._foreigners:
            self._foreigners.add(pid)
            logger.warning("%s: process %s, which is not the host, wrote on its channel (a child its code started "
                           "holds a copy of it); what it wrote is dropped: only the host answers", self.label, pid)

    def drain(self) -> None:
        """Read whatever the host has written: called before a deadline is judged."""
        if not self.exited:
            self._readable(True)

    def catch_up(self) -> bool:
        """Read what the host has written, at most a turn's share; True if nothing is left unread."""
        return self.exited or self._readable()

    def _pipe_readable(self, fd: int) -> None:
        buf = self._pipes[fd]
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        prefix = f"harness-sidecar {self.label}: ".encode()
        if not data:
            self.loop.remove_reader(fd)
            if buf:
                SINK.line(prefix, bytes(buf), self.owner)
            buf.clear()
            return
        buf += data
        *lines, rest = buf.split(b"\n")
        buf[:] = rest[-65536:]
        for line in lines:
            SINK.line(prefix, line, self.owner)

    # -- the end

    def _channel_closed(self) -> None:
        if self._pidfd is None:
            self.loop.call_later(0.05, self._poll_exit)

    def _poll_exit(self) -> None:
        if self.proc.poll() is None:
            self.loop.call_later(0.05, self._poll_exit)
        else:
            self._exited()

    def _reap(self) -> None:
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self.proc.wait()
        self._exited()

    def adopt(self, owner: str) -> None:
        """A thread takes this (spare) host: it moves into the thread's lifetime group and limits."""
        if owner != self.owner:
            lifetimes.get().adopt(self.pid, launcher.HOST, owner)
            self.owner = owner

    def _exited(self) -> None:
        if self.exited:
            return
        try:
            self._readable(True)  # what it wrote before it died counts (a result, the step it was in)
        except (ValueError, OSError):
            pass
        self.exited = True
        self.returncode = self.proc.returncode
        lifetimes.get().end_process(self.pid, launcher.HOST, self.owner)  # what it started ends with it
        for fd in list(self._pipes):
            self._pipe_readable(fd)  # what it wrote last
        try:
            self.loop.remove_reader(self.sock.fileno())
        except (ValueError, OSError):
            pass
        if self._writer:
            self.loop.remove_writer(self.sock.fileno())
        self.sock.close()
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(f"{self.label} exited before it was ready"))
            self.ready.exception()  # a spare nobody took: no "exception never retrieved" in the log
        if self.on_exit is not None:
            self.on_exit(self)

    def kill(self) -> None:
        """SIGKILL the host and everything it started (its own process group)."""
        if self.exited:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            try:
                self.proc.kill()
            except OSError:
                pass

    def close(self) -> None:
        """Ask the host to exit; kill it if it has not after ``CLOSE_GRACE_S``."""
        if self.exited:
            return
        self.send(channel.CLOSE, 0, None)
        self.flush()
        self.loop.call_later(CLOSE_GRACE_S, self.kill)


_UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid
_CREDENTIALS_SPACE = socket.CMSG_SPACE(_UCRED.size) if hasattr(socket, "SO_PASSCRED") else 0


def _pass_credentials(sock: socket.socket) -> bool:
    """Ask the kernel for the writer's credentials with every read of ``sock`` (Linux: SO_PASSCRED)."""
    if not _CREDENTIALS_SPACE:
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    except OSError:
        return False
    return True


def _writer(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The pid of the process that wrote what one read returned (None: the kernel said nothing)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= _UCRED.size:
            return _UCRED.unpack_from(data)[0]
    return None


def _carries_result(line: bytes) -> bool:
    head = channel.peek_id(line)
    return head is None or head[0] not in (channel.NOTIFY, channel.UI)


class Spares:
    """One host process started ahead of need (no extension code in it), handed to the next thread."""

    def __init__(self) -> None:
        self.spare: HostProcess | None = None
        self.enabled = True

    def warm(self) -> None:
        if self.enabled and (self.spare is None or self.spare.exited):
            try:
                self.spare = HostProcess(asyncio.get_running_loop())
            except OSError as exc:
                logger.warning("cannot start a spare extension host: %s", exc)
                self.spare = None

    async def take(self) -> HostProcess:
        loop = asyncio.get_running_loop()
        process = self.spare if self.spare is not None and not self.spare.exited else None
        self.spare = None
        if process is None:
            process = HostProcess(loop)
        loop.call_soon(self.warm)  # the next thread's host starts now, off its clock
        await process.ready
        return process

    def close(self) -> None:
        self.enabled = False
        if self.spare is not None:
            self.spare.kill()
            self.spare = None


