"""``thread/start`` and ``thread/close``: a thread's catalog, MCP servers, command hooks and extension
host, started together and ended together; ``close_all`` at shutdown.

Given every other part of ``Sidecar`` it starts a thread with: the open threads, the ``Editor``, the
tool methods (registry, MCP servers, pipeline), the extension hosts and the live catalog (pins armed,
roots watched). The scan itself is ``threads.scan``'s.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import SIDECAR
from harness_sidecar.base.stderr import SINK
from harness_sidecar.hooks.stages import THREAD_CLOSE, THREAD_START
from harness_sidecar.resources.context import left_out_of_listing
from harness_sidecar.threads import scan, sessions
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.extensions import ExtensionHosts
from harness_sidecar.threads.live_catalog import LiveCatalog
from harness_sidecar.threads.mcp import mcp_client
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads.thread import Thread, may_start_processes
from harness_sidecar.threads.tools import ToolMethods
from harness_sidecar.tools.registry import foreign_schemas
from harness_sidecar.wire import params as P


class ThreadLifecycle:
    """Threads started and closed; ``close_all`` at shutdown."""

    def __init__(self, open_threads: OpenThreads, editor: Editor, tools: ToolMethods, hosts: ExtensionHosts,
                 live: LiveCatalog) -> None:
        self.open = open_threads
        self.editor = editor
        self.tools = tools
        self.hosts = hosts
        self.live = live

    async def thread_start(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._start_thread(P.parse_thread_start(params), None)

    async def thread_fork(self, params: dict[str, Any]) -> dict[str, Any]:
        """A new thread over the same roots, grants, tools and limits as an open one, with copies of its
        extensions' state and its activations (protocol-v4 §5: ``reason`` "fork")."""
        import copy

        request = P.parse_thread_fork(params)
        source = await self.open.get(params)
        start = copy.copy(source.start)
        start.session_id, start.resume, start.state = request.session_id, False, None
        return await self._start_thread(start, sessions.fork_seed(source))

    async def _start_thread(self, start: P.ThreadStartParams, seed: sessions.Seed | None) -> dict[str, Any]:
        open_threads = self.open.open_or_starting()
        if open_threads >= SIDECAR.max_threads:
            raise DomainError("too_many_threads", f"{open_threads} threads are open or starting; the limit is "
                                                  f"{SIDECAR.max_threads} (--max-threads): close one first",
                              limit=SIDECAR.max_threads)
        thread_id = self.open.new_id()
        starting = asyncio.get_running_loop().create_future()
        self.open.starting[thread_id] = starting
        try:
            return await self._start(thread_id, start, seed)
        finally:
            del self.open.starting[thread_id]
            starting.set_result(None)

    async def _start(self, thread_id: str, start: P.ThreadStartParams,
                     seed: sessions.Seed | None = None) -> dict[str, Any]:
        limits = start.limits
        registry = self.tools.builtin_registry(thread_id, start)
        servers = None
        read_at_ns = time.time_ns()  # what changes after this is caught up with once the roots are watched
        if may_start_processes(start):  # its processes' group and limit, before the first
            from harness_sidecar.containment import lifetimes

            lifetimes.get().limit(thread_id, limits.max_processes)
        if start.trusted_plugins:  # a trusted plugin's MCP servers are known once the roots are scanned
            catalog, found = await scan.discover(start)
            self.live.arm_pins(thread_id, catalog)
            configs = list(start.mcp_servers) + scan.plugin_mcp_configs(catalog, start)
            if configs:
                servers = await self.tools.start_mcp(thread_id, configs, mcp_client(self.editor, thread_id, start))
        elif start.mcp_servers:  # started while the roots are scanned
            starting = asyncio.ensure_future(self.tools.start_mcp(thread_id, start.mcp_servers,
                                                                  mcp_client(self.editor, thread_id, start)))
            try:
                catalog, found = await scan.discover(start)
            except BaseException:
                starting.cancel()
                raise
            servers = await starting  # a required server that failed: thread/start fails (mcp_unavailable)
        else:
            catalog, found = await scan.discover(start)
        granted = [i for i in catalog.plugins.trusted_extensions() if i in found]
        if granted:  # a trusted plugin's extensions load through the same path as trustedExtensions
            known = {t.id for t in start.trusted_extensions}
            start.trusted_extensions = [*start.trusted_extensions,
                                        *(P.TrustedExtension(i) for i in granted if i not in known)]
        if left_out_of_listing(catalog, limits.catalog_bytes):
            registry.tools = self.tools.with_find_skills(registry.tools, thread_id)
        if catalog.scanned_at_ns is not None:  # the first catalog may be read before this request began
            read_at_ns = min(read_at_ns, catalog.scanned_at_ns)  # (wire.early_scan)
        thread = Thread(thread_id, start, catalog, limits, registry, list(found.values()), mcp=servers,
                        read_at_ns=read_at_ns)
        thread.rescanning = asyncio.Lock()
        scan.say_ambiguous(self.editor, thread, catalog.diagnostics)
        restore = sessions.open_session(thread, seed)
        try:
            if start.trusted_extensions:
                await self.hosts.load(thread, found)
            if servers is not None:
                catalog.diagnostics.extend(Diagnostic.from_wire(d) for d in servers.diagnostics)
                registry.tools.update(self.tools.mcp_tools(thread, registry.tools, catalog.diagnostics))
                if thread.host is not None:
                    thread.host.set_schemas(foreign_schemas(registry))
        except BaseException:
            await self._end(thread, "close")
            raise
        thread.hooks = scan.command_hooks(self.editor, thread_id, start, catalog, servers)
        if thread.hooks is not None:  # a plugin's are in the catalog's diagnostics already (resources.plugins)
            catalog.diagnostics.extend(thread.hooks.diagnostics(roots_only=True) + thread.hooks.unanswered())
            scan.say_ambiguous(self.editor, thread, catalog.diagnostics)  # a trustedHooks grant's
        thread.pipeline = None  # made at its first tools/call (ToolMethods.pipeline): off the first answer's path
        sessions.restore_skills(thread, restore)
        thread.session_context = await self._session_start_hooks(thread)
        if thread.handlers(THREAD_START):
            await self.hosts.lifecycle(thread, THREAD_START, {"threadId": thread_id, "cwd": start.cwd,
                                                              "roots": list(start.roots), "reason": thread.reason})
        self.open.threads[thread_id] = thread
        if catalog.plugins is not None and any(p.trust.pin is not None and p.trust.pin.broken is not None
                                               for p in catalog.plugins.plugins):
            asyncio.ensure_future(self.live.rescan(thread))  # a pin broke while the thread started
        runs_hooks = thread.hooks is not None and thread.hooks.runs_any()
        if thread.host is not None or servers is not None or runs_hooks:
            self._say_containment(thread_id)
        if runs_hooks:  # the process that starts its hooks, after the answer is written
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self._warm_hooks, thread_id)
        if start.watch and self.live.watching:
            # after the answer is written: watching never adds to thread/start's time
            loop = asyncio.get_running_loop()
            loop.call_soon(loop.call_soon, self.live.watch_roots, thread)
        elif start.watch and self.live.watch_requested is not None:
            self.live.watch_requested([*start.roots, *start.plugins])
        snapshot = scan.snapshot(thread)
        if thread.session_context:  # cut to fit beside the catalog (hooks.fit); the thread keeps what was sent
            from harness_sidecar.hooks import fit

            snapshot["hookContext"] = [text for _, text in thread.session_context]
            snapshot = fit.fit_answer(snapshot, ("hookContext",), self.editor.max_result_bytes, self.editor.diagnostic, thread_id,
                                      "thread/start")
            thread.session_context = [(source, text) for (source, _), text in zip(thread.session_context,
                                                                                   snapshot["hookContext"])]
            if not snapshot["hookContext"]:  # no room beside the catalog: left out (said by hook_text_truncated)
                del snapshot["hookContext"]
        return snapshot

    def _warm_hooks(self, thread_id: str) -> None:
        """Start the thread's command-hook zygote ahead of its first hook, unless it closed meanwhile."""
        if thread_id in self.open.threads:
            from harness_sidecar.containment import zygote

            zygote.warm(thread_id)

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
            self.editor.diagnostic({"threadId": thread_id, "kind": "containment_reduced", "what": what,
                                    "message": "; ".join(said)})

    async def thread_close(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ends the thread; answers each extension's last ``ctx.state`` (protocol-v4 §5), set by its
        ``thread_close`` handlers too, for an editor that keeps state itself (``thread/start.state``)."""
        thread = await self.open.get(params)
        del self.open.threads[thread.id]
        await self._end(thread, "close")
        return {"state": sessions.states_to_wire(thread)}

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
            await self.hosts.lifecycle(thread, THREAD_CLOSE, {"threadId": thread.id, "reason": reason})
        if thread.hooks is not None:
            await thread.hooks.session_end(reason)
        fenced = may_start_processes(thread.start)
        if fenced:  # the graceful stops below get STOP_DEADLINE_S; then the thread's group is ended
            from harness_sidecar.containment import lifetimes

            deadline = asyncio.get_running_loop().call_later(lifetimes.STOP_DEADLINE_S, lifetimes.get().end_owner,
                                                             thread.id)
        ending = [c.close() for c in (thread.host, thread.mcp) if c is not None]
        if thread.session is not None:  # its files fsynced while the host and servers stop
            ending.append(sessions.sync(thread))
        if ending:
            await asyncio.gather(*ending)
        if fenced:  # and whatever they left behind
            deadline.cancel()
            lifetimes.get().end_owner(thread.id)
        SINK.forget(thread.id)

    async def close_all(self, reason: str) -> None:
        """``shutdown`` and EOF: every thread ends (its ``thread_close`` handlers run), and with it its host."""
        ending = list(self.open.threads.values())
        self.open.threads.clear()
        if ending:
            await asyncio.gather(*(self._end(thread, reason) for thread in ending))
        self.hosts.close()

    async def _session_start_hooks(self, thread: Thread) -> list[tuple[str, str]]:
        if thread.hooks is None:
            return []
        thread.hooks.report_untrusted()
        context = await thread.hooks.session_start()
        await thread.hooks.instructions_loaded([i.source for i in thread.catalog.instructions])
        return context
