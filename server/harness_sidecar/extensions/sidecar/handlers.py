"""The sidecar's side of the handlers outside tool calls: lifecycle, context, input, commands.

Each is an exchange with the thread's host whose every step is kept to its deadline here,
like a tool call's: a handler that hangs or whose host dies is answered for — its fault
reported, the next handler run — and what the handlers before it produced is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.hooks.python import CONTEXT, INPUT, HookFault
from harness_sidecar.extensions.sidecar.supervisor import ExtensionHost
from harness_sidecar.extensions.sidecar.steps import faults_of, HostLied, StepPlan, Stopped

Report = Callable[[HookFault], None]


@dataclass
class EventOutcome:
    """What the handlers of one event produced."""

    sections: list[dict[str, str]] = field(default_factory=list)  # context: {extensionId, text}, load order
    text: str | None = None  # input: the text after the transforms
    handled: dict[str, Any] | None = None  # input: {extensionId, reason?}
    blocked: dict[str, Any] | None = None  # input: {extensionId, kind, message}
    verdicts: list[Any] = field(default_factory=list)  # loop events: hooks.decision.Verdict, in load order


def _faults(value: Any, plan: list[StepPlan]) -> list[HookFault]:
    return faults_of(value, plan)  # named by their steps in the plan, not by what the host says


def _sections(value: Any, handlers: list[str]) -> list[dict[str, str]]:
    if type(value) is not list or not all(type(s) is dict and s.get("extensionId") in handlers
                                          and type(s.get("text")) is str for s in value):
        raise HostLied("malformed 'sections'")
    return [{"extensionId": s["extensionId"], "text": s["text"]} for s in value]


def _verdicts(value: Any, handlers: list[str]) -> list[Any]:
    from harness_sidecar.hooks.decision import Verdict

    if type(value) is not list:
        raise HostLied("malformed 'verdicts'")
    sources = {f"extension:{ext}" for ext in handlers}
    try:
        verdicts = [Verdict.from_wire(v) for v in value]
    except ValueError:
        raise HostLied("malformed verdict") from None
    if any(v.source not in sources for v in verdicts):
        raise HostLied("a verdict of an extension without a handler")
    return verdicts


async def run_event(host: ExtensionHost, handlers: list[str], event: str, payload: dict[str, Any],
                    hook_timeout_s: float, report: Report, timeouts: list[float] | None = None) -> EventOutcome:
    """Run the ``event`` handlers (extension ids in load order) with ``payload``.

    ``timeouts``: each handler's own deadline in seconds (``api.on(..., timeout_ms=)``), in
    handler order; default ``hook_timeout_s`` for all.
    """
    from harness_sidecar.hooks.loop import EVENTS as LOOP_EVENTS
    from harness_sidecar.hooks.decision import Verdict
    from harness_sidecar.hooks.loop import FAIL_CLOSED

    outcome = EventOutcome(text=payload.get("text") if event == INPUT else None)
    if not handlers:
        return outcome
    if timeouts is None or len(timeouts) != len(handlers):
        timeouts = [hook_timeout_s] * len(handlers)
    plan = [StepPlan(event, ext, timeouts[i]) for i, ext in enumerate(handlers)]
    is_loop = event in LOOP_EVENTS
    start = 0
    while start < len(plan):
        body = {"event": event, "payload": payload, "from": start, "to": len(plan), "hookTimeout": hook_timeout_s,
                "timeouts": timeouts}
        answer = await host.run("event", body, plan, start)
        if isinstance(answer, Stopped):
            for fault in _faults(answer.faults, plan):
                report(fault)
            carry = answer.carry if type(answer.carry) is dict else {}
            if event == CONTEXT and "sections" in carry:
                outcome.sections += _sections(carry["sections"], handlers)
            if event == INPUT and type(carry.get("text")) is str:
                outcome.text = carry["text"]
            if is_loop and "verdicts" in carry:
                outcome.verdicts += _verdicts(carry["verdicts"], handlers)  # those before the stopped step
            ext = plan[answer.step].extension_id or "host"
            if answer.how == "timeout":
                message = f"{event} handler of '{ext}' did not finish within {plan[answer.step].timeout * 1000:.0f} ms"
                report(HookFault(ext, event, "timeout", message))
            else:
                message = f"{event} handler of '{ext}' was running when the extension host exited"
            if is_loop and event in FAIL_CLOSED:  # a handler that cannot answer blocks (§5: fail closed)
                outcome.verdicts.append(Verdict(f"extension:{ext}", failure=message))
            if event == INPUT:  # input handlers are policy: one that cannot answer stops the input
                outcome.blocked = {"extensionId": ext, "kind": answer.how, "message": message}
                return outcome
            if answer.how != "timeout":
                return outcome
            start = answer.step + 1
            if event == INPUT:
                payload = {**payload, "text": outcome.text}
            await host.ensure()
            continue
        if type(answer) is not dict:
            raise HostLied("a report is an object")
        for fault in _faults(answer.get("faults"), plan):
            report(fault)
        if event == CONTEXT:
            outcome.sections += _sections(answer.get("sections"), handlers)
        elif is_loop:
            outcome.verdicts += _verdicts(answer.get("verdicts"), handlers)
        elif event == INPUT:
            if type(answer.get("text")) is not str:
                raise HostLied("an input report needs 'text'")
            outcome.text = answer["text"]
            handled, blocked = answer.get("handled"), answer.get("blocked")
            if handled is not None:
                if type(handled) is not dict or handled.get("extensionId") not in handlers:
                    raise HostLied("malformed 'handled'")
                outcome.handled = handled
            if blocked is not None:
                if type(blocked) is not dict or blocked.get("extensionId") not in handlers:
                    raise HostLied("malformed 'blocked'")
                outcome.blocked = blocked
        return outcome
    return outcome


async def run_command(host: ExtensionHost, extension_id: str, name: str, arguments: dict[str, Any],
                      timeout_s: float) -> dict[str, Any]:
    """A command's result ``{content, details, isError}``; a fault or a timeout is an ``isError`` result."""
    plan = [StepPlan("command", extension_id, timeout_s)]
    answer = await host.run("command", {"name": name, "arguments": arguments, "timeout": timeout_s}, plan, 0)
    if isinstance(answer, Stopped):
        if answer.how == "timeout":
            text, kind = f"command '{name}' did not finish within {timeout_s * 1000:.0f} ms", "timeout"
        elif answer.how == "too_large":
            text, kind = "the command's result is larger than --max-result-bytes", "too_large"
        else:
            text, kind = f"command '{name}' was running when the extension host exited", "crash"
        return {"content": [{"type": "text", "text": text}], "details": {"kind": kind, "extensionId": extension_id},
                "isError": True}
    result = answer.get("result") if type(answer) is dict else None
    if answer.get("tooLarge") if type(answer) is dict else False:
        return {"content": [{"type": "text", "text": "the command's result is larger than --max-result-bytes"}],
                "details": {"kind": "too_large", "extensionId": extension_id}, "isError": True}
    if (type(result) is not dict or type(result.get("details")) is not dict or type(result.get("isError")) is not bool
            or type(result.get("content")) is not list
            or not all(type(c) is dict and c.get("type") == "text" and type(c.get("text")) is str
                       for c in result["content"])):
        raise HostLied("a command report needs a result")
    return {"content": result["content"], "details": result["details"], "isError": result["isError"]}
