"""Many hooks, one decision — deterministic (protocol-v3 §5 "Many hooks, one decision").

The one merge of the sidecar, for tool calls, input and the loop's events alike. Every hook that
decides — a command hook's answer (``verdict_of``), or, for the loop's events, an extension
handler's return (``loop.interpret``, run in the extension host, which imports this module) —
becomes a source-agnostic ``Verdict``; ``merge`` turns the verdicts of one event, given in
declaration order (command hooks first, then extensions in load order), into one ``Decision``:

1. any ``block`` (a deny, a ``decision: "block"``, ``continue: false``, exit code 2, or a failure of
   an event that can block while failures fail closed) → blocked: every blocking reason joined in
   declaration order, ``by`` naming the sources; ``kind`` is ``hook`` (or ``hook_failed`` when only
   failures blocked);
2. else any ``ask``/``defer`` → ``ask``: the caller asks the user once (``ui/confirm`` naming the
   hooks); no UI or no answer = blocked;
3. else rewrites: one distinct ``updated_input`` is applied (the caller validates it again); two or
   more different ones → blocked, kind ``hook_conflict``;
4. ``context`` and ``system_messages`` are kept in declaration order whatever the outcome.

The order in which hooks *finish* never matters: the result depends only on the declared order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# This module imports nothing of the sidecar's: the extension host imports it (through ``loop``).

ALLOW = "allow"
DENY = "deny"
ASK = "ask"
BLOCKED = "blocked"
CONFLICT = "hook_conflict"


@dataclass
class Verdict:
    """One hook's say about one event, whatever kind of hook it is."""

    source: str  # root:<path> | plugin:<name> | extension:<id>
    label: str = ""  # how to name this hook to a person (its command)
    decision: str | None = None  # allow | deny | ask | None (no opinion)
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    system_message: str | None = None
    failure: str | None = None  # it failed (and its event fails closed): it blocks as hook_failed
    feedback: str | None = None  # PostToolUse: a decision "block" + reason, which cannot undo the call
    stop_reason: str | None = None  # ``continue: false``: the turn stops (its ``stopReason``, or why it blocked)
    # what an extension's handler answers in place of the editor (``hooks.loop.answered``): compact_before's
    # ``{summary}``, user_bash's ``{output, exitCode}``
    result: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The extension host → sidecar form (the channel's report of a loop event's handlers)."""
        out: dict[str, Any] = {"source": self.source, "context": self.context}
        for key, value in (("decision", self.decision), ("reason", self.reason or None),
                           ("systemMessage", self.system_message), ("failure", self.failure),
                           ("result", self.result)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_wire(cls, value: Any) -> Verdict:
        """A verdict the extension host reported; ``ValueError`` when it is not one."""
        if (type(value) is not dict or type(value.get("source")) is not str
                or value.get("decision") not in (None, ALLOW, DENY, ASK)
                or type(value.get("context")) is not list or not all(type(c) is str for c in value["context"])
                or any(type(value.get(k, "")) is not str for k in ("reason", "systemMessage", "failure"))
                or type(value.get("result", {})) is not dict):
            raise ValueError("malformed verdict")
        return cls(value["source"], decision=value.get("decision"), reason=value.get("reason", ""),
                   context=list(value["context"]), system_message=value.get("systemMessage"),
                   failure=value.get("failure"), result=value.get("result"))


@dataclass
class Decision:
    outcome: str  # allow | blocked | ask
    kind: str | None = None  # when blocked: hook | hook_failed | hook_conflict
    reason: str = ""
    by: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    rewritten_by: list[str] = field(default_factory=list)
    asking: list[Verdict] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)
    allowed_by: list[str] = field(default_factory=list)  # explicit allows (permission_request)
    stop_turn: dict[str, Any] | None = None  # {reason, by}: a hook answered ``continue: false`` (protocol-v4 §3)

    def blocked_to_wire(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, "by": self.by}


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def merge(verdicts: list[Verdict]) -> Decision:
    """The one decision of ``verdicts`` (in declaration order)."""
    decision = _merge(verdicts)
    stopping = [v for v in verdicts if v.stop_reason is not None]
    if stopping:
        decision.stop_turn = {"reason": "; ".join(v.stop_reason for v in stopping if v.stop_reason)
                              or "a hook stopped the turn", "by": _unique([v.source for v in stopping])}
    return decision


def _merge(verdicts: list[Verdict]) -> Decision:
    context = [c for v in verdicts for c in v.context]
    messages = [v.system_message for v in verdicts if v.system_message]
    blockers = [v for v in verdicts if v.decision == DENY or v.failure is not None]
    if blockers:
        only_failures = all(v.decision != DENY for v in blockers)
        reasons = [v.reason or v.failure or f"blocked by {v.source}" for v in blockers]
        return Decision(BLOCKED, "hook_failed" if only_failures else "hook", "; ".join(reasons),
                        _unique([v.source for v in blockers]), context=context, system_messages=messages)
    asking = [v for v in verdicts if v.decision == ASK]
    if asking:
        return Decision(ASK, reason="; ".join(v.reason for v in asking if v.reason),
                        by=_unique([v.source for v in asking]), asking=asking, context=context,
                        system_messages=messages)
    rewrites = [v for v in verdicts if v.updated_input is not None]
    distinct = {json.dumps(v.updated_input, sort_keys=True) for v in rewrites}
    if len(distinct) > 1:
        return Decision(BLOCKED, CONFLICT, f"{len(distinct)} hooks rewrote the input differently ("
                        + ", ".join(_unique([v.source for v in rewrites])) + "): none is applied",
                        _unique([v.source for v in rewrites]), context=context, system_messages=messages)
    return Decision(ALLOW, updated_input=rewrites[0].updated_input if rewrites else None,
                    rewritten_by=_unique([v.source for v in rewrites]), context=context, system_messages=messages,
                    allowed_by=_unique([v.source for v in verdicts if v.decision == ALLOW]))


# The values the formats define (Claude Code's hooks reference, Codex's hook output schemas): anything
# else — another spelling, another case, another type — is a failure, never a silent allow (protocol-v4 §2).
DECISIONS = ("approve", "block")  # top-level ``decision`` (``approve`` is PreToolUse's, deprecated)
PERMISSION_DECISIONS = ("allow", "deny", "ask", "defer")  # ``hookSpecificOutput.permissionDecision``
BEHAVIORS = ("allow", "deny")  # PermissionRequest's ``hookSpecificOutput.decision.behavior``
POST_EVENTS = ("PostToolUse", "PostToolUseFailure")  # after the core: a block is feedback, it cannot undo the call


def undefined_value(event: str, output: dict[str, Any]) -> tuple[str, Any, tuple[str, ...]] | None:
    """The first decision field of a JSON answer whose value the format does not define: (its path, the
    value, the defined values); None when every one present is defined (``null`` counts as absent)."""
    decision = output.get("decision")
    if decision is not None and decision not in DECISIONS:
        return "decision", decision, DECISIONS
    specific = output.get("hookSpecificOutput")
    if type(specific) is not dict:
        return None
    permission = specific.get("permissionDecision")
    if permission is not None and permission not in PERMISSION_DECISIONS:
        return "hookSpecificOutput.permissionDecision", permission, PERMISSION_DECISIONS
    behavior = specific.get("decision")
    if event == "PermissionRequest" and behavior is not None:
        if type(behavior) is not dict:  # {behavior, message?} — a bare "deny" would otherwise decide nothing
            return "hookSpecificOutput.decision", behavior, ("{\"behavior\": \"allow\"|\"deny\"}",)
        if behavior.get("behavior") not in BEHAVIORS:
            return "hookSpecificOutput.decision.behavior", behavior.get("behavior"), BEHAVIORS
    return None


def verdict_of(answer: Any, *, can_block: bool, fail_open: bool) -> tuple[Verdict, str | None]:
    """A command hook's ``command.Answer`` as a verdict, and the failure to report as a diagnostic (if any).

    A failure of an event that can block blocks (``Verdict.failure``) unless ``fail_open``; otherwise
    it is only reported.
    """
    handler = answer.handler
    verdict = Verdict(handler.source.source, handler.label)
    if answer.failure is not None:
        why = answer.failure + (f"; stderr: {answer.stderr_tail}" if answer.stderr_tail else "")
        if can_block and not fail_open:
            verdict.failure = f"hook failed: {why}"
        return verdict, why
    if answer.exit_code == 2:
        reason = answer.stderr_tail or "blocked (exit code 2)"
        if handler.event in POST_EVENTS:
            verdict.feedback = reason
        elif can_block:
            verdict.decision, verdict.reason = DENY, reason
        return verdict, None
    output = answer.output
    if output is None:  # exit 0, plain stdout: context for the events that take it
        text = answer.stdout.strip()
        if text and handler.event in ("UserPromptSubmit", "UserPromptExpansion", "SessionStart"):
            verdict.context.append(text)
        return verdict, None
    specific = output.get("hookSpecificOutput")
    specific = specific if type(specific) is dict else {}
    message = output.get("systemMessage")
    if type(message) is str and message:
        verdict.system_message = message
    context = specific.get("additionalContext")
    if type(context) is str and context:
        verdict.context.append(context)
    reason = output.get("reason")
    reason = reason if type(reason) is str else ""
    permission = specific.get("permissionDecision")
    permission_reason = specific.get("permissionDecisionReason")
    if type(permission_reason) is str and permission_reason:
        reason = permission_reason
    decision = output.get("decision")
    behavior = specific.get("decision")  # PermissionRequest, as Claude Code writes it: {behavior, message?}
    if handler.event == "PermissionRequest" and type(behavior) is dict and behavior.get("behavior") in ("allow", "deny"):
        permission = behavior["behavior"]
        message = behavior.get("message")
        if type(message) is str and message:
            reason = message
    blocks = decision == "block" or output.get("continue") is False or permission == "deny"
    stop = output.get("stopReason")
    stop = stop if type(stop) is str else ""
    if output.get("continue") is False:
        verdict.stop_reason = stop or reason or verdict.system_message or answer.stderr_tail or ""
        if not reason:
            reason = stop
    # what the hook said is the reason (protocol-v4 §3): permissionDecisionReason, reason, then its
    # systemMessage, then its stderr — never only "blocked"
    if not reason and (blocks or permission in ("ask", "defer")):
        reason = verdict.system_message or answer.stderr_tail or ""
    if handler.event in POST_EVENTS:
        if decision == "block":
            verdict.feedback = reason or "blocked"
        return verdict, None
    if blocks:
        verdict.decision, verdict.reason = DENY, reason or "blocked"
    elif permission in ("ask", "defer"):
        verdict.decision, verdict.reason = ASK, reason
    elif permission == "allow" or decision == "approve":
        verdict.decision, verdict.reason = ALLOW, reason
    updated = specific.get("updatedInput")
    if type(updated) is dict and verdict.decision != DENY:
        verdict.updated_input = updated
    if not can_block and verdict.decision == DENY and handler.event not in ("PermissionRequest",):
        verdict.decision = None  # an observer event cannot be stopped; its reason stays as context
        if verdict.reason:
            verdict.context.append(verdict.reason)
    return verdict, None
