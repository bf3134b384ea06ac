"""Hooks: before hooks gate a tool call and fail closed; after hooks only observe.

A before hook allows with ``None``, ``{}`` or ``{"block": False}``; blocks with
``{"block": True, "reason": "..."}``; anything else, a raise, or running past the
timeout blocks too (fail-closed). Every hook gets its own deep copy of the event, so
nothing it changes is seen by anyone else.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable

from harness_sidecar import workers

logger = logging.getLogger(__name__)

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


async def run_before(hooks: list[Hook], event_json: str, timeout_s: float,
                     faults: list[HookFault]) -> HookDecision | None:
    """Run before hooks in order; the first block wins and the rest do not run."""
    for hook in hooks:
        outcome = await workers.call(hook.fn, (json.loads(event_json),), timeout_s)
        if outcome.timed_out:
            message = f"tool_call hook of '{hook.extension_id}' did not answer within {timeout_s * 1000:.0f} ms"
            faults.append(HookFault(hook.extension_id, BEFORE, "timeout", message))
            return HookDecision(hook.extension_id, "timeout", message)
        if outcome.error is not None:
            message = f"tool_call hook of '{hook.extension_id}' raised {workers.describe_exception(outcome.error)}"
            faults.append(HookFault(hook.extension_id, BEFORE, "throw", message))
            return HookDecision(hook.extension_id, "throw", message)
        try:
            blocked, reason = interpret_before(outcome.value)
        except TypeError as exc:
            message = f"tool_call hook of '{hook.extension_id}' failed: {exc}"
            faults.append(HookFault(hook.extension_id, BEFORE, "throw", message))
            return HookDecision(hook.extension_id, "throw", message)
        if blocked:
            return HookDecision(hook.extension_id, "deny", reason or "")
    return None


async def run_after(hooks: list[Hook], event_json: str, timeout_s: float, faults: list[HookFault]) -> None:
    """Run after hooks in order; they observe only, and a faulty one does not stop the next."""
    for hook in hooks:
        outcome = await workers.call(hook.fn, (json.loads(event_json),), timeout_s)
        if outcome.timed_out:
            faults.append(HookFault(hook.extension_id, AFTER, "timeout",
                                    f"tool_result hook of '{hook.extension_id}' did not finish within "
                                    f"{timeout_s * 1000:.0f} ms"))
        elif outcome.error is not None:
            faults.append(HookFault(hook.extension_id, AFTER, "throw",
                                    f"tool_result hook of '{hook.extension_id}' raised "
                                    f"{workers.describe_exception(outcome.error)}"))
