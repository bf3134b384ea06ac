"""``thread/refresh`` and the live catalog: the roots watched (or the transport's own file changes),
rescanned into a new revision and a ``catalog/changed``; a changed hooks declaration waits for
thread/refresh.

Given the open threads, the ``Editor`` and the thread's tool methods (a rescan makes the thread a new
pipeline); owns the watch hub the threads and the transport share.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable

from harness_sidecar.resources.catalog import Catalog
from harness_sidecar.resources.context import left_out_of_listing
from harness_sidecar.threads import scan, sessions
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads.thread import Thread
from harness_sidecar.threads.tools import ToolMethods
from harness_sidecar.tools.registry import ToolRegistry

# The lines it logs on stderr name harness_sidecar.threads.sidecar, whichever part of Sidecar logs them.
logger = logging.getLogger("harness_sidecar.threads.sidecar")


class LiveCatalog:
    """A thread's catalog kept in step with the disk."""

    def __init__(self, open_threads: OpenThreads, editor: Editor, tools: ToolMethods) -> None:
        self.open = open_threads
        self.editor = editor
        self.tools = tools
        self._watch_hub: Any = None
        self.watching = True  # False when the transport feeds file changes itself (LSP didChangeWatchedFiles)
        # With watching off: told the roots of each thread that wants watching, so that the transport
        # has them watched (LSP: registers didChangeWatchedFiles globs for them with the client).
        self.watch_requested: Callable[[list[str]], None] | None = None

    async def thread_refresh(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        await self.rescan(thread)
        if await self._config_change_allows(thread):
            self._apply_hooks(thread)
        return scan.snapshot(thread)

    def arm_pins(self, thread_id: str, catalog: Catalog) -> None:
        """A pinned plugin whose tree stops matching at a start of its code (resources.pins.TreePin) has the
        thread's catalog scanned again: the plugin turns untrusted there and ``catalog/changed`` says so."""
        if catalog.plugins is None:
            return
        loop = asyncio.get_running_loop()  # a large tree is checked in a worker thread: come back to the loop
        for plugin in catalog.plugins.plugins:
            if plugin.trust.pin is not None:
                plugin.trust.pin.on_broken = lambda why, thread_id=thread_id: loop.call_soon_threadsafe(
                    self._pin_broken, thread_id, why)

    def _pin_broken(self, thread_id: str, why: str) -> None:
        logger.warning("%s: %s", thread_id, why)
        thread = self.open.threads.get(thread_id)
        if thread is not None and not thread.closed:
            asyncio.ensure_future(self.rescan(thread))

    def watch_roots(self, thread: Thread) -> None:
        if thread.closed or thread.watch is not None:
            return
        from harness_sidecar.resources.watch import WatchUnavailable

        try:
            # thread/start.plugins folders are watched like roots (protocol-v4 §1)
            thread.watch = self._hub().subscribe(thread.start.roots, lambda change: self._changed(thread, change),
                                                 plugins=thread.start.plugins, since_ns=thread.read_at_ns)
        except WatchUnavailable as exc:
            logger.warning("cannot watch the roots of %s (%s); thread/refresh rescans on demand", thread.id, exc)

    def _changed(self, thread: Thread, change: Any) -> None:
        for problem in change.problems:
            logger.warning("watching %s: %s", thread.id, problem)
        asyncio.ensure_future(self.rescan(thread))

    def watch(self, roots: list[str], callback: Callable[[Any], Any]) -> Any:
        """Watch ``roots`` for the transport's own use (LSP: republishing live diagnostics), sharing
        the threads' watchers; ``callback(change)`` runs on the loop. The handle (``close()``), or
        ``None`` when the system cannot watch."""
        from harness_sidecar.resources.watch import WatchUnavailable

        try:
            return self._hub().subscribe(roots, callback)
        except WatchUnavailable as exc:
            logger.warning("cannot watch %s (%s)", ", ".join(roots), exc)
            return None

    def _hub(self) -> Any:
        """The one resources.watch.WatchHub of the threads and the transport, made when first needed."""
        if self._watch_hub is None:
            from harness_sidecar.resources.watch import WatchHub

            self._watch_hub = WatchHub()
        return self._watch_hub

    def files_changed(self, paths: list[str]) -> None:
        """The transport watched files itself (LSP): rescan every watching thread with a root above one of them."""
        from harness_sidecar.resources.paths import is_within

        for thread in list(self.open.threads.values()):
            if thread.start.watch and any(is_within(os.path.normpath(path), os.path.normpath(root)) for path in paths
                   for root in [*thread.start.roots, *thread.start.plugins]):
                asyncio.ensure_future(self.rescan(thread))

    async def rescan(self, thread: Thread) -> None:
        """Rescan the thread's roots; a change becomes a new revision and a ``catalog/changed``.

        Requests already running keep the snapshot they started with (they hold the old catalog
        and pipeline); the next request sees the new revision.
        """
        if thread.rescanning.locked():
            thread.rescan_again = True  # the running rescan goes once more when it is done
        async with thread.rescanning:
            while True:
                thread.rescan_again = False
                if thread.closed:
                    return
                await self._rescan_once(thread)
                if not thread.rescan_again:
                    return

    async def _rescan_once(self, thread: Thread) -> None:
        from harness_sidecar.resources.diff import diff

        catalog, found = await scan.discover(thread.start)
        if thread.closed:
            return
        self.arm_pins(thread.id, catalog)
        catalog.diagnostics += [d for d in thread.catalog.diagnostics if d.kind in ("mcp_unavailable",
                                                                                    "mcp_tool_skipped")]
        hooks_change = self._hooks_change(thread, catalog)
        scan.say_ambiguous(self.editor, thread, catalog.diagnostics)
        extensions = self._extension_view(thread, found)
        change = diff(thread.catalog, catalog, thread.extensions, extensions)
        tools = thread.registry.tools
        wants_find = bool(left_out_of_listing(catalog, thread.limits.catalog_bytes))
        tool_change: list[tuple[str, str]] = []
        if wants_find and "find_skills" not in tools:
            tools, tool_change = self.tools.with_find_skills(tools, thread.id), [("added", "find_skills")]
        elif not wants_find and "find_skills" in tools:
            tools = {k: v for k, v in tools.items() if k != "find_skills"}
            tool_change = [("removed", "find_skills")]
        if not change and not tool_change and not hooks_change:
            thread.extensions = extensions
            return
        thread.revision += 1
        for _, name in tool_change:
            thread.tool_changed_at[name] = thread.revision
        if tool_change:
            thread.registry = ToolRegistry(tools, thread.registry.handlers, thread.registry.hook_timeout_s,
                                           thread.registry.step_timeouts)
        thread.catalog, thread.extensions = catalog, extensions
        thread.pipeline = self.tools.new_pipeline(thread)
        if thread.activated:
            sessions.drop_stale_activations(thread)  # protocol-v4 §5: activations that end
        wire = change.to_wire()
        for what, name in tool_change:
            wire[what].append({"kind": "tool", "name": name})
        wire["changed"] += hooks_change
        self.editor.notify("catalog/changed", {"threadId": thread.id, "revision": thread.revision, **wire})

    def _extension_view(self, thread: Thread, found: dict[str, Any]) -> list[Any]:
        """The extensions as the thread now has them: loaded ones keep running the bytes they were
        loaded from (a change on disk is an ``extension_changed`` diagnostic, no reload); one that
        appears later is not loaded."""
        before = {e.id: e for e in thread.extensions}
        trusted = {t.id for t in thread.start.trusted_extensions}
        view = []
        for ext_id, source in found.items():
            old = before.get(ext_id)
            if old is not None and old.status in ("loaded", "failed", "hash_mismatch"):
                if source.sha256 != old.sha256 and old.status == "loaded" \
                        and thread.reported_changes.get(ext_id) != source.sha256:
                    thread.reported_changes[ext_id] = source.sha256
                    self.editor.diagnostic({
                        "threadId": thread.id, "kind": "extension_changed", "extensionId": ext_id,
                        "message": f"extension '{ext_id}' changed on disk ({source.source}); this thread keeps "
                                   f"running the version it loaded: start a new thread to load it"})
                view.append(old)
                continue
            if ext_id in trusted and old is None:
                source.status = "failed"
                source.error = "it appeared after the thread started: start a new thread to load it"
            view.append(source)
        view += [e for e in thread.extensions if e.status == "loaded" and e.id not in found]
        return view

    def _hooks_change(self, thread: Thread, catalog: Catalog) -> list[dict[str, str]]:
        """A rescan: the hooks files again. A change is pending until thread/refresh; its entries for catalog/changed."""
        fresh = scan.command_hooks(self.editor, thread.id, thread.start, catalog, thread.mcp)
        if fresh is not None:  # a plugin's are in the catalog's diagnostics already (resources.plugins)
            catalog.diagnostics.extend(fresh.diagnostics(roots_only=True) + fresh.unanswered())
        current = thread.hooks_pending if thread.hooks_pending is not None else thread.hooks
        # a plugin's hooks changing is a change of kind "plugin" (resources.diff): listed once, there
        fresh_roots = fresh.root_files() if fresh is not None else set()
        current_roots = current.root_files() if current else set()
        before = current.fingerprint() if current else {}
        after = fresh.fingerprint() if fresh is not None else {}
        if before == after:
            return []
        if fresh is not None and thread.hooks is not None:
            fresh.reported_untrusted = thread.hooks.reported_untrusted
        thread.hooks_pending = fresh if fresh is not None else False
        return [{"kind": "hooks", "name": path} for path in sorted(before.keys() | after.keys())
                if path in fresh_roots | current_roots
                if before.get(path) != after.get(path)]

    async def _config_change_allows(self, thread: Thread) -> bool:
        """ConfigChange command hooks (protocol-v4 §3) on the hooks files a pending change touches: a block keeps
        the thread's hooks as they are (the change stays pending) and is a ``config_change_blocked``."""
        if thread.hooks is None or thread.hooks_pending is None:
            return True
        changed = thread.hooks.changed_files(thread.hooks_pending or None)
        if not changed:
            return True
        decision = await thread.hooks.config_change(changed)
        if decision.outcome != "blocked":
            return True
        for path in changed:
            self.editor.diagnostic({
                "threadId": thread.id, "kind": "config_change_blocked", "source": decision.by[0], "path": path,
                "event": "ConfigChange", "message": f"the change of {path} does not apply: ConfigChange hook "
                                                    f"{', '.join(decision.by)}: {decision.reason or 'blocked'}"})
        return False

    def _apply_hooks(self, thread: Thread) -> None:
        """thread/refresh: a changed hooks declaration takes effect."""
        if thread.hooks_pending is None:
            return
        before, thread.hooks = thread.hooks, thread.hooks_pending or None
        thread.hooks_pending = None
        if before is not None and thread.hooks is not None:  # `once` is once per thread, `async` ends at its close
            thread.hooks.ran_once |= before.ran_once
            thread.hooks.background |= before.background
        thread.pipeline = self.tools.new_pipeline(thread)
        if thread.hooks is not None:
            thread.hooks.report_untrusted()
