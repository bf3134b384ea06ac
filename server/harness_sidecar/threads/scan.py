"""What a scan of a thread's roots and plugins yields, shared by its start (``lifecycle``) and its rescans
(``live_catalog``): the catalog and extension sources (``discover``), the command hooks they declare
(``command_hooks``), the trusted plugins' MCP servers, what a grant could not choose
(``say_ambiguous``) and the snapshot thread/start and thread/refresh answer.

Reads files and builds values; starts nothing and keeps no state.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources import plugins
from harness_sidecar.resources.catalog import Catalog, build_catalog
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.mcp import mcp_catalog
from harness_sidecar.threads.thread import Thread
from harness_sidecar.wire import params as P


def snapshot(thread: Thread) -> dict[str, Any]:
    """What thread/start and thread/refresh answer: the current revision of the thread."""
    wire_catalog = thread.catalog.to_wire()
    wire_catalog["extensions"] = thread.extensions_to_wire()
    wire_catalog["hooks"] = thread.hooks.to_wire() if thread.hooks is not None else []
    wire_catalog.update(mcp_catalog(thread))  # mcpResources, mcpPrompts (v4 §4)
    notes, thread.notes = thread.notes, []  # said once: in the answer they came before
    return {"threadId": thread.id, "revision": thread.revision, "catalog": wire_catalog,
            "tools": thread.registry.to_wire(),
            "diagnostics": [d.to_wire() for d in thread.catalog.diagnostics] + notes}


async def discover(start: P.ThreadStartParams) -> tuple[Catalog, dict[str, Any]]:
    """Scan the roots (off the event loop: other requests keep being served) and the extensions."""
    from harness_sidecar.resources import extension_sources as discovery  # when a thread starts

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


def plugin_mcp_configs(catalog: Catalog, start: P.ThreadStartParams) -> list[Any]:
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


def say_ambiguous(editor: Editor, thread: Thread, diagnostics: list[Diagnostic]) -> None:
    """Each grant that chose no runnable candidate (protocol-v4 §1) is one ``thread/diagnostic``
    ``trust_ambiguous`` per thread, besides its entry in the catalog's diagnostics."""
    for d in diagnostics:
        if d.kind == "trust_ambiguous" and d.message not in thread.reported_ambiguous:
            thread.reported_ambiguous.add(d.message)
            editor.diagnostic({"threadId": thread.id, "kind": d.kind, "message": d.message,
                               **{k: d.extra[k] for k in ("grant", "name", "candidates", "field")}})


def command_hooks(editor: Editor, thread_id: str, start: P.ThreadStartParams, catalog: Catalog,
                  servers: Any = None) -> Any:
    """The command hooks the roots (``<root>/hooks.json``, its settings files and ``config.toml``:
    ``hooks.declared.ROOT_FILES``) and the plugins (``catalog.plugins.hooks``) declare, roots first;
    a ``hooks.boundaries.ThreadHooks``, or None when none declares any."""
    plugin_hooks = catalog.plugins.hooks if catalog.plugins is not None else []
    from harness_sidecar.hooks.root_files import has_sources

    if not plugin_hooks and not has_sources(list(start.roots)):
        return None
    from harness_sidecar.hooks.declared import read_roots
    from harness_sidecar.hooks.boundaries import ThreadHooks, thread_cwd
    from harness_sidecar.hooks.vocabulary import vocabulary_of
    from harness_sidecar.mcp.model import full_name

    limits = start.limits
    declared = read_roots(list(start.roots), start.trusted_hooks) + plugin_hooks
    return ThreadHooks(thread_id, thread_cwd(start.cwd), declared,
                       limits.command_hook_timeout_ms, limits.max_command_hook_timeout_ms,
                       limits.command_hook_failure == "open", limits.session_end_budget_ms,
                       notify=editor.diagnostic, ask=editor.ask,
                       ui_timeout_s=limits.ui_timeout_ms / 1000, max_result_bytes=editor.max_result_bytes,
                       ui_notify=editor.ui_notify, mcp=servers,  # protocol-v4 §3: mcp_tool, prompt and agent hooks
                       hook_prompt=editor.request if editor.declared("hookPrompt")
                       else None,
                       vocabulary=vocabulary_of(start.dynamic_tools, start.mcp_servers, full_name))
