"""One MCP server process: its own pipes, its own process group, and no life after the sidecar.

Nothing here knows MCP; ``session.py`` speaks the protocol over the pipes this module opens.

- stdin and stdout are pipes private to the server: it never sees the editor's fds 0/1 (the
  protocol), and stderr is a third pipe whose lines go to the sidecar's stderr with a prefix
  (``[thread-1 mcp <name>] ...``).
- The server is a session and process-group leader (``start_new_session``), so that stopping it
  reaches the processes it started (``npx`` → ``node``) and the editor's Ctrl-C does not.
- It is started by ``containment.launcher`` (as every foreign process is): killed by the kernel
  when the sidecar dies, even by SIGKILL. A server's own children see EOF on stdin (the sidecar
  held the only write end).
- ``stop()``: close stdin, after ``grace`` seconds SIGTERM the group, after ``grace`` more SIGKILL.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
from collections.abc import Callable
from typing import Any

from harness_sidecar.containment import launcher, lifetimes, reaper
from harness_sidecar.base.stderr import SINK

STDERR_CHUNK = 65536
MAX_STDERR_LINE = 16384  # a longer stderr line is written in pieces of this size
TAIL_LINES = 5  # stderr lines kept to explain a failed start


async def exited_within(exited: asyncio.Event, timeout: float) -> bool:
    """Whether ``exited`` is set within ``timeout`` s: the one wait of every server connection, local or remote."""
    try:
        await asyncio.wait_for(exited.wait(), timeout)
    except TimeoutError:
        return False
    return True


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own protocol, plus a callback the moment the process exits (not when its pipes close)."""

    def __init__(self, on_exit: Callable[[], None], limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._on_exit = on_exit

    def process_exited(self) -> None:
        super().process_exited()
        self._on_exit()


class ServerProcess:
    """A spawned server: ``stdin``/``stdout`` stream objects, exit status, the stop sequence."""

    def __init__(self, label: str, owner: str = "") -> None:
        self.label = label
        self.owner = owner  # the thread whose server this is
        self.proc: asyncio.subprocess.Process | None = None
        self.exited = asyncio.Event()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._reaped: asyncio.Future[None] | None = None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    async def spawn(self, argv: list[str], env: dict[str, str], cwd: str | None) -> None:
        """Start the process; ``OSError`` (not found, not executable, bad cwd) propagates."""
        loop = asyncio.get_running_loop()
        transport, protocol = await launcher.spawn(
            launcher.Launch(argv, launcher.MCP, owner=self.owner, env=env, cwd=cwd),
            lambda: _Protocol(self._on_exit, 1 << 20, loop),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        self.proc = asyncio.subprocess.Process(transport, protocol, loop)
        if self.proc.returncode is not None:
            self.exited.set()
        self._stderr_task = asyncio.create_task(self._pump_stderr(), name=f"mcp-stderr {self.label}")

    def _on_exit(self) -> None:
        self.exited.set()
        if self.proc is not None:  # what it started ends with it, now (not after the stop sequence)
            lifetimes.get().end_process(self.proc.pid, launcher.MCP, self.owner)

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self.proc and self.proc.stdin
        return self.proc.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.proc and self.proc.stdout
        return self.proc.stdout

    def exit_status(self) -> dict[str, Any]:
        """``{exitCode}`` or ``{signal}`` (a number), as ``thread/diagnostic`` carries them."""
        code = self.returncode
        if code is None:
            return {}
        return {"signal": -code} if code < 0 else {"exitCode": code}

    def describe_exit(self) -> str:
        code = self.returncode
        if code is None:
            return "is still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"was killed by {name}"
        return f"exited with code {code}"

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the server's whole process group; quietly nothing if it is gone."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def wait_exit(self, timeout: float) -> bool:
        return await exited_within(self.exited, timeout)

    async def drain_stderr(self, timeout: float) -> None:
        """Let the stderr pump copy what the server wrote before it exited (for the failure message)."""
        if self._stderr_task is not None:
            await asyncio.wait([self._stderr_task], timeout=timeout)

    def close_stdin(self) -> None:
        if self.proc and self.proc.stdin and not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def stop(self, grace: float) -> None:
        """Close stdin; after ``grace`` s SIGTERM the group; after ``grace`` s more SIGKILL. Returns once it is gone."""
        if self.proc is None:
            return
        self.close_stdin()
        if not await self.wait_exit(grace):
            self.kill_group(signal.SIGTERM)
            if not await self.wait_exit(grace):
                self.kill_group(signal.SIGKILL)
                await self.wait_exit(grace)
        await self.reap()

    async def reap(self) -> None:
        """After the leader exited: kill what it left in its group, release the pipes and the stderr pump.

        Done once: ``stop()`` ends with it and the connection's finish calls it again; a later (or
        concurrent) call waits for the first instead of signalling and scanning ``/proc`` again."""
        if self._reaped is None:
            self._reaped = asyncio.ensure_future(self._reap())
        await asyncio.shield(self._reaped)

    async def _reap(self) -> None:
        self.kill_group(signal.SIGKILL)
        if self.proc is not None:  # and what left its group (setsid, double forks)
            lifetimes.get().end_process(self.proc.pid, launcher.MCP, self.owner)
        if self.proc is not None:
            deadline = asyncio.get_running_loop().time() + 2.0
            while group_alive(self.proc.pid) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.02)
        if self.proc is not None:
            transport = getattr(self.proc, "_transport", None)
            if transport is not None:
                transport.close()
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
            except (TimeoutError, asyncio.CancelledError):
                self._stderr_task.cancel()

    async def _pump_stderr(self) -> None:
        """Copy the server's stderr to ours, each line prefixed with the thread and server."""
        assert self.proc and self.proc.stderr
        reader = self.proc.stderr
        pending = b""
        try:
            while chunk := await reader.read(STDERR_CHUNK):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                while len(pending) > MAX_STDERR_LINE:
                    lines.append(pending[:MAX_STDERR_LINE])
                    pending = pending[MAX_STDERR_LINE:]
                for line in lines:
                    self._emit(line)
        except (ConnectionError, OSError):
            pass
        if pending:
            self._emit(pending)

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        self.stderr_tail.append(line)
        SINK.line(f"[{self.label}] ".encode(), line.encode(), self.owner)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (Linux: /proc; zombies have ended). Elsewhere: any member."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    return any(len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z" for _pid, fields in reaper.stats())


def write_stderr(text: str) -> None:
    """The sidecar's stderr, through the queue that never blocks the sidecar."""
    SINK.write(text.encode("utf-8", "replace"))
