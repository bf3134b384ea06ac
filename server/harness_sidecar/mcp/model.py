"""The module's data: a server's configuration, a listed tool, a call's result, and how results map.

Plain dataclasses and dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The same patterns thread/start's params are checked with; a full name mcp__<server>__<tool> is a tool name.
from harness_sidecar.base.names import MCP_SERVER_NAME as SERVER_NAME
from harness_sidecar.base.names import PLUGIN_MCP_SERVER_NAME as PLUGIN_SERVER_NAME
from harness_sidecar.base.names import TOOL_NAME as FULL_NAME


@dataclass(frozen=True)
class McpServerConfig:
    """One entry of ``thread/start.mcpServers`` (``tools.allow``/``tools.deny`` flattened)."""

    name: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    required: bool = False
    startup_timeout_ms: int = 10000
    allow: list[str] | None = None
    deny: list[str] = field(default_factory=list)
    # a pinned plugin's server: resources.pins.TreePin, whose holds() is checked before every start
    pin: Any = field(default=None, compare=False, repr=False)
    # a remote server (protocol-v4 §4): "http" (streamable HTTP) or "sse", its url and headers (with
    # ${VAR} still in them: expanded from the sidecar's environment when it connects); command is []
    transport: str = "stdio"
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    # a plugin's oauth (Claude Code's shape): clientId (a pre-registered public client, no dynamic
    # registration) and callbackPort (the redirect is then http://localhost:<port>/callback)
    oauth: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def remote(self) -> bool:
        return self.transport != "stdio"

    def admits(self, tool: str) -> bool:
        """``deny`` wins; ``allow`` (when given) names every tool that may exist."""
        if tool in self.deny:
            return False
        return self.allow is None or tool in self.allow


def check_configs(configs: list[McpServerConfig]) -> None:
    """The wire layer validates params; this only refuses what would break the module (``ValueError``)."""
    seen: set[str] = set()
    for config in configs:
        if not (SERVER_NAME.fullmatch(config.name) or PLUGIN_SERVER_NAME.fullmatch(config.name)) or "__" in config.name:
            raise ValueError(f"invalid MCP server name {config.name!r}")
        if config.name in seen:
            raise ValueError(f"duplicate MCP server name {config.name!r}")
        if config.remote:
            if config.transport not in ("http", "sse") or not isinstance(config.url, str):
                raise ValueError(f"MCP server {config.name!r}: a remote server needs type http or sse and a url")
        elif not config.command or not all(isinstance(part, str) and part for part in config.command):
            raise ValueError(f"MCP server {config.name!r}: command must be a non-empty list of strings")
        seen.add(config.name)


def full_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


@dataclass(frozen=True)
class McpTool:
    """A server's tool as the thread offers it (``origin: {kind: "mcp", id: server}``)."""

    full_name: str
    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpCallResult:
    """What a call gives the tool pipeline: the sidecar's ``content``, ``isError`` and ``details``."""

    content: list[dict[str, Any]]
    is_error: bool
    details: dict[str, Any]


def error_result(kind: str, message: str, **details: Any) -> McpCallResult:
    return McpCallResult([{"type": "text", "text": message}], True, {"kind": kind, **details})


def describe_item(item: dict[str, Any]) -> str:
    """A content item that is not text, as one line naming its type, uri and mimeType."""
    kind = str(item.get("type", "unknown"))
    source = item.get("resource") if kind == "resource" and isinstance(item.get("resource"), dict) else item
    parts = []
    if isinstance(source.get("uri"), str):
        parts.append(f"uri {source['uri']}")
    if isinstance(source.get("mimeType"), str):
        parts.append(f"mimeType {source['mimeType']}")
    return f"[{kind} content: {', '.join(parts)}]" if parts else f"[{kind} content]"


def map_result(raw: dict[str, Any]) -> McpCallResult:
    """An MCP ``CallToolResult`` (wire names) → the sidecar's result (protocol-v2 §6)."""
    content: list[dict[str, Any]] = []
    for item in raw.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            content.append({"type": "text", "text": item["text"]})
        else:
            content.append({"type": "text", "text": describe_item(item)})
    details: dict[str, Any] = {}
    if raw.get("structuredContent") is not None:
        details["structuredContent"] = raw["structuredContent"]
    return McpCallResult(content, bool(raw.get("isError", False)), details)
