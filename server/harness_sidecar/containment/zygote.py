"""Command hooks are started by a zygote per thread, so that a hook costs a ``vfork``, not a ``fork``.

Every fence the launcher puts on a process is added between fork and exec (``spawning._child_setup``,
a ``preexec_fn``), and any ``preexec_fn`` makes CPython ``fork`` the sidecar — copying its page
tables and then faulting its pages back — where it would otherwise ``vfork``: ~4 ms of a hook's
~5 ms start on a quiet machine, paid on every tool call a ``PreToolUse`` hook matches. So a thread's
hooks are started by a small process of its own, the *zygote* (``zygote_process.py``): started once
through the launcher, it runs in the thread's cgroup and in a Landlock domain of its own, dies with
the sidecar, and starts each hook with ``posix_spawn`` (``vfork``-like, nothing to run in the
child), which inherits all of that. The sidecar's side is a lean subprocess transport: the hook's
pipes are read and written straight from the event loop's callbacks.

What it changes, and what it keeps (protocol.md, "Containment"):
- one Landlock domain per thread's command hooks (the zygote's), not per hook: a thread's hooks can
  reach each other and their zygote — never the sidecar, the editor, or another thread's processes;
- the cgroup: the thread's hooks share one group (``<slot>/hook-<zygote pid>``) in the thread's slot,
  so ``maxProcesses`` counts them as before, and they end with the thread;
- the sidecar's death: the zygote gets SIGTERM (its parent-death signal) and kills its hooks'
  process groups; the reaper ends the cgroups as before;
- nothing else: the hook's pid is its own process group (the deadline's ``killpg`` from the sidecar),
  its stdin/stdout/stderr are the sidecar's pipes, passed over the control socket.

Starts are queued (issue 27): a call matching 300 handlers, or 300 calls at once, would otherwise ask
for 300 processes at once (past ``maxProcesses``: EAGAIN) and ~1,500 descriptors, and starts that found
the control socket full (``net.unix.max_dgram_qlen``, often 10) each replaced the one writer callback
of the one before — only the last was ever woken, and its call hung. Now one ordered queue, one writer:
at most ``hooks_at_once`` (min(32, maxProcesses / 4)) of a thread's hooks are sent and not yet exited;
a start's pipes are made as it is sent; a start whose caller gives up first (its deadline) leaves the
queue; a start the system refuses (EAGAIN in the zygote, EMFILE here) fails at once.

The zygote is untrusted as its hooks are: what it says is parsed with bounds, a pid it names is
believed only for its own child (the sidecar signals it), and a zygote that dies or says nonsense
fails the hooks it was running (``-SIGKILL``) and is replaced at the next start.

A trivial hook's clock (issue 19: ≤ 1.5× spawning ``/bin/true`` from Python) is kept short thus:
- the sidecar sends the start request and yields its CPU (the socket's sync wake-up mostly puts the
  zygote on the sender's CPU, where it would wait for the sidecar's next ~80 µs); the transport is
  handed back without waiting for the pid (the deadline counts from the call, even if the zygote
  never answers); the hook's stdin is made and written after the send;
- a thread's start requests are the same few bytes (kept on both sides); the hook's pipes are made
  while the loop is idle;
- a hook's exit is read by the sidecar itself: the zygote reaps a child only when told, so an exited
  hook stays a zombie and its status is read (one ``pread`` of its ``/proc/<pid>/stat``, opened when
  the zygote named it; exact from Linux 6.15 on, threads or not) as soon as its output ends, or its
  pidfd turns readable. The zygote is told to reap it after the next start request, or within
  ``REAP_DELAY_S`` (``{"reap"}``) — never while the hook's answer is being written. Where the status
  cannot be read (an older kernel, no pidfd) the zygote is asked to wait for it (``{"wait"}``) and
  answers ``{"exit", "code"}``, as it did for every hook before.

Tried and measured, not kept (issue 32, third round; ``python -m bench.hook_stages`` shows the steps):
not waking the sidecar for the pid — the control socket out of the loop while starts await only their
pid, the pid (said by the zygote before it closes its copies of the pipes) read when the pipes end,
the zygote's death seen by its pidfd. Against this code, interleaved in the same runs (1,200 rounds,
each side first in every other round, load 8–11), at p10 of what an ``exit 0`` hook adds: 0.04–0.06 ms
slower with the send as here, 0.11–0.18 ms slower with the send also moved to a callback of its own
(so the sidecar sleeps right after it) and the stdin written before it; p50 within the runs' noise.
Read at once, the pid is handled while the hook runs, mostly on the other core; read late, the same
reads are on the hook's clock after its exit. Also within the noise (±0.05 ms): no ``sched_yield``;
the hook's pipes attached and its stdin written before the send; ``setsigdef`` of the ignored signals
only (glibc's child then queries every other signal instead: as many ``sigaction`` calls).

Tried and measured, not kept (issue 32, fourth round; ``python -m bench.hooks`` now gives the figure's
parts: the shell's own start, the zygote's hop, what tools/call adds): waking the zygote ahead — one byte
when a tools/call its PreToolUse handlers match begins, the zygote then polling for the start for up to
2 ms, with or without ``sched_yield`` — was 0.03-0.09 ms slower at p50 of what an ``exit 0`` hook adds
(200 rounds, quiet): its wake-up is not what the hook waits for. A 100 us EEVDF slice for the zygote
(``sched_setattr``, ``SCHED_FLAG_RESET_ON_FORK`` so its hooks keep the default; allowed unprivileged):
without it, in 119 of 200 hooks the zygote, woken as its hook exec'd, waited 0.3-0.6 ms behind it on
that CPU (``perf sched timehist``), so its pid came after the hook's exit; with it, never — and the
round trip stayed the same (1.307 against 1.313 ms p50): the pid's reading moved beside the hook, the
preemption onto it. The hook's pipes and pidfd in an epoll of the zygote's own (one loop reader, an
``epoll_ctl`` per fd instead of the selector's Python), the pidfd watched only when the output ends
before the exit: 0.02 ms slower (paired p50), where two identical sidecars differ by up to 0.03.
"""

from __future__ import annotations

import array
import asyncio
import collections
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.containment import lifetimes
from harness_sidecar.containment import spawning as launcher
from harness_sidecar.containment.hook_stdio import SPARE_DELAY_S, HookStdio, _close_all, _ReadPipe, _WritePipe  # noqa: F401
from harness_sidecar.containment.start_requests import StartRequests

logger = logging.getLogger(__name__)

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote_process.py")
MAX_ANSWER = 4096
MAX_REQUEST = 60 * 1024  # one datagram; a larger request (a huge environment) is started by the launcher itself
REAP_DELAY_S = 0.05  # at most this long a read hook stays a zombie when no other hook starts meanwhile


_USABLE = sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and hasattr(socket, "SOCK_SEQPACKET") \
    and hasattr(signal, "pidfd_send_signal")


def takes(launch: launcher.Launch) -> bool:
    """Whether ``launch`` is started through its owner's zygote (a command hook, where the kernel allows)."""
    return _USABLE and launch.kind == launcher.HOOK and not launch.pass_fds and os.environ.get(SWITCH) != SWITCH_OFF


SWITCH = "HARNESS_SIDECAR_ZYGOTE"  # "off": hooks are started by the launcher, one fork each (to compare)
SWITCH_OFF = "off"


class _Transport(asyncio.SubprocessTransport):
    """A hook the zygote started, as asyncio's subprocess transports show a process: its pid, its
    return code, its pipes (read and written straight from the loop's callbacks: a hook's start is on
    a tool call's clock), signals through a pidfd (never a reused pid)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: asyncio.SubprocessProtocol,
                 zygote: Zygote | None = None) -> None:
        super().__init__()
        self.zygote = zygote  # None: a transport no zygote reaps for (tests)
        self.loop = loop
        self.protocol = protocol
        self.pid: int | None = None
        self.returncode: int | None = None
        self.pidfd: int | None = None
        self.statfd: int | None = None  # its /proc/<pid>/stat, opened while it was the zygote's child: its exit is read there
        self.pipes: dict[int, Any] = {}
        self.closed = False
        self._lost = False
        self._checked = False
        self._watching = False  # our pidfd is in the loop: its exit is read from its zombie
        self.at_once = False  # handed back before its pid was known (connection_made then, not at the pid)
        self.start_error: OSError | None = None  # at_once: why it was not started
        self._group_kill = False  # at_once: its group is to be killed as soon as its pid is known
        self.queued = False  # waiting in its zygote's queue: its request not sent yet (no pipes, no process)
        self.holds_slot = False  # counted in its zygote's hooks at once (from the request's send to its exit)

    # -- asyncio.SubprocessTransport

    def get_pid(self) -> int | None:
        """The hook's pid (its process group's id), once it is known to be the zygote's child."""
        return self.pid if self._checked else None

    def get_returncode(self) -> int | None:
        return self.returncode

    def get_pipe_transport(self, fd: int) -> Any:
        return self.pipes.get(fd)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def is_closing(self) -> bool:
        return self.closed

    def kill_group(self) -> None:
        """SIGKILL the hook's process group (it leads its own session: what it started goes too) — at once,
        or, if its pid is not known yet, as soon as it is."""
        if self._checked:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        elif self.pid is None and self.start_error is None:
            self._group_kill = True

    def close(self) -> None:
        """As asyncio's: the pipes close, and a process still running is killed."""
        if self.closed:
            return
        self.closed = True
        if self.queued:  # never sent: it leaves the queue (its deadline, or its caller, came first)
            self.queued = False
            if self.zygote is not None:
                self.zygote.dequeue(self)
            return
        for pipe in list(self.pipes.values()):
            pipe.close()
        if self.returncode is None:
            self.kill()

    # -- the zygote's side

    def started(self, pid: int, zygote: int) -> None:
        """The zygote says it started ``pid``. Believed only for its own child: a zygote is as trusted as
        the hooks that share its domain, and the sidecar signals what it names (the deadline's ``killpg``)."""
        self.pid = pid
        try:
            self.pidfd = os.pidfd_open(pid)
        except OSError:  # gone already and reaped (its exit is on its way): nothing to signal
            self.pidfd = None
        else:
            statfd = _open_stat(pid)
            if statfd is not None and _stat_fields(statfd)[1:2] == [b"%d" % zygote]:
                self._checked = True
                if _ZOMBIE_STATUS:
                    self.statfd = statfd
                    self._watching = True
                    self.loop.add_reader(self.pidfd, self._ended)
                else:
                    os.close(statfd)
            else:
                if statfd is not None:
                    os.close(statfd)
                try:
                    signal.pidfd_send_signal(self.pidfd, 0)
                except ProcessLookupError:  # it ended and was reaped meanwhile: nothing to signal
                    gone = True
                else:
                    gone = False
                os.close(self.pidfd)
                self.pidfd = None
                if not gone:
                    raise ValueError(f"{pid} is not the zygote's child")
        if not self._watching and self.zygote is not None:  # the zygote tells us its exit
            self.zygote.tell(b'{"wait": %d}' % pid)
        if not self.at_once:
            self.protocol.connection_made(self)
        elif self._group_kill:  # its deadline, or its caller's end, came before its pid
            self.kill_group()
        elif self.closed and self.returncode is None:
            self.kill()

    def failed(self, error: OSError) -> None:
        """An ``at_once`` start failed: the hook never ran. The protocol sees a process that exited (its
        pipes close as the zygote drops its ends); ``start_error`` says why."""
        if self.start_error is not None or self.pid is not None:
            return
        self.start_error = error
        self.release()
        self.protocol.process_exited()
        self.finish()

    def release(self) -> None:
        """Its process has exited or never started: its zygote may send the next waiting start."""
        if self.holds_slot:
            self.holds_slot = False
            if self.zygote is not None:
                self.zygote.released()

    def _ended(self) -> None:
        """Our pidfd is readable: the hook has exited, and stays a zombie until we tell the zygote to reap it
        — its status is read here, without waiting for the zygote to wake, reap and say it."""
        self._watching = False
        self.loop.remove_reader(self.pidfd)
        code = _zombie_status(self.statfd)
        if self.zygote is None:
            return
        if code is None:  # not readable here: the zygote reaps it and tells us
            self.zygote.tell(b'{"wait": %d}' % self.pid)
            return
        self._read_exit(code)

    def _read_exit(self, code: int) -> None:
        assert self.zygote is not None and self.pid is not None
        self.zygote.running.pop(self.pid, None)
        self.exited(code)
        self.zygote.reap_later(self.pid)

    def exited(self, code: int) -> None:
        if self.returncode is not None:
            return
        self.returncode = code
        if self.pidfd is not None:
            if self._watching:
                self._watching = False
                self.loop.remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = None
        if self.statfd is not None:
            os.close(self.statfd)
            self.statfd = None
        self.release()
        self.protocol.process_exited()
        self.finish()

    def finish(self) -> None:
        if self._watching and self.returncode is None and self.zygote is not None \
                and all(p.is_closing() for p in self.pipes.values()):
            # its output has ended: it has most likely exited too — read now, not a loop turn later
            code = _zombie_status(self.statfd)
            if code is not None:
                self._watching = False
                self.loop.remove_reader(self.pidfd)  # its readiness, if already seen, is dropped with it
                self._read_exit(code)
                return
        if not self._lost and (self.returncode is not None or self.start_error is not None) \
                and all(p.is_closing() for p in self.pipes.values()):
            self._lost = True
            self.protocol.connection_lost(None)


Transport = _Transport  # what ``spawn`` hands back


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        found = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return found >= (major, minor)


# From Linux 6.15 on, a zombie thread-group leader's exit_code is the group's once its last thread is gone
# (release_task sets it from signal->group_exit_code, Oleg Nesterov, March 2025; backported to some stable
# kernels, which are not told apart here and take the zygote's word): the status /proc/<pid>/stat shows
# when the hook's output ends or its pidfd turns readable is then the one waitpid reports, threads or not.
_ZOMBIE_STATUS = _USABLE and _kernel_at_least(6, 15)


def _open_stat(pid: int) -> int | None:
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)  # no file object: on a hook's clock
    except OSError:
        return None


def _stat_fields(statfd: int) -> list[bytes]:
    """The fields of a /proc/<pid>/stat after the command's name (state, ppid, …); [] where unreadable —
    as once the process is reaped: the file stays the process's it was opened for, never a reused pid's."""
    try:
        return os.pread(statfd, 4096, 0).rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _zombie_status(statfd: int | None) -> int | None:
    """The return code (negative: the signal) of an exited child of the zygote not yet reaped (the
    zygote reaps only when told), from its /proc/<pid>/stat; None where it cannot be read."""
    fields = _stat_fields(statfd) if statfd is not None else []
    if len(fields) < 50 or fields[0] != b"Z":
        return None
    try:
        return os.waitstatus_to_exitcode(int(fields[49]))  # field 52, exit_code, as waitpid reports it
    except ValueError:
        return None


class Zygote:
    """One thread's zygote, as the sidecar sees it: the control socket, the starts awaiting their pid."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            argv = [sys.executable, "-I", "-S", PROGRAM, str(theirs.fileno()), str(os.getpid())]
            self.proc = launcher.popen(launcher.Launch(argv, launcher.HOOK, owner=owner, pass_fds=(theirs.fileno(),)),
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        lifetimes.get().started_process(self.proc.pid, launcher.HOOK, owner)
        self.control = ours
        ours.setblocking(False)
        self.loop = asyncio.get_running_loop()
        # starts, in order: the future their caller awaits (None: handed back at once) and their transport
        self.waiting: collections.deque[tuple[asyncio.Future | None, _Transport]] = collections.deque()
        self.running: dict[int, _Transport] = {}
        self.outbox: collections.deque[bytes] = collections.deque()  # reap/wait messages the socket had no room for
        self.reaps: list[int] = []  # exited hooks whose status we read, for the zygote to reap
        # its hooks' stdin, stdout and stderr pipes: made for each start as it is sent, a spare set while idle
        self.stdio = HookStdio(owner)
        self.requests = StartRequests()  # start objects made, by launch
        self.reap_timer: asyncio.TimerHandle | None = None
        self.queue: collections.deque[_Start] = collections.deque()  # starts not sent yet, in order
        self.in_flight = 0  # hooks sent and not yet exited (or failed)
        self.limit = hooks_at_once(owner)
        self.writing = False  # our writer is in the loop: the socket was full
        self._pump_handle: asyncio.Handle | None = None
        self.alive = True
        self.loop.add_reader(ours.fileno(), self._read)
        self.stdio.make_spare()

    async def spawn(self, launch: launcher.Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol],
                    stdin: Any, stdout: Any, stderr: Any, at_once: bool = False) -> tuple[asyncio.SubprocessTransport, Any]:
        """As ``launcher.spawn``; ``stdin`` may also be ``bytes``, or a function making them: the hook's stdin
        is then a pipe holding them, then EOF — written (what fits the pipe; the rest as it drains) right
        after the request is sent, while the zygote wakes, so the hook finds them there.

        Starts are queued, in order, and sent while fewer than ``hooks_at_once`` of the thread's hooks run
        (their pipes made as each is sent): however many hooks a call matches, or however many calls come
        at once, the sidecar holds a bounded number of descriptors and the thread's cgroup a bounded number
        of processes, and every start is either sent, or dropped when its caller gives up on it (its
        deadline) — never lost.

        ``at_once``: the transport is handed back as soon as the start is queued, not when the zygote names
        the pid (the caller's task is not woken for it); a start that fails is then no ``OSError`` but a
        transport whose ``start_error`` says why, whose process "exits" at once."""
        given = stdin if isinstance(stdin, bytes) or callable(stdin) else None
        pipes: list[int] = []  # fd numbers in the hook that are pipes of ours
        stdio: list[str] = []
        for n, how in enumerate((stdin, stdout, stderr)):
            if how == subprocess.PIPE or (n == 0 and given is not None):
                pipes.append(n)
                stdio.append("fd")
            elif how in (None, subprocess.DEVNULL):
                stdio.append("devnull")
            else:
                raise ValueError(f"the zygote passes pipes or nothing, not {how!r}")
        request = self.requests.of(launch, stdio)
        if len(request) > MAX_REQUEST:  # a huge command line or environment: one datagram cannot carry it
            return await _spawn_direct(launch, protocol_factory, stdin, stdout, stderr, given)
        if not self.alive:
            raise ConnectionResetError("the hooks' zygote has exited")
        protocol = protocol_factory()
        transport = _Transport(self.loop, protocol, self)
        answer = None if at_once else self.loop.create_future()
        transport.queued = True
        self.queue.append(_Start(transport, request, tuple(pipes), given, answer))
        if at_once:
            transport.at_once = True
            protocol.connection_made(transport)
        self._pump()
        if answer is None:
            return transport, protocol
        try:
            await answer
        except BaseException:
            transport.close()
            raise
        return transport, protocol

    def _pump(self) -> None:
        """Send the waiting starts, in order, while the socket takes them and fewer than ``limit`` run."""
        self._pump_handle = None
        sent = 0
        while self.queue and self.alive and self.in_flight < self.limit:
            start = self.queue[0]
            if start.ours is None:
                try:
                    start.ours, start.theirs = self.stdio.take(start)
                except OSError as exc:  # no descriptors left (EMFILE, ENFILE): this start fails now
                    self.queue.popleft()
                    self._never_sent(start, exc)
                    continue
            request, reaps = start.request, self.reaps
            if reaps and len(request) + 16 * len(reaps) <= MAX_REQUEST:  # hooks read since: reaped after it
                request += b"\n" + json.dumps(reaps).encode()
            else:
                reaps = []
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", start.theirs))] if start.theirs else []
            try:
                self.control.sendmsg([request], ancillary)
            except (BlockingIOError, InterruptedError):  # the zygote's queue is full: when it has room
                self._want_writer()
                break
            except OSError as exc:  # e.g. ETOOMANYREFS (descriptors in flight), or the zygote is gone
                self.queue.popleft()
                self._never_sent(start, exc)
                continue
            self.queue.popleft()
            if reaps:
                self.reaps = []
            _close_all(None, start.theirs)
            start.theirs = []
            transport = start.transport
            transport.queued = False
            transport.holds_slot = True
            self.in_flight += 1
            self.waiting.append((start.answer, transport))
            if not sent and not self.queue:
                # The socket wakes the zygote "in sync": mostly onto this CPU, where it would wait for this
                # task to sleep — all we do until then (stdin, the transport, the deadline, the loop's turn:
                # ~80 us, measured, in 3 starts of 4) on the hook's clock. Let it run first: it starts the
                # hook while we go on. (Where it woke elsewhere, nothing waits here and this returns at once.)
                os.sched_yield()
            sent += 1
            self.stdio.attach(start)

    def _never_sent(self, start: _Start, error: OSError) -> None:
        """``start`` failed before the zygote had it: its caller is told as for a start the zygote refused."""
        _close_all(start.ours, start.theirs)
        start.ours, start.theirs = None, []
        transport = start.transport
        transport.queued = False
        if transport.at_once:  # its protocol waits for its pipes' ends, which were never made
            for n in start.pipes:
                if n not in transport.pipes:
                    transport.protocol.pipe_connection_lost(n, None)
        self._fail(start.answer, transport, error)

    def dequeue(self, transport: _Transport) -> None:
        """``transport``'s caller gave up on it before its start was sent: it is dropped from the queue."""
        for start in self.queue:
            if start.transport is transport:
                self.queue.remove(start)
                _close_all(start.ours, start.theirs)
                break

    def released(self) -> None:
        """A hook of ours exited (or never started): the next waiting start may go, a loop turn later (so
        that the exited hook's reap rides with it)."""
        self.in_flight -= 1
        if self.queue and self._pump_handle is None and self.alive:
            self._pump_handle = self.loop.call_soon(self._pump)

    def _want_writer(self) -> None:
        if not self.writing and self.alive:
            self.writing = True
            self.loop.add_writer(self.control.fileno(), self._writable)

    def _writable(self) -> None:
        """The socket has room: what waits goes — first ``tell``'s messages, then the starts."""
        self.writing = False
        self.loop.remove_writer(self.control.fileno())
        self._flush()
        if not self.writing:
            self._pump()

    def reap_later(self, pid: int) -> None:
        """``pid``'s exit is read: the zygote is told to reap it with the next start, or within
        ``REAP_DELAY_S`` — not now, when the message (waking the zygote) would delay the hook's answer."""
        self.reaps.append(pid)
        if self.reap_timer is None:
            self.reap_timer = self.loop.call_later(REAP_DELAY_S, self._send_reaps)
        stdio = self.stdio
        if stdio.spare is None and stdio.spare_timer is None:  # the next hook's pipes, once this answer is out
            stdio.spare_timer = self.loop.call_later(SPARE_DELAY_S, stdio.make_spare)

    def _send_reaps(self) -> None:
        self.reap_timer = None
        if self.reaps:
            self.tell(json.dumps({"reap": self.reaps}).encode())
            self.reaps = []

    def tell(self, message: bytes) -> None:
        """``{"reap": [pid]}`` or ``{"wait": pid}`` (no answer in order: they may go out of turn)."""
        if not self.alive:
            return
        if not self.outbox:
            try:
                self.control.send(message)
                return
            except (BlockingIOError, InterruptedError):
                self._want_writer()
            except OSError:
                return  # the zygote is gone: _read sees the EOF
        self.outbox.append(message)

    def _flush(self) -> None:
        while self.outbox and self.alive:
            try:
                self.control.send(self.outbox[0])
            except (BlockingIOError, InterruptedError):
                self._want_writer()
                return
            except OSError:
                self.outbox.clear()
                return
            self.outbox.popleft()

    def _read(self) -> None:
        # One message per call: the loop calls again while more wait (no recv that only says "no more").
        try:
            data = self.control.recv(MAX_ANSWER)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.end()
            return
        try:
            message = json.loads(data)
            self._answer(message)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            logger.warning("the zygote of %s said %r (%s): ending it", self.owner or "no thread", data[:200], exc)
            self.end()

    def _answer(self, message: dict) -> None:
        if "exit" in message:
            pid, code = int(message["exit"]), int(message["code"])
            transport = self.running.pop(pid, None)
            if transport is not None:
                transport.exited(code)
            return
        answer, transport = self.waiting.popleft()
        if "pid" in message:
            pid = int(message["pid"])
            if pid <= 1:
                raise ValueError("not a pid")
            try:
                transport.started(pid, self.proc.pid)
            except ValueError as exc:
                self._fail(answer, transport, OSError(0, f"the hooks' zygote misbehaved: {exc}"))
                raise
            self.running[pid] = transport
            if answer is not None and not answer.done():
                answer.set_result(None)
        else:
            code = int(message.get("errno") or 0)
            self._fail(answer, transport, OSError(code, str(message.get("error", "cannot start"))[:500]))

    def _fail(self, answer: asyncio.Future | None, transport: _Transport, error: OSError) -> None:
        """A start the zygote did not make: its awaited answer fails, or (``at_once``) its transport."""
        if answer is None:
            transport.failed(error)
        else:
            transport.release()
            if not answer.done():
                answer.set_exception(error)

    def end(self) -> None:
        """Close the control socket (the zygote then ends its hooks' groups and exits); fail what waits."""
        if not self.alive:
            return
        self.alive = False
        if _zygotes.get(self.owner) is self:
            del _zygotes[self.owner]
        self.loop.remove_reader(self.control.fileno())
        if self.reap_timer is not None:
            self.reap_timer.cancel()
            self.reap_timer = None
        self.stdio.close()
        self.outbox.clear()
        if self.writing:
            self.writing = False
            self.loop.remove_writer(self.control.fileno())
        if self._pump_handle is not None:
            self._pump_handle.cancel()
            self._pump_handle = None
        self.control.close()
        while self.waiting:
            answer, transport = self.waiting.popleft()
            self._fail(answer, transport, ConnectionResetError("the hooks' zygote has exited"))
        while self.queue:
            self._never_sent(self.queue.popleft(), ConnectionResetError("the hooks' zygote has exited"))
        for pid, transport in list(self.running.items()):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            transport.exited(-signal.SIGKILL)
        self.running.clear()
        lifetimes.get().end_process(self.proc.pid, launcher.HOOK, self.owner)
        _reap(self.proc)


@dataclass
class _Start:
    """A hook's start, queued until its zygote may take it: the request, which of the hook's fds are our
    pipes (made as it is sent), its stdin, and who waits for it (None: an ``at_once`` caller)."""

    transport: _Transport
    request: bytes
    pipes: tuple[int, ...]
    given: bytes | Callable[[], bytes] | None
    answer: asyncio.Future | None
    ours: dict[int, int] | None = None  # made when it is first tried: our ends, by the hook's fd number
    theirs: list[int] = field(default_factory=list)  # the hook's ends, passed with the request


HOOKS_AT_ONCE = 32  # at most this many of a thread's hooks run at once (fewer for a small maxProcesses)


def hooks_at_once(owner: str) -> int:
    """How many of ``owner``'s hooks its zygote runs at once: a quarter of the thread's ``maxProcesses``
    (an exited hook stays a zombie, counted, until it is reaped; its own children count too; the thread's
    hosts and MCP servers need theirs), at most ``HOOKS_AT_ONCE`` — each holds five descriptors of ours."""
    return max(1, min(HOOKS_AT_ONCE, lifetimes.get().max_processes_of(owner) // 4))


async def _spawn_direct(launch: launcher.Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol],
                        stdin: Any, stdout: Any, stderr: Any,
                        given: bytes | Callable[[], bytes] | None) -> tuple[asyncio.SubprocessTransport, Any]:
    """A hook whose start request is over ``MAX_REQUEST`` is started by the launcher itself (one fork)."""
    if callable(given):
        given = given()
    if given is None:
        return await launcher.spawn_direct(launch, protocol_factory, stdin=stdin, stdout=stdout, stderr=stderr)
    direct, protocol = await launcher.spawn_direct(launch, protocol_factory, stdin=subprocess.PIPE,
                                                   stdout=stdout, stderr=stderr)
    try:
        direct.get_pipe_transport(0).write(given)
        direct.get_pipe_transport(0).write_eof()
    except (OSError, RuntimeError):
        pass  # a hook that does not read its stdin may close it: that is its business
    return direct, protocol


def _reap(proc: subprocess.Popen, tries: int = 60) -> None:
    if proc.poll() is None and tries > 0:
        try:
            asyncio.get_running_loop().call_later(0.05, _reap, proc, tries - 1)
        except RuntimeError:
            pass


_zygotes: dict[str, Zygote] = {}


async def spawn(launch: launcher.Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol], *,
                stdin: Any, stdout: Any, stderr: Any, at_once: bool = False) -> tuple[asyncio.SubprocessTransport, Any]:
    """Start ``launch`` (a command hook) through its owner's zygote, started now if it has none."""
    zygote = _zygotes.get(launch.owner)
    if zygote is not None and zygote.alive and zygote.loop is not asyncio.get_running_loop():
        zygote.alive = False  # made under an event loop that is gone (tests, benches): EOF ends it
        zygote.control.close()
        zygote = None
    if zygote is None or not zygote.alive:
        zygote = _zygotes[launch.owner] = Zygote(launch.owner)
    return await zygote.spawn(launch, protocol_factory, stdin, stdout, stderr, at_once)


def warm(owner: str) -> None:
    """Start ``owner``'s zygote ahead of its first hook (its Python start is then off that hook's clock)."""
    zygote = _zygotes.get(owner)
    if zygote is None or not zygote.alive or zygote.loop is not asyncio.get_running_loop():
        try:
            _zygotes[owner] = Zygote(owner)
        except OSError as exc:  # the first hook will try again, and say why if it cannot
            logger.warning("cannot start the command-hook zygote of %s ahead: %s", owner, exc)


def end(owner: str) -> None:
    """The thread closed: its zygote goes (and with it whatever hook still runs)."""
    zygote = _zygotes.pop(owner, None)
    if zygote is not None:
        zygote.end()


lifetimes.at_owner_end(end)  # a thread's end (``Lifetimes.end_owner``) ends its zygote
