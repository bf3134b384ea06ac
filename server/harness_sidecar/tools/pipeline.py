"""Tools and the one path every tool call takes.

unknown tool → ``tool_not_found``; arguments checked against ``inputSchema`` (no hook runs
for a call that fails); before hooks (may block, may rewrite the arguments) → the core,
exactly once → transforms (may change the result, fail closed) → observers. Extension code
runs in the thread's host: for an extension tool the whole call is one exchange with the
host; for the builtin, editor and MCP tools, whose core runs here, the before hooks are one
exchange and the transforms with the observers another. Whatever the host does — answer,
run late, die — each step is answered by its deadline here (``extensions.sidecar.supervisor``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from harness_sidecar.base import content as content_blocks
from harness_sidecar.hooks.python import AFTER, BEFORE, TRANSFORM, HookFault
from harness_sidecar.extensions.sidecar.steps import Answered, HostLied, HostUnavailable, StepPlan, Stopped
from harness_sidecar.base.results import (
    ToolCall,
    ToolResult,
    blocked,
    describe_exception,
    withheld,
)

from harness_sidecar.tools.observers import Calls, Observers, report_faults
from harness_sidecar.tools.registry import Tool, ToolRegistry
from harness_sidecar.tools.trace import CallTrace, steps_of, trace, tracing

if TYPE_CHECKING:  # a plain thread (no extension) never imports the host machinery
    from harness_sidecar.extensions.sidecar.supervisor import ExtensionHost

logger = logging.getLogger(__name__)

def _valid_body(body: Any) -> bool:
    """A result body the host sent back: its content may hold any of MCP's content blocks (v4 §4)."""
    return (type(body) is dict and type(body.get("details")) is dict and type(body.get("isError")) is bool
            and content_blocks.valid(body.get("content")))


@dataclass
class Pipeline:
    """One tools/call of a thread on its way through its steps."""

    thread_id: str
    registry: ToolRegistry
    host: ExtensionHost | None
    report_fault: Callable[[HookFault], None]
    validate: Callable[[Tool, dict[str, Any]], tuple[str, str] | None]  # (message, JSON path) of a mismatch
    catalog: Any = None  # the catalog snapshot of this revision: what load_skill and find_skills see
    command_hooks: Any = None  # hooks.boundaries.ThreadHooks when the thread declares command hooks
    calls: Calls = field(default_factory=Calls)  # the thread's, shared by its revisions' pipelines
    observers: Observers = field(init=False, repr=False, compare=False)  # what runs after a call was answered

    def __post_init__(self) -> None:
        self.observers = Observers(self.thread_id, self.host, self.calls, self.report_fault)

    async def call(self, call: ToolCall, hooked: bool = False) -> ToolResult:
        """The whole pipeline of one call. Never raises for anything an extension, editor or server did.

        Command hooks (PreToolUse, PostToolUse) wrap the rest: their merged decision runs before the
        extensions' before hooks, and the call goes on through here again (``hooked``).
        """
        if hooked:  # counted once, by the outer call
            return await self._call(call, hooked)
        self.calls.enter()
        try:
            return await self._call(call, hooked)
        finally:
            self.calls.leave()

    def _unavailable(self, call: ToolCall, exc: Exception) -> ToolResult:
        host = self.host
        kind = "failed" if host is not None and host.failed else "closed" if self.calls.closing else "crash"
        return blocked(call, "host", kind, f"the thread's extensions cannot run: {exc}")

    async def _call(self, call: ToolCall, hooked: bool) -> ToolResult:
        t = trace(self.thread_id, call)  # --log-level debug: each step's line; None otherwise
        if t is None:
            return await self._steps(call, hooked, None)
        return t.end(await self._steps(call, hooked, t))

    async def _steps(self, call: ToolCall, hooked: bool, t: CallTrace | None) -> ToolResult:
        if self.host is not None and self.host.failed:  # a failed thread runs nothing: no tool kind
            return blocked(call, "host", "failed", f"the thread's extensions failed ({self.host.failure}): "
                                                   f"no tool of this thread runs")
        if self.calls.closing:
            return blocked(call, "host", "closed", "the thread was closed before the call began")
        tool = self.registry.tools.get(call.name)
        if tool is None:
            return ToolResult.error(call, f"no tool named '{call.name}' in this thread", kind="tool_not_found")
        # the hooked pass's arguments were checked already: by the outer pass, or (rewritten by a hook) by
        # ``ToolCallHooks.around_tool`` against the same tool
        problem = None if hooked else self.validate(tool, call.arguments)
        if t is not None:
            t.step("arguments checked against inputSchema" if problem is None else "arguments refused")
        if problem is not None:
            message, path = problem
            return ToolResult.error(call, f"the arguments of '{call.name}' do not match its inputSchema: {message} "
                                          f"(at {path})", kind="invalid_arguments", message=message, path=path)
        if self.command_hooks is not None and not hooked and self.command_hooks.tool_calls.wants_tool(call.name):
            hooked_result = await self.command_hooks.tool_calls.around_tool(call, tool, self.validate,
                                                                 lambda c: self.call(c, hooked=True))
            if t is not None:
                t.step("command hooks (PreToolUse, the call, PostToolUse)")
            return hooked_result
        plan, core = self.registry.plan(tool)
        if len(plan) > 1 or tool.run is None:
            if self.host is None:
                return ToolResult.error(call, f"tool '{call.name}' has no extension host", kind="tool_error")
            try:
                if not self.host.running:
                    await self.host.ensure()
            except HostUnavailable as exc:
                return self._unavailable(call, exc)
        if tool.run is None:
            hosted = await self._host_call(call, tool, plan)
            if t is not None:
                t.step(f"host exchange [{steps_of(plan, 0, len(plan))}]")
            return hosted
        try:
            rewritten_by: list[str] = []
            if core > 0:
                outcome = await self._exchange(call, tool, plan, 0, None, [], end=core)
                if t is not None:
                    t.step(f"host exchange [{steps_of(plan, 0, core)}]")
                if isinstance(outcome, ToolResult):
                    return outcome
                call, rewritten_by = outcome
                if self.calls.closing:
                    return blocked(call, "host", "closed", "the thread was closed before the call's core began")
        except HostUnavailable as exc:
            return self._unavailable(call, exc)
        except HostLied as exc:
            return self._lied(call, exc)
        result = await self._core(tool, call)  # from here on the call has run: never reported as blocked
        if t is not None:
            t.step(f"core ({tool.origin_kind})")
        if core + 1 < len(plan):
            try:
                await self.host.ensure()  # type: ignore[union-attr]
                after = await self._exchange(call, tool, plan, core + 1, result.body(), rewritten_by)
                if t is not None:
                    t.step(f"host exchange [{steps_of(plan, core + 1, len(plan))}]")
                return after
            except (HostUnavailable, HostLied) as exc:
                if isinstance(exc, HostLied):
                    self._lied(call, exc)
                if any(step.kind == TRANSFORM for step in plan[core + 1:]):  # they cannot run: fail closed
                    return withheld(call, "host", "crash", f"the result transforms cannot run: {exc}")
        if rewritten_by:
            result.details = {**result.details, "argumentsRewrittenBy": rewritten_by}
        return result

    def call_now(self, call: ToolCall, respond: Callable[[ToolResult | None, BaseException | None], None]) \
            -> Callable[[], None] | None:
        """Begin the common call — an extension's tool, its host running, no command hook, arguments that
        match — at once, without a task of its own: its exchange goes to the host now, and ``respond``
        gets ``(result, None)`` when the host answers (in the loop turn that reads the answer), or
        ``(None, exception)``. Returns the call's canceller; None when the call needs ``call``, which
        then runs it from the start (nothing of it ran here)."""
        host = self.host
        if host is None or not host.running or self.calls.closing or tracing():
            return None  # with --log-level debug every call takes ``call``, whose steps are logged
        tool = self.registry.tools.get(call.name)
        if tool is None or tool.run is not None or self.validate(tool, call.arguments) is not None or \
                (self.command_hooks is not None and self.command_hooks.tool_calls.wants_tool(call.name)):
            return None
        return _CallNow(self, call, tool, respond).start()

    async def _host_call(self, call: ToolCall, tool: Tool, plan: list[StepPlan], body: dict[str, Any] | None = None,
                         outcome: Any = None) -> ToolResult:
        """A call of an extension's tool: one exchange with the host (``outcome``: of its first run, when
        ``call_now`` sent it), whatever the host does."""
        try:
            return await self._exchange(call, tool, plan, 0, None, [], body=body, outcome=outcome)
        except HostUnavailable as exc:
            return self._unavailable(call, exc)
        except HostLied as exc:
            return self._lied(call, exc)

    def _lied(self, call: ToolCall, exc: HostLied) -> ToolResult:
        logger.error("the extension host of %s broke the channel's rules: %s; killing it", self.thread_id, exc)
        if self.host is not None and self.host.process is not None:
            self.host.process.kill()
        return blocked(call, "host", "crash", "the extension host answered with a malformed report")

    async def _core(self, tool: Tool, call: ToolCall) -> ToolResult:
        assert tool.run is not None
        try:
            return await tool.run(call, self.catalog)
        except Exception as exc:  # noqa: BLE001 - a runner bug must still give a paired result
            logger.exception("tool %s failed unexpectedly", call.name)
            return ToolResult.error(call, f"tool '{call.name}' failed: {describe_exception(exc)}", kind="tool_error")

    def _body(self, call: ToolCall, tool: Tool, plan: list[StepPlan], start: int, end: int,
              result: dict[str, Any] | None, rewritten_by: list[str]) -> dict[str, Any]:
        """The host's ``call`` frame for ``plan[start:end]``."""
        body: dict[str, Any] = {"threadId": self.thread_id, "call": call.to_wire(), "from": start, "to": end,
                                "hookTimeout": self.registry.hook_timeout_s, "toolTimeout": tool.timeout_s}
        steps = self.registry.step_timeouts_of(plan)
        if steps is not None:
            body["stepTimeouts"] = steps
        if result is not None:
            body["result"] = result
        if rewritten_by:
            body["rewrittenBy"] = rewritten_by
        return body

    def _settled(self, call: ToolCall, tool: Tool, plan: list[StepPlan], body: dict[str, Any], outcome: Any, end: int,
                 result: dict[str, Any] | None) -> Any:
        """What the host's outcome of an exchange gives (``_exchange``), or None when a step stopped."""
        if isinstance(outcome, Answered):  # the observers started: the call is answered with their result
            report_faults(self.report_fault, outcome.faults, plan)
            if not _valid_body(outcome.result):
                raise HostLied("a malformed result")
            self.calls.enter()
            self.observers.after(outcome, body, plan, True)
            return ToolResult.from_body(call, outcome.result)
        if not isinstance(outcome, Stopped):
            return self._finish(call, tool, plan, outcome, end, result)
        return None

    async def _exchange(self, call: ToolCall, tool: Tool, plan: list[StepPlan], start: int,
                        result: dict[str, Any] | None, rewritten_by: list[str], end: int | None = None,
                        body: dict[str, Any] | None = None, outcome: Any = None) -> Any:
        """Run ``plan[start:end]`` in the host; answer for any step it did not finish.

        Returns the final ``ToolResult``, or — for the before hooks of a core that runs here
        (``end`` is the core's index) and none blocked — ``(call with its final arguments,
        rewritten_by)``. ``body`` and ``outcome``: the frame already sent and what the host made of it
        (``call_now``).
        """
        end = len(plan) if end is None else end
        assert self.host is not None
        if body is None:
            body = self._body(call, tool, plan, start, end, result, rewritten_by)
        while True:
            if outcome is None:
                if plan[start].kind == AFTER and result is not None:
                    # Only observers are left: the call is answered now; they run after, and cannot change it.
                    if rewritten_by:
                        result = {**result, "details": {**result["details"], "argumentsRewrittenBy": rewritten_by}}
                    self.observers.later({**body, "from": start, "result": result}, plan, start)
                    return ToolResult.from_body(call, result)
                outcome = await self.host.run("call", body, plan, start)
            settled = self._settled(call, tool, plan, body, outcome, end, result)
            if settled is not None:
                return settled
            report_faults(self.report_fault, outcome.faults, plan)
            step = plan[outcome.step]
            if outcome.how == "closed":
                return blocked(call, "host", "closed", "the thread was closed before the call's core began")
            if not outcome.started and outcome.how in ("timeout", "crash"):  # no step of it ran: no extension to blame
                why = (f"did not begin the call within {step.timeout * 1000:.0f} ms" if outcome.how == "timeout"
                       else "exited before the call began")
                return blocked(call, "host", outcome.how, f"the extension host {why}")
            if outcome.how == "too_large":
                return ToolResult.error(call, "the tool's result is larger than --max-result-bytes", kind="too_large")
            ext = step.extension_id or "host"
            if outcome.how == "timeout":
                what = f"did not answer within {step.timeout * 1000:.0f} ms"
            else:
                what = "was running when the extension host exited"
            if step.kind == BEFORE:
                reason = f"tool_call hook of '{ext}' {what}"
                if outcome.how == "timeout":
                    self.report_fault(HookFault(ext, BEFORE, "timeout", reason))
                return blocked(call, ext, outcome.how, reason)
            if step.kind == "core":
                kind = "timeout" if outcome.how == "timeout" else "crash"
                text = (f"tool '{call.name}' did not finish within {step.timeout * 1000:.0f} ms" if kind == "timeout"
                        else f"tool '{call.name}' was running when the extension host exited")
                current = ToolResult.error(call, text, kind=kind, extensionId=ext).body()
                resume = outcome.step + 1
            elif step.kind == TRANSFORM:
                reason = f"tool_result_transform of '{ext}' {what}"
                if outcome.how == "timeout":
                    self.report_fault(HookFault(ext, TRANSFORM, "timeout", reason))
                current = withheld(call, ext, outcome.how, reason).body()
                resume = next((i for i in range(outcome.step, end) if plan[i].kind == AFTER), end)
            else:  # an observer: the final result stands
                if outcome.how == "timeout":
                    self.report_fault(HookFault(ext, AFTER, "timeout", f"tool_result hook of '{ext}' {what}"))
                current = outcome.carry if _valid_body(outcome.carry) else (result or ToolResult.error(
                    call, "the result was lost with the extension host", kind="crash").body())
                resume = outcome.step + 1
            if rewritten_by and step.kind != TRANSFORM:
                current = {**current, "details": {**current["details"], "argumentsRewrittenBy": rewritten_by}}
            if outcome.how == "crash" or resume >= end:
                return ToolResult.from_body(call, current)
            await self.host.ensure()
            start, result, outcome = resume, current, None
            body.update({"from": start, "result": current})

    def _finish(self, call: ToolCall, tool: Tool, plan: list[StepPlan], report: Any, end: int,
                result: dict[str, Any] | None = None) -> Any:
        if type(report) is not dict:
            raise HostLied("a report is an object")
        if report.get("tooLarge"):
            return ToolResult.error(call, "the tool's result is larger than --max-result-bytes", kind="too_large")
        report_faults(self.report_fault, report.get("faults"), plan)
        rewritten_by = report.get("rewrittenBy", [])
        if type(rewritten_by) is not list or not all(e in self.registry.handlers.get(BEFORE, ()) for e in rewritten_by):
            raise HostLied("'rewrittenBy' names no before hook")
        if "result" not in report and report.get("carried") is True and result is not None:
            report["result"] = result  # the result this exchange was given, unchanged
        if "result" in report:
            if not _valid_body(report["result"]):
                raise HostLied("a malformed result")
            return ToolResult.from_body(call, report["result"])
        if end == len(plan):
            raise HostLied("no result")
        if "arguments" in report:
            arguments = report["arguments"]
            if type(arguments) is not dict:
                raise HostLied("'arguments' must be an object")
            problem = self.validate(tool, arguments)
            if problem is not None:  # the host's own check said yes: it did not keep the rules
                raise HostLied(f"rewritten arguments that do not match the schema: {problem}")
            call = ToolCall(call.id, call.name, arguments)
        return call, rewritten_by


class _CallNow:
    """A call ``Pipeline.call_now`` began without a task: it waits for its exchange's outcome in a
    callback. An outcome with a result (the common one) answers it there; after a step stopped, a
    task takes the call on from that outcome (``Pipeline._host_call``)."""

    __slots__ = ("pipeline", "call", "tool", "plan", "respond", "body", "pending", "task", "over")

    def __init__(self, pipeline: Pipeline, call: ToolCall, tool: Tool,
                 respond: Callable[[ToolResult | None, BaseException | None], None]) -> None:
        self.pipeline, self.call, self.tool, self.respond = pipeline, call, tool, respond
        self.plan, _ = pipeline.registry.plan(tool)
        self.task: asyncio.Task | None = None
        self.over = False

    def start(self) -> Callable[[], None]:
        pipeline = self.pipeline
        host = pipeline.host
        assert host is not None
        self.body = pipeline._body(self.call, self.tool, self.plan, 0, len(self.plan), None, [])
        pipeline.calls.enter()
        try:
            self.pending = host.exchange("call", self.body, self.plan, 0)
        except BaseException:
            pipeline.calls.leave()
            raise
        self.pending.future.add_done_callback(self._outcome)
        return self.cancel

    def _outcome(self, future: asyncio.Future) -> None:
        if self.over:
            return
        if future.cancelled():  # never, but never unanswered either
            self.cancel()
            return
        try:
            outcome = future.result()
            try:
                result = self.pipeline._settled(self.call, self.tool, self.plan, self.body, outcome, len(self.plan),
                                                None)
            except HostLied as exc:
                result = self.pipeline._lied(self.call, exc)
            if result is None:  # a step stopped: the rest takes a task
                self.task = asyncio.ensure_future(self.pipeline._host_call(self.call, self.tool, self.plan, self.body,
                                                                           outcome))
                self.task.add_done_callback(self._ended)
                return
        except Exception as exc:  # noqa: BLE001 - answered as the endpoint answers a handler's failure
            self._end(None, exc)
            return
        self._end(result, None)

    def _ended(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        error = task.exception()  # retrieved even when the call was answered cancelled meanwhile
        if not self.over:
            self._end(None if error is not None else task.result(), error)

    def cancel(self) -> None:
        """``$/cancelRequest`` (or ``exit``): the host stops the call; it is answered cancelled."""
        if self.over:
            return
        if self.task is not None:
            self.task.cancel()
        elif self.pipeline.host is not None:
            self.pipeline.host.cancel(self.pending)
        self._end(None, asyncio.CancelledError())

    def _end(self, result: ToolResult | None, error: BaseException | None) -> None:
        self.over = True
        self.pipeline.calls.leave()
        respond, self.respond = self.respond, _answered_already  # no cycle left for the collector
        respond(result, error)


def _answered_already(result: ToolResult | None, error: BaseException | None) -> None:
    pass
