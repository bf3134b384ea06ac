"""``thread/start`` and ``thread/close``: a thread's catalog, MCP servers, command hooks and extension
host, started together and ended together. ``Thread`` is what a thread holds.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.errors import DomainError
from harness_sidecar.hooks.python import THREAD_CLOSE, THREAD_START
from harness_sidecar.limits import SIDECAR, Limits
from harness_sidecar.methods.commands import Command
from harness_sidecar.methods.tools import LOAD_SKILL_ARGUMENTS, LOAD_SKILL_SCHEMA
from harness_sidecar.resources.activation import ActivatedSkill
from harness_sidecar.resources import plugins
from harness_sidecar.resources.catalog import Catalog, Diagnostic, build_catalog
from harness_sidecar.resources.context import left_out_of_listing
from harness_sidecar.stderr import SINK
from harness_sidecar.tools import Calls, Tool, ToolRegistry
from harness_sidecar.wire import params as P


@dataclass
class Thread:
    id: str
    start: P.ThreadStartParams
    catalog: Catalog
    limits: Limits
    registry: ToolRegistry
    extensions: list[Any] = field(default_factory=list)  # ExtensionSource, in catalog order
    activated: dict[str, ActivatedSkill] = field(default_factory=dict)
    host: Any = None  # extensions.supervisor.ExtensionHost, when the thread trusts an extension that loaded
    commands: dict[str, Command] = field(default_factory=dict)
    pipeline: Any = None  # tools.Pipeline of the current revision: the one path of the thread's tool calls
    revision: int = 1
    tool_changed_at: dict[str, int] = field(default_factory=dict)  # tool name → revision it last changed in
    watch: Any = None  # resources.watch.WatchHandle while the roots are watched
    rescanning: Any = None  # asyncio.Lock: one rescan at a time
    rescan_again: bool = False
    reported_changes: dict[str, str] = field(default_factory=dict)  # extension id → sha256 reported as changed
    closed: bool = False
    mcp: Any = None  # mcp.McpServers, when the thread names MCP servers
    handler_timeouts: dict[str, list[int | None]] = field(default_factory=dict)  # event → each handler's own ms
    hooks: Any = None  # hooks.boundaries.ThreadHooks, when a root declares command hooks (protocol-v3 §5)
    hooks_pending: Any = None  # a changed declaration, applied at the next thread/refresh
    # what SessionStart hooks said at thread/start, (source, text) in declaration order: a section of every
    # context/build's system prompt for the thread's life (protocol-v4 §2)
    session_context: list[tuple[str, str]] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)  # tool calls in flight: thread/close lets started ones finish
    read_at_ns: int | None = None  # time.time_ns() before the roots were first read: the watch catches up from it
    reported_ambiguous: set[str] = field(default_factory=set)  # trust_ambiguous messages already sent

    def handlers(self, event: str) -> list[str]:
        return self.registry.handlers.get(event, []) if self.host is not None else []

    def timeouts(self, event: str) -> list[float]:
        """Each ``event`` handler's deadline in seconds: its own ``timeout_ms`` capped by
        ``limits.maxHandlerTimeoutMs``, else ``limits.hookTimeoutMs``."""
        own = self.handler_timeouts.get(event, [])
        default, cap = self.limits.hook_timeout_ms, self.limits.max_handler_timeout_ms
        return [(min(ms, cap) if ms else default) / 1000 for ms in own] if len(own) == len(self.handlers(event)) \
            else [default / 1000] * len(self.handlers(event))

    def extensions_to_wire(self) -> list[dict[str, Any]]:
        out = []
        for source in self.extensions:
            entry = source.to_wire()
            if self.host is not None and self.host.failed and entry["status"] == "loaded":
                entry.update(status="failed", error=self.host.failure)
            out.append(entry)
        return out


class ThreadMethods:
    """Threads started and closed; ``close_all`` at shutdown."""

    async def thread_start(self, params: dict[str, Any]) -> dict[str, Any]:
        start = P.parse_thread_start(params)
        open_threads = len(self.threads) + len(self._starting)
        if open_threads >= SIDECAR.max_threads:
            raise DomainError("too_many_threads", f"{open_threads} threads are open or starting; the limit is "
                                                  f"{SIDECAR.max_threads} (--max-threads): close one first",
                              limit=SIDECAR.max_threads)
        thread_id = f"thread-{next(self._ids)}"
        starting = asyncio.get_running_loop().create_future()
        self._starting[thread_id] = starting
        try:
            return await self._start(thread_id, start)
        finally:
            del self._starting[thread_id]
            starting.set_result(None)

    async def _start(self, thread_id: str, start: P.ThreadStartParams) -> dict[str, Any]:
        limits = start.limits
        registry = ToolRegistry(hook_timeout_s=limits.hook_timeout_ms / 1000)
        registry.tools["load_skill"] = Tool(
            "load_skill", "Activate a skill by name: its instructions and files become part of the context.",
            LOAD_SKILL_SCHEMA, "builtin", run=self._load_skill_runner(thread_id), validator=LOAD_SKILL_ARGUMENTS)
        for dynamic in start.dynamic_tools:
            registry.tools[dynamic.name] = Tool(dynamic.name, dynamic.description, dynamic.input_schema, "dynamic",
                                                run=self._dynamic_runner(thread_id, limits),
                                                validator=dynamic.compiled, source={"kind": "editor"})
        servers = None
        read_at_ns = time.time_ns()  # what changes after this is caught up with once the roots are watched
        if _may_start_processes(start):  # its processes' group and limit, before the first
            from harness_sidecar.containment import lifetimes

            lifetimes.get().limit(thread_id, limits.max_processes)
        if start.trusted_plugins:  # a trusted plugin's MCP servers are known once the roots are scanned
            catalog, found = await self._discover(start)
            self._arm_pins(thread_id, catalog)
            configs = list(start.mcp_servers) + self._plugin_mcp_configs(catalog, start)
            if configs:
                servers = await self._start_mcp(thread_id, configs)
        elif start.mcp_servers:  # started while the roots are scanned
            starting = asyncio.ensure_future(self._start_mcp(thread_id, start.mcp_servers))
            try:
                catalog, found = await self._discover(start)
            except BaseException:
                starting.cancel()
                raise
            servers = await starting  # a required server that failed: thread/start fails (mcp_unavailable)
        else:
            catalog, found = await self._discover(start)
        granted = [i for i in catalog.plugins.trusted_extensions() if i in found]
        if granted:  # a trusted plugin's extensions load through the same path as trustedExtensions
            known = {t.id for t in start.trusted_extensions}
            start.trusted_extensions = [*start.trusted_extensions,
                                        *(P.TrustedExtension(i) for i in granted if i not in known)]
        if left_out_of_listing(catalog, limits.catalog_bytes):
            registry.tools = self._with_find_skills(registry.tools, thread_id)
        thread = Thread(thread_id, start, catalog, limits, registry, list(found.values()), mcp=servers,
                        read_at_ns=read_at_ns)
        thread.rescanning = asyncio.Lock()
        self._say_ambiguous(thread, catalog.diagnostics)
        try:
            if start.trusted_extensions:
                await self._load_extensions(thread, found)
            if servers is not None:
                catalog.diagnostics.extend(Diagnostic.from_wire(d) for d in servers.diagnostics)
                registry.tools.update(self._mcp_tools(thread, registry.tools, catalog.diagnostics))
                if thread.host is not None:
                    thread.host.set_schemas(self._foreign_schemas(registry))
        except BaseException:
            await self._end(thread, "close")
            raise
        thread.hooks = self._command_hooks(thread_id, start, catalog, servers)
        if thread.hooks is not None:  # a plugin's are in the catalog's diagnostics already (resources.plugins)
            catalog.diagnostics.extend(thread.hooks.diagnostics(roots_only=True) + thread.hooks.unanswered())
            self._say_ambiguous(thread, catalog.diagnostics)  # a trustedHooks grant's
        thread.pipeline = self._new_pipeline(thread)
        thread.session_context = await self._session_start_hooks(thread)
        if thread.handlers(THREAD_START):
            await self._lifecycle(thread, THREAD_START, {"threadId": thread_id, "cwd": start.cwd,
                                                         "roots": list(start.roots)})
        self.threads[thread_id] = thread
        if catalog.plugins is not None and any(p.trust.pin is not None and p.trust.pin.broken is not None
                                               for p in catalog.plugins.plugins):
            asyncio.ensure_future(self._rescan(thread))  # a pin broke while the thread started
        runs_hooks = thread.hooks is not None and thread.hooks.runs_any()
        if thread.host is not None or servers is not None or runs_hooks:
            self._say_containment(thread_id)
        if runs_hooks:  # the process that starts its hooks, after the answer is written
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._warm_hooks, thread_id)
        if start.watch and self.watching:
            # after the answer is written: watching never adds to thread/start's time
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._watch_roots, thread)
        elif start.watch and self.watch_requested is not None:
            self.watch_requested([*start.roots, *start.plugins])
        snapshot = self._snapshot(thread)
        if thread.session_context:  # cut to fit beside the catalog (hooks.fit); the thread keeps what was sent
            from harness_sidecar.hooks import fit

            snapshot["hookContext"] = [text for _, text in thread.session_context]
            snapshot = fit.fit_answer(snapshot, ("hookContext",), self.max_result_bytes, self._diagnostic, thread_id,
                                      "thread/start")
            thread.session_context = [(source, text) for (source, _), text in zip(thread.session_context,
                                                                                   snapshot["hookContext"])]
            if not snapshot["hookContext"]:  # no room beside the catalog: left out (said by hook_text_truncated)
                del snapshot["hookContext"]
        return snapshot

    def _warm_hooks(self, thread_id: str) -> None:
        """Start the thread's command-hook zygote ahead of its first hook, unless it closed meanwhile."""
        if thread_id in self.threads:
            from harness_sidecar.containment import zygote

            zygote.warm(thread_id)

    def _say_ambiguous(self, thread: Thread, diagnostics: list[Diagnostic]) -> None:
        """Each grant that chose no runnable candidate (protocol-v4 §1) is one ``thread/diagnostic``
        ``trust_ambiguous`` per thread, besides its entry in the catalog's diagnostics."""
        for d in diagnostics:
            if d.kind == "trust_ambiguous" and d.message not in thread.reported_ambiguous:
                thread.reported_ambiguous.add(d.message)
                self.peer.notify("thread/diagnostic", {"threadId": thread.id, "kind": d.kind, "message": d.message,
                                                       **{k: d.extra[k] for k in ("grant", "name", "candidates",
                                                                                  "field")}})

    def _say_containment(self, thread_id: str) -> None:
        """Where the kernel fences less than protocol.md promises, a thread running foreign code is told once."""
        from harness_sidecar.containment import landlock, lifetimes

        what, said = [], []
        fences = lifetimes.get()
        processes = fences.available()
        if processes is not None:  # subreaper mode or nothing ("processes"), or no pids controller
            what.append("processes" if fences.cgroups is None else "maxProcesses")
            said.append(processes)
        isolation = landlock.reduced()
        if isolation is not None:
            what.append("landlock")
            said.append(isolation)
        if what:
            self.peer.notify("thread/diagnostic", {"threadId": thread_id, "kind": "containment_reduced",
                                                   "what": what, "message": "; ".join(said)})

    def _snapshot(self, thread: Thread) -> dict[str, Any]:
        """What thread/start and thread/refresh answer: the current revision of the thread."""
        wire_catalog = thread.catalog.to_wire()
        wire_catalog["extensions"] = thread.extensions_to_wire()
        wire_catalog["hooks"] = thread.hooks.to_wire() if thread.hooks is not None else []
        return {"threadId": thread.id, "revision": thread.revision, "catalog": wire_catalog,
                "tools": thread.registry.to_wire(), "diagnostics": [d.to_wire() for d in thread.catalog.diagnostics]}

    async def _discover(self, start: P.ThreadStartParams) -> tuple[Catalog, dict[str, Any]]:
        """Scan the roots (off the event loop: other requests keep being served) and the extensions."""
        from harness_sidecar.extensions import (
            discovery,  # extension machinery only when a thread starts
        )

        def scan() -> tuple[Catalog, dict[str, Any]]:
            catalog = build_catalog(start.roots, start.limits, persist=True)
            plugins.attach(catalog, start.plugins, start.disabled_plugins, start.trusted_plugins, start.limits,
                           start.marketplaces)
            every: list[Any] = []
            found = discovery.discover(catalog.roots, start.extensions, start.limits, catalog.diagnostics, every)
            for ext_id, source in catalog.plugins.extension_sources(start.limits, catalog.diagnostics).items():
                found.setdefault(ext_id, source)  # <plugin>:<id>, loaded only when trustedPlugins grants it
            found = dict(sorted(found.items()))
            discovery.resolve_grants(found, every, start.trusted_extensions, catalog.diagnostics)
            trusted = {t.id for t in start.trusted_extensions}
            for ext_id in start.extension_settings:
                if ext_id not in trusted or ext_id not in found:
                    why = "is not trusted" if ext_id in found else \
                        "is not found in any root or thread/start.extensions"
                    catalog.diagnostics.append(Diagnostic(
                        "settings_ignored", f"extensionSettings for '{ext_id}' are ignored: the extension {why}",
                        extra={"name": ext_id}))
            return catalog, found

        return await asyncio.get_running_loop().run_in_executor(None, scan)

    @staticmethod
    def _plugin_mcp_configs(catalog: Catalog, start: P.ThreadStartParams) -> list[Any]:
        """The trusted plugins' stdio MCP servers (a name the editor's servers already use is a diagnostic)."""
        taken = {s.name for s in start.mcp_servers}
        configs = []
        for config in catalog.plugins.mcp_configs():
            if config.name in taken:
                catalog.diagnostics.append(Diagnostic("mcp_server_skipped", f"plugin MCP server '{config.name}' is "
                                                      "not started: thread/start.mcpServers has a server of that name",
                                                      extra={"name": config.name}))
                continue
            configs.append(config)
        return configs

    async def thread_close(self, params: dict[str, Any]) -> None:
        thread = await self.thread(params)
        del self.threads[thread.id]
        await self._end(thread, "close")
        return None

    async def _end(self, thread: Thread, reason: str) -> None:
        thread.closed = True
        if thread.watch is not None:
            thread.watch.close()
            thread.watch = None
        # Close keeps outcomes: calls whose core began finish (each within its deadline) with their
        # real outcome; the others are answered blocked "closed".
        thread.calls.closing = True
        if thread.host is not None:
            thread.host.close_calls()
        if thread.hooks is not None:
            thread.hooks.close_calls()
        await thread.calls.drained()
        if thread.host is not None and thread.handlers(THREAD_CLOSE):
            await self._lifecycle(thread, THREAD_CLOSE, {"threadId": thread.id, "reason": reason})
        if thread.hooks is not None:
            await thread.hooks.session_end(reason)
        fenced = _may_start_processes(thread.start)
        if fenced:  # the graceful stops below get STOP_DEADLINE_S; then the thread's group is ended
            from harness_sidecar.containment import lifetimes

            deadline = asyncio.get_running_loop().call_later(lifetimes.STOP_DEADLINE_S, lifetimes.get().end_owner,
                                                             thread.id)
        ending = [c.close() for c in (thread.host, thread.mcp) if c is not None]
        if ending:
            await asyncio.gather(*ending)
        if fenced:  # and whatever they left behind
            deadline.cancel()
            lifetimes.get().end_owner(thread.id)
        SINK.forget(thread.id)

    async def close_all(self, reason: str) -> None:
        """``shutdown`` and EOF: every thread ends (its ``thread_close`` handlers run), and with it its host."""
        ending = list(self.threads.values())
        self.threads.clear()
        if ending:
            await asyncio.gather(*(self._end(thread, reason) for thread in ending))
        if self._spares is not None:
            self._spares.close()

    # -- command hooks (protocol-v3 §5; hooks.boundaries) -------------------------------------------

    def _command_hooks(self, thread_id: str, start: P.ThreadStartParams, catalog: Catalog, servers: Any = None) -> Any:
        """The command hooks the roots (``<root>/hooks.json``, its settings files and ``config.toml``:
        ``hooks.declared.ROOT_FILES``) and the plugins (``catalog.plugins.hooks``)
        declare, roots first; None when none declares any."""
        plugin_hooks = catalog.plugins.hooks if catalog.plugins is not None else []
        from harness_sidecar.hooks.declared import has_sources, read_roots

        if not plugin_hooks and not has_sources(list(start.roots)):
            return None
        from harness_sidecar.hooks.boundaries import ThreadHooks, thread_cwd

        limits = start.limits
        declared = read_roots(list(start.roots), start.trusted_hooks) + plugin_hooks
        return ThreadHooks(thread_id, thread_cwd(start.cwd), declared,
                           limits.command_hook_timeout_ms, limits.max_command_hook_timeout_ms,
                           limits.command_hook_failure == "open", limits.session_end_budget_ms,
                           notify=lambda params: self.peer.notify("thread/diagnostic", params), ask=self._ask,
                           ui_timeout_s=limits.ui_timeout_ms / 1000, max_result_bytes=self.max_result_bytes,
                           ui_notify=self._ui_notify, mcp=servers,
                           hook_prompt=self.peer.request if self.peer.client_capabilities.get("hookPrompt") is True
                           else None)

    def _diagnostic(self, params: dict[str, Any]) -> None:
        self.peer.notify("thread/diagnostic", params)

    async def _session_start_hooks(self, thread: Thread) -> list[tuple[str, str]]:
        if thread.hooks is None:
            return []
        thread.hooks.report_untrusted()
        context = await thread.hooks.session_start()
        await thread.hooks.instructions_loaded([i.source for i in thread.catalog.instructions])
        return context


def _may_start_processes(start: P.ThreadStartParams) -> bool:
    """Whether a thread may start processes (a host, MCP servers, command hooks): they get its group and limit."""
    return bool(start.mcp_servers or start.trusted_extensions or start.trusted_plugins or start.trusted_hooks)
