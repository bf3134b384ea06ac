"""Threads: the sidecar's methods, independent of the transport that carries them.

A thread owns its catalog snapshot, its trusted extensions, its tools and hooks and its
activated skills; nothing is shared between threads. ``Sidecar.methods`` maps each wire
method to a coroutine taking the params object, so the JSONL endpoint and the LSP mode
serve the very same implementation. ``Sidecar`` keeps the state every method shares (the
editor as a ``Peer``, the open threads) and composes the methods, one class a protocol noun,
from ``harness_sidecar.methods``.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Awaitable, Callable, Protocol

from harness_sidecar.errors import DomainError
from harness_sidecar.methods.commands import CommandMethods
from harness_sidecar.methods.extensions import ExtensionLoading
from harness_sidecar.methods.live_catalog import LiveCatalog
from harness_sidecar.methods.mcp import McpMethods
from harness_sidecar.methods.resources import ResourceMethods
from harness_sidecar.methods.thread import Thread, ThreadMethods
from harness_sidecar.methods.tools import ToolMethods
from harness_sidecar.methods.ui import EditorUi
from harness_sidecar.results import ToolCall, ToolResult
from harness_sidecar.stderr import SINK
from harness_sidecar.wire import params as P


class Peer(Protocol):
    """What a transport offers the methods: notifications and reverse requests to the editor."""

    client_capabilities: dict[str, Any]  # initialize.capabilities, as the editor sent them

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any: ...


class Sidecar(ThreadMethods, LiveCatalog, ResourceMethods, ToolMethods, CommandMethods, ExtensionLoading, EditorUi,
              McpMethods):
    """The methods of every thread, over one editor (``peer``)."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.threads: dict[str, Thread] = {}
        self._ids = itertools.count(1)
        self._starting: dict[str, asyncio.Future] = {}
        self._spares: Any = None
        self._watch_hub: Any = None
        self.watching = True  # False when the transport feeds file changes itself (LSP didChangeWatchedFiles)
        # With watching off: told the roots of each thread that wants watching, so that the transport
        # has them watched (LSP: registers didChangeWatchedFiles globs for them with the client).
        self.watch_requested: Callable[[list[str]], None] | None = None
        self.max_result_bytes = 16 * 1024 * 1024
        SINK.on_dropped = self._stderr_dropped
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "thread/start": self.thread_start,
            "thread/close": self.thread_close,
            "thread/refresh": self.thread_refresh,
            "skills/activate": self.skills_activate,
            "templates/render": self.templates_render,
            "context/build": self.context_build,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "commands/list": self.commands_list,
            "commands/run": self.commands_run,
            "input/submit": self.input_submit,
            "loop/event": self.loop_event,
            "mcp/resource/read": self.mcp_resource_read,
            "mcp/prompt/get": self.mcp_prompt_get,
        }
        # Methods whose common case begins at once, without a task (``Endpoint``): given the params and
        # ``respond(result, error)``, the canceller of the request begun, or None to serve it by ``methods``.
        self.begin_now: dict[str, Callable[[dict[str, Any], Callable[[Any, BaseException | None], None]],
                                           Callable[[], None] | None]] = {"tools/call": self.tools_call_now}

    def oversize(self, method: str, result: Any, size: int) -> Any:
        """What to answer instead of a result over ``--max-result-bytes``: a tool call's is a paired error."""
        if method == "tools/call" and isinstance(result, dict) and isinstance(result.get("result"), dict):
            inner = result["result"]
            call = ToolCall(inner.get("toolCallId", ""), inner.get("toolName", ""), {})
            return {"result": ToolResult.error(
                call, f"the tool's result is {size} bytes; the limit is {self.max_result_bytes} "
                      f"(--max-result-bytes)", kind="too_large", size=size, limit=self.max_result_bytes).to_wire()}
        return None

    def _stderr_dropped(self, thread_id: str, count: int) -> None:
        if thread_id in self.threads:
            self.peer.notify("thread/diagnostic", {
                "threadId": thread_id, "kind": "stderr_dropped", "dropped": count,
                "message": f"{count} stderr line(s) of this thread's processes were dropped: the editor is not "
                           f"reading the sidecar's stderr (told at most once a minute)"})

    async def thread(self, params: dict[str, Any]) -> Thread:
        """The open thread named by ``params.threadId``.

        A request pipelined behind the ``thread/start`` that creates its thread waits for
        that start to finish, so a session piped by hand behaves as it reads.
        """
        thread_id = P.thread_id(params)
        starting = self._starting.get(thread_id)
        if starting is not None:
            await asyncio.shield(starting)
        thread = self.threads.get(thread_id)
        if thread is None:
            if len(thread_id) > 200:  # never echo a huge id back (twice) to the editor
                raise DomainError("thread_not_found", f"no open thread '{thread_id[:200]}…' "
                                                      f"({len(thread_id)} characters)")
            raise DomainError("thread_not_found", f"no open thread '{thread_id}'", threadId=thread_id)
        return thread
