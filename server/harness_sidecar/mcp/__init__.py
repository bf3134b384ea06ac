"""MCP servers as a thread's tool sources (protocol-v2 §6): the client side.

``McpServers.start(thread_id, configs, notify=..., on_tools_changed=...)`` starts a thread's stdio
servers; ``tools()``, ``call()``, ``close()`` are what the tool pipeline and the thread lifecycle
use. The client is the module's own (``session.py``, ``messages.py``): it needs neither the ``mcp``
SDK nor pydantic or anyio; the ``mcp`` extra is for the bundled demo server and the tests' servers.
"""

from .model import McpCallResult, McpServerConfig, McpTool
from .servers import McpServers

__all__ = ["McpCallResult", "McpServerConfig", "McpServers", "McpTool"]
