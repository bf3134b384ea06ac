"""``commands/list``, ``commands/run``, ``input/submit`` and ``loop/event``: what the user runs or
types, and the boundaries of the editor's loop.

Given the open threads, the ``Editor`` and the extension hosts (commands and ``input`` handlers run in
a thread's host; its command hooks through ``thread.hooks``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness_sidecar.threads import typed_input as C
from harness_sidecar.base.errors import DomainError
from harness_sidecar.hooks.python import INPUT
from harness_sidecar.resources import command_templates
from harness_sidecar.resources.templates import render
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.extensions import ExtensionHosts
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads.thread import Thread
from harness_sidecar.tools.registry import arguments_problem
from harness_sidecar.wire import params as P


class CommandMethods:
    """The commands of a thread's extensions, its input and its loop events."""

    def __init__(self, open_threads: OpenThreads, editor: Editor, hosts: ExtensionHosts) -> None:
        self.open = open_threads
        self.editor = editor
        self.hosts = hosts

    async def commands_list(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        return {"commands": [c.to_wire() for c in thread.commands.values()]}

    @staticmethod
    def _refuse_if_failed(thread: Thread) -> None:
        """A failed thread (3 host exits in 5 minutes) runs nothing: commands and input are refused."""
        if thread.host is not None and thread.host.failed:
            raise DomainError("extension_failed", f"the thread's extensions failed ({thread.host.failure}): "
                                                  f"nothing of this thread runs", threadId=thread.id)

    async def commands_run(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        request = P.parse_commands_run(params)
        self._refuse_if_failed(thread)
        if request.text is None:
            return await self._run_command(thread, request.name, request.arguments)
        command = thread.commands.get(request.name)
        arguments = {"text": request.text.strip()} if command is not None and command.raw_arguments else \
            C.parse_arguments(request.text) if command is not None else {}
        return await self._run_command(thread, request.name, arguments)

    async def loop_event(self, params: dict[str, Any]) -> dict[str, Any]:
        """``loop/event``: the command hooks' and the extensions' verdicts on a boundary of the editor's
        loop, run side by side and merged once (hooks first, then extensions: declaration order)."""
        from harness_sidecar.hooks import loop
        from harness_sidecar.hooks.boundaries import run_event_hooks
        from harness_sidecar.hooks.decision import merge

        thread = await self.open.get(params)
        request = P.parse_loop_event(params)
        hooks, extensions = await asyncio.gather(
            run_event_hooks(request.event, request.payload, thread.hooks),
            self._extension_verdicts(thread, request.event, request.payload))
        from harness_sidecar.hooks import fit

        verdicts = [*hooks, *extensions]
        answer = loop.answered(request.event, verdicts, loop.result(request.event, merge(verdicts)))
        return fit.fit_answer(answer,
                              ("additionalContext", "systemMessages"), self.editor.max_result_bytes, self.editor.diagnostic,
                              thread.id, f"loop/event {request.event}")

    async def _run_command(self, thread: Thread, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from harness_sidecar.extensions.sidecar.handlers import run_command
        from harness_sidecar.extensions.sidecar.steps import HostLied, HostUnavailable

        command = thread.commands.get(name)
        if command is None:
            raise DomainError("command_not_found", f"no command named '{name}' in this thread", name=name)
        problem = arguments_problem(command, arguments)
        if problem is not None:
            raise DomainError("invalid_arguments", f"the arguments of command '{name}' do not match its "
                                                   f"inputSchema: {problem[0]} (at {problem[1]})",
                              name=name, path=problem[1])
        error = None
        timeout_ms = min(command.timeout_ms, thread.limits.max_handler_timeout_ms) if command.timeout_ms else \
            thread.limits.command_timeout_ms
        try:
            await thread.host.ensure()
            return await run_command(thread.host, command.extension_id, name, arguments, timeout_ms / 1000)
        except HostUnavailable as exc:
            error = f"the thread's extensions cannot run: {exc}"
        except HostLied as exc:
            self.hosts.host_lied(thread, exc)
            error = "the extension host answered with a malformed report"
        return {"content": [{"type": "text", "text": error}], "details": {"kind": "crash",
                "extensionId": command.extension_id}, "isError": True}

    async def input_submit(self, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self._input_submit(params)
        if "hookContext" in answer:  # UserPromptSubmit context, cut to fit beside the message (hooks.fit)
            from harness_sidecar.hooks import fit

            answer = fit.fit_answer(answer, ("hookContext",), self.editor.max_result_bytes, self.editor.diagnostic,
                                    P.thread_id(params), "input/submit")
            if not answer["hookContext"]:  # no room beside the message even for a mark: left out, and said
                del answer["hookContext"]
        return answer

    async def _input_submit(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        request = P.parse_input_submit(params)
        self._refuse_if_failed(thread)
        text = request.text
        hook_context = await self._prompt_hooks(thread, text)
        if thread.handlers(INPUT):
            from harness_sidecar.extensions.sidecar.handlers import run_event
            from harness_sidecar.extensions.sidecar.steps import HostLied, HostUnavailable

            try:
                await thread.host.ensure()
                outcome = await run_event(thread.host, thread.handlers(INPUT), INPUT,
                                          {"threadId": thread.id, "text": text}, thread.registry.hook_timeout_s,
                                          self.hosts.reporter(thread.id), thread.timeouts(INPUT))
            except HostUnavailable as exc:
                raise DomainError("input_blocked", f"the thread's input handlers cannot run: {exc}",
                                  extensionId="host") from None
            except HostLied as exc:
                self.hosts.host_lied(thread, exc)
                raise DomainError("input_blocked", "the extension host answered with a malformed report",
                                  extensionId="host") from None
            if outcome.blocked is not None:
                raise DomainError("input_blocked", f"the input was stopped: {outcome.blocked['message']}",
                                  extensionId=outcome.blocked["extensionId"])
            if outcome.handled is not None:
                by = {"kind": "extension", "id": outcome.handled["extensionId"]}
                answer = {"action": "handled", "by": by}
                if "reason" in outcome.handled:
                    answer["reason"] = outcome.handled["reason"]
                return answer
            text = outcome.text if outcome.text is not None else text
        slash = command_templates.parse_slash(text)
        if slash is not None and slash[0] in thread.catalog.plugins.command_templates:
            name, rest = slash
            template = thread.catalog.plugins.command_templates[name]
            expanded = await self._expansion_hooks(thread, template, name, rest, text)
            message, diagnostics = command_templates.render(template, rest, thread.limits)
            answer: dict[str, Any] = {"action": "send", "message": message}
            context = hook_context.get("hookContext", []) + expanded
            if context:
                answer["hookContext"] = context
            if diagnostics:
                answer["diagnostics"] = [d.to_wire() for d in diagnostics]
            return answer
        slash = C.parse_slash(text)
        if slash is not None:
            name, rest = slash
            if name in thread.catalog.templates:
                message = render(thread.catalog, name, C.parse_arguments(rest), thread.limits)
                return {"action": "send", "message": message, **hook_context}
            command = thread.commands.get(name)
            if command is not None:
                arguments = {"text": rest.strip()} if command.raw_arguments else C.parse_arguments(rest)
                result = await self._run_command(thread, name, arguments)
                return {"action": "handled", "by": {"kind": "command", "id": name,
                                                    "extensionId": command.extension_id}, "result": result}
        return {"action": "send", "message": {"role": "user", "content": text}, **hook_context}

    async def _expansion_hooks(self, thread: Thread, template: Any, name: str, rest: str, text: str) -> list[str]:
        """UserPromptExpansion command hooks at a command template's expansion (protocol-v4 §3): a block is
        ``input_blocked``; their context goes with the answer."""
        if thread.hooks is None or not thread.hooks.matching("UserPromptExpansion", name):
            return []
        origin = template.origin.get("kind") if isinstance(template.origin, dict) else None
        decision = await thread.hooks.prompt_expansion(name, rest.strip(), text,
                                                       "plugin" if origin == "plugin" else "project")
        if decision.outcome != "allow":
            raise DomainError("input_blocked", f"the command /{name} was stopped by hook {', '.join(decision.by)}: "
                                               f"{decision.reason or 'blocked'}", by=decision.by,
                              blockedKind=decision.kind or "hook",
                              **({"stopTurn": decision.stop_turn} if decision.stop_turn is not None else {}))
        return decision.context

    async def _prompt_hooks(self, thread: Thread, text: str) -> dict[str, Any]:
        """UserPromptSubmit command hooks: a block is ``input_blocked``; their context goes with the answer."""
        if thread.hooks is None or not thread.hooks.matching("UserPromptSubmit", None):
            return {}
        decision = await thread.hooks.prompt(text)
        if decision.outcome != "allow":
            raise DomainError("input_blocked", f"the input was stopped by hook {', '.join(decision.by)}: "
                                               f"{decision.reason or 'blocked'}", by=decision.by,
                              blockedKind=decision.kind or "hook",
                              **({"stopTurn": decision.stop_turn} if decision.stop_turn is not None else {}))
        return {"hookContext": decision.context} if decision.context else {}

    async def _extension_verdicts(self, thread: Thread, event: str, payload: dict[str, Any]) -> list[Any]:
        """Run the thread's ``event`` handlers in its extension host (load order); their verdicts.

        A handler gets ``{threadId, event, ...payload}``. A handler that raises, times out (its own
        ``timeout_ms`` or ``limits.hookTimeoutMs``) or returns something else is a ``thread/diagnostic``
        fault; on the events in ``FAIL_CLOSED`` it also blocks. When the host cannot run at all, each
        handler of such an event blocks, naming why.
        """
        handlers = thread.handlers(event)
        if not handlers:
            return []
        from harness_sidecar.extensions.sidecar.handlers import run_event  # extension machinery: when a handler runs
        from harness_sidecar.extensions.sidecar.steps import HostLied, HostUnavailable
        from harness_sidecar.hooks.decision import Verdict
        from harness_sidecar.hooks.loop import FAIL_CLOSED

        try:
            await thread.host.ensure()
            outcome = await run_event(thread.host, handlers, event, {"threadId": thread.id, "event": event, **payload},
                                      thread.registry.hook_timeout_s, self.hosts.reporter(thread.id),
                                      thread.timeouts(event))
        except HostUnavailable as exc:
            why = f"the thread's extensions cannot run: {exc}"
        except HostLied as exc:
            self.hosts.host_lied(thread, exc)
            why = "the extension host answered with a malformed report"
        else:
            return outcome.verdicts
        if event not in FAIL_CLOSED:
            return []
        return [Verdict(f"extension:{ext}", failure=why) for ext in dict.fromkeys(handlers)]
