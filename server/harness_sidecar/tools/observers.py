"""A thread's tool calls in flight (``Calls``) and the observers that run after a call was answered
(``Observers``): the ``tool_result`` hooks whose call already has its result.

``Observers`` owns only what happens after the answer: it starts the observers' exchange with the
host, reports their faults, runs the next observers after one that timed out, and counts them in
``Calls`` until they end. It never changes an answer and never touches the steps before it (those
are ``tools.pipeline.Pipeline``'s); it is given the thread's id, host, ``Calls`` and fault reporter.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from harness_sidecar.extensions.sidecar.steps import Answered, faults_of, HostLied, HostUnavailable, StepPlan, Stopped
from harness_sidecar.hooks.python import AFTER, HookFault
from harness_sidecar.tools.calls import Calls

if TYPE_CHECKING:  # a plain thread (no extension) never imports the host machinery
    from harness_sidecar.extensions.sidecar.supervisor import ExtensionHost

logger = logging.getLogger("harness_sidecar.tools.pipeline")  # the pipeline's log, as before the split


def report_faults(report_fault: Callable[[HookFault], None], faults: Any, plan: list[StepPlan]) -> None:
    """The faults a host report names, each to ``report_fault``."""
    if type(faults) is list and not faults:  # the common case: nothing to report
        return
    for fault in faults_of(faults, plan):
        report_fault(fault)


@dataclass
class Observers:
    """The observers of one pipeline's calls after their answer."""

    thread_id: str
    host: ExtensionHost | None
    calls: Calls
    report_fault: Callable[[HookFault], None]

    def later(self, body: dict[str, Any], plan: list[StepPlan], start: int) -> None:
        """Run observers ``start``.. of a call already answered with ``body["result"]``."""
        self.calls.enter()
        task = asyncio.ensure_future(self._observe(body, plan, start))
        self.calls._observers.add(task)
        task.add_done_callback(self.calls._observers.discard)

    async def _observe(self, body: dict[str, Any], plan: list[StepPlan], start: int) -> None:
        """Observers of a call already answered (its core ran here, no transforms)."""
        assert self.host is not None
        try:
            await self.host.ensure()
            outcome = await self.host.run("call", body, plan, start)
        except HostUnavailable:
            self.calls.leave()  # the answer stands; the observers cannot run
            return
        except BaseException:
            self.calls.leave()
            raise
        self._observed(outcome, body, plan, True)

    def after(self, answered: Answered, body: dict[str, Any], plan: list[StepPlan], leave: bool) -> None:
        """When the observers of an answered call end, ``_observed`` takes their outcome."""

        def ended(rest: Any) -> None:
            if rest.cancelled() or rest.exception() is not None:
                if leave:
                    self.calls.leave()
                return
            self._observed(rest.result(), body, plan, leave, answered.result)

        answered.rest.add_done_callback(ended)

    def _observed(self, outcome: Any, body: dict[str, Any], plan: list[StepPlan], leave: bool,
                  answered: Any = None) -> None:
        """The end of a call's observers, after its answer: their faults are reported, and after one
        that timed out the next ones run; nothing changes the answer."""
        try:
            if isinstance(outcome, Answered):
                self.after(outcome, body, plan, leave)
                leave = False
            elif isinstance(outcome, Stopped):
                report_faults(self.report_fault, outcome.faults, plan)
                if outcome.how == "timeout":
                    step = plan[outcome.step]
                    ext = step.extension_id or "host"
                    self.report_fault(HookFault(ext, AFTER, "timeout", f"tool_result hook of '{ext}' did not "
                                                                       f"answer within {step.timeout * 1000:.0f} ms"))
                    if outcome.step + 1 < len(plan) and self.host is not None:
                        later = {**body, "from": outcome.step + 1}
                        if answered is not None:
                            later["result"] = answered
                        self.later(later, plan, outcome.step + 1)
            elif type(outcome) is dict:
                report_faults(self.report_fault, outcome.get("faults"), plan)
            else:
                raise HostLied("a report is an object")
        except HostLied as exc:
            logger.error("the extension host of %s broke the channel's rules: %s; killing it", self.thread_id, exc)
            if self.host is not None and self.host.process is not None:
                self.host.process.kill()
        finally:
            if leave:
                self.calls.leave()
