"""MCP servers as a thread's tool sources (protocol-v2 §6): the client side.

``McpServers.start(thread_id, configs, notify=..., on_tools_changed=...)`` starts a thread's stdio
servers; ``tools()``, ``call()``, ``close()`` are what the tool pipeline and the thread lifecycle
use. Importing this package does not import the ``mcp`` SDK: that happens when a thread names
servers (the ``mcp`` extra).
"""

from .model import McpCallResult, McpServerConfig, McpTool
from .servers import McpServers

__all__ = ["McpCallResult", "McpServerConfig", "McpServers", "McpTool"]
