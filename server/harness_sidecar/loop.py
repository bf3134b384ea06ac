"""``loop/event``: the editor's agent loop reports its boundaries; every source's verdict, one decision.

The editor owns the agent loop; the sidecar sees only its tool calls, input and thread
edges. With ``loop/event {threadId, event, payload?}`` the editor reports the rest — a turn
starts or ends, the model stops, the context is compacted, a sub-agent starts or stops, a
notification, a permission request — so that extensions (``api.on(<event>, fn)``) and command
hooks (protocol-v3 §5) can act on it.

Three parts, one idea each:

- ``EVENTS`` and ``parse_payload``: the events and their payloads (a wrong payload is
  ``invalid_params`` naming the field: ``payload.prompt``);
- ``Verdict`` and ``interpret``: what one source (an extension's handler, a command hook)
  said about one event, as a dataclass; ``interpret`` reads an extension handler's return value
  (it runs in the extension host, which imports this module for it);
- ``merge``: the one deterministic merge of many verdicts into the wire result.

This module imports nothing of the extension machinery at import time (the host imports it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.errors import InvalidParams

TURN_START = "turn_start"
TURN_END = "turn_end"
STOP = "stop"
COMPACT_BEFORE = "compact_before"
COMPACT_AFTER = "compact_after"
SUBAGENT_START = "subagent_start"
SUBAGENT_STOP = "subagent_stop"
NOTIFICATION = "notification"
PERMISSION_REQUEST = "permission_request"

# event → {payload field: (JSON type, required)}. Payload fields reach handlers at the top level of
# their ``event`` (``{threadId, event, ...payload}``).
PAYLOADS: dict[str, dict[str, tuple[type, bool]]] = {
    TURN_START: {"prompt": (str, True)},
    TURN_END: {"lastAssistantMessage": (str, False)},
    STOP: {"lastAssistantMessage": (str, False), "stopHookActive": (bool, True)},
    COMPACT_BEFORE: {"trigger": (str, True)},
    COMPACT_AFTER: {"trigger": (str, True)},
    SUBAGENT_START: {"agentType": (str, True)},
    SUBAGENT_STOP: {"agentType": (str, True), "lastAssistantMessage": (str, False)},
    NOTIFICATION: {"message": (str, True), "type": (str, False)},
    PERMISSION_REQUEST: {"toolName": (str, True), "toolInput": (dict, True)},
}
EVENTS = tuple(PAYLOADS)
# Events where a source that cannot answer (raised, timed out, answered nonsense) blocks, as a failed
# command hook of the matching Claude Code event does (§5): Stop, SubagentStop, PermissionRequest.
FAIL_CLOSED = (STOP, SUBAGENT_STOP, PERMISSION_REQUEST)
DECISIONS = ("allow", "deny")
_TYPE_NAMES = {str: "a string", bool: "true or false", dict: "an object"}
RETURN_FORMS = ("None, {'block': True, 'reason': str}, {'context': str | [str]}, {'systemMessage': str}"
                " or (permission_request) {'decision': 'allow' | 'deny', 'reason'?: str}")


def parse_payload(event: Any, payload: Any) -> dict[str, Any]:
    """The checked payload of ``event``; ``InvalidParams`` naming the field otherwise.

    Unknown payload fields are refused (a misspelt ``stopHookActive`` must not pass unnoticed);
    ``null`` for an optional field means absent.
    """
    if type(event) is not str:
        raise InvalidParams("'event' must be a string", "event")
    fields = PAYLOADS.get(event)
    if fields is None:
        raise InvalidParams(f"unknown loop event {event!r}; known: {', '.join(EVENTS)}", "event")
    if payload is None:
        payload = {}
    if type(payload) is not dict:
        raise InvalidParams("'payload' must be an object", "payload")
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key not in fields:
            raise InvalidParams(f"'payload' of {event} has an unknown field '{key}'; known: {', '.join(fields)}",
                                f"payload.{key}")
        kind, required = fields[key]
        if value is None and not required:
            continue
        if type(value) is not kind:
            raise InvalidParams(f"'payload.{key}' must be {_TYPE_NAMES[kind]}", f"payload.{key}")
        out[key] = value
    for key, (_, required) in fields.items():
        if required and key not in out:
            raise InvalidParams(f"'payload.{key}' is required for {event}", f"payload.{key}")
    return out


@dataclass
class Verdict:
    """What one source said about one loop event.

    ``source``: ``extension:<id>`` for an extension's handler, ``root:<path>`` or
    ``plugin:<name>`` for a command hook. ``decision``: ``allow`` | ``deny`` | ``ask`` (a command
    hook's ``ask``/``defer``: the editor asks the user as it would without hooks) | ``None``.
    """

    source: str
    block: bool = False
    reason: str = ""
    decision: str | None = None
    context: list[str] = field(default_factory=list)
    system_message: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The host → sidecar form (the channel's ``done`` report of a loop event)."""
        out: dict[str, Any] = {"source": self.source, "block": self.block, "context": self.context}
        if self.reason:
            out["reason"] = self.reason
        if self.decision is not None:
            out["decision"] = self.decision
        if self.system_message is not None:
            out["systemMessage"] = self.system_message
        return out

    @classmethod
    def from_wire(cls, value: Any) -> Verdict:
        """A verdict the host reported; ``ValueError`` when it is not one."""
        if (type(value) is not dict or type(value.get("source")) is not str or type(value.get("block")) is not bool
                or type(value.get("reason", "")) is not str or value.get("decision") not in (None, *DECISIONS)
                or type(value.get("context")) is not list or not all(type(c) is str for c in value["context"])
                or type(value.get("systemMessage", "")) is not str):
            raise ValueError("malformed verdict")
        return cls(value["source"], value["block"], value.get("reason", ""), value.get("decision"),
                   list(value["context"]), value.get("systemMessage"))


def interpret(event: str, source: str, value: Any) -> Verdict:
    """An extension handler's return value (plain JSON) as a verdict; ``TypeError`` for anything else.

    ``None`` and ``{}`` say nothing; ``{"block": True, "reason": str}`` blocks (on
    ``permission_request``: denies); ``{"context": str | [str]}`` adds context; ``{"systemMessage":
    str}`` a message for the user; ``{"decision": "allow"|"deny", "reason"?}`` decides a
    ``permission_request``. The keys combine (``{"block": True, "reason": …, "context": …}``).
    """
    verdict = Verdict(source)
    if value is None:
        return verdict
    allowed = {"block", "reason", "context", "systemMessage"} | ({"decision"} if event == PERMISSION_REQUEST else set())
    if type(value) is not dict or not set(value) <= allowed:
        raise TypeError(f"a {event} handler must return {RETURN_FORMS}")
    block = value.get("block", False)
    if type(block) is not bool:
        raise TypeError("'block' must be True or False")
    reason = value.get("reason", "")
    if type(reason) is not str:
        raise TypeError("'reason' must be a str")
    context = value.get("context", [])
    if type(context) is str:
        context = [context]
    if type(context) is not list or not all(type(c) is str for c in context):
        raise TypeError("'context' must be a str or a list of str")
    message = value.get("systemMessage")
    if message is not None and type(message) is not str:
        raise TypeError("'systemMessage' must be a str")
    decision = value.get("decision")
    if decision is not None and decision not in DECISIONS:
        raise TypeError("'decision' must be 'allow' or 'deny'")
    verdict.block = block
    verdict.reason = reason
    verdict.context = [c for c in context if c.strip()]
    verdict.system_message = message
    verdict.decision = decision
    return verdict


@dataclass
class Merged:
    """``loop/event``'s result."""

    event: str
    blocked: dict[str, Any] | None = None  # {reason, by: [source]}
    decision: str | None = None  # permission_request only: allow | deny | None (the editor asks as usual)
    additional_context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"blocked": self.blocked}
        if self.event == PERMISSION_REQUEST:
            out["decision"] = self.decision
        out["additionalContext"] = self.additional_context
        out["systemMessages"] = self.system_messages
        return out


def merge(event: str, verdicts: list[Verdict]) -> Merged:
    """The one decision of many sources on one loop event — deterministic, by protocol-v3 §5's rules.

    ``verdicts`` come from any source — extension handlers (``extension:<id>``) and command
    hooks (``root:<path>``, ``plugin:<name>``: Stop, SubagentStop, PermissionRequest,
    PreCompact… hooks) — in *declaration order*: the caller lists command hooks first (in the
    order their files declare them), then extensions in load order, as for PreToolUse, where the
    hooks' decision runs before the extensions' before hooks. The result depends only on that
    list, never on which source finished first:

    1. any block, or a ``deny`` decision → ``blocked = {reason, by}``: ``reason`` joins every
       blocking source's reason (``"; "``) in declaration order, ``by`` lists those sources; on
       ``permission_request`` the decision is ``deny``;
    2. else any ``ask`` → decision ``None`` (the editor asks the user as it would without hooks);
    3. else any ``allow`` → ``allow``; else ``None``.

    ``additionalContext`` and ``systemMessages`` keep every source's strings in declaration
    order, whatever the decision. There is no rewrite on a loop event (nothing to rewrite).
    """
    merged = Merged(event)
    blocking = [v for v in verdicts if v.block or v.decision == "deny"]
    if blocking:
        reasons = [v.reason or f"blocked by {v.source}" for v in blocking]
        merged.blocked = {"reason": "; ".join(reasons), "by": [v.source for v in blocking]}
        merged.decision = "deny" if event == PERMISSION_REQUEST else None
    elif event == PERMISSION_REQUEST:
        decisions = {v.decision for v in verdicts}
        merged.decision = None if "ask" in decisions else "allow" if "allow" in decisions else None
    for v in verdicts:
        merged.additional_context += v.context
        if v.system_message:
            merged.system_messages.append(v.system_message)
    return merged


async def extension_verdicts(sidecar: Any, thread: Any, event: str, payload: dict[str, Any]) -> list[Verdict]:
    """Run the thread's ``event`` handlers in its extension host (load order); their verdicts.

    A handler gets ``{threadId, event, ...payload}``. A handler that raises, times out (its own
    ``timeout_ms`` or ``limits.hookTimeoutMs``) or returns something else is a ``thread/diagnostic``
    fault; on the events in ``FAIL_CLOSED`` it also blocks. When the host cannot run at all, each
    handler of such an event blocks, naming why.
    """
    handlers = thread.handlers(event)
    if not handlers:
        return []
    from harness_sidecar.extensions.handlers import run_event
    from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

    try:
        await thread.host.ensure()
        outcome = await run_event(thread.host, handlers, event, {"threadId": thread.id, "event": event, **payload},
                                  thread.registry.hook_timeout_s, sidecar._reporter(thread.id),
                                  thread.timeouts(event))
    except HostUnavailable as exc:
        why = f"the thread's extensions cannot run: {exc}"
    except HostLied as exc:
        sidecar._host_lied(thread, exc)
        why = "the extension host answered with a malformed report"
    else:
        return outcome.verdicts
    if event not in FAIL_CLOSED:
        return []
    return [Verdict(f"extension:{ext}", True, why) for ext in dict.fromkeys(handlers)]
