"""Hooks: before hooks gate a tool call and fail closed; after hooks only observe.

A before hook allows with ``None``, ``{}`` or ``{"block": False}``; blocks with
``{"block": True, "reason": "..."}``; anything else, a raise, or running past the
timeout blocks too (fail-closed). What each outcome means is decided here; where the
hook runs (a worker thread or the event loop) is the business of ``tools`` and
``workers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness_sidecar.extensions.workers import Outcome, describe_exception

BEFORE = "tool_call"
AFTER = "tool_result"
EVENTS = (BEFORE, AFTER)


@dataclass
class Hook:
    extension_id: str
    event: str
    fn: Callable[[dict[str, Any]], Any]


@dataclass
class HookDecision:
    """A before hook's block: who, how (``deny``/``throw``/``timeout``) and why."""

    extension_id: str
    kind: str
    reason: str

    def to_wire(self) -> dict[str, Any]:
        return {"extensionId": self.extension_id, "kind": self.kind, "reason": self.reason}


@dataclass
class HookFault:
    """A hook that raised or timed out: reported as a ``thread/diagnostic`` notification."""

    extension_id: str
    hook: str
    kind: str
    message: str


def interpret_before(value: Any) -> tuple[bool, str | None]:
    """``(blocked, reason)`` for a before hook's return value; raises ``TypeError`` for anything else."""
    if value is None:
        return False, None
    if isinstance(value, dict):
        if not value:
            return False, None
        block = value.get("block")
        if block is False and set(value) <= {"block", "reason"}:
            return False, None
        if block is True:
            reason = value.get("reason")
            return True, reason if isinstance(reason, str) and reason else "blocked by a tool_call hook"
    raise TypeError(f"a tool_call hook must return None, {{}} or {{'block': bool, 'reason': str}}, not {value!r:.200}")


def judge_before(hook: Hook, outcome: Outcome, timeout_s: float) -> tuple[HookDecision | None, HookFault | None]:
    """What a before hook's outcome means: ``(block decision or None, fault to report or None)``."""
    if outcome.timed_out:
        message = f"tool_call hook of '{hook.extension_id}' did not answer within {timeout_s * 1000:.0f} ms"
        return HookDecision(hook.extension_id, "timeout", message), HookFault(hook.extension_id, BEFORE, "timeout",
                                                                              message)
    if outcome.error is not None:
        message = f"tool_call hook of '{hook.extension_id}' raised {describe_exception(outcome.error)}"
        return HookDecision(hook.extension_id, "throw", message), HookFault(hook.extension_id, BEFORE, "throw",
                                                                            message)
    try:
        blocked, reason = interpret_before(outcome.value)
    except TypeError as exc:
        message = f"tool_call hook of '{hook.extension_id}' failed: {exc}"
        return HookDecision(hook.extension_id, "throw", message), HookFault(hook.extension_id, BEFORE, "throw",
                                                                            message)
    if blocked:
        return HookDecision(hook.extension_id, "deny", reason or ""), None
    return None, None


def judge_after(hook: Hook, outcome: Outcome, timeout_s: float) -> HookFault | None:
    """An after hook's outcome only matters if it raised or timed out."""
    if outcome.timed_out:
        return HookFault(hook.extension_id, AFTER, "timeout",
                         f"tool_result hook of '{hook.extension_id}' did not finish within {timeout_s * 1000:.0f} ms")
    if outcome.error is not None:
        return HookFault(hook.extension_id, AFTER, "throw",
                         f"tool_result hook of '{hook.extension_id}' raised {describe_exception(outcome.error)}")
    return None
