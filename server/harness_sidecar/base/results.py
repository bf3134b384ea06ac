"""A tool call and its result, as they cross the wire — shared by the sidecar and the extension host.

Plain dataclasses and nothing else: the host process imports this module, so it must not
import anything of the sidecar's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    id: str | int
    name: str
    arguments: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


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

    def body(self) -> dict[str, Any]:
        """The parts a hook, a transform or the host may change: content, details, isError."""
        return {"content": self.content, "details": self.details, "isError": self.is_error}

    @classmethod
    def from_body(cls, call: ToolCall, body: dict[str, Any]) -> "ToolResult":
        return cls(call.id, call.name, body["content"], body["details"], body["isError"])

    @classmethod
    def error(cls, call: ToolCall, text: str, **details: Any) -> "ToolResult":
        return cls(call.id, call.name, [{"type": "text", "text": text}], details, True)

    @classmethod
    def text(cls, call: ToolCall, text: str, **details: Any) -> "ToolResult":
        return cls(call.id, call.name, [{"type": "text", "text": text}], details, False)


def blocked(call: ToolCall, extension_id: str, kind: str, reason: str) -> ToolResult:
    """A before hook's block, paired with the original call; the core never ran."""
    return ToolResult.error(call, f"blocked by extension '{extension_id}': {reason}",
                            blocked={"extensionId": extension_id, "kind": kind, "reason": reason})


def withheld(call: ToolCall, extension_id: str, kind: str, reason: str) -> ToolResult:
    """A transform failed: the result is withheld (none of the core's text is returned)."""
    return ToolResult.error(call, f"the result was withheld: the transform of extension '{extension_id}' failed "
                                  f"({kind}): {reason}",
                            withheld={"extensionId": extension_id, "kind": kind, "reason": reason})


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of an exception, never running a hostile ``__str__`` to its end."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises
        return f"{name} (its message could not be read)"
    if type(text) is not str:
        return name
    if len(text) > 2000:
        text = text[:2000] + "…"
    return f"{name}: {text}" if text else name
