"""The thread's extension host: the trusted extensions loaded into it, its lifecycle handlers and
its faults; the spare hosts that make the first start quick.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from harness_sidecar.hooks.python import AFTER, BEFORE, TRANSFORM, HookFault
from harness_sidecar.methods.commands import Command
from harness_sidecar.methods.tools import claimant
from harness_sidecar.tools import Tool
from harness_sidecar.wire import params as P

if TYPE_CHECKING:
    from harness_sidecar.methods.thread import Thread

# The lines it logs on stderr name harness_sidecar.threads, whichever piece of Sidecar logs them.
logger = logging.getLogger("harness_sidecar.threads")


class ExtensionLoading:
    """Trusted extensions, loaded into the thread's own host process (the sidecar never runs their code)."""

    def _reporter(self, thread_id: str) -> Callable[[HookFault], None]:
        def report(fault: HookFault) -> None:
            self.peer.notify("thread/diagnostic", fault.to_wire(thread_id))
        return report

    async def _lifecycle(self, thread: Thread, event: str, payload: dict[str, Any]) -> None:
        """``thread_start``/``thread_close`` handlers: faults are diagnostics, nothing else changes."""
        from harness_sidecar.extensions.handlers import run_event
        from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

        try:
            await thread.host.ensure()
            await run_event(thread.host, thread.handlers(event), event, payload, thread.registry.hook_timeout_s,
                            self._reporter(thread.id), thread.timeouts(event))
        except HostUnavailable:
            pass
        except HostLied as exc:
            self._host_lied(thread, exc)

    def _host_lied(self, thread: Thread, exc: Exception) -> None:
        logger.error("the extension host of %s broke the channel's rules: %s; killing it", thread.id, exc)
        if thread.host is not None and thread.host.process is not None:
            thread.host.process.kill()

    def spares(self) -> Any:
        if self._spares is None:
            from harness_sidecar.extensions.supervisor import Spares

            self._spares = Spares()
        return self._spares

    def warm(self) -> None:
        """Start a spare extension host now, so that the first thread trusting an extension need not wait."""
        self.spares().warm()

    async def _load_extensions(self, thread: Thread, found: dict[str, Any]) -> None:
        """Start the thread's host, load the trusted extensions into it, commit what can be committed."""
        from harness_sidecar import inputschema
        from harness_sidecar.extensions.loading import load_trusted
        from harness_sidecar.extensions.supervisor import ExtensionHost

        start, limits, registry = thread.start, thread.limits, thread.registry
        trusted = {t.id for t in start.trusted_extensions}
        init = {"threadId": thread.id, "cwd": start.cwd, "roots": list(start.roots),
                "ui": {k: True for k in (*P.UI_KEYS, "sendMessage") if self._ui(k)},
                "settings": {k: v for k, v in start.extension_settings.items() if k in trusted},
                "memoryMb": limits.host_memory_mb, "maxResultBytes": self.max_result_bytes,
                "maxTools": limits.max_tools, "stateBytes": limits.extension_state_bytes,
                "states": {k: v for k, v in thread.states.items() if k in trusted}}
        host = ExtensionHost(thread.id, self.spares(), init, limits.host_grace_ms / 1000,
                             on_diagnostic=lambda params: self.peer.notify("thread/diagnostic", params),
                             ask=self._ask, notify=self._ui_notify, ui_timeout_s=limits.ui_timeout_ms / 1000)
        host.on_state = lambda extension_id, value: self._state_set(thread, extension_id, value)

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
        host.set_schemas(self._foreign_schemas(registry))
        thread.host = host
        registry.step_timeouts = {event: thread.timeouts(event) for event in (BEFORE, TRANSFORM, AFTER)
                                  if any(registrations.handler_timeouts.get(event, []))}
