"""Command hooks are started by a zygote per thread, so that a hook costs a ``vfork``, not a ``fork``.

Every fence the launcher puts on a process is added between fork and exec (``launcher._child_setup``,
a ``preexec_fn``), and any ``preexec_fn`` makes CPython ``fork`` the sidecar — copying its page
tables and then faulting its pages back — where it would otherwise ``vfork``: ~4 ms of a hook's
~5 ms start on a quiet machine, paid on every tool call a ``PreToolUse`` hook matches. So a thread's
hooks are started by a small process of its own, the *zygote* (``zygote_process.py``): started once
through the launcher, it runs in the thread's cgroup and in a Landlock domain of its own, dies with
the sidecar, and starts each hook with a plain ``subprocess.Popen`` (``vfork``, nothing to run in the
child), which inherits all of that.

What it changes, and what it keeps (protocol.md, "Containment"):
- one Landlock domain per thread's command hooks (the zygote's), not per hook: a thread's hooks can
  reach each other and their zygote — never the sidecar, the editor, or another thread's processes;
- the cgroup: the thread's hooks share one group (``<slot>/hook-<zygote pid>``) in the thread's slot,
  so ``maxProcesses`` counts them as before, and they end with the thread;
- the sidecar's death: the zygote gets SIGTERM (its parent-death signal) and kills its hooks'
  process groups; the reaper ends the cgroups as before;
- nothing else: the hook's pid is its own process group (the deadline's ``killpg`` from the sidecar),
  its stdin/stdout/stderr are the sidecar's pipes, passed over the control socket.

The zygote is untrusted as its hooks are: what it says is parsed with bounds, and a zygote that dies
or says nonsense fails the hooks it was running (``-SIGKILL``) and is replaced at the next start.
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
from asyncio import base_subprocess
from typing import Any, Callable

from harness_sidecar.containment import launcher

logger = logging.getLogger(__name__)

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote_process.py")
MAX_ANSWER = 4096
MAX_REQUEST = 60 * 1024  # one datagram; a larger request (a huge environment) is started by the launcher itself


_USABLE = sys.platform.startswith("linux") and hasattr(os, "pidfd_open") and hasattr(socket, "SOCK_SEQPACKET") \
    and hasattr(signal, "pidfd_send_signal")


def takes(launch: launcher.Launch) -> bool:
    """Whether ``launch`` is started through its owner's zygote (a command hook, where the kernel allows)."""
    if not _USABLE or launch.kind != launcher.HOOK or launch.pass_fds or SWITCH_OFF == os.environ.get(SWITCH):
        return False
    size = sum(len(a) for a in launch.argv) + sum(len(k) + len(v) for k, v in (launch.env or {}).items())
    return size < MAX_REQUEST * 3 // 4


SWITCH = "HARNESS_SIDECAR_ZYGOTE"  # "off": hooks are started by the launcher, one fork each (to compare)
SWITCH_OFF = "off"


class _Started:
    """What ``BaseSubprocessTransport`` needs of a ``Popen``, for a process the zygote started."""

    def __init__(self, pid: int, stdin: Any, stdout: Any, stderr: Any) -> None:
        self.pid = pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None
        self.transport: _Transport | None = None
        try:
            self.pidfd: int | None = os.pidfd_open(pid)  # signals reach this process, never a reused pid
        except OSError:
            self.pidfd = None

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def exited(self, code: int) -> None:
        if self.returncode is not None:
            return
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        if self.transport is not None:
            self.transport._process_exited(code)  # sets returncode
        self.returncode = code


class _Transport(base_subprocess.BaseSubprocessTransport):
    """asyncio's own subprocess transport (pipes, protocol calls, ``_wait``), over a process it did not fork."""

    def _start(self, args: Any, shell: Any, stdin: Any, stdout: Any, stderr: Any, bufsize: Any,  # type: ignore[override]
               started: _Started, **kwargs: Any) -> None:
        self._proc = started


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
        from harness_sidecar.containment import lifetimes

        lifetimes.get().started_process(self.proc.pid, launcher.HOOK, owner)
        self.control = ours
        ours.setblocking(False)
        self.loop = asyncio.get_running_loop()
        self.waiting: collections.deque[asyncio.Future] = collections.deque()  # starts, in order
        self.running: dict[int, _Started] = {}
        self.alive = True
        self.loop.add_reader(ours.fileno(), self._read)

    async def spawn(self, launch: launcher.Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol],
                    stdin: Any, stdout: Any, stderr: Any) -> tuple[asyncio.SubprocessTransport, Any]:
        ours: list[Any] = []
        theirs: list[int] = []
        stdio: list[str] = []
        try:
            for n, how in enumerate((stdin, stdout, stderr)):
                if how == subprocess.PIPE:
                    read, write = os.pipe2(os.O_CLOEXEC)
                    if n == 0:
                        ours.append(open(write, "wb", buffering=0))
                        theirs.append(read)
                    else:
                        ours.append(open(read, "rb", buffering=0))
                        theirs.append(write)
                    stdio.append("fd")
                elif how in (None, subprocess.DEVNULL):
                    ours.append(None)
                    stdio.append("devnull")
                else:
                    raise ValueError(f"the zygote passes pipes or nothing, not {how!r}")
            request = json.dumps({"argv": launch.argv, "env": launch.env, "cwd": launch.cwd, "stdio": stdio}).encode()
            if len(request) > MAX_REQUEST:
                raise OSError(7, "the command line and environment are too large")  # E2BIG
            answer = self.loop.create_future()
            await self._send(request, theirs)
            self.waiting.append(answer)
        except BaseException:
            for f in ours:
                if f is not None:
                    f.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        try:
            started: _Started = await answer  # it may have exited already: then its returncode is set
        except BaseException:
            for f in ours:
                if f is not None:
                    f.close()
            raise
        started.stdin, started.stdout, started.stderr = ours
        waiter = self.loop.create_future()
        protocol = protocol_factory()
        transport = _Transport(self.loop, protocol, launch.argv, False, stdin, stdout, stderr, 0, waiter=waiter,
                               started=started)
        started.transport = transport
        if started.returncode is not None:
            transport._process_exited(started.returncode)
        try:
            await waiter
        except BaseException:
            transport.close()
            await transport._wait()
            raise
        return transport, protocol

    async def _send(self, request: bytes, fds: list[int]) -> None:
        if not self.alive:
            raise ConnectionResetError("the hooks' zygote has exited")
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        while True:
            try:
                self.control.sendmsg([request], ancillary)
                return
            except BlockingIOError:
                ready = self.loop.create_future()
                self.loop.add_writer(self.control.fileno(), lambda: ready.done() or ready.set_result(None))
                try:
                    await ready
                finally:
                    self.loop.remove_writer(self.control.fileno())

    def _read(self) -> None:
        while True:
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
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("the zygote of %s said %r (%s): ending it", self.owner or "no thread", data[:200], exc)
                self.end()
                return

    def _answer(self, message: dict) -> None:
        if "exit" in message:
            pid, code = int(message["exit"]), int(message["code"])
            started = self.running.pop(pid, None)
            if started is not None:
                started.exited(code)
            return
        answer = self.waiting.popleft()
        if "pid" in message:
            pid = int(message["pid"])
            if pid <= 1:
                raise ValueError("not a pid")
            started = self.running[pid] = _Started(pid, None, None, None)
            if not answer.done():
                answer.set_result(started)
        else:
            code = int(message.get("errno") or 0)
            if not answer.done():
                answer.set_exception(OSError(code, str(message.get("error", "cannot start"))[:500]))

    def end(self) -> None:
        """Close the control socket (the zygote then ends its hooks' groups and exits); fail what waits."""
        if not self.alive:
            return
        self.alive = False
        if _zygotes.get(self.owner) is self:
            del _zygotes[self.owner]
        self.loop.remove_reader(self.control.fileno())
        self.control.close()
        while self.waiting:
            answer = self.waiting.popleft()
            if not answer.done():
                answer.set_exception(ConnectionResetError("the hooks' zygote has exited"))
        for pid, started in list(self.running.items()):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            started.exited(-signal.SIGKILL)
        self.running.clear()
        from harness_sidecar.containment import lifetimes

        lifetimes.get().end_process(self.proc.pid, launcher.HOOK, self.owner)
        _reap(self.proc)


def _reap(proc: subprocess.Popen, tries: int = 60) -> None:
    if proc.poll() is None and tries > 0:
        try:
            asyncio.get_running_loop().call_later(0.05, _reap, proc, tries - 1)
        except RuntimeError:
            pass


_zygotes: dict[str, Zygote] = {}


async def spawn(launch: launcher.Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol], *,
                stdin: Any, stdout: Any, stderr: Any) -> tuple[asyncio.SubprocessTransport, Any]:
    """Start ``launch`` (a command hook) through its owner's zygote, started now if it has none."""
    zygote = _zygotes.get(launch.owner)
    if zygote is None or not zygote.alive or zygote.loop is not asyncio.get_running_loop():
        zygote = _zygotes[launch.owner] = Zygote(launch.owner)
    return await zygote.spawn(launch, protocol_factory, stdin, stdout, stderr)


def end(owner: str) -> None:
    """The thread closed: its zygote goes (and with it whatever hook still runs)."""
    zygote = _zygotes.pop(owner, None)
    if zygote is not None:
        zygote.end()
