"""Starting one process with every fence the sidecar puts on it: the fork-and-exec under the launcher.

A ``Launch`` says what to run and for whom (``owner``: the thread whose code it is; ``""`` for a
spare host no thread has yet). ``popen`` starts it synchronously (hosts, from the event-loop
thread), ``spawn_direct`` through the event loop. Either way the child:

- is a session and process-group leader, so a stop reaches what it started and the editor's
  Ctrl-C does not;
- is killed by the kernel when the sidecar dies, even by SIGKILL (``PR_SET_PDEATHSIG``). The signal
  fires when the *thread that forked* exits, so processes are started from the event-loop thread,
  which lives as long as the sidecar serves;
- enters its owner's lifetime (``lifetimes``: its cgroup, or the subreaper's sweep) and its Landlock
  domain (``landlock``) before it execs.

Everything that fences a started process is added here, in ``_child_setup``, and nowhere else. Callers
go through ``launcher`` (the one way in), which sends command hooks to their owner's zygote instead;
the zygote itself is started by ``popen`` here and its hooks inherit its fences. This module starts
processes only: it imports no zygote and no launcher.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.containment import landlock, lifetimes
from harness_sidecar.containment.private import libc_prctl


HOST = "host"
MCP = "mcp"
HOOK = "hook"


@dataclass(frozen=True)
class Launch:
    """A process to start: its command line, environment and working directory, and whose code it is."""

    argv: list[str]
    kind: str  # HOST | MCP | HOOK
    owner: str = ""  # the thread id whose code runs in it ("" for a spare host)
    env: dict[str, str] | None = None
    cwd: str | None = None
    pass_fds: tuple[int, ...] = field(default=())
    # with ``env`` None: the sidecar's environment plus these (a zygote adds them to its own copy of it,
    # taken when it started: the sidecar never changes its environment)
    env_add: dict[str, str] | None = None
    # a command hook's shell form ``/bin/sh -c SCRIPT`` whose script is one simple command: the command line
    # the shell would exec. A zygote starts it without the shell (one exec, not two) when its program is
    # found and execs, with the PWD the shell would export; else ``argv`` (``hooks.command.direct_argv``)
    direct: list[str] | None = None

    def environment(self) -> dict[str, str] | None:
        """The child's whole environment (None: the sidecar's as it is)."""
        if self.env is None and self.env_add:
            return {**os.environ, **self.env_add}
        return self.env




_PR_SET_PDEATHSIG = 1


def _child_setup(launch: Launch) -> Callable[[], None] | None:
    """The ``preexec_fn``: runs in the child between fork and exec (no locks, little allocation)."""
    prctl = libc_prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    fence = _lifetime_fence(launch)
    # prepared here, in the parent: its domain may write beneath its slot's groups folder alone of the cgroups
    enter_domain = landlock.enter_domain(lifetimes.get().take_groups())

    def setup() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the sidecar died before the request took effect
            os._exit(1)
        if fence is not None:
            fence()
        enter_domain()  # the kernel's fences: a Landlock domain of its own (containment/landlock.py)

    return setup


def _lifetime_argv(launch: Launch) -> list[str]:
    """Lifetimes: the command line to run — an MCP server or hook may be started through ``/bin/sh``,
    which enters the owner's cgroup and then ``exec``s it (same pid), so that the move's kernel
    synchronisation is not waited for in ``fork`` on the event loop. Evaluated before ``_child_setup``."""
    return lifetimes.get().argv(launch.kind, launch.owner, launch.argv, launch.environment(), launch.cwd)


def _lifetime_fence(launch: Launch) -> Callable[[], None] | None:
    """Lifetimes (``containment.lifetimes``): the owner's cgroup is made now; the child enters it
    (or registers with the subreaper sweep) before it execs. ``OSError`` propagates: never unfenced."""
    return lifetimes.get().child_setup(launch.kind, launch.owner, None)


def popen(launch: Launch, *, stdin: Any, stdout: Any, stderr: Any) -> subprocess.Popen:
    """Start ``launch`` now; ``OSError`` (not found, no fds, no memory) propagates."""
    return subprocess.Popen(_lifetime_argv(launch), stdin=stdin, stdout=stdout, stderr=stderr, pass_fds=launch.pass_fds,
                            start_new_session=True, env=launch.environment(), cwd=launch.cwd,
                            preexec_fn=_child_setup(launch))


async def spawn_direct(launch: Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol], *, stdin: Any = None,
                       stdout: Any = None, stderr: Any = None) -> tuple[asyncio.SubprocessTransport, Any]:
    """Start ``launch`` through the running event loop, fenced in its child (``_child_setup``)."""
    loop = asyncio.get_running_loop()
    return await loop.subprocess_exec(protocol_factory, *_lifetime_argv(launch), stdin=stdin, stdout=stdout, stderr=stderr,
                                      env=launch.environment(), cwd=launch.cwd, pass_fds=launch.pass_fds,
                                      start_new_session=True, preexec_fn=_child_setup(launch))
