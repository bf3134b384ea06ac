"""The one way the sidecar starts a foreign process: extension hosts, MCP servers, command hooks.

``spawn`` starts a ``Launch`` through the running event loop: a command hook (kind ``HOOK``) by its
owner's zygote (``containment.zygote``: fenced once, it ``vfork``s its hooks, which inherit its
fences), anything else by ``spawning.spawn_direct``; ``popen`` starts one synchronously (hosts, from
the event-loop thread). What fences a process is written once, in ``spawning._child_setup``; this
module only chooses the way. Callers name ``launcher.Launch``, ``launcher.HOST`` … from here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from harness_sidecar.containment import zygote
from harness_sidecar.containment.spawning import HOOK, HOST, MCP, Launch, popen, spawn_direct

__all__ = ["HOOK", "HOST", "MCP", "Launch", "popen", "spawn", "spawn_direct"]


async def spawn(launch: Launch, protocol_factory: Callable[[], asyncio.SubprocessProtocol], *, stdin: Any = None,
                stdout: Any = None, stderr: Any = None) -> tuple[asyncio.SubprocessTransport, Any]:
    """Start ``launch`` through the running event loop; ``OSError`` propagates. A command hook is
    started by its owner's zygote (``containment.zygote``: fenced once, it ``vfork``s its hooks)."""
    if zygote.takes(launch):
        return await zygote.spawn(launch, protocol_factory, stdin=stdin, stdout=stdout, stderr=stderr)
    return await spawn_direct(launch, protocol_factory, stdin=stdin, stdout=stdout, stderr=stderr)


