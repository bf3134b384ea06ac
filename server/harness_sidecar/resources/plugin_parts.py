"""What a plugin brings (``resources.plugins``), read from its folders and its manifest's paths: skills
(Codex's nested ones too), command templates, agents, hooks declarations, MCP servers and extensions.
Reads data only: nothing here runs or trusts anything."""

from __future__ import annotations

import json
import os
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.names import name_problem, plugin_mcp_server_name, plugin_server_key_problem
from harness_sidecar.base.state_dir import plugin_data_dir
from harness_sidecar.resources import catalog as C
from harness_sidecar.resources import command_templates as T
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.catalog import Root
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.resources.paths import is_within
from harness_sidecar.resources.plugin_manifests import MARKETPLACE_ENTRY, _key_line, _read_manifest, _Reader
from harness_sidecar.resources.plugin_records import DEFAULT_HOOKS, Agent, McpServer, Plugin

def _paths(plugin: Plugin, key: str, text: str, diagnostics: list[Diagnostic], reader: _Reader,
           allow_inline: bool = False) -> list[str | dict[str, Any]]:
    """The manifest's ``key``: each path resolved inside the plugin (a path leaving it is a diagnostic)."""
    value = plugin.manifest.get(key)
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out: list[str | dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict) and allow_inline:
            out.append(item)
            continue
        if not isinstance(item, str) or not item:
            diagnostics.append(Diagnostic("invalid_manifest_path", f"{plugin.manifest_path}: '{key}' must be a path "
                                          f"string{' or an object' if allow_inline else ''} or a list of them; this "
                                          "entry is ignored", plugin.manifest_path, line=_key_line(text, key),
                                          extra={"severity": "warning"}))
            continue
        full = os.path.normpath(os.path.join(plugin.path, item))
        if os.path.isabs(item) or not is_within(reader.real_dir(full), plugin.boundary.real):
            diagnostics.append(Diagnostic("path_escape", f"{plugin.manifest_path}: '{key}' path {item!r} leaves the "
                                          "plugin folder; it is ignored", plugin.manifest_path,
                                          "component paths are relative to the plugin and start with ./",
                                          line=_key_line(text, key), extra={"severity": "warning"}))
            continue
        if not item.startswith("./"):
            diagnostics.append(Diagnostic("invalid_manifest_path", f"{plugin.manifest_path}: '{key}' path {item!r} "
                                          "should start with ./ (Claude Code's path rule); read anyway",
                                          plugin.manifest_path, line=_key_line(text, key),
                                          extra={"severity": "warning"}))
        out.append(full)
    return out


def _load_plugins(path: str, real: str, root: Root | None, limits: Limits, diagnostics: list[Diagnostic],
                  reader: _Reader) -> list[Plugin]:
    """The plugin in a folder: its manifest's, else one per marketplace entry naming the folder."""
    reader.known(path, real)
    entries: list[Any] = []
    read = _read_manifest(path, real, limits, diagnostics, reader, root, entries)
    if read is not None:
        plugin = _load_plugin(path, real, root, limits, diagnostics, reader, read)
        return [plugin] if plugin is not None else []
    return [p for e in entries if (p := _load_plugin(path, real, root, limits, diagnostics, reader, e)) is not None]


def _load_plugin(path: str, real: str, root: Root | None, limits: Limits, diagnostics: list[Diagnostic],
                 reader: _Reader, read: tuple[str, str, dict[str, Any], str, frozenset[str]]) -> Plugin | None:
    dialect, manifest_path, manifest, text, entries = read
    version = manifest.get("version") if isinstance(manifest.get("version"), str) else None
    plugin = Plugin(manifest["name"], version, path, Root(path, real, -1), dialect, manifest_path, manifest, root)
    plugin.entries = entries
    _skills(plugin, text, limits, diagnostics, reader)
    _commands(plugin, text, limits, diagnostics, reader)
    _agents(plugin, text, limits, diagnostics, reader)
    _hooks(plugin, text, limits, diagnostics, reader)
    _mcp(plugin, text, limits, diagnostics, reader)
    _extensions(plugin)
    return plugin


def _skills(plugin: Plugin, text: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader) -> None:
    seen: set[str] = set()
    found: list[C.SkillEntry] = []
    if "skills" in plugin.entries and not (plugin.manifest.get(MARKETPLACE_ENTRY) and "skills" in plugin.manifest):
        # the default folder, scanned as a root's skills/ is (a marketplace entry's 'skills' replaces it, as
        # both peers read anthropics/skills' entries)
        seen.add(reader.real_dir(os.path.join(plugin.path, "skills")))
        found += C.scan_skills(plugin.boundary, limits, diagnostics, dialect=plugin.dialect)
        if plugin.dialect == "codex":
            found += _nested_skills(plugin, os.path.join(plugin.path, "skills"), limits, diagnostics, reader)
    for folder in [p for p in _paths(plugin, "skills", text, diagnostics, reader) if isinstance(p, str)]:
        real = reader.real_dir(folder)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        if os.path.isfile(os.path.join(real, "SKILL.md")):  # the path names one skill's folder
            parent = os.path.dirname(folder)
            skill = C._scan_skill(plugin.boundary, parent, os.path.realpath(parent), os.path.basename(folder),
                                  os.path.islink(folder), limits, diagnostics, plugin.dialect)
            found += [skill] if skill is not None else []
        else:
            found += C.scan_skills(plugin.boundary, limits, diagnostics, os.path.relpath(folder, plugin.path),
                                   plugin.dialect)
            if plugin.dialect == "codex":
                found += _nested_skills(plugin, folder, limits, diagnostics, reader)
    names: set[str] = set()
    for skill in found:
        skill.local_name = skill.name
        skill.name = f"{plugin.name}:{skill.name}"
        skill.origin = plugin.origin
        if skill.name in names:
            diagnostics.append(Diagnostic("shadowed", f"skill '{skill.name}' at {skill.source} is listed twice in "
                                          "the plugin; the first is kept", skill.source, extra={"name": skill.name}))
            continue
        names.add(skill.name)
        plugin.skills.append(skill)


NESTED_SKILL_DEPTH = 4  # how deep below skills/<folder>/ a Codex plugin's SKILL.md is looked for


def _nested_skills(plugin: Plugin, folder: str, limits: Limits, diagnostics: list[Diagnostic],
                   reader: _Reader) -> list[C.SkillEntry]:
    """A Codex plugin's skills below ``skills/<folder>/`` (Codex finds every SKILL.md under a skills
    folder: openai/plugins' moody-s ``skills/shared/citations/``, zoom's ``skills/meeting-sdk/web/``).
    Links are not followed and dot-folders are skipped; the top level is ``scan_skills``'. One
    ``scandir`` per folder, no ``stat`` beyond it (the walk runs at every thread/start)."""
    found: list[C.SkillEntry] = []
    real = reader.real_dir(folder)
    if not is_within(real, plugin.boundary.real):
        return found
    # (path as found, its real path, depth below the skills folder); links are never entered, so
    # a folder's real path is its parent's joined with its name
    pending = [(folder, real, 0)]
    while pending:
        path, real_path, depth = pending.pop()
        try:
            with os.scandir(real_path) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in it]
        except OSError:
            continue
        if depth >= 2 and any(name == "SKILL.md" and is_file for name, _, is_file in entries):
            if len(found) >= limits.max_skills_per_root:
                break
            parent, name = os.path.split(path)
            skill = C._scan_skill(plugin.boundary, parent, os.path.dirname(real_path), name, False, limits,
                                  diagnostics, plugin.dialect)
            if skill is not None:
                found.append(skill)
        if depth < NESTED_SKILL_DEPTH:
            pending += [(f"{path}/{name}", f"{real_path}/{name}", depth + 1)
                        for name, is_dir, _ in sorted(entries, reverse=True) if is_dir and not name.startswith(".")]
    return found


def _commands(plugin: Plugin, text: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader) -> None:
    declared = _paths(plugin, "commands", text, diagnostics, reader)
    if "commands" not in plugin.manifest:
        if "commands" not in plugin.entries:
            return
        plugin.commands = T.scan_folder(os.path.join(plugin.path, "commands"), plugin.boundary, plugin.name,
                                        plugin.origin, limits, diagnostics)
        return
    for path in declared:
        assert isinstance(path, str)
        if os.path.isdir(path):
            plugin.commands += T.scan_folder(path, plugin.boundary, plugin.name, plugin.origin, limits, diagnostics)
        elif path.endswith(".md"):
            plugin.commands += T.scan_folder(os.path.dirname(path), plugin.boundary, plugin.name, plugin.origin,
                                             limits, diagnostics, files=[path])


def _agent_files(plugin: Plugin, text: str, diagnostics: list[Diagnostic], reader: _Reader) -> list[str]:
    if "agents" not in plugin.manifest:
        declared: list[Any] = [os.path.join(plugin.path, "agents")] if "agents" in plugin.entries else []
    else:
        declared = _paths(plugin, "agents", text, diagnostics, reader)
    files: list[str] = []
    for path in declared:
        if os.path.isdir(path):
            try:
                files += sorted(os.path.join(path, n) for n in os.listdir(path)
                                if n.endswith(".md") and not n.startswith("."))
            except OSError:
                continue
        elif isinstance(path, str) and path.endswith(".md") and os.path.isfile(path):
            files.append(path)
    return files


def _agents(plugin: Plugin, text: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader) -> None:
    for path in _agent_files(plugin, text, diagnostics, reader):
        stem = os.path.basename(path)[:-3]
        name, description = stem, ""
        try:
            data = reader.prefix(path, plugin.boundary, limits)
            fm = frontmatter.parse(data, len(data) < limits.max_frontmatter_bytes, limits.max_frontmatter_bytes,
                                   required=False)
            if fm is not None:
                if isinstance(fm.data.get("name"), str):
                    name = fm.data["name"].strip()
                if isinstance(fm.data.get("description"), str):
                    description = fm.data["description"].strip()
        except FrontmatterError as exc:
            diagnostics.append(Diagnostic.from_problem(exc.problem, path, severity="warning"))
        except DomainError as exc:
            diagnostics.append(Diagnostic.from_error(exc, path))
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic.unreadable(exc, path))
            continue
        plugin.agents.append(Agent(name, description, plugin.name, path, plugin.origin))


def _hook_document(path: str, data: Any, diagnostics: list[Diagnostic]) -> dict[str, Any] | None:
    """One hooks declaration (``{"hooks": {Event: [...]}}``) if it has that shape and declares something.

    Only the wrapper is checked here (``invalid_hooks``: the file contributes nothing); the events,
    matchers and handlers are read by ``hooks.declared.read_hooks``, as a root's ``hooks.json`` is.
    """
    if not isinstance(data, dict):
        diagnostics.append(Diagnostic("invalid_hooks", f"{path}: hooks must be a JSON object; they are ignored", path))
        return None
    if not data:
        return None  # "hooks": {} (Codex's manifests): nothing declared
    if not isinstance(data.get("hooks"), dict):
        diagnostics.append(Diagnostic("invalid_hooks", f"{path} has no \"hooks\" object wrapping the events; its "
                                      "hooks are ignored", path, "write {\"hooks\": {\"PreToolUse\": [...]}}"))
        return None
    return data


def _hooks(plugin: Plugin, text: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader) -> None:
    """The plugin's hooks declarations. Claude Code reads ``hooks/hooks.json`` and adds the manifest's
    ``hooks`` (the default file named again is read once); Codex reads the manifest's ``hooks`` *instead
    of* the default file when the field is there (``"hooks": {}`` declares none)."""
    declared: list[Any] = []
    default = os.path.join(plugin.path, DEFAULT_HOOKS)
    replaces = plugin.dialect == "codex" and "hooks" in plugin.manifest
    if "hooks" in plugin.entries and os.path.isfile(default) and not replaces:
        declared.append(default)
    for item in _paths(plugin, "hooks", text, diagnostics, reader, allow_inline=True):
        if isinstance(item, str) and any(isinstance(d, str) and os.path.realpath(d) == os.path.realpath(item)
                                         for d in declared):
            continue  # the same file named twice: read once
        declared.append(item)
    for item in declared:
        if isinstance(item, dict):
            if "hooks" not in item and item and all(isinstance(v, list) for v in item.values()):
                item = {"hooks": item}  # the events inline, unwrapped: Claude Code reads them so
            document = _hook_document(plugin.manifest_path, item, diagnostics)
            if document is not None:
                plugin.hook_documents.append((plugin.manifest_path, document))
            continue
        try:
            parsed = json.loads(reader.read(item, plugin.boundary, limits.max_file_bytes, "hooks file"))
        except json.JSONDecodeError as exc:
            diagnostics.append(Diagnostic("invalid_hooks", f"{item} is not JSON: {exc.msg}; its hooks are ignored",
                                          item, line=exc.lineno, column=exc.colno))
            continue
        except (DomainError, UnicodeDecodeError, OSError) as exc:
            diagnostics.append(Diagnostic("invalid_hooks", f"{item} cannot be read: {exc}", item))
            continue
        document = _hook_document(item, parsed, diagnostics)
        if document is not None:
            plugin.hook_documents.append((item, document))


def _read_hook_sets(plugin: Plugin, why_untrusted: str, diagnostics: list[Diagnostic]) -> None:
    """The plugin's hook declarations read into handlers, under one ``plugin:<name>`` source with its trust."""
    if not plugin.hook_documents:
        plugin.hook_sets = []
        return
    from harness_sidecar.hooks.declared import Declared, HookSource, read_hooks  # only a plugin with hooks

    plugin.hook_sets = []
    for path, document in plugin.hook_documents:
        source = HookSource(f"plugin:{plugin.name}", path, plugin_root=plugin.path,
                            plugin_data=plugin_data_dir(plugin.name, plugin.boundary.real), trusted=plugin.trust.hooks,
                            why_untrusted="" if plugin.trust.hooks else why_untrusted,
                            pin=plugin.trust.pin if plugin.trust.hooks else None)
        handlers, problems = read_hooks(source, document)
        diagnostics.extend(problems)
        plugin.hook_sets.append(Declared(source, handlers, problems))


def _mcp(plugin: Plugin, text: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader) -> None:
    declared: list[Any] = []
    default = os.path.join(plugin.path, ".mcp.json")
    if ".mcp.json" in plugin.entries and os.path.isfile(default):
        declared.append(default)
    for item in _paths(plugin, "mcpServers", text, diagnostics, reader, allow_inline=True):
        if not (isinstance(item, str) and os.path.realpath(item) == os.path.realpath(default)):
            declared.append(item)
    seen: set[str] = set()
    named: dict[str, str] = {}  # the name it runs under -> its key
    for item in declared:
        where = plugin.manifest_path
        if isinstance(item, dict):
            data: Any = item
        else:
            where = item
            try:
                data = json.loads(reader.read(item, plugin.boundary, limits.max_file_bytes, "MCP servers file"))
            except json.JSONDecodeError as exc:
                diagnostics.append(Diagnostic("invalid_mcp_servers", f"{item} is not JSON: {exc.msg}; its servers "
                                              "are ignored", item, line=exc.lineno, column=exc.colno))
                continue
            except (DomainError, UnicodeDecodeError, OSError) as exc:
                diagnostics.append(Diagnostic("invalid_mcp_servers", f"{item} cannot be read: {exc}", item))
                continue
        if not isinstance(data, dict):
            diagnostics.append(Diagnostic("invalid_mcp_servers", f"{where}: MCP servers must be a JSON object",
                                          where))
            continue
        # {"mcpServers": {name: {...}}}, or the servers directly (many real .mcp.json files)
        servers = data["mcpServers"] if isinstance(data.get("mcpServers"), dict) else data
        for server, spec in servers.items():
            problem = plugin_server_key_problem(server)
            if problem is not None:
                pass
            elif not isinstance(spec, dict):
                problem = "its entry must be an object"
            elif server in seen:
                problem = "a server of that name is already declared by the plugin"
            elif named.get(plugin_mcp_server_name(plugin.name, server), server) != server:
                problem = (f"its tool names would be those of server {named[plugin_mcp_server_name(plugin.name, server)]!r} "
                           "(both become " + plugin_mcp_server_name(plugin.name, server) + ")")
            if problem is not None:
                diagnostics.append(Diagnostic("invalid_mcp_servers", f"{where}: MCP server {server!r} is left out: "
                                              f"{problem}", where, extra={"plugin": plugin.name}))
                continue
            seen.add(server)
            named[plugin_mcp_server_name(plugin.name, server)] = server
            transport = spec.get("type") if isinstance(spec.get("type"), str) else "stdio"
            if transport in ("http", "sse"):  # remote (protocol-v4 §4): started when trusted, as stdio ones
                url = spec.get("url")
                headers = spec.get("headers", {})
                # a url that is empty or not http(s) (real plugins ship "url": "" for the user to fill in) is
                # listed as written; trusted, its start fails saying so (mcp_unavailable)
                if (not isinstance(url, str) or not isinstance(headers, dict)
                        or not all(isinstance(v, str) for v in headers.values())):
                    diagnostics.append(Diagnostic("invalid_mcp_servers", f"{where}: MCP server {server!r} is left "
                                                  f"out: a {transport} server needs url (a string) and headers "
                                                  "(string values) if given", where, extra={"plugin": plugin.name}))
                    continue
                remote = McpServer(plugin.name, server, None, [], {}, None, transport, url, where, plugin.origin)
                remote.headers = dict(headers)
                oauth = spec.get("oauth")
                if isinstance(oauth, dict):  # Claude Code's: a pre-registered client and its fixed port
                    if isinstance(oauth.get("clientId"), str) and oauth["clientId"]:
                        remote.oauth["clientId"] = oauth["clientId"]
                    port = oauth.get("callbackPort")
                    if type(port) is int and 0 < port < 65536:
                        remote.oauth["callbackPort"] = port
                plugin.mcp_servers.append(remote)
                continue
            if transport != "stdio":
                diagnostics.append(Diagnostic(
                    "mcp_transport_unsupported", f"MCP server '{server}' of plugin '{plugin.name}' uses the "
                    f"'{transport}' transport; only stdio, http and sse servers run here, so it is listed and "
                    "never started",
                    where, extra={"plugin": plugin.name, "server": server, "transport": transport,
                                  "severity": "warning"}))
                url = spec.get("url") if isinstance(spec.get("url"), str) else None
                plugin.mcp_servers.append(McpServer(plugin.name, server, None, [], {}, None, transport, url, where,
                                                    plugin.origin))
                continue
            command = spec.get("command")
            args = spec.get("args", [])
            env = spec.get("env", {})
            cwd = spec.get("cwd")
            if (not isinstance(command, str) or not command or not isinstance(args, list)
                    or not all(isinstance(a, str) for a in args) or not isinstance(env, dict)
                    or not all(isinstance(v, str) for v in env.values()) or not (cwd is None or isinstance(cwd, str))):
                diagnostics.append(Diagnostic("invalid_mcp_servers", f"{where}: MCP server {server!r} is left out: "
                                              "it needs command (a string), and args (strings), env (string values) "
                                              "and cwd (a string) if given", where, extra={"plugin": plugin.name}))
                continue
            plugin.mcp_servers.append(McpServer(plugin.name, server, command, args, env, cwd, "stdio", None, where,
                                                plugin.origin))


def _extensions(plugin: Plugin) -> None:
    if "extensions" not in plugin.entries:
        return
    folder = os.path.join(plugin.boundary.real, "extensions")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        ext_id = name[:-3] if name.endswith(".py") else name
        if name.startswith(".") or name_problem(ext_id):
            continue
        if name.endswith(".py") or os.path.isfile(os.path.join(folder, name, "__init__.py")):
            full = f"{plugin.name}:{ext_id}"
            if full not in plugin.extension_paths:
                plugin.extensions.append(full)
                plugin.extension_paths[full] = os.path.join(plugin.path, "extensions", name)
