"""What a thread holds (``Thread``) and the commands its extensions registered (``Command``): plain state,
read and changed by the parts of ``Sidecar`` (``lifecycle`` starts and ends it, ``live_catalog`` keeps
its catalog in step, ``tools`` calls through its pipeline). No method of the wire is served here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.base.limits import Limits
from harness_sidecar.base.records import Record
from harness_sidecar.resources.activation import ActivatedSkill
from harness_sidecar.resources.catalog import Catalog
from harness_sidecar.tools.calls import Calls
from harness_sidecar.tools.registry import ToolRegistry
from harness_sidecar.wire import params as P


class Command(Record):
    """An extension's command (``api.register_command``). Written out, not a dataclass: this module is on a
    first thread/start's path; same repr and equality (issue #32)."""

    __slots__ = ("name", "description", "extension_id", "input_schema", "validator", "raw_arguments", "timeout_ms")

    def __init__(self, name: str, description: str, extension_id: str, input_schema: dict[str, Any] | None,
                 validator: Any = None, raw_arguments: bool = False, timeout_ms: int | None = None) -> None:
        self.name = name
        self.description = description
        self.extension_id = extension_id
        self.input_schema = input_schema
        self.validator = validator  # the compiled input_schema
        self.raw_arguments = raw_arguments  # takes the rest of the slash line as {"text": ...}
        self.timeout_ms = timeout_ms  # its own deadline (register_command(..., timeout_ms=))

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            out["inputSchema"] = self.input_schema
        out["origin"] = {"kind": "extension", "id": self.extension_id}
        if self.raw_arguments:
            out["rawArguments"] = True
        return out


@dataclass
class Thread:
    id: str
    start: P.ThreadStartParams
    catalog: Catalog
    limits: Limits
    registry: ToolRegistry
    extensions: list[Any] = field(default_factory=list)  # ExtensionSource, in catalog order
    activated: dict[str, ActivatedSkill] = field(default_factory=dict)
    host: Any = None  # extensions.supervisor.ExtensionHost, when the thread trusts an extension that loaded
    commands: dict[str, Command] = field(default_factory=dict)
    pipeline: Any = None  # tools.Pipeline of the current revision: the one path of the thread's tool calls
    revision: int = 1
    tool_changed_at: dict[str, int] = field(default_factory=dict)  # tool name → revision it last changed in
    inactive_tools: set[str] = field(default_factory=set)  # set inactive by ctx.tools.set_active (threads.model_tools)
    watch: Any = None  # resources.watch.WatchHandle while the roots are watched
    rescanning: Any = None  # asyncio.Lock: one rescan at a time
    rescan_again: bool = False
    reported_changes: dict[str, str] = field(default_factory=dict)  # extension id → sha256 reported as changed
    closed: bool = False
    mcp: Any = None  # mcp.McpServers, when the thread names MCP servers
    handler_timeouts: dict[str, list[int | None]] = field(default_factory=dict)  # event → each handler's own ms
    hooks: Any = None  # hooks.boundaries.ThreadHooks, when a root declares command hooks (protocol-v3 §5)
    hooks_pending: Any = None  # a changed declaration, applied at the next thread/refresh
    # what SessionStart hooks said at thread/start, (source, text) in declaration order: a section of every
    # context/build's system prompt for the thread's life (protocol-v4 §2)
    session_context: list[tuple[str, str]] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)  # tool calls in flight: thread/close lets started ones finish
    read_at_ns: int | None = None  # time.time_ns() before the roots were first read: the watch catches up from it
    reported_ambiguous: set[str] = field(default_factory=set)  # trust_ambiguous messages already sent
    # protocol-v4 §5 (threads.sessions): why it started, its session's store, each extension's ctx.state, and
    # diagnostics for the next thread/start or thread/refresh answer (activation_dropped, session_state_unreadable)
    reason: str = "startup"
    session: Any = None  # base.session_store.SessionStore, when thread/start named a sessionId
    states: dict[str, bytes] = field(default_factory=dict)  # extension id → its ctx.state's compact JSON text
    notes: list[dict[str, Any]] = field(default_factory=list)

    def handlers(self, event: str) -> list[str]:
        return self.registry.handlers.get(event, []) if self.host is not None else []

    def timeouts(self, event: str) -> list[float]:
        """Each ``event`` handler's deadline in seconds: its own ``timeout_ms`` capped by
        ``limits.maxHandlerTimeoutMs``, else ``limits.hookTimeoutMs``."""
        own = self.handler_timeouts.get(event, [])
        default, cap = self.limits.hook_timeout_ms, self.limits.max_handler_timeout_ms
        return [(min(ms, cap) if ms else default) / 1000 for ms in own] if len(own) == len(self.handlers(event)) \
            else [default / 1000] * len(self.handlers(event))

    def extensions_to_wire(self) -> list[dict[str, Any]]:
        out = []
        for source in self.extensions:
            entry = source.to_wire()
            if self.host is not None and self.host.failed and entry["status"] == "loaded":
                entry.update(status="failed", error=self.host.failure)
            out.append(entry)
        return out


def may_start_processes(start: P.ThreadStartParams) -> bool:
    """Whether a thread may start processes (a host, MCP servers, command hooks): they get its group and limit."""
    return bool(start.mcp_servers or start.trusted_extensions or start.trusted_plugins or start.trusted_hooks)
