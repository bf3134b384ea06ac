"""Lifecycle, context, input and loop-event handlers: an ``event`` frame, the handlers run in load order."""

from __future__ import annotations

from typing import Any

from harness_sidecar.hooks import loop
from harness_sidecar.extensions.host.exchanges import Exchange
from harness_sidecar.extensions.host.running import Running
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.hooks.decision import Verdict
from harness_sidecar.hooks.python import CONTEXT, INPUT
from harness_sidecar.hooks.loop import EVENTS as LOOP_EVENTS


class Events:
    """``event`` frames: lifecycle, context, input and loop-event handlers, in load order."""

    def __init__(self, state: HostState, running: Running) -> None:
        self.running = running
        self.handlers = state.handlers

    def run_event(self, exchange: Exchange, body: dict[str, Any]) -> None:
        """Lifecycle, context, input and loop-event handlers, in load order, each under its own
        deadline (``body["timeouts"]``); each step's frame carries the result so far (sections, the
        text, or the loop verdicts), so the sidecar keeps it if a later handler hangs."""
        event = body["event"]
        payload = body["payload"]
        handlers = self.handlers[event]
        timeouts = body.get("timeouts")  # each handler's deadline (seconds), in handler order
        faults: list[dict[str, Any]] = []
        sections: list[dict[str, str]] = []
        verdicts: list[dict[str, Any]] = []
        report: dict[str, Any] = {"faults": faults}
        is_loop = event in LOOP_EVENTS
        what = f"{event} handler"
        for index in range(body["from"], min(body["to"], len(handlers))):
            handler = handlers[index]
            timeout = timeouts[index] if timeouts is not None and index < len(timeouts) else body["hookTimeout"]
            carry = {"sections": sections} if event == CONTEXT else {"text": payload["text"]} if event == INPUT \
                else {"verdicts": verdicts} if is_loop else None
            exchange.begin(index, timeout, carry=carry, faults=faults[:] if faults else None)
            faults.clear()
            outcome = self.running.handler(exchange, index, handler, payload)
            ext = handler.extension_id
            failure = outcome.failure(what, ext, exchange, "finish")
            if is_loop:
                if failure is None:
                    try:
                        verdicts.append(loop.interpret(event, f"extension:{ext}", outcome.value).to_wire())
                    except TypeError as exc:
                        failure = "throw", f"{event} handler of '{ext}' failed: {exc}"
                if failure is not None and event in loop.FAIL_CLOSED:  # a handler that cannot answer blocks
                    verdicts.append(Verdict(f"extension:{ext}", failure=failure[1]).to_wire())
            if failure is None and event == CONTEXT:
                if type(outcome.value) is str:
                    if outcome.value.strip():
                        sections.append({"extensionId": ext, "text": outcome.value})
                elif outcome.value is not None:
                    failure = "throw", f"context handler of '{ext}' must return None or a str"
            elif failure is None and event == INPUT:
                value = outcome.value
                if value is None:
                    pass
                elif type(value) is dict and set(value) == {"text"} and type(value["text"]) is str:
                    payload = {**payload, "text": value["text"]}
                elif (type(value) is dict and value.get("handled") is True and set(value) <= {"handled", "reason"}
                      and type(value.get("reason", "")) is str):
                    report["handled"] = {"extensionId": ext, **({"reason": value["reason"]} if "reason" in value
                                                                else {})}
                    break
                else:
                    failure = "throw", (f"input handler of '{ext}' must return None, {{'text': str}} or "
                                        f"{{'handled': True, 'reason'?: str}}")
            if failure is not None:
                kind, problem = failure
                faults.append({"extensionId": ext, "hook": event, "kind": kind, "message": problem, "step": index})
                if event == INPUT:  # input handlers are policy: a fault stops the input
                    report["blocked"] = {"extensionId": ext, "kind": kind, "message": problem}
                    break
        if event == CONTEXT:
            report["sections"] = sections
        if event == INPUT:
            report["text"] = payload["text"]
        if is_loop:
            report["verdicts"] = verdicts
        exchange.finish(report)
