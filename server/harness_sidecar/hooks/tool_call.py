"""A thread's command hooks around a ``tools/call`` (protocol-v3 §5, protocol-v4 §3): PreToolUse before
the call (its merged decision acts as one before hook, before the extensions' before hooks; ``ask`` is
one ``ui/confirm``), PostToolUse after the core and the transforms, PostToolUseFailure after a core
that failed, and what they say joined to the result, cut to fit ``--max-result-bytes`` (``hooks.fit``).

``ToolCallHooks`` owns those steps and the calls still deciding (``deciding``, ``closing``: what
``thread/close`` stops). It may not read the thread's declarations or start handlers itself: it is
given ``hooks.boundaries.ThreadHooks``' ``matching`` and ``run``, and the thread's notify and ask.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from harness_sidecar.hooks import fit
from harness_sidecar.hooks.declared import Handler
from harness_sidecar.hooks.decision import ALLOW, ASK, BLOCKED, Decision, Verdict, merge
from harness_sidecar.hooks.vocabulary import Vocabulary
from harness_sidecar.base.results import ToolCall, ToolResult, blocked


@dataclass
class ToolCallHooks:
    """The command hooks of one thread's tool calls."""

    thread_id: str
    vocabulary: Vocabulary  # the tool vocabulary hooks were written for (``hookAs``)
    matching: Callable[..., list[Handler]]  # ThreadHooks.matching
    run: Callable[..., Awaitable[list[Verdict]]]  # ThreadHooks.run
    notify: Callable[[dict[str, Any]], None]  # a thread/diagnostic
    ask: Callable[[str, dict[str, Any], float], Awaitable[Any]] | None  # Sidecar._ask
    ui_timeout_s: float
    max_result_bytes: int  # --max-result-bytes: what hooks add is cut to fit it
    deciding: set[asyncio.Task] = field(default_factory=set)  # PreToolUse runs of calls whose core has not begun
    closing: bool = False  # thread/close: calls still deciding are answered blocked "closed"

    def wants_tool(self, name: str) -> bool:
        name = self.vocabulary.hook_name(name)
        return bool(self.matching("PreToolUse", name) or self.matching("PostToolUse", name)
                    or self.matching("PostToolUseFailure", name))

    async def around_tool(self, call: ToolCall, tool: Any, validate: Callable[[Any, dict[str, Any]], Any],
                          proceed: Callable[[ToolCall], Awaitable[ToolResult]]) -> ToolResult:
        """PreToolUse → ``proceed`` (the extensions' hooks, the core, the transforms) → PostToolUse.

        The hooks see the call in their vocabulary (``hookAs``: name and fields); what they rewrite is
        mapped back to ours before it is validated."""
        words = self.vocabulary
        hook_name, hook_input = words.hook_name(call.name), words.hook_input(call.name, call.arguments)
        pre = self.matching("PreToolUse", hook_name, hook_input)
        extra: dict[str, Any] = {}
        context: list[str] = []
        messages: list[str] = []
        if pre:
            if self.closing:
                return blocked(call, "host", "closed", "the thread was closed before the call began")
            # The hooks run in the call's own task (a task of their own costs two loop turns per call):
            # thread/close cancels it while it is here, and the cancel is taken back once answered.
            deciding = asyncio.current_task()
            assert deciding is not None
            self.deciding.add(deciding)
            try:
                verdicts = await self.run("PreToolUse", pre, {
                    "tool_name": hook_name, "tool_input": hook_input, "tool_use_id": str(call.id)})
            except asyncio.CancelledError:
                if not self.closing:
                    raise  # the call itself was cancelled ($/cancelRequest)
                deciding.uncancel()
                return blocked(call, "host", "closed", "the thread was closed while its PreToolUse hooks decided "
                                                       "(they were stopped)")
            finally:
                self.deciding.discard(deciding)
            decision = merge(verdicts)
            if decision.outcome == ASK:
                decision = await self._confirm(call, decision)
            if decision.outcome == BLOCKED:
                return self._blocked(call, decision)
            updated = None if decision.updated_input is None else words.our_input(call.name, decision.updated_input)
            if updated is not None and updated != call.arguments:
                problem = validate(tool, updated)
                if problem is not None:
                    decision.outcome, decision.kind, decision.by = BLOCKED, "hook", decision.rewritten_by
                    decision.reason = (f"the input the hook rewrote does not match the tool's inputSchema: "
                                       f"{problem[0]} (at {problem[1]})")
                    return self._blocked(call, decision)
                call = ToolCall(call.id, call.name, updated)
                hook_input = words.hook_input(call.name, call.arguments)
                extra["hookRewrittenBy"] = decision.rewritten_by
            context, messages = decision.context, decision.system_messages
            if decision.stop_turn is not None:
                extra["stopTurn"] = decision.stop_turn
        result = await proceed(call)
        post = self.matching("PostToolUse", hook_name, hook_input)
        feedback: list[tuple[str, str, str]] = []  # (source, kind, text)
        verdicts = []
        if post:
            verdicts = await self.run("PostToolUse", post, {
                "tool_name": hook_name, "tool_input": hook_input, "tool_use_id": str(call.id),
                "tool_response": result.to_wire()})
        # PostToolUseFailure (protocol-v4 §3): after a core that failed — an error result no hook or policy blocked
        failed = self.matching("PostToolUseFailure", hook_name, hook_input) \
            if result.is_error and "blocked" not in result.details else []
        if failed:
            verdicts += await self.run("PostToolUseFailure", failed, {
                "tool_name": hook_name, "tool_input": hook_input, "tool_use_id": str(call.id),
                "error": _error_text(result), "is_interrupt": False})
        stopping = [v for v in verdicts if v.stop_reason is not None]
        if stopping and "stopTurn" not in extra:
            extra["stopTurn"] = {"reason": "; ".join(v.stop_reason for v in stopping if v.stop_reason)
                                 or "a hook stopped the turn", "by": list(dict.fromkeys(v.source for v in stopping))}
        if verdicts:
            for v in verdicts:
                for kind, text in ([("block", v.feedback)] if v.feedback else []) + [("context", c) for c in v.context]:
                    feedback.append((v.source, kind, text))
        if not (context or messages or feedback):
            if extra:
                result.details = {**result.details, **extra}
            return result
        return self._with_hook_text(call, result, extra, context, messages, feedback)

    def _with_hook_text(self, call: ToolCall, result: ToolResult, extra: dict[str, Any], context: list[str],
                        messages: list[str], feedback: list[tuple[str, str, str]]) -> ToolResult:
        """``result`` with what the hooks said: ``details.hookContext``/``hookMessages``, and PostToolUse
        feedback as text items and ``details.hookFeedback`` — every text cut to fit ``--max-result-bytes``
        around the result the call made (``hooks.fit``), which is never lost for them."""

        def made(texts: list[str]) -> ToolResult:
            n, m = len(context), len(messages)
            said_context, said_messages, said_feedback = texts[:n], texts[n:n + m], texts[n + m:]
            details = {**result.details, **extra}
            if said_context:
                details["hookContext"] = said_context
            if said_messages:
                details["hookMessages"] = said_messages
            content = result.content
            if feedback:
                items = [{"source": source, "kind": kind, "text": text}
                         for (source, kind, _), text in zip(feedback, said_feedback)]
                content = [*content, *({"type": "text", "text": f"[hook {f['source']}] {f['text']}"} for f in items)]
                details["hookFeedback"] = items
            return ToolResult(result.tool_call_id, result.tool_name, content, details, result.is_error)

        texts = [*context, *messages, *(text for _, _, text in feedback)]
        weights = [1] * (len(context) + len(messages)) + [2] * len(feedback)  # feedback: an item and an entry
        fitted = self._fit(texts, weights, lambda: fit.json_size({"result": made([""] * len(texts)).to_wire()}),
                           f"tools/call {call.id!r}")
        if fitted.dropped:  # the result alone fills the answer: it is kept, the hooks' say is left out
            if extra:
                result.details = {**result.details, **extra}
            return result
        return made(fitted.texts)

    def _fit(self, texts: list[str], weights: list[int], size_without: Callable[[], int], where: str) -> fit.Fitted:
        """``texts`` cut to fit this thread's ``--max-result-bytes`` beside what the answer is without them
        (``size_without``); one ``hook_text_truncated`` when any is cut."""
        return fit.fit_and_say(texts, weights, self.max_result_bytes, size_without, self.notify, self.thread_id, where)

    def _blocked(self, call: ToolCall, decision: Decision) -> ToolResult:
        result = _blocked(call, decision)
        context = result.details.pop("hookContext", None) or []
        if not (context or decision.system_messages):
            return result
        return self._with_hook_text(call, result, {}, context, decision.system_messages, [])

    async def _confirm(self, call: ToolCall, decision: Decision) -> Decision:
        """``ask``: one ``ui/confirm`` naming the hooks; no UI, no answer or a no = blocked."""
        names = ", ".join(decision.by)
        why = decision.reason or "a hook asks before this call"
        confirmed, said = False, "the user did not confirm"
        if self.ask is None:
            said = "no editor UI can ask the user"
        else:
            try:
                answer = await self.ask("ui/confirm", {
                    "threadId": self.thread_id, "extensionId": decision.by[0], "title": f"Allow {call.name}?",
                    "message": f"Hook {names} asks: {why}", "callId": call.id, "tool": call.name,
                    "arguments": call.arguments}, self.ui_timeout_s)
                confirmed = isinstance(answer, dict) and answer.get("confirmed") is True
            except Exception as exc:  # noqa: BLE001 - no capability, no answer, an error: all mean no
                said = f"the user could not be asked ({type(exc).__name__})"
        if confirmed:
            return Decision(ALLOW, context=decision.context, system_messages=decision.system_messages,
                            allowed_by=decision.by)
        return Decision(BLOCKED, "hook", f"{said}: {why}", decision.by, context=decision.context,
                        system_messages=decision.system_messages)



def _blocked(call: ToolCall, decision: Decision) -> ToolResult:
    names = ", ".join(decision.by)
    details: dict[str, Any] = {"blocked": decision.blocked_to_wire()}
    if decision.stop_turn is not None:
        details["stopTurn"] = decision.stop_turn
    if decision.context:
        details["hookContext"] = decision.context
    return ToolResult.error(call, f"blocked by hook {names}: {decision.reason}", **details)


def _error_text(result: ToolResult) -> str:
    """A failed result's text, as PostToolUseFailure's ``error``."""
    text = "\n".join(c.get("text", "") for c in result.content if isinstance(c, dict) and c.get("type") == "text")
    return text or "the tool failed"
