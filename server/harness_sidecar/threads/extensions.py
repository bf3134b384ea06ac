"""The threads' extension hosts, from the sidecar's side: the trusted extensions loaded into a thread's
host, its lifecycle handlers and its faults; the spare hosts that make the first start quick.

Given the ``Editor`` (what hosts ask and tell the user goes through it); knows no other part of
``Sidecar``. The host process itself is ``extensions.host``; its supervisor ``extensions.sidecar``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from harness_sidecar.extensions import channel
from harness_sidecar.hooks.stages import AFTER, BEFORE, TRANSFORM
from harness_sidecar.threads import sessions
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.thread import Command, Thread
from harness_sidecar.tools.registry import Tool, claimant, foreign_schemas
from harness_sidecar.wire import params as P

if TYPE_CHECKING:
    from harness_sidecar.hooks.python import HookFault

# The lines it logs on stderr name harness_sidecar.threads.sidecar, whichever piece of Sidecar logs them.
logger = logging.getLogger("harness_sidecar.threads.sidecar")


def command_listing(thread: Thread) -> list[dict[str, Any]]:
    """``ctx.commands.list()`` (Pi's ``pi.getCommands()``): what the user of the thread can run or choose —
    its extensions' commands (``/name``), its templates (``/name``, Pi's prompts) and its skills — each
    ``{name, description, source: "extension" | "template" | "skill", extensionId? | path?}``."""
    out: list[dict[str, Any]] = [{"name": c.name, "description": c.description, "source": "extension",
                                  "extensionId": c.extension_id} for c in thread.commands.values()]
    out += [{"name": t.name, "description": t.description or "", "source": "template", "path": t.source}
            for t in thread.catalog.templates.values()]
    out += [{"name": s.name, "description": s.description, "source": "skill", "path": s.source}
            for s in thread.catalog.skills.values()]
    return out


class ExtensionHosts:
    """Trusted extensions, loaded into the thread's own host process (the sidecar never runs their code)."""

    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self._spares: Any = None  # extensions.sidecar.process.Spares, made when first needed

    def reporter(self, thread_id: str) -> Callable[[HookFault], None]:
        """A thread's handler faults, each a ``thread/diagnostic``."""
        def report(fault: HookFault) -> None:
            self.editor.diagnostic(fault.to_wire(thread_id))
        return report

    async def lifecycle(self, thread: Thread, event: str, payload: dict[str, Any]) -> None:
        """``thread_start``/``thread_close`` handlers: faults are diagnostics, nothing else changes."""
        from harness_sidecar.extensions.sidecar.handlers import run_event
        from harness_sidecar.extensions.sidecar.steps import HostLied, HostUnavailable

        try:
            await thread.host.ensure()
            await run_event(thread.host, thread.handlers(event), event, payload, thread.registry.hook_timeout_s,
                            self.reporter(thread.id), thread.timeouts(event))
        except HostUnavailable:
            pass
        except HostLied as exc:
            self.host_lied(thread, exc)

    def host_lied(self, thread: Thread, exc: Exception) -> None:
        logger.error("the extension host of %s broke the channel's rules: %s; killing it", thread.id, exc)
        if thread.host is not None and thread.host.process is not None:
            thread.host.process.kill()

    def close(self) -> None:
        """At shutdown: the spare host goes too."""
        if self._spares is not None:
            self._spares.close()

    def spares(self) -> Any:
        if self._spares is None:
            from harness_sidecar.extensions.sidecar.process import Spares

            self._spares = Spares()
        return self._spares

    def warm(self) -> None:
        """Start a spare extension host now, so that the first thread trusting an extension need not wait."""
        self.spares().warm()

    async def load(self, thread: Thread, found: dict[str, Any]) -> None:
        """Start the thread's host, load the trusted extensions into it, commit what can be committed."""
        from harness_sidecar.base import inputschema
        from harness_sidecar.extensions.sidecar.loading import load_trusted
        from harness_sidecar.extensions.sidecar.supervisor import ExtensionHost
        from harness_sidecar.threads import model_tools

        start, limits, registry = thread.start, thread.limits, thread.registry
        trusted = {t.id for t in start.trusted_extensions}
        init = {"threadId": thread.id, "cwd": start.cwd, "roots": list(start.roots),
                "ui": {k: True for k in (*P.UI_KEYS, "sendMessage", "draft", "compact", "model", "progress") if self.editor.capable(k)},
                "conversation": self.editor.conversation, "sampling": self.editor.sampling,
                "settings": {k: v for k, v in start.extension_settings.items() if k in trusted},
                "memoryMb": limits.host_memory_mb, "maxResultBytes": self.editor.max_result_bytes,
                "maxTools": limits.max_tools, "stateBytes": limits.extension_state_bytes,
                "states": {k: v for k, v in thread.states.items() if k in trusted}}

        async def ask(method: str, params: dict[str, Any], timeout_s: float) -> Any:
            if method in model_tools.HOST_METHODS:  # ctx.tools: answered from the thread, not the editor
                return model_tools.answer_host(thread, method, params, self.editor.notify)
            if method == channel.COMMANDS_LIST:  # ctx.commands.list(): the thread's, not the editor's
                return {"commands": command_listing(thread)}
            return await self.editor.ask(method, params, timeout_s)

        host = ExtensionHost(thread.id, self.spares(), init, limits.host_grace_ms / 1000,
                             on_diagnostic=self.editor.diagnostic, ask=ask,
                             notify=self.editor.ui_notify, ui_timeout_s=limits.ui_timeout_ms / 1000)
        host.on_state = lambda extension_id, value: sessions.state_set(thread, extension_id, value)

        def claimed(name: str) -> str | None:
            tool = registry.tools.get(name)
            return None if tool is None else claimant(tool)

        compiled: dict[int, Any] = {}

        def check_schema(schema: dict[str, Any]) -> str | None:
            try:
                compiled[id(schema)] = inputschema.compile(schema)
            except inputschema.InvalidSchema as exc:
                return str(exc)
            return None

        registrations = await load_trusted(found, start.trusted_extensions, host, claimed, limits,
                                           thread.catalog.diagnostics, check_schema)
        if not registrations.loaded:
            await host.close()
            return
        timeout_s = limits.tool_timeout_ms / 1000
        for spec in registrations.tools:
            registry.tools[spec.name] = Tool(spec.name, spec.description, spec.input_schema, "extension",
                                             spec.extension_id, timeout_s=timeout_s,
                                             validator=compiled.get(id(spec.input_schema)),
                                             source=thread.catalog.plugins.extension_source(found.get(
                                                 spec.extension_id)))
        for spec in registrations.commands:
            thread.commands[spec.name] = Command(spec.name, spec.description, spec.extension_id, spec.input_schema,
                                                 compiled.get(id(spec.input_schema)), spec.raw_arguments,
                                                 spec.timeout_ms)
        registry.handlers = registrations.handlers
        thread.handler_timeouts = registrations.handler_timeouts
        host.set_schemas(foreign_schemas(registry))
        thread.host = host
        registry.step_timeouts = {event: thread.timeouts(event) for event in (BEFORE, TRANSFORM, AFTER)
                                  if any(registrations.handler_timeouts.get(event, []))}
