"""MCP beyond tools, the editor's side (protocol-v4 §4): ``mcp/resource/read`` and ``mcp/prompt/get``
(``McpMethods``), the catalog's ``mcpResources``/``mcpPrompts`` (``mcp_catalog``) and their
``catalog/changed`` (``lists_changed``), and what a thread's servers are offered as their client
(``mcp_client``): roots, ``elicitation/create`` relayed as ``ui/elicit`` and ``sampling/createMessage``
as ``model/sample``, as far as the editor's capabilities allow.
"""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.errors import DomainError, PeerError
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads.thread import Thread
from harness_sidecar.wire import params as P


def mcp_client(editor: Editor, thread_id: str, start: P.ThreadStartParams) -> Any:
    """The thread's ``mcp.client_side.ClientSide``: its roots; ``ui/elicit`` with ``capabilities.ui.elicit``;
    ``model/sample`` with ``capabilities.sampling``."""
    from harness_sidecar.mcp.client_side import ClientSide

    limits = start.limits
    elicit = sample = None
    if editor.capable("elicit"):
        async def elicit(server: str, params: dict[str, Any]) -> Any:
            return await editor.request("ui/elicit", {
                "threadId": thread_id, "server": server, "message": params["message"],
                "requestedSchema": params["requestedSchema"]}, limits.ui_timeout_ms / 1000)
    if editor.declared("sampling"):
        async def sample(server: str, params: dict[str, Any]) -> Any:
            return await _sample(editor, thread_id, params, limits.mcp_tool_timeout_ms / 1000)
    return ClientSide([str(root) for root in start.roots], elicit, sample)


async def _sample(editor: Editor, thread_id: str, params: dict[str, Any], timeout_s: float) -> Any:
    """``model/sample``: the server's ``CreateMessageRequest`` params plus ``threadId``. The editor's error
    answer is the server's error -1 (a refusal), no answer within ``timeout_s`` is -32603."""
    from harness_sidecar.mcp.session import RpcError

    try:
        return await editor.request("model/sample", {**params, "threadId": thread_id}, timeout_s)
    except TimeoutError:
        raise RpcError(-32603, f"the editor did not answer model/sample within {timeout_s:g} s") from None
    except PeerError as exc:  # -1: the user rejected it, as MCP's specification names that error
        raise RpcError(-1, f"the editor refused model/sample: {exc}") from None


def mcp_catalog(thread: Thread) -> dict[str, Any]:
    """The catalog's ``mcpResources`` and ``mcpPrompts`` (present when the thread has MCP servers)."""
    if thread.mcp is None:
        return {}
    return {"mcpResources": thread.mcp.resources(), "mcpPrompts": thread.mcp.prompts()}


async def lists_changed(open_threads: OpenThreads, editor: Editor, thread_id: str,
                        before: dict[tuple[str, str], Any], after: dict[tuple[str, str], Any]) -> None:
    """A server's resources or prompts changed: a new revision and ``catalog/changed`` with entries
    ``{kind: "mcpResource" | "mcpPrompt", name: "<server>:<uri, uriTemplate or prompt name>"}``."""
    thread = open_threads.threads.get(thread_id)
    if thread is None or thread.closed:
        return
    async with thread.rescanning:
        entries = lambda keys: [{"kind": kind, "name": name} for kind, name in sorted(keys)]  # noqa: E731
        added = entries(after.keys() - before.keys())
        removed = entries(before.keys() - after.keys())
        changed = entries(k for k in after.keys() & before.keys() if after[k] != before[k])
        if not (added or removed or changed):
            return
        thread.revision += 1
        editor.notify("catalog/changed", {
            "threadId": thread.id, "revision": thread.revision, "added": added, "removed": removed,
            "changed": changed, "diagnostics": [d.to_wire() for d in thread.catalog.diagnostics]})


class McpMethods:
    """``mcp/resource/read`` and ``mcp/prompt/get``: the editor's reads of a thread's MCP servers."""

    def __init__(self, open_threads: OpenThreads) -> None:
        self.open = open_threads

    async def mcp_resource_read(self, params: dict[str, Any]) -> dict[str, Any]:
        from harness_sidecar.mcp.listing import check_read_result

        thread = await self.open.get(params)
        request = P.parse_mcp_resource_read(params)
        return await self._servers(thread, request.server).ask(
            request.server, "resources/read", {"uri": request.uri}, thread.limits.mcp_tool_timeout_ms / 1000,
            check_read_result)

    async def mcp_prompt_get(self, params: dict[str, Any]) -> dict[str, Any]:
        from harness_sidecar.mcp.listing import check_prompt_result

        thread = await self.open.get(params)
        request = P.parse_mcp_prompt_get(params)
        asked = {"name": request.name, **({"arguments": request.arguments} if request.arguments else {})}
        return await self._servers(thread, request.server).ask(
            request.server, "prompts/get", asked, thread.limits.mcp_tool_timeout_ms / 1000, check_prompt_result)

    @staticmethod
    def _servers(thread: Thread, server: str) -> Any:
        if thread.mcp is None or server not in thread.mcp.status():
            raise DomainError("mcp_server_not_found", f"no MCP server named {server!r} in thread '{thread.id}'",
                              server=server)
        return thread.mcp
