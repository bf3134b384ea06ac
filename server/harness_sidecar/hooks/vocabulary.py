"""The tool vocabulary command hooks were written for (protocol-v4 §3): which of the thread's tools is
which of Claude Code's or Codex's, and the field maps both ways.

The editor says it with ``thread/start.dynamicTools[i].hookAs: {name, input?}`` and
``mcpServers[i].hookAs: {<tool>: {name, input?}}`` (``input``: ``{<their field>: <our field>}``).
A command hook then sees ``tool_name`` = ``hookAs.name`` and ``tool_input`` with our fields renamed to
theirs (fields not in the map pass through unchanged); an ``updatedInput`` it answers is renamed back
before it is validated against the tool's ``inputSchema``. Matchers and ``if`` rules are matched
against the name and input the hook sees. Python extension hooks keep seeing the sidecar's names.

``Vocabulary`` is the thread's table (our tool name → ``HookAs``); ``hooks.boundaries.ThreadHooks``
holds one. This module imports nothing of the sidecar's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HookAs:
    """One tool as the hooks see it: their tool name, and their field → our field."""

    name: str
    input: dict[str, str] = field(default_factory=dict)

    def to_hook(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Our arguments as the hook's ``tool_input``: mapped fields renamed, the others unchanged."""
        if not self.input:
            return arguments
        ours_to_theirs = {ours: theirs for theirs, ours in self.input.items()}
        return {ours_to_theirs.get(key, key): value for key, value in arguments.items()}

    def from_hook(self, updated: dict[str, Any]) -> dict[str, Any]:
        """A hook's ``updatedInput`` (their field names) as our arguments."""
        if not self.input:
            return updated
        return {self.input.get(key, key): value for key, value in updated.items()}

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.input:
            out["input"] = dict(self.input)
        return out


@dataclass
class Vocabulary:
    """The thread's tools the editor named for hooks: our tool name → ``HookAs``."""

    tools: dict[str, HookAs] = field(default_factory=dict)

    def of(self, tool: str) -> HookAs | None:
        return self.tools.get(tool)

    def hook_name(self, tool: str) -> str:
        """The name hooks match and see for our ``tool``."""
        named = self.tools.get(tool)
        return named.name if named is not None else tool

    def hook_input(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        named = self.tools.get(tool)
        return named.to_hook(arguments) if named is not None else arguments

    def our_input(self, tool: str, updated: dict[str, Any]) -> dict[str, Any]:
        named = self.tools.get(tool)
        return named.from_hook(updated) if named is not None else updated


def vocabulary_of(dynamic_tools: list[Any], mcp_servers: list[Any], full_name: Any) -> Vocabulary:
    """The table ``thread/start`` declares: each dynamic tool's ``hook_as`` and each MCP server's
    ``hook_as`` (its tool → ``HookAs``; ``full_name(server, tool)`` is the tool's name in the thread)."""
    tools: dict[str, HookAs] = {}
    for tool in dynamic_tools:
        if getattr(tool, "hook_as", None) is not None:
            tools[tool.name] = tool.hook_as
    for server in mcp_servers:
        for name, hook_as in (getattr(server, "hook_as", None) or {}).items():
            tools[full_name(server.name, name)] = hook_as
    return Vocabulary(tools)


def hook_as(name: str, input: dict[str, str] | None = None) -> HookAs:
    """``wire.params``'s constructor of a parsed ``hookAs``."""
    return HookAs(name, dict(input or {}))
