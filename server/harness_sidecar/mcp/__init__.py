"""MCP servers as a thread's tool sources (protocol-v2 §6): the client side.

``McpServers.start(thread_id, configs, notify=..., on_tools_changed=...)`` starts a thread's stdio
servers; ``tools()``, ``call()``, ``close()`` are what the tool pipeline and the thread lifecycle
use; ``resources()``, ``prompts()`` and ``ask()`` what the catalog and ``mcp/resource/read`` /
``mcp/prompt/get`` use (``listing.py``), and ``client_side.ClientSide`` what a server is offered as
its client (roots, elicitation, sampling: v4 §4), whatever its transport. The client is the module's own (``session.py``, ``messages.py``): it needs neither the ``mcp``
SDK nor pydantic or anyio; the ``mcp`` extra is for the bundled demo server and the tests' servers.
"""

from typing import Any

from .model import McpCallResult, McpServerConfig, McpTool

__all__ = ["McpCallResult", "McpServerConfig", "McpServers", "McpTool"]


def __getattr__(name: str) -> Any:
    # The client (servers, session, process, messages) is imported when McpServers is first asked
    # for — by a thread that names MCP servers — not by whatever imports the plain data in ``model``.
    if name == "McpServers":
        from .servers import McpServers

        globals()["McpServers"] = McpServers
        return McpServers
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
