"""The sidecar's side of the extension host: processes, deadlines, crashes and restarts.

``HostProcess`` is one host OS process and its channel (non-blocking, on the sidecar's event
loop: no thread of ours waits on a host). ``Spares`` keeps one host started ahead, with no
extension code in it, so a thread does not pay a cold Python start on the editor's clock.
``ExtensionHost`` is a thread's host: it loads the thread's extensions into a process, runs
exchanges (tool calls, events, commands) with every step stamped and its deadline kept by
the sidecar's clock, ends a host whose step still runs ``hostGraceMs`` after its deadline,
answers in-flight exchanges when a host dies, and restarts it on the next need — at most 3
exits in 5 minutes.
Nothing here imports or runs extension code.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import itertools
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.containment import launcher, lifetimes, pythonpath
from harness_sidecar.extensions import board, channel
from harness_sidecar.hooks.python import AFTER, HookFault
from harness_sidecar.base.stderr import SINK

logger = logging.getLogger(__name__)

WATCH_S = 0.01  # how often in-flight steps are checked against their deadlines
MAX_EXITS = 3
EXIT_WINDOW_S = 300.0
CLOSE_GRACE_S = 2.0
FRAME_SLACK = 1 << 20  # a frame's own fields beside the largest result it may carry
READS_PER_TURN = 8  # channel reads of up to 1 MiB each per event-loop turn
ENDED_KEPT = 256  # ended exchanges whose steps' extensions are remembered (a ctx used after its handler)
# What a host may relay to the editor (labelled by the sidecar), and the diagnostics its own code reports.
RELAYED = frozenset(("ui/notify", "ui/status", "chat/send", "thread/diagnostic"))
HOST_DIAGNOSTICS = frozenset(("handler_return_ignored", "ui_after_handler"))
DRAIN_READS = 128  # and before a deadline is judged or after an exit (a host still flooding is its own fault)


# What every host's channel is read into (the event loop's thread is the only reader): ``recv`` of
# 1 MiB allocated, shrank and freed a fresh 1 MiB buffer per read — three syscalls (mmap, mremap,
# munmap) beside each recv, several per call when calls are pipelined.
_READ_BUFFER = bytearray(1 << 20)
_READ_VIEW = memoryview(_READ_BUFFER)


def _loop_time(loop: asyncio.AbstractEventLoop, monotonic_at: float) -> float:
    """A ``time.monotonic()`` instant on the event loop's clock (the same clock on Linux)."""
    return monotonic_at - time.monotonic() + loop.time()


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
        self._out: list[bytes] = []
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

    def flush(self) -> None:
        self._flush_scheduled = False
        if not self._out or self.exited:
            return
        data = b"".join(self._out)
        self._out.clear()
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            return  # the host is gone; its exit is noticed elsewhere
        if sent < len(data):
            self._out.insert(0, data[sent:])
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
                        or channel.too_many_values(line) is not None:  # the cheap test first
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


@dataclass
class StepPlan:
    """What the sidecar knows of a step, to judge it and to answer for it."""

    kind: str  # tool_call | core | tool_result_transform | tool_result | <event name> | command | load
    extension_id: str | None
    timeout: float


@dataclass
class Stopped:
    """An exchange the sidecar answered for: the step it was in, and how it ended."""

    step: int
    how: str  # timeout | crash | too_large | closed
    carry: Any = None  # the last result the host reported (a call's result before its observers)
    faults: list[Any] = field(default_factory=list)  # faults the host reported before it stopped
    started: bool = True  # False: the host never began the exchange (it was busy, frozen or died before)


class Rest:
    """The end of an answered call's exchange (its observers): an ``asyncio.Future``'s ``done``,
    ``set_result`` and ``add_done_callback``, with the callbacks run at once when it resolves (on
    the event loop, as the host's frames are read) — no future and no loop turn more per call."""

    __slots__ = ("_value", "_done", "_callbacks")

    def __init__(self) -> None:
        self._value: Any = None
        self._done = False
        self._callbacks: list[Callable[["Rest"], None]] = []

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return None

    def result(self) -> Any:
        return self._value

    def set_result(self, value: Any) -> None:
        if self._done:
            return
        self._value, self._done = value, True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            self._run(callback)

    def add_done_callback(self, callback: Callable[["Rest"], None]) -> None:
        if self._done:
            self._run(callback)
        else:
            self._callbacks.append(callback)

    def _run(self, callback: Callable[["Rest"], None]) -> None:
        try:
            callback(self)
        except Exception:  # noqa: BLE001 - as the event loop would: logged, the reading goes on
            logger.exception("a callback of an answered call's end failed")


@dataclass
class Answered:
    """A call answered before its exchange ended: the observers started with this final result.

    ``rest`` resolves to the exchange's end (the host's report, or a ``Stopped``): the
    observers' faults, reported after the answer; nothing in it changes the answer.
    """

    result: Any
    faults: list[Any]
    rest: Rest


class Pending:
    """An exchange in flight: the step the host last announced and its deadline (by the sidecar's clock)."""

    __slots__ = ("ident", "tag", "plan", "first", "future", "step", "deadline", "shift", "paused", "paused_at",
                 "carry", "faults", "ui", "_core", "closing", "started")

    def __init__(self, ident: int, tag: str, plan: list[StepPlan], first: int, future: "asyncio.Future | Rest",
                 deadline: float) -> None:
        self.ident = ident
        self.tag = tag
        self.plan = plan
        self.first = first
        self.future = future
        self.step = first
        self.deadline = deadline
        self.shift = 0.0  # user time granted to the current step
        self.paused = 0  # ui requests of the current step waiting for the user
        self.paused_at = 0.0
        self.carry: Any = None
        self.faults: list[Any] = []
        self.ui: set[int] = set()
        self._core: int | None = -1  # a call's core index in the plan (-1: not looked up yet)
        self.closing = False  # thread/close asked the host to drop this call unless its core began
        self.started = False  # the host announced the first step (until then the deadline runs from the send)

    @property
    def core(self) -> int | None:
        """A call's core index in the plan (None: not a call, or none), looked up when first needed."""
        if self._core == -1:
            self._core = None
            if self.tag == channel.CALL:
                for index, step in enumerate(self.plan):
                    if step.kind == "core":
                        self._core = index
                        break
        return self._core

    def limit(self) -> float:
        """When the sidecar answers for the current step, unless the host reports first."""
        return self.deadline + self.shift + channel.MARGIN_S


class HostLied(Exception):
    """The host's report does not have the shape the channel defines: the host is killed."""


class HostUnavailable(Exception):
    """The thread's host cannot run (3 exits in 5 minutes, or it would not start)."""


Ask = Callable[[str, dict[str, Any], float], Any]  # (method, params, timeout_s) → awaitable answer


class ExtensionHost:
    """A thread's extension host: load, exchanges under the sidecar's deadlines, crashes, restarts."""

    def __init__(self, thread_id: str, spares: Spares, init: dict[str, Any], grace_s: float,
                 on_diagnostic: Callable[[dict[str, Any]], None], ask: Ask,
                 notify: Callable[[str, dict[str, Any]], None], ui_timeout_s: float) -> None:
        self.thread_id = thread_id
        self.spares = spares
        self.init = init
        self.grace_s = grace_s
        self.on_diagnostic = on_diagnostic
        self.ask = ask
        self.notify = notify
        self.ui_timeout_s = ui_timeout_s
        self.process: HostProcess | None = None
        self.pending: dict[int, Pending] = {}
        self._ids = itertools.count(1)
        self.exits: collections.deque[float] = collections.deque()
        self.failed = False
        self.failure = ""  # why the host was given up
        self.closed = False
        self._watchdog: asyncio.TimerHandle | None = None
        self._watch_at = 0.0
        self._board_timer: asyncio.TimerHandle | None = None  # reads the step board while exchanges are in flight
        self.loop = asyncio.get_running_loop()  # made in thread/start, on the loop; looked up once
        self._ui_tasks: dict[int, asyncio.Task] = {}
        self.loads: list[dict[str, Any]] = []  # the committed extensions' load bodies, for a restart
        self.reports: dict[str, Any] = {}  # what each registered when first loaded (a restart must match)
        self.committed: list[str] = []
        self.schemas: dict[str, Any] = {}
        self._starting: asyncio.Future | None = None
        self.loading = False
        self.closing = False  # thread/close: calls whose core has not begun are answered blocked "closed"
        self.overrun: dict[int, float] = {}  # exchange answered for, whose step still runs → when its host is ended
        self.ended: dict[int, tuple[list[StepPlan], int]] = {}  # the last exchanges that ended: plan, last step

    # -- the process

    async def _attach(self) -> HostProcess:
        process = await self.spares.take()
        process.adopt(self.thread_id)
        process.label = f"extension host of {self.thread_id}"
        # No answer may be longer than --max-result-bytes: a longer frame is refused before it is parsed.
        process.frame_limit(self.init.get("maxResultBytes", channel.MAX_FRAME_BYTES))
        process.owner = self.thread_id
        process.on_frame = self._frame
        process.on_exit = self._exit
        process.send(channel.INIT, 0, self.init)
        self.process = process
        return process

    @property
    def running(self) -> bool:
        """A live host process with the committed extensions: no need to ``ensure()``."""
        return self.process is not None and not self.process.exited and not self.failed and not self.closed

    async def ensure(self) -> None:
        """A running host with the committed extensions; restart one that died. Raises ``HostUnavailable``.

        A restart imports the same bytes and runs ``activate`` again (state starts empty). If an
        extension then fails, or registers other tools, hooks or commands than it did at
        thread/start, the thread's policy can no longer be what the editor trusted: the host is
        given up (every call blocked), as after 3 exits.
        """
        if self.failed:
            raise HostUnavailable("the extension host exited 3 times within 5 minutes, or its extensions "
                                  "could not be loaded again")
        if self.closed:
            raise HostUnavailable("the thread is closing")
        if self.process is not None and not self.process.exited:
            return
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return await self.ensure()
        self._starting = self.loop.create_future()
        try:
            try:
                await self._attach()
            except (ConnectionError, OSError) as exc:
                self._count_exit()
                raise HostUnavailable(f"the extension host could not be started: {exc}") from None
            for body in self.loads:  # a restart: the same bytes, activate again, state starts empty
                report = await self.load(body, restart=True)
                if not isinstance(report, dict) or _registered(report) != self.reports.get(body["id"]):
                    self._give_up(f"extension '{body['id']}' did not register the same tools, hooks and commands "
                                  f"when its host was started again")
                    raise HostUnavailable(f"extension '{body['id']}' could not be loaded again")
            self.commit(self.committed)
            self.on_diagnostic({"threadId": self.thread_id, "kind": "host_restarted",
                                "message": "the extension host was started again; extension state starts empty"})
        finally:
            starting, self._starting = self._starting, None
            starting.set_result(None)

    def _give_up(self, why: str) -> None:
        self.failed = True
        self.failure = why
        process, self.process = self.process, None
        if process is not None:
            process.on_exit = None
            process.kill()
        self.on_diagnostic({"threadId": self.thread_id, "kind": "host_restarted",
                            "message": f"{why}: the thread's extensions are failed and every tool call of the "
                                       f"thread is blocked"})

    def _count_exit(self) -> bool:
        """Count an exit of the thread's host; True when that makes 3 within 5 minutes (the host is given up)."""
        now = time.monotonic()
        self.exits.append(now)
        while self.exits and now - self.exits[0] > EXIT_WINDOW_S:
            self.exits.popleft()
        if len(self.exits) >= MAX_EXITS:
            self.failed = True
            self.failure = "the extension host exited 3 times within 5 minutes"
        return self.failed

    async def start(self) -> None:
        await self._attach()

    def _exit(self, process: HostProcess) -> None:
        if process is not self.process:
            return
        self.process = None
        code = process.returncode
        diagnostic: dict[str, Any] = {"threadId": self.thread_id, "kind": "host_exit"}
        if code is not None and code < 0:
            diagnostic["signal"] = -code
            how = f"was killed by signal {-code}"
            if -code == signal.SIGKILL and getattr(process, "unresponsive", False):
                how += " (it did not answer: a step was still running hostGraceMs after its deadline)"
        else:
            diagnostic["exitCode"] = code
            how = f"exited with status {code}"
            if code == 3:
                how += " (out of memory: limits.hostMemoryMb)"
        self.overrun.clear()
        self.read_board(process)  # the step each exchange was in when the host died
        for ident in list(self.pending):
            self._stop(ident, "crash")
        if self.closed or self.loading:
            return
        if self._count_exit():
            how += "; it exited 3 times within 5 minutes and is not restarted: every tool call of this thread " \
                   "is blocked"
        diagnostic["message"] = f"the extension host {how}"
        self.on_diagnostic(diagnostic)

    # -- exchanges

    def exchange(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Pending:
        """Send one exchange; its future resolves to the host's report or to a ``Stopped``."""
        process = self.process
        assert process is not None
        ident = next(self._ids)
        deadline = time.monotonic() + plan[first].timeout
        body["deadline"] = deadline
        pending = Pending(ident, tag, plan, first, self.loop.create_future(), deadline)
        pending.carry = body.get("result")
        self.pending[ident] = pending
        process.send(tag, ident, body)
        if self._board_timer is None and process.board is not None:
            self._board_timer = self.loop.call_later(WATCH_S, self._poll_board)
        if self.closing and pending.core is not None and first < pending.core:  # sent while thread/close runs
            pending.closing = True
            process.send(channel.ABORT, ident, {"unlessAt": pending.core})
        self._arm(pending.limit())
        return pending

    def _arm(self, at: float) -> None:
        """Make sure the watchdog looks at the exchanges by ``at`` (it sleeps until the earliest limit)."""
        if self._watchdog is not None:
            if at >= self._watch_at:
                return
            self._watchdog.cancel()
        self._watch_at = at
        self._watchdog = self.loop.call_at(_loop_time(self.loop, at), self._watch)

    async def run(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Any:
        pending = self.exchange(tag, body, plan, first)
        try:
            return await pending.future
        except asyncio.CancelledError:
            self.cancel(pending)
            raise

    def cancel(self, pending: Pending) -> None:
        """``$/cancelRequest`` of an exchange's request: the host stops it; nobody is answered for it."""
        self._stop(pending.ident, None)

    async def load(self, body: dict[str, Any], restart: bool = False) -> Any:
        """Import one extension and run ``activate``: the host's report, or a ``Stopped``.

        A host that had to be killed or died while loading is replaced by a fresh one into
        which the extensions loaded so far are loaded again; that is the extension's failure,
        not a crash of the thread's host (no ``host_exit``, not counted).
        """
        plan = [StepPlan("load", body["id"], body["timeout"])]
        self.loading = True
        try:
            result = await self.run(channel.LOAD, dict(body), plan, 0)
        finally:
            self.loading = False
        if isinstance(result, Stopped):
            process, self.process = self.process, None
            if process is not None:
                process.on_exit = None
                process.kill()
            if not restart:
                await self._attach()
                for again in self.loads:
                    await self.load(again, restart=True)
        elif isinstance(result, dict) and result.get("ok") and not restart:
            self.loads.append(body)
            self.reports[body["id"]] = _registered(result)
        return result

    def commit(self, ids: list[str]) -> None:
        self.committed = list(ids)
        self.loads = [b for b in self.loads if b["id"] in ids]
        if self.process is not None:
            self.process.send(channel.COMMIT, 0, {"ids": ids})
            if self.schemas:
                self.process.send(channel.SCHEMAS, 0, {"tools": self.schemas})

    def set_schemas(self, schemas: dict[str, Any]) -> None:
        """The inputSchemas of tools the host does not own, for re-validating rewritten arguments."""
        self.schemas = schemas
        if self.process is not None:
            self.process.send(channel.SCHEMAS, 0, {"tools": schemas})

    def _begin(self, pending: Pending, index: Any) -> bool:
        """Step ``index`` of ``pending`` begins now, by the sidecar's clock, as the host announced (a frame or
        the board). Steps only move forward, within the plan: a host cannot restart a deadline."""
        if type(index) is not int or not (pending.step < index < len(pending.plan) or
                                          (not pending.started and index == pending.step)):
            return False
        pending.started = True
        pending.step = index
        pending.deadline = time.monotonic() + pending.plan[index].timeout
        pending.shift = 0.0
        pending.paused = 0
        self._arm(pending.limit())
        return True

    def read_board(self, process: "HostProcess | None" = None, drain: bool | None = True) -> None:
        """The steps the host announced on the board and the sidecar has not seen yet begin now. What the
        host wrote on the channel before them is read first (a frame carrying a result precedes the
        board's next step): all of it, or (``drain`` None: the periodic look) a turn's share — and if
        more is left (a host flooding its channel), the board waits for the next look, so that no
        look reads more than a turn may. ``drain`` False: called while a frame is handled, whose
        predecessors have been."""
        process = process or self.process
        if process is None or process.board is None or not self.pending:
            return
        seen = board.announced(process.board)
        if not seen:
            return
        if drain:
            process.drain()
        elif drain is None and not process.catch_up():
            return
        for ident, index in seen:
            pending = self.pending.get(ident)
            if pending is None:
                continue
            if index == board.ENDED:  # ended plainly; its done frame waits in the host (frozen or dead now)
                if pending.tag == channel.CALL and pending.carry is not None:  # else not true: ignored
                    self._frame(channel.DONE, ident, {"faults": [], "carried": True})
            elif index != pending.step or not pending.started:
                self._begin(pending, index)

    def _poll_board(self) -> None:
        self._board_timer = None
        if not self.pending or self.process is None or self.process.board is None:
            return
        self.read_board(drain=None)
        if self.pending:
            self._board_timer = self.loop.call_later(WATCH_S, self._poll_board)

    def _frame(self, tag: str, ident: int, body: Any) -> None:
        if tag == channel.STEP:
            pending = self.pending.get(ident)
            if pending is None or type(body) is not list or not body:
                return
            index = body[0]
            # The step starts when the sidecar reads its frame, by the sidecar's clock — unless the board
            # said so first: a frame handled while others of one read wait (read_board(drain=False)) can
            # see the board announce this step, or a later one, before this frame's line is handled. The
            # result and faults it carries are still this exchange's: kept, or its end has no result.
            if not self._begin(pending, index) and not (
                    pending.started and type(index) is int and 0 <= index <= pending.step):
                return
            step = pending.plan[index]
            if len(body) >= 3:
                if body[1] is not None:
                    pending.carry = body[1]
                if type(body[2]) is list:
                    pending.faults += body[2]
            if step.kind == AFTER and pending.tag == channel.CALL and pending.plan[index - 1].kind != AFTER \
                    and pending.carry is not None and not pending.future.done():
                # The observers start: the call is answered now, with the result they watch.
                rest = Rest()
                answered = Answered(pending.carry, pending.faults, rest)
                pending.faults = []
                pending.future.set_result(answered)
                pending.future = rest
        elif tag == channel.DONE:
            self.overrun.pop(ident, None)
            pending = self.pending.pop(ident, None)
            if pending is not None:
                self._ended(pending, True)
            if pending is not None and not pending.future.done():
                if pending.faults and type(body) is dict and type(body.get("faults")) is list:
                    body["faults"] = pending.faults + body["faults"]
                if type(body) is dict and body.get("carried") is True and pending.carry is not None:
                    body["result"] = pending.carry  # sent once, in a step frame
                pending.future.set_result(body)
                self._end_ui(pending)
        elif tag == channel.ENDED:
            self.overrun.pop(ident, None)
            pending = self.pending.get(ident)
            if pending is not None and pending.closing:
                self._stop(ident, "closed")  # thread/close: its core never began
        elif tag == channel.UI:
            self._ui(ident, body)
        elif tag == channel.NOTIFY:
            self._relay(ident, body)
        elif tag == "tooLarge":  # a frame refused unparsed (longer than any answer may be): body is its tag
            if body == channel.UI:  # a question too long to ask: not asked, answered as no UI (fail closed)
                self._answer_ui(ident, None, None, None, "unavailable")
            elif body in (channel.STEP, channel.DONE, channel.LOADED):
                if ident in self.pending:
                    self._stop(ident, "too_large")
            else:
                logger.warning("%s sent a %s frame longer than --max-result-bytes allows; dropped", self.thread_id,
                               body)

    def _author(self, ident: Any, step: Any) -> StepPlan | None:
        """The step whose handler made what the host relays on exchange ``ident`` in step ``step``: that
        step of the sidecar's plan, whose extension and event name it (never what the frame states). The
        step is one the exchange has begun, or it begins now (a frame written in a step is announced by
        it, as by a ``step`` frame: the board may not show it yet); for an exchange that has ended (a
        ``ctx`` used after its handler), one that began before it ended. None: no handler's step."""
        if type(ident) is not int or ident <= 0 or type(step) is not int or step < 0:
            return None
        pending = self.pending.get(ident)
        if pending is not None:
            if step > pending.step or not pending.started:
                self.read_board(drain=False)  # the step may be announced on the board only
                if ident not in self.pending:
                    return self._author(ident, step)
                if (step > pending.step or not pending.started) and not self._begin(pending, step):
                    return None
            found = pending.plan[step] if step >= pending.first else None
        else:
            ended = self.ended.get(ident)
            found = ended[0][step] if ended is not None and step <= ended[1] else None
        return found if found is not None and found.extension_id is not None else None

    def _ended(self, pending: Pending, reported: bool = False) -> None:
        """Remember which extension each step of an ended exchange was (``_author``), for the last few:
        up to the step it was stopped in, or (``reported``: the host reported its end) any of its steps."""
        self.ended[pending.ident] = (pending.plan, len(pending.plan) - 1 if reported else pending.step)
        if len(self.ended) > ENDED_KEPT:
            del self.ended[next(iter(self.ended))]

    def _relay(self, ident: int, body: Any) -> None:
        """A notification the host relays to the editor. What a host says is its own (v4 §2): it goes out
        with this thread's id and the ``extensionId`` of the handler that made it, whatever the frame said;
        one that no handler of this thread made (a frame outside every exchange, a method the host may not
        relay, a diagnostic kind extensions do not report) is dropped."""
        if type(body) is not dict or type(body.get("params")) is not dict:
            return
        method, params = body.get("method"), body["params"]
        if method not in RELAYED or (method == "thread/diagnostic" and params.get("kind") not in HOST_DIAGNOSTICS):
            logger.warning("%s: the extension host relayed %r, which no handler may send; dropped", self.thread_id,
                           method if type(method) is str else type(method).__name__)
            return
        in_flight = ident in self.pending
        if not in_flight and method != "thread/diagnostic":  # ctx.ui after its handler: the host refuses it too
            logger.info("%s: a %s outside any handler of the thread; dropped", self.thread_id, method)
            return
        author = self._author(ident, body.get("step"))
        if author is None:
            logger.warning("%s: a %s the host relayed names no handler of the thread; dropped", self.thread_id,
                           method)
            return
        params = {**params, "threadId": self.thread_id, "extensionId": author.extension_id}
        if method == "thread/diagnostic":  # the event of the handler it is about: its step's
            params.pop("hook", None)
            if author.kind not in ("core", "load"):
                params["hook"] = author.kind
        self.notify(method, params)

    def _stop(self, ident: int, how: str | None) -> None:
        """Answer for an exchange: tell the host to stop it, resolve it as ``Stopped``."""
        pending = self.pending.pop(ident, None)
        if pending is None:
            return
        self._ended(pending)
        if self.process is not None and how not in ("crash", "closed"):
            self.process.send(channel.ABORT, ident, None)
            # The step may still run: if it has not ended hostGraceMs after its deadline, its host is.
            self.overrun[ident] = max(pending.limit(), time.monotonic()) + self.grace_s
            self._arm(self.overrun[ident])
        self._end_ui(pending)
        if how is not None and not pending.future.done():
            pending.future.set_result(Stopped(pending.step, how, pending.carry, pending.faults, pending.started))

    def _watch(self) -> None:
        self._watchdog = None
        if not self.pending and not self.overrun:
            return
        now = time.monotonic()
        late = [p for p in self.pending.values() if not p.paused and now > p.limit()]
        if (late or self.overrun) and self.process is not None:
            self.read_board()  # a step it announced there begins now (then its deadline is not passed)
            self.process.drain()  # what the host wrote before the deadline counts
            now = time.monotonic()
            late = [p for p in late if p.ident in self.pending and not p.paused and now > p.limit()]
        for pending in late:
            self._stop(pending.ident, "timeout")
        if self.overrun and now > min(self.overrun.values()):
            self._end_overrun()
        waiting = [p.limit() for p in self.pending.values() if not p.paused] + list(self.overrun.values())
        if waiting:
            self._arm(max(min(waiting), now + WATCH_S))
        elif self.pending:
            self._arm(now + 1.0)  # all waiting for the user: look again later

    def _end_overrun(self) -> None:
        """A step still ran hostGraceMs after its deadline: its host is ended (restarted on the next need),
        whether or not it still answers — a loop that never returns would burn the CPU for ever."""
        self.overrun.clear()
        process = self.process
        if process is not None:
            logger.warning("%s still ran a step %.0f ms after its deadline; killing it", process.label,
                           self.grace_s * 1000)
            process.unresponsive = True  # type: ignore[attr-defined]
            process.kill()

    # -- asking the user

    def _ui(self, uid: int, body: Any) -> None:
        if type(body) is not dict or type(body.get("params")) is not dict or \
                body.get("method") not in ("ui/confirm", "ui/select", "ui/input"):
            self._answer_ui(uid, None, None, None)
            return
        self.read_board(drain=False)  # the step that asks may be announced on the board only
        pending = self.pending.get(body.get("exchange"))  # type: ignore[arg-type]
        author = self._author(body.get("exchange"), body.get("step")) if pending is not None else None
        if author is None:  # asked outside every handler of the thread (or by none): nobody is asked
            self._answer_ui(uid, None, None, None, "unavailable")
            return
        step = body.get("step")
        # What a host says is its own (v4 §2): the thread's id and the asking handler's extension
        body = {**body, "params": {**body["params"], "threadId": self.thread_id, "extensionId": author.extension_id}}
        if pending is not None:
            if pending.step == step:
                if not pending.paused:
                    pending.paused_at = time.monotonic()
                pending.paused += 1
            pending.ui.add(uid)
        task = asyncio.ensure_future(self._forward_ui(uid, body["method"], body["params"], pending, step))
        self._ui_tasks[uid] = task
        task.add_done_callback(lambda t: self._ui_tasks.pop(uid, None))

    async def _forward_ui(self, uid: int, method: str, params: dict[str, Any], pending: Pending | None,
                          step: Any) -> None:
        answer = None
        outcome = None  # why no answer came, for ctx.ui's outcome: timeout | cancelled | unavailable
        try:
            answer = await self.ask(method, params, self.ui_timeout_s)
        except asyncio.CancelledError:
            answer, outcome = None, "cancelled"
        except Exception as exc:  # noqa: BLE001 - no capability, an error answer, a timeout, EOF: no
            outcome = "timeout" if isinstance(exc, TimeoutError) else "unavailable"
            logger.info("%s for %s: %s", method, self.thread_id, exc)
        shift = None
        if pending is not None:
            pending.ui.discard(uid)
            if pending.step == step and pending.paused:
                pending.paused -= 1
                if not pending.paused:
                    pending.shift += time.monotonic() - pending.paused_at
                    if pending.ident in self.pending:
                        self._arm(pending.limit())
                shift = pending.shift
        self._answer_ui(uid, answer, step, shift, outcome)

    def _answer_ui(self, uid: int, answer: Any, step: Any, shift: Any, outcome: str | None = None) -> None:
        if self.process is not None:
            body = {"value": answer, "step": step, "shift": shift}
            if outcome is not None:
                body["outcome"] = outcome
            self.process.send(channel.UI_ANSWER, uid, body)

    def _end_ui(self, pending: Pending) -> None:
        if not pending.ui:
            return
        for uid in list(pending.ui):
            task = self._ui_tasks.get(uid)
            if task is not None:
                task.cancel()  # the editor's request is cancelled; the host gets a fail-closed answer

    # -- the end

    def close_calls(self) -> None:
        """``thread/close``: every call whose core has not begun is dropped — the host confirms with
        ``ended`` (then it is answered blocked ``closed``) or announces the core, which then runs to its
        end within its deadline; calls past their core run on."""
        self.closing = True
        process = self.process
        self.read_board()  # calls whose core began (announced on the board) run on
        for pending in list(self.pending.values()):
            if pending.tag != channel.CALL or pending.core is None or pending.step >= pending.core or pending.closing:
                continue
            pending.closing = True
            if process is not None:
                process.send(channel.ABORT, pending.ident, {"unlessAt": pending.core})

    async def close(self) -> None:
        self.closed = True
        self.read_board()  # the steps the exchanges answered for now were in
        for ident in list(self.pending):
            self._stop(ident, "crash")
        process, self.process = self.process, None
        if process is not None:
            done = asyncio.get_running_loop().create_future()
            process.on_exit = lambda p: done.done() or done.set_result(None)
            process.close()
            if not process.exited:
                await done


def _registered(report: Any) -> Any:
    """What a load report says an extension registered (None when it failed)."""
    if type(report) is not dict or report.get("ok") is not True:
        return None
    return (report.get("tools"), report.get("hooks"), report.get("commands"))


def load_body(ext_id: str, code: bytes, code_path: str, directory: str | None, files: dict[str, bytes] | None,
              timeout_s: float) -> dict[str, Any]:
    body: dict[str, Any] = {"id": ext_id, "code": base64.b64encode(code).decode("ascii"), "codePath": code_path,
                            "timeout": timeout_s}
    if directory is not None:
        body["directory"] = directory
        body["files"] = {k: base64.b64encode(v).decode("ascii") for k, v in (files or {}).items()}
    return body


def faults_of(faults: Any, plan: list[StepPlan]) -> list[HookFault]:
    """The faults a host reports, each named by the step it was in: the extension and the event are that
    step's in the sidecar's plan, whatever the frame said (v4 §2: what a host says is its own). Raises
    ``HostLied`` for a malformed fault or one of a step that is not a handler's."""
    if type(faults) is not list:
        raise HostLied("malformed 'faults'")
    out = []
    for f in faults:
        step = f.get("step") if type(f) is dict else None
        if (type(step) is not int or not 0 <= step < len(plan) or plan[step].extension_id is None
                or plan[step].kind in ("core", "load", "command") or f.get("kind") not in ("throw", "timeout")
                or type(f.get("message")) is not str):
            raise HostLied("malformed fault")
        out.append(HookFault(plan[step].extension_id, plan[step].kind, f["kind"], f["message"]))
    return out
