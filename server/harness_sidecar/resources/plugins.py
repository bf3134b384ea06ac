"""Plugins: capability packages as Claude Code and Codex ship them, a resource source beside roots.

A plugin is a folder with ``.claude-plugin/plugin.json`` or ``.codex-plugin/plugin.json`` (with
both, the Codex one is read and a diagnostic says so). Plugins are found in each root's
``plugins/<name>/`` and at the paths of ``thread/start.plugins``; ``disabledPlugins`` leaves some
out. What a plugin brings, from its default folders and its manifest's paths:

- ``skills/`` (plus the manifest's ``skills`` folders): skills named ``<plugin>:<name>``;
- ``commands/*.md`` (the manifest's ``commands`` replaces the folder): command templates
  ``<plugin>:<name>`` (``resources.command_templates``);
- ``agents/*.md`` (``agents`` replaces the folder): listed as metadata, never run;
- ``hooks/hooks.json`` and the manifest's ``hooks`` (paths or inline): command hooks, read by
  ``hooks.declared`` (data: nothing runs) into one ``Declared`` per declaration, whose
  ``HookSource`` (``plugin:<name>``) carries the plugin's trust and its folders for
  ``CLAUDE_PLUGIN_ROOT``/``CLAUDE_PLUGIN_DATA``; the thread's command hooks run them beside the roots';
- ``.mcp.json`` and the manifest's ``mcpServers`` (paths or inline): MCP servers, run as
  ``plugin_<plugin>_<server>`` (tools ``mcp__plugin_<plugin>_<server>__<tool>``) only when trusted;
- ``extensions/``: Python extensions ``<plugin>:<id>``, listed with their trust.

Finding plugins never runs code and reads only manifests, hooks files, ``.mcp.json`` and the
frontmatter of skills, commands and agents. Skills, command templates and agents are data and
are always served; hooks, MCP servers and extensions are code and need ``trustedPlugins``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources import catalog as C
from harness_sidecar.resources import command_templates as T
from harness_sidecar.resources.catalog import Root
from harness_sidecar.resources.plugin_manifests import MARKETPLACE_ENTRY, _candidates, _Reader
from harness_sidecar.resources.plugin_parts import _load_plugins, _read_hook_sets
from harness_sidecar.resources.plugin_records import Agent, McpServer, Plugin, PluginSet, Trust

if TYPE_CHECKING:  # imported when a grant or a disabled folder needs it (issue #32: not for a plain thread)
    from harness_sidecar.resources import grants

# the records are kept beside (plugin_records), as are finding plugins (plugin_manifests) and what each brings
# (plugin_parts); what other modules use is named here
__all__ = ["Agent", "McpServer", "Plugin", "PluginSet", "Trust", "attach", "discover", "tree_sha256"]


# -- the tree hash ----------------------------------------------------------------------------------

def tree_sha256(path: str) -> str:
    """The sha256 a ``trustedPlugins[].sha256`` pin is compared with (protocol.md § Plugins, "The tree
    hash"): ``resources.pins.tree_sha256`` — links hashed as links, never followed; raises
    ``pins.PinLinkEscape`` for a link that leaves the tree."""
    from harness_sidecar.resources import pins

    return pins.tree_sha256(path)


# -- trust in parts, and the thread's plugins ---------------------------------------------------

def _grant(plugin: Plugin, grant: Any, why: str, diagnostics: list[Diagnostic], sha256: str | None = None) -> None:
    """Apply the one ``trustedPlugins`` entry that chose ``plugin`` (``None``: nothing of its code is trusted,
    ``why``); the pin was checked when the grant was matched (``grants.resolve``)."""
    trust = Trust()
    if grant is not None:
        trust.listed = True
        if grant.sha256 is not None:  # grants.resolve chose it by its tree hash: _pin_digest's state
            from harness_sidecar.resources import pins

            expected = grant.sha256.lower()
            trust.sha256, files = plugin.pin_state  # type: ignore[misc]
            if (broke := pins.tainted(plugin.boundary.real, expected)) is not None:
                diagnostics.append(Diagnostic(
                    "hash_mismatch", f"plugin '{plugin.name}' at {plugin.path} hashes to its pin again, but a "
                    f"start of its code in this sidecar found it changed ({broke}); its hooks, MCP servers and "
                    "extensions are not trusted until the sidecar restarts", plugin.path,
                    extra={"name": plugin.name, "expected": expected, "actual": trust.sha256}))
                why = f"a start of its code found it changed: {broke}"
                grant = None
            else:
                trust.pin = pins.TreePin(plugin.boundary.real, expected, f"plugin '{plugin.name}'", files)
        if grant is not None:
            trust.hooks = grant.hooks
            why = "thread/start.trustedPlugins grants it with hooks: false"
            trust.mcp_servers = grant.mcp_servers
            trust.extensions = grant.extensions
    else:
        trust.sha256 = sha256  # the tree hash a pin asked for, when it did not match
    plugin.trust = trust
    _read_hook_sets(plugin, why, diagnostics)
    for server in plugin.mcp_servers:
        server.trusted = trust.mcp(server.server)
        server.pin = trust.pin if server.trusted else None


def _pin_digest(plugin: Plugin, expected: str | None) -> str:
    """The plugin's tree hash, for a grant's pin (links hashed as links, never followed), computed once
    per scan: ``plugin.pin_state`` keeps it with its files' digests for the pin ``_grant`` arms, or the
    ``pins.PinLinkEscape`` that refuses the tree. ``expected``: the pin, which lets a tree this process
    hashed to it, unchanged since as inotify saw, go without a walk (``pins.vouched``)."""
    from harness_sidecar.resources import pins

    if plugin.pin_state is None:
        real = plugin.boundary.real
        try:
            plugin.pin_state = (pins.vouched(real, expected) if expected else None) or pins.tree_state(real)
        except pins.PinLinkEscape as exc:
            plugin.pin_state = exc
    state = plugin.pin_state
    return "" if isinstance(state, pins.PinLinkEscape) else state[0]  # "" matches no pin


def _candidate(plugin: Plugin, winner: Plugin, expected: str | None) -> grants.Candidate:
    from harness_sidecar.resources import grants

    real = plugin.boundary.real
    return grants.Candidate(plugin.path, os.path.realpath(real), plugin.root is None, plugin is winner,
                            lambda: _pin_digest(plugin, expected), plugin)


def discover(roots: list[Root], paths: list[str], disabled: list[str], trusted: list[Any], limits: Limits,
             diagnostics: list[Diagnostic], listed: list[tuple[str, Root | None]] | None = None) -> list[Plugin]:
    """The thread's plugins, in order (the roots' ``plugins/``, then ``paths``); one per name.

    Every plugin found is a candidate for its name; the winner (whose data is served) is the first
    one at ``paths`` (an explicit source), else the first in root order; each other is ``shadowed``.
    A ``trustedPlugins`` entry trusts a winner only when it is the one candidate the entry matches.
    """
    if trusted or disabled:  # a grant to resolve, a folder to compare
        from harness_sidecar.resources import grants, pins
    skip = {d for d in disabled if not d.startswith("/")}
    skip_folders = {grants.canonical(d) for d in disabled if d.startswith("/")}
    found: dict[str, list[Plugin]] = {}
    reader = _Reader()
    candidates = _candidates(roots, paths, diagnostics, reader)
    # a marketplace's local plugins (resources.marketplaces), after the folders found otherwise: each folder once
    seen = {real for _, real, _ in candidates}
    for path, root in listed or ():
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            candidates.append((path, real, root))
    for path, real, root in candidates:
        for plugin in _load_plugins(path, real, root, limits, diagnostics, reader):
            if plugin.name in skip or (skip_folders and os.path.realpath(real) in skip_folders):
                continue
            found.setdefault(plugin.name, []).append(plugin)
    winners: dict[str, Plugin] = {}
    for name, same in found.items():
        winner = next((p for p in same if p.root is None), same[0])
        winners[name] = winner
        for other in same:
            if other is not winner:
                why = "an explicit thread/start.plugins folder wins" if winner.root is None else "the earlier one wins"
                diagnostics.append(Diagnostic("shadowed", f"plugin '{name}' at {other.path} is shadowed by "
                                              f"{winner.path} ({why}); none of its code runs", other.path,
                                              extra={"name": name, "shadowedBy": winner.path}))
    chosen: dict[str, Any] = {}
    untrusted: dict[str, str] = {}
    hashed: dict[str, str] = {}
    for grant in trusted:
        same = found.get(grant.name, [])
        expected = grant.sha256.lower() if grant.sha256 is not None else None
        candidates = [_candidate(p, winners[grant.name], expected) for p in same] if same else []
        resolution = grants.resolve(candidates, grant.path, grant.sha256)
        if resolution.problem is None:
            chosen[grant.name] = (grant, resolution.chosen)
        elif resolution.problem == "not_found":
            if grant.name in skip or (not same and grant.path is not None and grants.canonical(grant.path)
                                      in skip_folders):
                continue
            where = f" at {grant.path}" if grant.path is not None else ""
            diagnostics.append(Diagnostic("trust_ignored", f"trustedPlugins names '{grant.name}'{where}, which is not "
                                          "found", grant.path, extra={"name": grant.name, "severity": "warning"}))
        elif resolution.problem == "hash_mismatch":
            for c in resolution.matched:
                actual = c.sha256()
                if isinstance(c.item.pin_state, pins.PinLinkEscape):
                    exc = c.item.pin_state
                    diagnostics.append(Diagnostic(
                        "pin_link_escape", f"plugin '{grant.name}' at {c.path} is pinned, and its {exc}; its "
                        "hooks, MCP servers and extensions are not trusted", c.path,
                        extra={"name": grant.name, "link": exc.link, "target": exc.target}))
                    if c.winner:
                        untrusted[grant.name] = f"its {exc} (pin_link_escape)"
                    continue
                diagnostics.append(Diagnostic(
                    "hash_mismatch", f"plugin '{grant.name}' at {c.path} hashes to {actual}, not the pinned "
                    f"{grant.sha256}; its hooks, MCP servers and extensions are not trusted",
                    c.path, extra={"name": grant.name, "expected": grant.sha256, "actual": actual}))
                if c.winner:
                    hashed[grant.name] = actual  # the catalog shows the tree hash a pin asked for
                    untrusted[grant.name] = f"its tree hashes to {actual}, not the pinned {grant.sha256} (it changed)"
        else:
            diagnostic = grants.ambiguous("trustedPlugins", "plugin", grant.name, resolution, candidates, "plugins")
            diagnostics.append(diagnostic)
            untrusted[grant.name] = diagnostic.message
    for name, plugin in winners.items():
        grant, candidate = chosen.get(name, (None, None))
        _grant(plugin, grant, untrusted.get(name, "thread/start.trustedPlugins does not name it"), diagnostics,
               candidate.sha256() if grant is not None and grant.sha256 is not None else hashed.get(name))
    return [p for same in found.values() for p in same if winners[p.name] is p]


def attach(catalog: C.Catalog, paths: list[str], disabled: list[str], trusted: list[Any], limits: Limits,
           marketplace_paths: list[str] | None = None) -> None:
    """Add the plugins and the roots' command templates to ``catalog`` (skills join ``catalog.skills``), and
    the marketplaces of the roots and ``marketplace_paths`` (``thread/start.marketplaces``), whose local
    plugins are loaded as found (protocol-v4 §3 "Marketplaces, read")."""
    from harness_sidecar.resources.marketplace_files import files_of

    diagnostics = catalog.diagnostics
    markets: list[Any] = []
    if marketplace_paths or any(files_of(root.path) for root in catalog.roots):  # else: not even imported
        from harness_sidecar.resources import marketplaces as M

        markets = M.find(catalog.roots, marketplace_paths or [], diagnostics)
    plugins = discover(catalog.roots, paths, disabled, trusted, limits, diagnostics,
                       M.folders(markets) if markets else [])
    if markets:
        M.mark_installed(markets, plugins, MARKETPLACE_ENTRY)
    if plugins:
        skills = dict(catalog.skills)
        for plugin in plugins:
            for skill in plugin.skills:
                skills[skill.name] = skill
        catalog.skills = dict(sorted(skills.items()))
    per_source = [T.scan_root(root, limits, diagnostics) for root in catalog.roots]
    per_source += [p.commands for p in plugins]
    commands: dict[str, T.CommandTemplate] = {}
    for found in per_source:
        for command in found:
            owner = catalog.templates.get(command.name) or commands.get(command.name)
            if owner is not None:
                diagnostics.append(Diagnostic("shadowed", f"command template '{command.name}' at {command.path} is "
                                              f"shadowed by {owner.source} (a template, or an earlier root, wins)",
                                              command.path, extra={"name": command.name, "shadowedBy": owner.source}))
                continue
            commands[command.name] = command
    catalog.plugins = PluginSet(plugins, dict(sorted(commands.items())), markets)
