"""A thread's tools: what each is (``Tool``), the registry of one revision (``ToolRegistry``) and the
plan of a call's steps; who holds a name (``claimant``), and a tool's check of its arguments.

Plain data and the functions over it: the call itself goes through ``tools.pipeline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from harness_sidecar.base.results import ToolCall, ToolResult
from harness_sidecar.hooks.stages import AFTER, BEFORE, TRANSFORM

if TYPE_CHECKING:  # made by ``plan``, at a thread's first call of a tool (issue #32: not on the first answer's path)
    from harness_sidecar.extensions.sidecar.steps import StepPlan

Runner = Callable[[ToolCall, Any], Awaitable[ToolResult]]  # (call, the catalog snapshot of the call)


@dataclass
class Tool:
    """A tool of a thread. ``run`` is its core when it runs in the sidecar; ``None`` for an extension's."""

    name: str
    description: str
    input_schema: dict[str, Any]
    origin_kind: str  # builtin | extension | dynamic | mcp
    origin_id: str | None = None
    run: Runner | None = None
    timeout_s: float = 60.0
    validator: Any = None  # the compiled inputSchema (see ``inputschema``), or None
    source: dict[str, Any] | None = None  # provenance (protocol.md § Plugins); None for a builtin

    def to_wire(self) -> dict[str, Any]:
        origin: dict[str, Any] = {"kind": self.origin_kind}
        if self.origin_id is not None:
            origin["id"] = self.origin_id
        out = {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
               "origin": origin}
        if self.source is not None:
            out["source"] = self.source
        return out

    def spec(self) -> tuple:
        """What the model saw of this tool: a change of it makes older calls stale."""
        return (self.description, self.input_schema, self.origin_kind, self.origin_id)


@dataclass
class ToolRegistry:
    tools: dict[str, Tool] = field(default_factory=dict)
    handlers: dict[str, list[str]] = field(default_factory=dict)  # event → extension ids, in order
    hook_timeout_s: float = 5.0
    # event → each handler's own deadline in seconds (api.on(..., timeout_ms=), capped), where one differs
    step_timeouts: dict[str, list[float]] = field(default_factory=dict)
    _plans: dict[str, tuple[list[StepPlan], int]] = field(default_factory=dict, repr=False)

    def plan(self, tool: Tool) -> tuple[list[StepPlan], int]:
        """The steps of a call of ``tool`` as the host runs them (it computes the same list), and the core's index."""
        found = self._plans.get(tool.name)
        if found is None:
            from harness_sidecar.extensions.sidecar.steps import StepPlan

            plan = self._steps(BEFORE)
            core = len(plan)
            plan.append(StepPlan("core", tool.origin_id if tool.run is None else None, tool.timeout_s))
            plan += self._steps(TRANSFORM) + self._steps(AFTER)
            found = self._plans[tool.name] = (plan, core)
        return found

    def _steps(self, event: str) -> list[StepPlan]:
        from harness_sidecar.extensions.sidecar.steps import StepPlan

        own = self.step_timeouts.get(event, [])
        return [StepPlan(event, ext, own[i] if i < len(own) else self.hook_timeout_s)
                for i, ext in enumerate(self.handlers.get(event, []))]

    def step_timeouts_of(self, plan: list[StepPlan]) -> list[float] | None:
        """Each step's deadline, for the host, when a handler has its own; None when all have hookTimeoutMs."""
        if not self.step_timeouts:
            return None
        return [step.timeout for step in plan]

    def to_wire(self) -> list[dict[str, Any]]:
        return [t.to_wire() for t in self.tools.values()]


def claimant(tool: Tool) -> str:
    """Who holds a tool's name, as a message says it: ``builtin``, ``extension 'review'``, ``mcp 'fs'``."""
    return tool.origin_kind + (f" '{tool.origin_id}'" if tool.origin_id else "")


def foreign_schemas(registry: ToolRegistry) -> dict[str, Any]:
    """The inputSchemas of the tools whose core runs outside the host (rewritten arguments are checked there)."""
    return {t.name: t.input_schema for t in registry.tools.values() if t.origin_kind != "extension"}


def arguments_problem(tool: Any, arguments: dict[str, Any]) -> tuple[str, str] | None:
    """``(message, json path)`` when ``arguments`` do not match the tool's (or command's) inputSchema."""
    if tool.validator is None:
        return None
    return tool.validator.first_error(arguments)
