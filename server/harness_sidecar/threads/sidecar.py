"""The sidecar's methods, independent of the transport that carries them: the parts, composed.

A thread owns its catalog snapshot, its trusted extensions, its tools and hooks and its activated
skills; nothing is shared between threads. ``Sidecar.methods`` maps each wire method to a coroutine
taking the params object, so the JSONL endpoint and the LSP mode serve the very same implementation.

``Sidecar`` makes the parts, one a protocol noun, each given exactly the parts it uses (none reaches
another through ``self``):

    Editor ─┬─ ExtensionHosts ─┬─ ToolMethods ── LiveCatalog ─┐
            │                  ├─ ResourceMethods             ├─ ThreadLifecycle
            │                  └─ CommandMethods              │
    OpenThreads ──────────────────────────────────────────────┘   (every part looks threads up here)
    OpenThreads ── McpMethods                                       (mcp/resource/read, mcp/prompt/get)

and holds the method table, what the wire asks of its service (``oversize``, ``close_all``, ``warm``)
and what the LSP mode sets (``watching``, ``watch_requested``, ``files_changed``, ``watch``).
``ResourceMethods`` and ``CommandMethods`` are made at their first call or at ``warm`` (the editor is
idle), whichever comes first: a fresh process's first thread/start does not import them.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from harness_sidecar.base.results import ToolCall, ToolResult
from harness_sidecar.base.stderr import SINK
from harness_sidecar.threads.editor import Editor, Peer
from harness_sidecar.threads.extensions import ExtensionHosts
from harness_sidecar.threads.lifecycle import ThreadLifecycle
from harness_sidecar.threads.live_catalog import LiveCatalog
from harness_sidecar.threads.mcp import McpMethods
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads.thread import Thread
from harness_sidecar.threads.tools import ToolMethods

__all__ = ["Peer", "Sidecar"]


class Sidecar:
    """The methods of every thread, over one editor (``peer``)."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.editor = Editor(peer)
        self.open = OpenThreads()
        self.hosts = ExtensionHosts(self.editor)
        self.tools = ToolMethods(self.open, self.editor, self.hosts)
        self._resources: Any = None  # ResourceMethods and CommandMethods: made at their first call, so a
        self._commands: Any = None  # fresh process's first thread/start does not import them (issue #32)
        self.live = LiveCatalog(self.open, self.editor, self.tools)
        self.lifecycle = ThreadLifecycle(self.open, self.editor, self.tools, self.hosts, self.live)
        self.mcp = McpMethods(self.open)
        SINK.on_dropped = self._stderr_dropped
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "thread/start": self.lifecycle.thread_start,
            "thread/close": self.lifecycle.thread_close,
            "thread/refresh": self.live.thread_refresh,
            "thread/fork": self.lifecycle.thread_fork,
            "skills/activate": self._later("resources", "skills_activate"),
            "skills/deactivate": self._later("resources", "skills_deactivate"),
            "templates/render": self._later("resources", "templates_render"),
            "context/build": self._later("resources", "context_build"),
            "tools/list": self.tools.tools_list,
            "tools/call": self.tools.tools_call,
            "commands/list": self._later("commands", "commands_list"),
            "commands/run": self._later("commands", "commands_run"),
            "input/submit": self._later("commands", "input_submit"),
            "loop/event": self._later("commands", "loop_event"),
            "mcp/resource/read": self.mcp.mcp_resource_read,
            "mcp/prompt/get": self.mcp.mcp_prompt_get,
        }
        # Methods whose common case begins at once, without a task (``Endpoint``): given the params and
        # ``respond(result, error)``, the canceller of the request begun, or None to serve it by ``methods``.
        self.begin_now: dict[str, Callable[[dict[str, Any], Callable[[Any, BaseException | None], None]],
                                           Callable[[], None] | None]] = {
            "tools/call": self.tools.tools_call_now, "tools/list": self.tools.tools_list_now}

    @property
    def resources(self) -> Any:
        """skills/activate, skills/deactivate, templates/render, context/build (``threads.resources``)."""
        if self._resources is None:
            from harness_sidecar.threads.resources import ResourceMethods

            self._resources = ResourceMethods(self.open, self.editor, self.hosts)
        return self._resources

    @property
    def commands(self) -> Any:
        """commands/list, commands/run, input/submit, loop/event (``threads.commands``)."""
        if self._commands is None:
            from harness_sidecar.threads.commands import CommandMethods

            self._commands = CommandMethods(self.open, self.editor, self.hosts)
        return self._commands

    def _later(self, part: str, method: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """``part``'s ``method``, its part made (and its module imported) when it is first called."""
        async def call(params: dict[str, Any]) -> Any:
            return await getattr(getattr(self, part), method)(params)

        call.__name__ = call.__qualname__ = method
        return call

    # -- what the wire asks of its service --------------------------------------------------------

    @property
    def max_result_bytes(self) -> int:
        return self.editor.max_result_bytes

    @max_result_bytes.setter
    def max_result_bytes(self, value: int) -> None:
        self.editor.max_result_bytes = value

    @property
    def threads(self) -> dict[str, Thread]:
        return self.open.threads

    def oversize(self, method: str, result: Any, size: int) -> Any:
        """What to answer instead of a result over ``--max-result-bytes``: a tool call's is a paired error."""
        if method == "tools/call" and isinstance(result, dict) and isinstance(result.get("result"), dict):
            inner = result["result"]
            call = ToolCall(inner.get("toolCallId", ""), inner.get("toolName", ""), {})
            return {"result": ToolResult.error(
                call, f"the tool's result is {size} bytes; the limit is {self.max_result_bytes} "
                      f"(--max-result-bytes)", kind="too_large", size=size, limit=self.max_result_bytes).to_wire()}
        return None

    async def close_all(self, reason: str) -> None:
        await self.lifecycle.close_all(reason)

    def warm(self) -> None:
        """Start a spare extension host now, so that the first thread trusting an extension need not wait;
        and make the parts the first thread/start did without (the editor is idle: the wire says when)."""
        self.resources, self.commands  # noqa: B018 - made now, off any request's path
        from harness_sidecar.resources.search import rank  # find_skills' and tool_search's ranking, imported now
        from harness_sidecar.tools.pipeline import Pipeline  # a thread's first tools/call makes one
        # what a later thread with hooks files, grants, pins or marketplaces reads them with (issue #32)
        from harness_sidecar.hooks.declared import read_roots
        from harness_sidecar.resources import grants, marketplaces, pins

        del rank, Pipeline, read_roots, grants, marketplaces, pins
        self.hosts.warm()

    # -- what the LSP mode sets and calls ----------------------------------------------------------

    @property
    def watching(self) -> bool:
        return self.live.watching

    @watching.setter
    def watching(self, value: bool) -> None:
        self.live.watching = value

    @property
    def watch_requested(self) -> Callable[[list[str]], None] | None:
        return self.live.watch_requested

    @watch_requested.setter
    def watch_requested(self, value: Callable[[list[str]], None] | None) -> None:
        self.live.watch_requested = value

    def files_changed(self, paths: list[str]) -> None:
        self.live.files_changed(paths)

    def watch(self, roots: list[str], callback: Callable[[Any], Any]) -> Any:
        return self.live.watch(roots, callback)

    def _stderr_dropped(self, thread_id: str, count: int) -> None:
        if thread_id in self.open.threads:
            self.editor.diagnostic({
                "threadId": thread_id, "kind": "stderr_dropped", "dropped": count,
                "message": f"{count} stderr line(s) of this thread's processes were dropped: the editor is not "
                           f"reading the sidecar's stderr (told at most once a minute)"})
