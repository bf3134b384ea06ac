"""What the values hooks, tools and commands return mean — one set of rules for host and sidecar.

The host applies them to what extension code returned (after ``jsondata.to_json`` made it
plain JSON); the sidecar uses the same dataclasses to turn the host's report into wire
results. Anything a rule does not accept is the extension's fault (``TypeError``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_sidecar.hooks.loop import EVENTS as LOOP_EVENTS
from harness_sidecar.hooks.stages import (  # the event names, also named here (their home: hooks.stages)
    AFTER,
    BEFORE,
    CONTEXT,
    INPUT,
    THREAD_CLOSE,
    THREAD_START,
    TRANSFORM,
)

EVENTS = (BEFORE, TRANSFORM, AFTER, THREAD_START, THREAD_CLOSE, CONTEXT, INPUT) + LOOP_EVENTS  # loop: loop/event
# Pi's event names (ExtensionAPI ``pi.on``) accepted by ``api.on`` as aliases of the sidecar's: a handler
# registered by an alias is the target's handler, with the target's payload and semantics (v4 §5).
ALIASES = {
    "session_start": THREAD_START,
    "session_shutdown": THREAD_CLOSE,
    "before_agent_start": "turn_start",
    "agent_start": "turn_start",
    "agent_end": "stop",
    "session_before_compact": "compact_before",
    "session_compact": "compact_after",
}


@dataclass
class HookDecision:
    """A before hook's block (or a transform's withholding): who, how and why.

    ``kind``: ``deny`` | ``throw`` | ``timeout`` | ``crash``.
    """

    extension_id: str
    kind: str
    reason: str

    def to_wire(self) -> dict[str, Any]:
        return {"extensionId": self.extension_id, "kind": self.kind, "reason": self.reason}


@dataclass
class HookFault:
    """A handler that raised or timed out: reported as a ``thread/diagnostic`` notification."""

    extension_id: str
    hook: str
    kind: str
    message: str

    def to_wire(self, thread_id: str) -> dict[str, Any]:
        return {"threadId": thread_id, "extensionId": self.extension_id, "hook": self.hook, "kind": self.kind,
                "message": self.message}


@dataclass
class Allow:
    arguments: dict[str, Any] | None = None  # a rewrite, or None


@dataclass
class Block:
    reason: str


def interpret_before(value: Any) -> Allow | Block:
    """A before hook's return value: allow (maybe rewriting the arguments) or block.

    ``None``, ``{}`` and ``{"block": False}`` allow; ``{"block": True, "reason": ...}`` blocks;
    ``{"arguments": {...}}`` (alone or with ``"block": False``) allows with new arguments.
    Raises ``TypeError`` for anything else.
    """
    if value is None:
        return Allow()
    if type(value) is dict:
        if not value:
            return Allow()
        block = value.get("block")
        if block is True and set(value) <= {"block", "reason"}:
            reason = value.get("reason")
            return Block(reason if type(reason) is str and reason else "blocked by a tool_call hook")
        if block in (False, None) and set(value) <= {"block", "reason", "arguments"} and (
                block is False or "arguments" in value):
            arguments = value.get("arguments")
            if "arguments" in value and type(arguments) is not dict:
                raise TypeError("'arguments' must be an object (the complete new arguments)")
            return Allow(arguments)
    raise TypeError("a tool_call hook must return None, {'block': bool, 'reason': str} or "
                    f"{{'arguments': {{...}}}}, not {_brief(value)}")


def _brief(value: Any) -> str:
    import json

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def text_content(content: Any, blocks: bool = False) -> list[dict[str, Any]]:
    """``content`` as a list of text items (a string becomes one); raises ``TypeError``. With ``blocks``
    (a tool's result, v4 §4), any of MCP's content blocks (``harness_sidecar.base.content``) is kept as it is."""
    if type(content) is str:
        return [{"type": "text", "text": content}]
    if blocks:
        from harness_sidecar.base import content as blocks_of

        why = blocks_of.first_problem(content)
        if why is not None:
            raise TypeError(f"'content' must be a string or a list of content items ({blocks_of.SHAPES}): {why}")
        return [{"type": "text", "text": c["text"]} if c.get("type") == "text" and len(c) == 2 else c
                for c in content]
    if type(content) is not list or not all(
            type(c) is dict and c.get("type") == "text" and type(c.get("text")) is str for c in content):
        raise TypeError("'content' must be a string or a list of {'type': 'text', 'text': str}")
    return [{"type": "text", "text": c["text"]} for c in content]


@dataclass
class Output:
    """What a tool's ``execute`` or a command's handler returned, as a result's parts."""

    content: list[dict[str, str]]
    details: dict[str, Any]
    is_error: bool

    def to_wire(self) -> dict[str, Any]:
        return {"content": self.content, "details": self.details, "isError": self.is_error}


def interpret_output(value: Any, blocks: bool = False) -> Output:
    """A string, or ``{"content", "details"?, "isError"?}``; raises ``TypeError`` for anything else.
    ``blocks``: a tool's, whose content may hold any of MCP's content blocks (a command's is text)."""
    if type(value) is str:
        return Output(text_content(value), {}, False)
    if type(value) is dict and "content" in value and set(value) <= {"content", "details", "isError"}:
        details = value.get("details", {})
        if type(details) is not dict:
            raise TypeError("'details' must be an object")
        is_error = value.get("isError", False)
        if type(is_error) is not bool:
            raise TypeError("'isError' must be True or False")
        return Output(text_content(value["content"], blocks), details, is_error)
    raise TypeError(f"a tool must return a str or a dict with 'content' (and 'details', 'isError'), not "
                    f"{_brief(value)}")


def output_to_wire(value: Any) -> dict[str, Any]:
    """``interpret_output(value).to_wire()``; a str (what most tools return) without an ``Output``."""
    if type(value) is str:
        return {"content": text_content(value), "details": {}, "isError": False}
    return interpret_output(value, blocks=True).to_wire()


PATCH_FIELDS = ("content", "details", "isError")


def interpret_patch(value: Any) -> dict[str, Any] | None:
    """A transform's return value: ``None`` (keep) or a patch of ``content``/``details``/``isError``.

    Each given field replaces that field whole. Raises ``TypeError`` for anything else.
    """
    if value is None:
        return None
    if type(value) is not dict or not value or not set(value) <= set(PATCH_FIELDS):
        raise TypeError(f"a tool_result_transform must return None or a patch with content, details or isError, "
                        f"not {_brief(value)}")
    patch: dict[str, Any] = {}
    if "content" in value:
        patch["content"] = text_content(value["content"], blocks=True)
    if "details" in value:
        if type(value["details"]) is not dict:
            raise TypeError("'details' must be an object")
        patch["details"] = value["details"]
    if "isError" in value:
        if type(value["isError"]) is not bool:
            raise TypeError("'isError' must be True or False")
        patch["isError"] = value["isError"]
    return patch
