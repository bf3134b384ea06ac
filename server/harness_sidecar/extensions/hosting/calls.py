"""Tool calls: a call's state on its way through its steps (``CallState``), and the result bodies the
host makes (blocked, withheld, an error)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



@dataclass
class CallState:
    thread_id: str
    call: dict[str, Any]  # {id, name, arguments}: arguments as rewritten so far
    result: dict[str, Any] | None = None  # {content, details, isError}
    rewritten_by: list[str] = field(default_factory=list)
    transformed_by: list[str] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)  # not yet sent to the sidecar
    known: Any = None  # the result the sidecar already has (it sent it, or a step frame carried it)

    def take_faults(self) -> list[dict[str, Any]]:
        faults, self.faults = self.faults, []
        return faults


def with_metadata(body: dict[str, Any], rewritten_by: list[str], transformed_by: list[str]) -> dict[str, Any]:
    if not rewritten_by and not transformed_by:
        return body
    details = dict(body["details"])
    if rewritten_by:
        details["argumentsRewrittenBy"] = list(rewritten_by)
    if transformed_by:
        details["transformedBy"] = list(transformed_by)
    return {**body, "details": details}


def _error_body(text: str, **details: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "details": details, "isError": True}


def _news(state: CallState) -> Any:
    """The call's result if the sidecar does not have it yet (it then has it: the frame carries it)."""
    if state.result is state.known:
        return None
    state.known = state.result
    return state.result


def _blocked_body(extension_id: str, kind: str, reason: str, rewritten_by: list[str]) -> dict[str, Any]:
    body = _error_body(f"blocked by extension '{extension_id}': {reason}",
                       blocked={"extensionId": extension_id, "kind": kind, "reason": reason})
    if rewritten_by:
        body["details"]["argumentsRewrittenBy"] = list(rewritten_by)
    return body


def _withheld_body(extension_id: str, kind: str, reason: str, rewritten_by: list[str]) -> dict[str, Any]:
    body = _error_body(f"the result was withheld: the transform of extension '{extension_id}' failed ({kind}): "
                       f"{reason}", withheld={"extensionId": extension_id, "kind": kind, "reason": reason})
    if rewritten_by:
        body["details"]["argumentsRewrittenBy"] = list(rewritten_by)
    return body
