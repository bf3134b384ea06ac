"""The extension host: a process of its own that runs one thread's trusted extensions.

Started by the sidecar (``python -m harness_sidecar.extensions.host.main FD PARENT_PID``) with
stdin on ``/dev/null``, stdout and stderr on pipes the sidecar reads, and the channel on
``FD``. It imports exactly the bytes the sidecar sends, runs ``activate``, reports what
was staged, and then runs handlers, tools and commands when asked. Whatever extension
code does here — hold the GIL, exit, exhaust memory, patch modules — stays in this
process: the sidecar keeps every deadline by its own clock and restarts a host that dies.

Threads, leader/follower: the thread that reads the channel (the leader) runs each job it
reads itself — no hand-over to another thread on the way of a call. A job that runs longer
than ``PROMOTE_S`` (``extensions.host.serving``: a slow hook, one waiting for the user) makes a monitor
thread start a new leader, so pings, aborts and answers keep being read; the old one finishes its
job and ends.
Coroutines run on one event-loop thread. A step's outcome counts only if it ended by its
deadline (``channel`` explains the rule both sides keep).
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import sys
import threading
from typing import Any

from harness_sidecar.extensions import board as board_cells
from harness_sidecar.extensions import channel
from harness_sidecar.extensions.host.calls import ToolCalls
from harness_sidecar.extensions.host.commands import Commands
from harness_sidecar.extensions.host.events import Events
from harness_sidecar.extensions.host.loading import Loading
from harness_sidecar.extensions.host.output import Output, install
from harness_sidecar.extensions.host.running import Running, _local
from harness_sidecar.extensions.host.serving import Serving
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.extensions.host.ui import UserRequests

log = logging.getLogger("harness_sidecar.host")


# -- the host ----------------------------------------------------------------------------------------------


class Host:
    """One thread's extension host: its parts, each given the state and the parts it uses."""

    def __init__(self, sock: socket.socket, board: board_cells.HostBoard | None = None) -> None:
        self.state = state = HostState(install(Output(sock)), board)
        self.board = board
        self.running = Running(state)
        self.users = UserRequests(state, self.running)
        self.running.context = self.users.context  # handed up: a handler's ctx asks through users
        self.loading = Loading(state, self.running)
        self.calls = ToolCalls(state, self.running, self.users)
        self.events = Events(state, self.running)
        self.commands = Commands(state, self.running, self.users)
        self.serving = Serving(
            state, sock,
            runs={channel.CALL: self.calls.run_call, channel.EVENT: self.events.run_event,
                  channel.COMMAND: self.commands.run_command, channel.LOAD: self.loading.load},
            frames={channel.INIT: self.loading.init_frame, channel.COMMIT: self.loading.commit_frame,
                    channel.UI_ANSWER: self._ui_answer})
        self.users.promote = self.serving.promote  # handed up: a question hands the reading on
        state.resolve_ui = self.users.resolve_ui  # an aborted exchange lets its questions go

    def _ui_answer(self, ident: int, body: Any) -> None:
        self.users.resolve_ui(ident, body.get("value"), body.get("step"), body.get("shift"), body.get("outcome"))

    def serve(self) -> None:
        self.serving.serve()


# -- process set-up ----------------------------------------------------------------------------------------


class _PrefixedStream:
    """``sys.stdout``/``sys.stderr`` of the host: lines say which extension wrote them."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.at_line_start = True
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError("write() argument must be str")
        ext = getattr(_local, "extension", None)
        data = text
        if ext:
            prefix = f"[{ext}] "
            lines = data.split("\n")
            data = "\n".join((prefix + line if (i or self.at_line_start) and line else line)
                             for i, line in enumerate(lines))
        with self.lock:
            if text:
                self.at_line_start = text.endswith("\n")
            try:
                os.write(self.fd, data.encode("utf-8", "replace"))
            except OSError:
                pass
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd


def die_with_parent(parent: int) -> None:
    """Linux: the kernel kills us when the sidecar dies (also by SIGKILL)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        except (OSError, AttributeError):
            log.warning("cannot ask to die with the sidecar; relying on EOF of the channel")
    if os.getppid() != parent:  # the sidecar died before we asked
        os._exit(0)


def only_the_host_answers(fd: int, board: board_cells.HostBoard | None) -> None:
    """No other process can answer for the host (v4 §2): a program the host's code starts does not inherit
    the channel, and in a child it forks (``os.fork``, ``multiprocessing``, a ``preexec_fn``) the channel is
    a dead socket at once (a write there fails, which ends such a child once it runs host code, and a read
    sees the end) and the step board private memory. The sidecar also drops what any process but the host
    writes on the channel (``supervisor``: the kernel names each write's process)."""
    os.set_inheritable(fd, False)
    unshare = board.unshare_at_fork() if board is not None else None

    def in_child() -> None:
        try:
            dead, gone = socket.socketpair()
            gone.close()
            os.dup2(dead.fileno(), fd, inheritable=False)
            dead.close()
            if unshare is not None:
                unshare()
        except BaseException:  # noqa: BLE001 - a child that would keep the channel does not live on
            os._exit(70)

    os.register_at_fork(after_in_child=in_child)


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    from harness_sidecar.containment.private import make_private

    make_private()  # before any extension code: other processes cannot open our fds or memory
    die_with_parent(parent)
    sys.dont_write_bytecode = True  # extension code runs from bytes; nothing it imports leaves a .pyc behind
    from harness_sidecar.containment.lifetimes import enter_own_group

    enter_own_group()  # its thread's cgroup (v3 §1 lifetimes), before it is ready for any extension
    from harness_sidecar.containment.private import drop_sys_admin

    drop_sys_admin()  # as root: no code of it can claim the host's pid in SCM_CREDENTIALS (protocol.md)
    from harness_sidecar.base import jsonio

    jsonio.standard_library_only(jsonio.SMALL_BYTES)  # under hostMemoryMb, MemoryError rather than orjson's SIGSEGV
    sys.stdout = _PrefixedStream(1)  # type: ignore[assignment]
    sys.stderr = _PrefixedStream(2)  # type: ignore[assignment]
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    sock = socket.socket(fileno=fd)
    host = Host(sock, board_cells.attach(argv))
    only_the_host_answers(fd, host.board)
    gc.freeze()  # the host's own start-up objects: never scanned by the collector
    gc.set_threshold(20_000, 20, 20)
    try:
        host.serve()
    except channel.FrameError as exc:
        log.error("the channel broke: %s", exc)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
