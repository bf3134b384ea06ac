"""Tool calls: a call's plan of steps (before hooks, the core, transforms, observers), each step run
and judged, and the result bodies the host makes (blocked, withheld, an error)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.extensions.host.api import Handler, ToolSpec
from harness_sidecar.extensions.host.exchanges import Exchange
from harness_sidecar.extensions.host.running import Running, _copy, _local
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.extensions.host.ui import UserRequests
from harness_sidecar.hooks.python import (
    AFTER,
    BEFORE,
    TRANSFORM,
    Allow,
    interpret_before,
    interpret_patch,
    output_to_wire,
)
from harness_sidecar.base.results import describe_exception


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


def _error_body(text: str, **details: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "details": details, "isError": True}


class ToolCalls:
    """``call`` frames: a tool call's steps, run as the sidecar's plan says."""

    def __init__(self, state: HostState, running: Running, users: UserRequests) -> None:
        self.state = state
        self.running = running
        self.users = users
        self.handlers = state.handlers
        self.tools = state.tools
        self.plans = state.plans
        self.schemas = state.schemas
        self.compiled = state.compiled

    def call_plan(self, tool: str) -> list[tuple[str, Any]]:
        """The steps of a call of ``tool``: before hooks, the core, transforms, observers (the sidecar's too);
        made once per tool until the next ``commit`` (nothing else changes them)."""
        plan = self.plans.get(tool)
        if plan is None:
            plan = [(BEFORE, h) for h in self.handlers[BEFORE]]
            plan.append(("core", self.tools.get(tool)))
            plan += [(TRANSFORM, h) for h in self.handlers[TRANSFORM]]
            plan += [(AFTER, h) for h in self.handlers[AFTER]]
            self.plans[tool] = plan
        return plan

    def run_call(self, exchange: Exchange, body: dict[str, Any]) -> None:
        """Run steps ``from``..``to`` of a call. Each step is announced before it runs (``begin``);
        the first step after the core carries the core's result, so the sidecar has it before any
        transform or observer runs, and answers the call when the observers start."""
        call = body["call"]
        # The frame's own call and list (decoded for this exchange alone): state.call is replaced, never
        # changed in place; rewritten_by is appended to.
        state = CallState(body["threadId"], call, body.get("result"), body.get("rewrittenBy") or [])
        state.known = state.result
        hook_timeout, tool_timeout = body["hookTimeout"], body["toolTimeout"]
        steps = body.get("stepTimeouts")  # each handler's own deadline, when one has its own (api.on timeout_ms)
        plan = self.call_plan(call["name"])
        end = min(body["to"], len(plan))
        index = body["from"]
        while index < end:
            kind, target = plan[index]
            if kind == BEFORE:
                exchange.begin(index, steps[index] if steps else hook_timeout,
                               faults=state.take_faults() if state.faults else None)
                if not self._before(exchange, index, target, state):
                    break
            elif kind == "core":
                exchange.begin(index, tool_timeout, faults=state.take_faults() if state.faults else None)
                self._core(exchange, index, target, state, tool_timeout)
            elif kind == TRANSFORM:
                exchange.begin(index, steps[index] if steps else hook_timeout, carry=_news(state),
                               faults=state.take_faults() if state.faults else None)
                if not self._transform(exchange, index, target, state):
                    # withheld: the rest of the transforms do not run; observers see the withheld result
                    index += 1
                    while index < end and plan[index][0] == TRANSFORM:
                        index += 1
                    continue
            else:
                self._observe(exchange, index, end, plan, state, hook_timeout, steps)
                break
            index += 1
        else:
            _say_who_changed(state)
        exchange.finish(self._report(state))

    def _report(self, state: CallState) -> dict[str, Any] | None:
        """The call's outcome; ``None`` for the plain one: no faults, the sidecar has the result, the
        arguments as they came."""
        if not state.faults and state.result is not None and state.result is state.known and not state.rewritten_by:
            return None
        report: dict[str, Any] = {"faults": state.faults}
        if state.result is not None and state.result is state.known:
            report["carried"] = True  # the sidecar has this result already: not sent twice
        elif state.result is not None:
            report["result"] = state.result
        if state.rewritten_by:
            report["arguments"] = state.call["arguments"]
            report["rewrittenBy"] = state.rewritten_by
        return report

    def _fault(self, state: CallState, handler: Handler, index: int, kind: str, message: str) -> None:
        """A fault of the handler of step ``index`` (the sidecar names its extension by that step)."""
        state.faults.append({"extensionId": handler.extension_id, "hook": handler.event, "kind": kind,
                             "message": message, "step": index})

    def _before(self, exchange: Exchange, index: int, handler: Handler, state: CallState) -> bool:
        """Run one before hook; False when the call is blocked (``state.result`` says how)."""
        outcome = self.running.handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call},
                                state.call)
        ext = handler.extension_id
        if outcome.error is not None or outcome.timed_out:
            kind, reason = outcome.failure("tool_call hook", ext, exchange)  # type: ignore[misc]
        elif outcome.value is None:  # allows, as is: what interpret_before says of None, without an Allow()
            return True
        else:
            try:
                decision = interpret_before(outcome.value)
            except TypeError as exc:
                kind, reason = "throw", f"tool_call hook of '{ext}' failed: {exc}"
            else:
                if isinstance(decision, Allow):
                    if decision.arguments is None:
                        return True
                    problem = self._check_arguments(state.call["name"], decision.arguments)
                    if problem is None:
                        state.call = {**state.call, "arguments": decision.arguments}
                        state.rewritten_by.append(ext)
                        return True
                    kind, reason = "throw", (f"tool_call hook of '{ext}' rewrote the arguments of "
                                             f"'{state.call['name']}' into ones its inputSchema refuses: {problem}")
                else:
                    state.result = _blocked_body(ext, "deny", decision.reason, state.rewritten_by)
                    return False
        self._fault(state, handler, index, kind, reason)
        state.result = _blocked_body(ext, kind, reason, state.rewritten_by)
        return False

    def _check_arguments(self, tool: str, arguments: dict[str, Any]) -> str | None:
        compiled = self.compiled.get(tool)
        if compiled is None:
            schema = self.schemas.get(tool)
            if schema is None:
                return "the tool's inputSchema is unknown to the host"
            from harness_sidecar.base import inputschema

            try:
                compiled = self.compiled[tool] = inputschema.compile(schema)
            except inputschema.InvalidSchema as exc:
                return f"its inputSchema is not valid: {exc}"
        error = compiled.first_error(arguments)
        return None if error is None else f"{error[0]} (at {error[1]})"

    def _core(self, exchange: Exchange, index: int, tool: ToolSpec | None, state: CallState,
              timeout: float) -> None:
        name = state.call["name"]
        if tool is None:  # the sidecar plans a host core only for the host's own tools
            state.result = _error_body(f"no tool named '{name}' in this thread's host", kind="tool_not_found")
            return
        ctx = self.users.context(exchange, index, tool.extension_id, state.call) if tool.ctx else None
        _local.extension = tool.extension_id
        try:
            outcome = self.running.invoke(exchange, tool.execute, (state.call["id"], _copy(state.call["arguments"])), ctx)
        finally:
            _local.extension = None
        ext = tool.extension_id
        if outcome.timed_out:
            state.result = _error_body(f"tool '{name}' did not finish within {timeout * 1000:.0f} ms", kind="timeout",
                                       extensionId=ext)
        elif outcome.error is not None:
            state.result = _error_body(f"tool '{name}' failed: {describe_exception(outcome.error)}",
                                       kind="tool_error", extensionId=ext, errorType=type(outcome.error).__name__)
        else:
            try:
                state.result = output_to_wire(outcome.value)
            except TypeError as exc:
                state.result = _error_body(f"tool '{name}' returned an unusable value: {exc}", kind="tool_error",
                                           extensionId=ext)

    def _transform(self, exchange: Exchange, index: int, handler: Handler, state: CallState) -> bool:
        """Run one transform; False when it failed and the result is withheld."""
        assert state.result is not None
        outcome = self.running.handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call,
                                                           "result": state.result}, state.call)
        ext = handler.extension_id
        failure = outcome.failure("tool_result_transform", ext, exchange)
        if failure is not None:
            kind, reason = failure
        else:
            try:
                patch = interpret_patch(outcome.value)
            except TypeError as exc:
                kind, reason = "throw", f"tool_result_transform of '{ext}' failed: {exc}"
            else:
                if patch is not None:
                    state.result = {**state.result, **patch}
                    state.transformed_by.append(ext)
                return True
        self._fault(state, handler, index, kind, reason)
        state.result = _withheld_body(ext, kind, reason, state.rewritten_by)
        return False

    def _observe(self, exchange: Exchange, start: int, end: int, plan: list[tuple[str, Any]], state: CallState,
                 timeout: float, steps: list[float] | None = None) -> None:
        """The observers: the first one's frame carries the final result (the sidecar answers the
        call with it at once); nothing they do changes it."""
        _say_who_changed(state)
        for index in range(start, end):
            handler = plan[index][1]
            exchange.begin(index, steps[index] if steps else timeout, carry=_news(state) if index == start else None,
                           faults=state.take_faults() if state.faults else None, prompt=index == start)
            exchange.answered = True
            # The last observer may have the call and result themselves: the sidecar has the result (it
            # answered with it), no handler runs after it, and the outcome reports only faults.
            outcome = self.running.handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call,
                                                               "result": state.result}, state.call,
                                    copy=index < end - 1 or state.result is not state.known)
            if outcome.error is not None or outcome.timed_out:
                self._fault(state, handler, index, *outcome.failure("tool_result hook", handler.extension_id, exchange,
                                                             "finish"))  # type: ignore[misc]


def _say_who_changed(state: CallState) -> None:
    """The final result names the hooks that rewrote the call's arguments or changed it (a withheld one
    says only that it was withheld)."""
    rewritten_by, transformed_by = state.rewritten_by, state.transformed_by
    if not (rewritten_by or transformed_by) or state.result is None or "withheld" in state.result["details"]:
        return
    details = dict(state.result["details"])
    if rewritten_by:
        details["argumentsRewrittenBy"] = list(rewritten_by)
    if transformed_by:
        details["transformedBy"] = list(transformed_by)
    state.result = {**state.result, "details": details}


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
