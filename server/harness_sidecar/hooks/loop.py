"""``loop/event``: the editor's agent loop reports its boundaries; every source's verdict, one decision.

The editor owns the agent loop; the sidecar sees only its tool calls, input and thread
edges. With ``loop/event {threadId, event, payload?}`` the editor reports the rest — a turn
starts or ends, the model stops, the context is compacted, a sub-agent starts or stops, a
notification, a permission request — so that extensions (``api.on(<event>, fn)``) and command
hooks (protocol-v3 §5) can act on it.

Three parts, one idea each:

- ``EVENTS`` and ``parse_payload``: the events and their payloads (a wrong payload is
  ``invalid_params`` naming the field: ``payload.prompt``);
- ``interpret``: an extension handler's return value as a ``hooks.decision.Verdict`` — the one
  verdict type of every hook, Python or command (it runs in the extension host, which imports
  this module for it);
- ``result``: the wire answer of the one decision ``hooks.decision.merge`` makes of all the
  event's verdicts (command hooks first, then extensions; the extensions' side is run by
  ``threads.commands``, which has the thread's host).

This module imports nothing of the extension machinery at import time (the host imports it).
"""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.errors import InvalidParams
from harness_sidecar.hooks.decision import ALLOW, BLOCKED, DENY, Decision, Verdict

TURN_START = "turn_start"
TURN_END = "turn_end"
STOP = "stop"
COMPACT_BEFORE = "compact_before"
COMPACT_AFTER = "compact_after"
SUBAGENT_START = "subagent_start"
SUBAGENT_STOP = "subagent_stop"
NOTIFICATION = "notification"
PERMISSION_REQUEST = "permission_request"
# protocol-v4 §3: the names an editor needs to fire the rest of Claude Code's events (each → its event in
# hooks.boundaries.LOOP_EVENTS); the editor owns these boundaries, the sidecar runs their hooks.
ELICITATION = "elicitation"
ELICITATION_RESULT = "elicitation_result"
TASK_CREATED = "task_created"
TASK_COMPLETED = "task_completed"
CWD_CHANGED = "cwd_changed"
FILE_CHANGED = "file_changed"
POST_TOOL_BATCH = "post_tool_batch"
STOP_FAILURE = "stop_failure"
TEAMMATE_IDLE = "teammate_idle"
WORKTREE_CREATE = "worktree_create"
WORKTREE_REMOVE = "worktree_remove"
PERMISSION_DENIED = "permission_denied"
SETUP = "setup"
SESSION_BEFORE_SWITCH = "session_before_switch"  # the editor is about to leave the session (v4 §5)
SESSION_BEFORE_FORK = "session_before_fork"  # … about to fork it; on both, ``blocked`` means cancel
MODEL_SELECT = "model_select"  # the editor's model changed (Pi's event of that name): handlers observe it
USER_BASH = "user_bash"  # the user typed a shell command (Pi's ``!cmd``): a handler may run it in the editor's place

# event → {payload field: (JSON type, required)}. Payload fields reach handlers at the top level of
# their ``event`` (``{threadId, event, ...payload}``).
PAYLOADS: dict[str, dict[str, tuple[type, bool]]] = {
    # v4: entryId, the entry the turn follows (Pi's leaf); systemPrompt, the one the turn sends (Pi's getSystemPrompt)
    TURN_START: {"prompt": (str, True), "entryId": (str, False), "systemPrompt": (str, False)},
    TURN_END: {"lastAssistantMessage": (str, False), "contextTokens": (int, False)},  # v4: Pi's getContextUsage
    STOP: {"lastAssistantMessage": (str, False), "stopHookActive": (bool, True)},
    COMPACT_BEFORE: {"trigger": (str, True)},
    COMPACT_AFTER: {"trigger": (str, True)},
    SUBAGENT_START: {"agentType": (str, True)},
    SUBAGENT_STOP: {"agentType": (str, True), "lastAssistantMessage": (str, False)},
    NOTIFICATION: {"message": (str, True), "type": (str, False)},
    PERMISSION_REQUEST: {"toolName": (str, True), "toolInput": (dict, True)},
    ELICITATION: {"serverName": (str, True), "message": (str, True), "mode": (str, False), "url": (str, False),
                  "elicitationId": (str, False), "requestedSchema": (dict, False)},
    ELICITATION_RESULT: {"serverName": (str, True), "action": (str, True), "content": (dict, False),
                         "mode": (str, False), "elicitationId": (str, False)},
    TASK_CREATED: {"taskId": (str, True), "taskSubject": (str, True), "taskDescription": (str, False),
                   "teammateName": (str, False)},
    TASK_COMPLETED: {"taskId": (str, True), "taskSubject": (str, True), "taskDescription": (str, False),
                     "teammateName": (str, False)},
    CWD_CHANGED: {"oldCwd": (str, True), "newCwd": (str, True)},
    FILE_CHANGED: {"filePath": (str, True), "change": (str, True)},
    POST_TOOL_BATCH: {"toolCalls": (list, True)},
    STOP_FAILURE: {"error": (str, True), "errorDetails": (str, False), "lastAssistantMessage": (str, False)},
    TEAMMATE_IDLE: {"teammateName": (str, True)},
    WORKTREE_CREATE: {"name": (str, True)},
    WORKTREE_REMOVE: {"worktreePath": (str, True)},
    PERMISSION_DENIED: {"toolName": (str, True), "toolInput": (dict, True), "reason": (str, False)},
    SETUP: {"trigger": (str, True)},
    SESSION_BEFORE_SWITCH: {"reason": (str, True)},
    SESSION_BEFORE_FORK: {"entryId": (str, False)},  # v4: the entry the fork starts from (Pi's entryId)
    MODEL_SELECT: {"model": (str, True), "previousModel": (str, False), "source": (str, False)},
    USER_BASH: {"command": (str, True), "cwd": (str, False), "excludeFromContext": (bool, False)},
}
EVENTS = tuple(PAYLOADS)
# Events where a source that cannot answer (raised, timed out, answered nonsense) blocks, as a failed
# command hook of the matching Claude Code event does (§5): Stop, SubagentStop, PermissionRequest.
FAIL_CLOSED = (STOP, SUBAGENT_STOP, PERMISSION_REQUEST, TASK_CREATED, TASK_COMPLETED, TEAMMATE_IDLE)
# Events a handler may cancel with Pi's ``{"cancel": True}`` (the same as ``{"block": True}``).
CANCELLABLE = (SESSION_BEFORE_SWITCH, SESSION_BEFORE_FORK)
DECISIONS = ("allow", "deny")
_TYPE_NAMES = {str: "a string", bool: "true or false", dict: "an object", list: "an array", int: "an integer"}
RETURN_FORMS = ("None, {'block': True, 'reason': str}, {'context': str | [str]}, {'systemMessage': str}"
                " or (compact_before) {'compaction': {'summary': str}}"
                " or (user_bash) {'result': {'output': str, 'exitCode': int}}"
                " or (permission_request) {'decision': 'allow' | 'deny', 'reason'?: str}"
                " or (session_before_switch, session_before_fork) {'cancel': True, 'reason'?: str}")


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


def interpret(event: str, source: str, value: Any) -> Verdict:
    """An extension handler's return value (plain JSON) as a verdict; ``TypeError`` for anything else.

    ``None`` and ``{}`` say nothing; ``{"block": True, "reason": str}`` blocks (a ``deny``; on
    ``permission_request`` the decision is ``deny``); ``{"context": str | [str]}`` adds context;
    ``{"systemMessage": str}`` a message for the user; ``{"decision": "allow"|"deny", "reason"?}``
    decides a ``permission_request``. The keys combine (``{"block": True, "reason": …, "context": …}``).
    """
    verdict = Verdict(source)
    if value is None:
        return verdict
    allowed = {"block", "reason", "context", "systemMessage"} | ({"decision"} if event == PERMISSION_REQUEST else set()) \
        | ({"cancel"} if event in CANCELLABLE else set()) | ({"compaction"} if event == COMPACT_BEFORE else set()) \
        | ({"result"} if event == USER_BASH else set())
    if type(value) is not dict or not set(value) <= allowed:
        raise TypeError(f"a {event} handler must return {RETURN_FORMS}")
    block = value.get("block", False)
    if type(block) is not bool:
        raise TypeError("'block' must be True or False")
    cancel = value.get("cancel", False)
    if type(cancel) is not bool:
        raise TypeError("'cancel' must be True or False")
    block = block or cancel
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
    compaction = value.get("compaction")
    if compaction is not None:
        if type(compaction) is not dict or set(compaction) != {"summary"} or type(compaction["summary"]) is not str:
            raise TypeError("'compaction' must be {'summary': str}")
        verdict.result = {"summary": compaction["summary"]} if compaction["summary"].strip() else None
    ran = value.get("result") if event == USER_BASH else None
    if ran is not None:
        if type(ran) is not dict or set(ran) != {"output", "exitCode"} or type(ran["output"]) is not str \
                or type(ran["exitCode"]) is not int:
            raise TypeError("'result' must be {'output': str, 'exitCode': int}")
        verdict.result = {"output": ran["output"], "exitCode": ran["exitCode"]}
    verdict.decision = DENY if block else decision
    verdict.reason = reason
    verdict.context = [c for c in context if c.strip()]
    verdict.system_message = message
    return verdict


ANSWERED = {COMPACT_BEFORE: "compaction", USER_BASH: "userBash"}  # event → the answer's key for a handler's result


def answered(event: str, verdicts: list[Verdict], answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` with what an extension answered in the editor's place, on an event nobody blocked: the first
    in declaration order — ``compaction: {summary, by}`` (compact_before, Pi's ``{compaction: {summary}}``),
    ``userBash: {output, exitCode, by}`` (user_bash, Pi's ``{result}``)."""
    key = ANSWERED.get(event)
    if key is not None and answer.get("blocked") is None:
        for verdict in verdicts:
            if verdict.result is not None:
                return {**answer, key: {**verdict.result, "by": verdict.source}}
    return answer


def result(event: str, decision: Decision) -> dict[str, Any]:
    """``loop/event``'s wire result of the one decision (``hooks.decision.merge``) of ``event``'s sources.

    The sources come in *declaration order*: the thread's command hooks of the matching Claude Code
    event (``root:<path>``, ``plugin:<name>``) first, in the order their files declare them, then
    the extensions' handlers (``extension:<id>``) in load order — as for PreToolUse, where the
    hooks' decision runs before the extensions' before hooks. By §5's rules:

    1. blocked (any deny or block, or a failure of an event that fails closed) → ``blocked =
       {reason, by}``: ``reason`` joins every blocking source's reason (``"; "``) in declaration
       order, ``by`` lists those sources; on ``permission_request`` the decision is ``deny``;
    2. else any ``ask`` (a command hook's ``ask``/``defer``) → decision ``None`` (the editor asks the
       user as it would without hooks); else any ``allow`` → ``allow``; else ``None``;
    3. ``additionalContext`` and ``systemMessages`` keep every source's strings in declaration
       order, whatever the decision. There is no rewrite on a loop event (nothing to rewrite).
    """
    out: dict[str, Any] = {"blocked": None}
    if decision.outcome == BLOCKED:
        out["blocked"] = {"reason": decision.reason, "by": decision.by}
    if event == PERMISSION_REQUEST:
        out["decision"] = ("deny" if decision.outcome == BLOCKED else
                           "allow" if decision.outcome == ALLOW and decision.allowed_by else None)
    out["additionalContext"] = decision.context
    out["systemMessages"] = decision.system_messages
    if decision.stop_turn is not None:  # a command hook's continue: false (protocol-v4 §3)
        out["stopTurn"] = decision.stop_turn
    return out

