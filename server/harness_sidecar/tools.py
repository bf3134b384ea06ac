"""Tools and the one path every tool call takes: before hooks → core (exactly once) → after hooks."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from harness_sidecar import hooks, workers
from harness_sidecar.hooks import Hook, HookFault
from harness_sidecar.params import ToolCall

logger = logging.getLogger(__name__)


@dataclass
class ToolResult:
    tool_call_id: str | int
    tool_name: str
    content: list[dict[str, Any]]
    details: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {"toolCallId": self.tool_call_id, "toolName": self.tool_name, "content": self.content,
                "details": self.details, "isError": self.is_error}

    @classmethod
    def error(cls, call: ToolCall, text: str, **details: Any) -> "ToolResult":
        return cls(call.id, call.name, [{"type": "text", "text": text}], details, True)

    @classmethod
    def text(cls, call: ToolCall, text: str, **details: Any) -> "ToolResult":
        return cls(call.id, call.name, [{"type": "text", "text": text}], details, False)


Runner = Callable[[ToolCall], Awaitable[ToolResult]]


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    origin_kind: str  # builtin | extension | dynamic
    run: Runner
    origin_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        origin: dict[str, Any] = {"kind": self.origin_kind}
        if self.origin_id is not None:
            origin["id"] = self.origin_id
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                "origin": origin}


@dataclass
class ToolRegistry:
    tools: dict[str, Tool] = field(default_factory=dict)
    before: list[Hook] = field(default_factory=list)
    after: list[Hook] = field(default_factory=list)

    def to_wire(self) -> list[dict[str, Any]]:
        return [t.to_wire() for t in self.tools.values()]


def normalize_output(call: ToolCall, value: Any) -> ToolResult:
    """Turn what an extension's ``execute`` returned into a result, or raise ``TypeError``."""
    if isinstance(value, str):
        return ToolResult.text(call, value)
    if isinstance(value, dict) and "content" in value and set(value) <= {"content", "details", "isError"}:
        content = value["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list) or not all(
                isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str) for c in content):
            raise TypeError("'content' must be a string or a list of {'type': 'text', 'text': str}")
        details = value.get("details", {})
        if not isinstance(details, dict):
            raise TypeError("'details' must be a dict")
        is_error = value.get("isError", False)
        content = [{"type": "text", "text": c["text"]} for c in content]
        result = ToolResult(call.id, call.name, content, json.loads(json.dumps(details)), bool(is_error))
        return result
    raise TypeError(f"a tool must return a str or a dict with 'content' (and 'details'), not {type(value).__name__}")


def extension_runner(extension_id: str, execute: Callable[..., Any], timeout_s: float) -> Runner:
    async def run(call: ToolCall) -> ToolResult:
        outcome = await workers.call(execute, (call.id, json.loads(json.dumps(call.arguments))), timeout_s)
        if outcome.timed_out:
            return ToolResult.error(call, f"tool '{call.name}' did not finish within {timeout_s * 1000:.0f} ms",
                                    kind="timeout", extensionId=extension_id)
        if outcome.error is not None:
            return ToolResult.error(call, f"tool '{call.name}' failed: {workers.describe_exception(outcome.error)}",
                                    kind="tool_error", extensionId=extension_id,
                                    errorType=type(outcome.error).__name__)
        try:
            return normalize_output(call, outcome.value)
        except (TypeError, ValueError) as exc:
            return ToolResult.error(call, f"tool '{call.name}' returned an unusable value: {exc}",
                                    kind="tool_error", extensionId=extension_id)
    return run


async def call_tool(registry: ToolRegistry, thread_id: str, call: ToolCall, hook_timeout_s: float,
                    report: Callable[[HookFault], None]) -> ToolResult:
    """The whole pipeline of one call. Never raises for anything an extension or editor did."""
    tool = registry.tools.get(call.name)
    if tool is None:
        return ToolResult.error(call, f"no tool named '{call.name}' in this thread", kind="tool_not_found")
    wire_call = call.to_wire()
    faults: list[HookFault] = []
    decision = None
    if registry.before:
        decision = await hooks.run_before(registry.before, json.dumps({"threadId": thread_id, "call": wire_call}),
                                          hook_timeout_s, faults)
        for fault in faults:
            report(fault)
        faults.clear()
    if decision is not None:
        return ToolResult.error(call, f"blocked by extension '{decision.extension_id}': {decision.reason}",
                                blocked=decision.to_wire())
    try:
        result = await tool.run(call)
    except Exception as exc:  # a builtin or dynamic runner bug must still give a paired result
        logger.exception("tool %s failed unexpectedly", call.name)
        result = ToolResult.error(call, f"tool '{call.name}' failed: {workers.describe_exception(exc)}",
                                  kind="tool_error")
    if registry.after:
        event = json.dumps({"threadId": thread_id, "call": wire_call, "result": result.to_wire()})
        await hooks.run_after(registry.after, event, hook_timeout_s, faults)
        for fault in faults:
            report(fault)
    return result
