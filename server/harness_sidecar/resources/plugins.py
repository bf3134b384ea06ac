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

import errno
import hashlib
import json
import os
import re
import stat
from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.hooks.declared import Declared, HookSource, Handler, read_hooks
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.names import (
    name_problem,
    plugin_mcp_server_name,
    plugin_server_key_problem,
)
from harness_sidecar.resources import catalog as C
from harness_sidecar.resources import command_templates as T
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources import grants, pins
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Root
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.resources.paths import is_within, read_contained
from harness_sidecar.base.records import Record
from harness_sidecar.base.state_dir import plugin_data_dir

MANIFESTS = (("codex", ".codex-plugin/plugin.json"), ("claude", ".claude-plugin/plugin.json"))
DEFAULT_HOOKS = "hooks/hooks.json"
PLUGIN_ROOT_VARIABLES = ("CLAUDE_PLUGIN_ROOT", "PLUGIN_ROOT")
_VARIABLE = re.compile(r"\$\{(CLAUDE_PLUGIN_ROOT|PLUGIN_ROOT)\}")


# -- the records ----------------------------------------------------------------------------------

class Plugin(Record):
    __slots__ = ("name", "version", "path", "boundary", "dialect", "manifest_path", "manifest", "root",
                 "skills", "commands", "agents", "hook_documents", "hook_sets", "mcp_servers", "extensions", "extension_paths", "trust", "origin", "entries",
                 "pin_state")
    _uncompared = frozenset(["pin_state"])  # derived from the tree, once a pin asks

    def __init__(self, name: str, version: str | None, path: str, boundary: Root, dialect: str,
                 manifest_path: str, manifest: dict[str, Any], root: Root | None) -> None:
        self.name = name
        self.version = version
        self.path = path
        self.boundary = boundary  # the plugin's folder: every file it names must stay inside
        self.dialect = dialect  # "claude" | "codex": which manifest was read
        self.manifest_path = manifest_path
        self.manifest = manifest
        self.root = root  # the root whose plugins/ holds it; None: thread/start.plugins
        self.skills: list[C.SkillEntry] = []
        self.commands: list[T.CommandTemplate] = []
        self.agents: list[Agent] = []
        self.hook_documents: list[tuple[str, dict[str, Any]]] = []  # (declaring file, {"hooks": ...}) as read
        self.hook_sets: list[Declared] = []  # the same, read into handlers once its trust is known (_grant)
        self.mcp_servers: list[McpServer] = []
        self.extensions: list[str] = []  # ids, <plugin>:<id>
        self.extension_paths: dict[str, str] = {}  # <plugin>:<id> -> its .py file or package folder
        self.trust = Trust()
        self.pin_state: Any = None  # (tree hash, file digests) or pins.PinLinkEscape, once a pin asked (_pin_digest)
        self.entries: frozenset[str] = frozenset()  # the names in its folder: one listing, not a stat per part
        self.origin = self._origin()  # provenance of everything it brings (``source`` on the wire)

    @property
    def hooks(self) -> list[Handler]:
        """Its command hook handlers, in declaration order."""
        return [h for d in self.hook_sets for h in d.handlers]

    def _origin(self) -> dict[str, Any]:
        plugin: dict[str, Any] = {"name": self.name}
        if self.version is not None:
            plugin["version"] = self.version
        plugin["path"] = self.path
        out: dict[str, Any] = {"kind": "plugin"}
        if self.root is not None:
            out["root"] = self.root.path
        out["plugin"] = plugin
        return out

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.version is not None:
            out["version"] = self.version
        out.update(path=self.path, manifest=self.manifest_path, dialect=self.dialect, source=self.origin,
                   skills=[s.name for s in self.skills], commands=[c.name for c in self.commands],
                   agents=[a.name for a in self.agents], hooks=len(self.hooks),
                   mcpServers=[m.server for m in self.mcp_servers], extensions=list(self.extensions))
        out["trusted"] = self.trust.to_wire(self)
        if self.trust.sha256 is not None:
            out["sha256"] = self.trust.sha256
        return out


class Trust(Record):
    """What ``trustedPlugins`` grants one plugin: nothing unless it is listed (and its pin holds)."""

    __slots__ = ("listed", "hooks", "mcp_servers", "extensions", "sha256", "pin")

    def __init__(self, listed: bool = False, hooks: bool = False, mcp_servers: bool | list[str] = False,
                 extensions: bool | list[str] = False, sha256: str | None = None) -> None:
        self.listed = listed
        self.hooks = hooks
        self.mcp_servers = mcp_servers
        self.extensions = extensions
        self.sha256 = sha256  # the tree's hash, when a pin asked for it
        self.pin: pins.TreePin | None = None  # a pin that held: checked again at each start of its code

    def mcp(self, server: str) -> bool:
        return self.mcp_servers is True or (isinstance(self.mcp_servers, list) and server in self.mcp_servers)

    def extension(self, ext_id: str) -> bool:
        return self.extensions is True or (isinstance(self.extensions, list) and ext_id in self.extensions)

    def to_wire(self, plugin: Plugin) -> dict[str, Any]:
        return {"hooks": self.hooks and bool(plugin.hooks),
                "mcpServers": [m.server for m in plugin.mcp_servers if m.trusted],
                "extensions": [e for e in plugin.extensions if self.extension(e.partition(":")[2])]}


class Agent(Record):
    __slots__ = ("name", "description", "plugin", "path", "origin")

    def __init__(self, name: str, description: str, plugin: str, path: str, origin: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.plugin = plugin
        self.path = path
        self.origin = origin

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "plugin": self.plugin, "path": self.path,
                "source": self.origin}


class McpServer(Record):
    __slots__ = ("plugin", "server", "name", "command", "args", "env", "cwd", "transport", "url", "trusted", "path",
                 "origin", "pin", "headers", "oauth")

    def __init__(self, plugin: str, server: str, command: str | None, args: list[str], env: dict[str, str],
                 cwd: str | None, transport: str, url: str | None, path: str, origin: dict[str, Any]) -> None:
        self.plugin = plugin
        self.server = server  # the key in .mcp.json
        self.name = plugin_mcp_server_name(plugin, server)  # as the sidecar runs it
        self.command = command
        self.args = args
        self.env = env
        self.cwd = cwd
        self.transport = transport  # "stdio" | "http" | "sse"
        self.url = url
        self.trusted = False
        self.path = path  # the file that declares it (or the manifest)
        self.origin = origin
        self.pin: pins.TreePin | None = None  # its plugin's pin, checked before each start
        self.headers: dict[str, str] = {}  # a remote server's (values with ${VAR} as written; never listed)
        self.oauth: dict[str, Any] = {}  # a remote server's pre-registered client: clientId, callbackPort

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "server": self.server, "plugin": self.plugin,
                               "transport": self.transport}
        if self.command is not None:
            out.update(command=self.command, args=list(self.args))
        if self.url is not None:
            out["url"] = self.url
        out.update(trusted=self.trusted, path=self.path, source=self.origin)
        return out

    def config(self) -> Any:
        """The ``mcp.model.McpServerConfig`` it starts with."""
        from harness_sidecar.mcp.model import McpServerConfig

        if self.transport != "stdio":  # http or sse (protocol-v4 §4): no process, the same grant
            return McpServerConfig(self.name, [], pin=self.pin, transport=self.transport, url=self.url,
                                   headers=dict(self.headers), oauth=dict(self.oauth))
        root = self.origin["plugin"]["path"]
        env = {k: _substitute(v, root) for k, v in self.env.items()}
        env.setdefault("CLAUDE_PLUGIN_ROOT", root)
        env.setdefault("PLUGIN_ROOT", root)
        cwd = _substitute(self.cwd, root) if self.cwd is not None else root
        if not os.path.isabs(cwd):
            cwd = os.path.join(root, cwd)
        return McpServerConfig(self.name, [_substitute(self.command or "", root)]
                               + [_substitute(a, root) for a in self.args], env, os.path.normpath(cwd),
                               pin=self.pin)


class PluginSet(Record):
    """What the plugins and the roots' ``commands/`` add to a catalog."""

    __slots__ = ("plugins", "command_templates", "marketplaces")

    def __init__(self, plugins: list[Plugin], command_templates: dict[str, T.CommandTemplate],
                 marketplaces: list[Any] | None = None) -> None:
        self.plugins = plugins
        self.command_templates = command_templates  # by name, sorted
        self.marketplaces = marketplaces or []  # resources.marketplaces.Marketplace, listed (protocol-v4 §3)

    @property
    def agents(self) -> list[Agent]:
        return [a for p in self.plugins for a in p.agents]

    @property
    def hooks(self) -> list[Declared]:
        """Every plugin's hook declarations, read, with their trust: the thread's command hooks run them
        (``hooks.boundaries.ThreadHooks``) and ``catalog.hooks`` lists them beside the roots'."""
        return [d for p in self.plugins for d in p.hook_sets]

    @property
    def mcp_servers(self) -> list[McpServer]:
        return [m for p in self.plugins for m in p.mcp_servers]

    def extension_sources(self, limits: Limits, diagnostics: list[Diagnostic]) -> dict[str, Any]:
        """Every plugin extension read and hashed (never imported), as ``resources.extension_sources`` gives a root's."""
        from harness_sidecar.resources.extension_sources import read_source

        found = {}
        for plugin in self.plugins:
            for ext_id, path in plugin.extension_paths.items():
                try:
                    found[ext_id] = read_source(ext_id, path, plugin.boundary, limits)
                    found[ext_id].origin = plugin.origin
                    if plugin.trust.pin is not None:
                        _bytes_as_pinned(plugin, found[ext_id])
                except DomainError as exc:
                    diagnostics.append(Diagnostic.from_error(exc, path))
                except OSError as exc:
                    diagnostics.append(Diagnostic.unreadable(exc, path))
        return found

    def trusted_extensions(self) -> list[str]:
        """The ids of the plugin extensions ``trustedPlugins`` grants, in plugin order."""
        return [e for p in self.plugins for e in p.extensions if p.trust.extension(e.partition(":")[2])]

    def mcp_source(self, server: str) -> dict[str, Any]:
        """Provenance of an MCP server's tools: its plugin's, or ``{kind: "mcp"}`` for the editor's servers."""
        for plugin in self.plugins:
            for declared in plugin.mcp_servers:
                if declared.name == server:
                    return plugin.origin
        return {"kind": "mcp"}

    def extension_source(self, source: Any) -> dict[str, Any] | None:
        """Provenance of an extension's tools: its root's, its plugin's, or the editor's (an explicit source)."""
        if source is None:
            return None
        plugin, sep, _ = source.id.partition(":")
        if sep:
            return next((p.origin for p in self.plugins if p.name == plugin), None)
        return C.root_origin(source.root) if source.root is not None else {"kind": "editor"}

    def mcp_configs(self) -> list[Any]:
        """The trusted servers (stdio, http, sse), as ``McpServerConfig``: the ones a thread starts."""
        return [m.config() for m in self.mcp_servers if m.trusted and m.transport in ("stdio", "http", "sse")]

    def to_wire(self) -> dict[str, Any]:
        return {"plugins": [p.to_wire() for p in self.plugins],
                "commandTemplates": [c.to_wire() for c in self.command_templates.values()],
                "agents": [a.to_wire() for a in self.agents],
                "mcpServers": [m.to_wire() for m in self.mcp_servers],
                **({"marketplaces": [m.to_wire() for m in self.marketplaces]} if self.marketplaces else {})}


def _bytes_as_pinned(plugin: Plugin, source: Any) -> None:
    """A pinned plugin's extension is imported from the very bytes its tree hash read: each file read
    for the host must have the digest the pin's hash took of it, or the extension is ``hash_mismatch``
    (a file swapped between the hash and this read never reaches the host)."""
    assert plugin.trust.pin is not None
    digests = plugin.trust.pin.files
    files = source.files if source.package else {"": source.code}
    for relative, data in files.items():
        # by where the file really is in the tree (a link inside the tree is hashed as a link, its target as a file)
        real = os.path.realpath(os.path.join(source.source, relative) if relative else source.source)
        name = os.path.relpath(real, plugin.boundary.real).replace(os.sep, "/")
        if digests.get(name) != hashlib.sha256(data).hexdigest():
            source.status = "hash_mismatch"
            source.error = (f"{name} changed after the tree of plugin '{plugin.name}' was hashed for its pin; "
                            "it is not imported")
            plugin.trust.extensions = False
            return


# -- the tree hash ----------------------------------------------------------------------------------

def tree_sha256(path: str) -> str:
    """The sha256 a ``trustedPlugins[].sha256`` pin is compared with (protocol.md § Plugins, "The tree
    hash"): ``resources.pins.tree_sha256`` — links hashed as links, never followed; raises
    ``pins.PinLinkEscape`` for a link that leaves the tree."""
    return pins.tree_sha256(path)


# -- finding plugins --------------------------------------------------------------------------------

def _key_line(text: str, key: str) -> int:
    """The 1-based line of the first ``"key":`` in ``text`` (1 when absent)."""
    match = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


# O_NONBLOCK: a FIFO named like a manifest is refused (not a regular file), never waited on
_O_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class _Reader:
    """Reads a plugin's small files, resolving each directory once (an ``lstat`` per new directory
    instead of a ``realpath`` of every file): what keeps 50 plugins near the cost of plain roots."""

    def __init__(self) -> None:
        self.dirs: dict[str, str] = {}  # path as found -> its real path
        # a marketplace file -> (its text, [(entry, the real folder its local source names)]), or None when it
        # cannot be read: read and resolved once for all the folders it may name (claude-plugins-official's
        # 16 manifest-less entries each looked through its ~250 entries: 4,000 realpaths, 40% of the scan)
        self.marketplaces: dict[str, tuple[str, list[tuple[Any, str | None]]] | None] = {}

    def known(self, path: str, real: str) -> None:
        self.dirs[path] = real

    def real_dir(self, path: str) -> str:
        """``os.path.realpath(path)`` of a normalised path, one ``lstat`` per directory not met before (an
        absolute path's parents are resolved, and remembered, first: plugins side by side share them)."""
        real = self.dirs.get(path)
        if real is None:
            parent, name = os.path.split(path)
            if parent != path and parent not in self.dirs and os.path.isabs(parent) and name not in ("", ".", ".."):
                self.real_dir(parent)
            if parent == path or parent not in self.dirs:
                real = os.path.realpath(path)
            else:
                below = f"{self.dirs[parent].rstrip('/')}/{name}"  # "/" and a name: one slash
                try:
                    real = os.path.realpath(path) if stat.S_ISLNK(os.lstat(below).st_mode) else below
                except OSError:
                    real = below  # missing: reading it says so
            self.dirs[path] = real
        return real

    def read(self, path: str, boundary: Root, max_bytes: int, what: str) -> bytes:
        """A whole regular file inside ``boundary`` (``DomainError`` as ``paths.read_contained``)."""
        directory, name = os.path.split(path)
        real_dir = self.real_dir(directory)
        if not is_within(real_dir, boundary.real):
            raise DomainError("path_escape", f"{what} {path} resolves to {real_dir}/{name}, outside {boundary.path}",
                              path=path)
        try:
            fd = os.open(f"{real_dir}/{name}", _O_FLAGS)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # the file is a link: check where it leads
                return read_contained(path, boundary.real, max_bytes, what)[1]
            raise DomainError("resource_not_found", f"{what} {path} cannot be opened: {exc.strerror}",
                              path=path) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise DomainError("resource_not_found", f"{what} {path} is not a regular file", path=path)
            if st.st_size > max_bytes:
                raise DomainError("too_large", f"{what} {path} is {st.st_size} bytes; the limit is {max_bytes}",
                                  path=path, size=st.st_size, limit=max_bytes)
            return os.read(fd, max_bytes + 1) if st.st_size < 65536 else read_contained(path, boundary.real,
                                                                                         max_bytes, what)[1]
        finally:
            os.close(fd)

    def prefix(self, path: str, boundary: Root, limits: Limits) -> bytes:
        """Just enough of a file inside ``boundary`` to hold its frontmatter."""
        directory, name = os.path.split(path)
        real_dir = self.real_dir(directory)
        if not is_within(real_dir, boundary.real):
            raise DomainError("path_escape", f"{path} resolves outside {boundary.path}", path=path)
        fd = C._open_in(directory, real_dir, name, boundary)
        try:
            return frontmatter.read_prefix(fd, limits.max_frontmatter_bytes)[0]
        finally:
            os.close(fd)


def _candidates(roots: list[Root], paths: list[str], diagnostics: list[Diagnostic],
                reader: _Reader) -> list[tuple[str, str, Root | None]]:
    """``(path, real path, root)`` of every plugin folder, in order."""
    found: list[tuple[str, str, Root | None]] = []
    for root in roots:
        folder = os.path.join(root.real, "plugins")
        try:
            with os.scandir(folder) as it:
                entries = sorted(((e.name, e.is_symlink()) for e in it if not e.name.startswith(".") and e.is_dir()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic("unreadable", f"{folder} cannot be listed: {exc.strerror}", folder))
            continue
        folder_real = os.path.realpath(folder)
        for name, is_link in entries:
            path = os.path.join(root.path, "plugins", name)
            real = os.path.realpath(path) if is_link or folder_real != folder else f"{folder_real}/{name}"
            if not is_within(real, root.real):
                diagnostics.append(Diagnostic("path_escape", f"plugin folder {path} resolves outside the root "
                                              f"{root.path}", path, "copy the plugin into the root instead of "
                                              "linking it, or list its path in thread/start.plugins"))
                continue
            found.append((path, real, root))
    for given in paths:
        path = os.path.normpath(given)
        if not os.path.isdir(path):
            diagnostics.append(Diagnostic("plugin_not_found", f"plugin {path} is not an existing directory", path,
                                          "check the path the editor sends in thread/start.plugins"))
            continue
        found.append((path, reader.real_dir(path), None))
    return found


def _read_manifest(path: str, real: str, limits: Limits, diagnostics: list[Diagnostic], reader: _Reader,
                   root: Root | None = None, entries: list[Any] | None = None,
                   ) -> tuple[str, str, dict[str, Any], str, frozenset[str]] | None:
    """``(dialect, manifest path, manifest, text)``, or ``None`` with a diagnostic. A folder without a
    manifest that a marketplace entry names: ``None``, and ``entries`` gets each such entry."""
    try:
        top = set(os.listdir(real))
    except OSError as exc:
        diagnostics.append(Diagnostic("unreadable", f"{path} cannot be listed: {exc.strerror}", path))
        return None
    present = [(d, rel) for d, rel in MANIFESTS
               if rel.split("/")[0] in top and os.path.isfile(os.path.join(real, rel))]
    if not present and entries is not None:
        entries.extend(_marketplace_entries(path, real, root, limits, diagnostics, reader))
        if entries:
            return None
    if not present:
        diagnostics.append(Diagnostic("not_a_plugin", f"{path} has neither .claude-plugin/plugin.json nor "
                                      ".codex-plugin/plugin.json; it is skipped", path,
                                      "add .claude-plugin/plugin.json with at least {\"name\": ...}"))
        return None
    dialect, rel = present[0]
    manifest_path = os.path.join(path, rel)
    try:
        data = reader.read(manifest_path, Root(path, real, -1), limits.max_file_bytes, "plugin manifest")
        text = data.decode("utf-8")
    except DomainError as exc:
        diagnostics.append(Diagnostic.from_error(exc, manifest_path))
        return None
    except UnicodeDecodeError as exc:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} is not UTF-8 ({exc.reason}); the "
                                      "plugin is left out", manifest_path, line=data.count(b"\n", 0, exc.start) + 1))
        return None
    except OSError as exc:
        diagnostics.append(Diagnostic.unreadable(exc, manifest_path))
        return None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} is not JSON: {exc.msg}; the plugin is "
                                      "left out", manifest_path, "fix the JSON (a trailing comma, a missing quote)",
                                      line=exc.lineno, column=exc.colno))
        return None
    if not isinstance(manifest, dict):
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} must be a JSON object; the plugin is "
                                      "left out", manifest_path, line=1))
        return None
    name = manifest.get("name")
    if not isinstance(name, str):
        what = "lacks 'name'" if name is None else "has a 'name' that is not a string"
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path} {what}; the plugin is left out",
                                      manifest_path, "add \"name\": \"<kebab-case name>\"",
                                      line=_key_line(text, "name") if name is not None else 1))
        return None
    why = name_problem(name)
    if why:
        diagnostics.append(Diagnostic("invalid_manifest", f"{manifest_path}: plugin name {name!r} {why}; the "
                                      "plugin is left out", manifest_path, line=_key_line(text, "name")))
        return None
    if len(present) > 1:
        other = os.path.join(path, present[1][1])
        other_name = _manifest_name(other, real, limits, reader)
        if other_name != name:
            said = f"names {other_name!r}" if other_name is not None else "names no plugin it can be read as"
            diagnostics.append(Diagnostic(
                "manifest_conflict", f"{manifest_path} names plugin {name!r} but {other} {said}: a plugin has one "
                "name, so this one is left out", manifest_path,
                "make both manifests name the same plugin, or remove one of them",
                extra={"name": name, "otherName": other_name, "paths": [manifest_path, other]}))
            return None
        diagnostics.append(Diagnostic("plugin_manifest_both", f"{path} has both .codex-plugin/plugin.json and "
                                      ".claude-plugin/plugin.json; the Codex manifest is read, the other ignored",
                                      manifest_path, extra={"ignored": other, "severity": "warning"}))
    hooks = manifest.get("hooks")
    for entry in hooks if isinstance(hooks, list) else [hooks]:
        if isinstance(entry, str) and os.path.normpath(entry) == DEFAULT_HOOKS and dialect == "claude":
            diagnostics.append(Diagnostic(
                "duplicate_hooks_file", f"{manifest_path} points 'hooks' at {entry}, which is loaded by default; "
                "it is read once (Claude Code 2.1 does the same)", manifest_path,
                "remove the 'hooks' field: hooks/hooks.json is read without it", line=_key_line(text, "hooks"),
                extra={"severity": "warning"}))
    return dialect, manifest_path, manifest, text, frozenset(top)


MARKETPLACES = (("claude", ".claude-plugin/marketplace.json"), ("codex", ".agents/plugins/marketplace.json"))
MARKETPLACE_ENTRY = "\0marketplace"  # set in the manifest made of a marketplace entry (no JSON key is a NUL)
MARKETPLACE_LEVELS = 4  # how far above a folder without a manifest its marketplace is looked for


def _entry_source(entry: dict[str, Any], base: str) -> str | None:
    """The folder a marketplace entry's local ``source`` names (``None``: remote, or no source)."""
    source = entry.get("source")
    if isinstance(source, dict) and source.get("source") == "local":
        source = source.get("path")
    if not isinstance(source, str) or not source or "://" in source or os.path.isabs(source):
        return None
    return os.path.realpath(os.path.join(base, source))


def _marketplace(file: str, base: str, limits: Limits,
                 reader: _Reader) -> tuple[str, list[tuple[Any, str | None]]] | None:
    """A marketplace file's text and its entries (objects only) with the real folder each local source
    names; ``None`` when there is none or it cannot be read. Once per file and ``_Reader``."""
    if file in reader.marketplaces:
        return reader.marketplaces[file]
    read: tuple[str, list[tuple[Any, str | None]]] | None = None
    if os.path.isfile(file):
        try:
            text = reader.read(file, Root(base, base, -1), limits.max_file_bytes, "marketplace").decode("utf-8")
            data = json.loads(text)
        except (DomainError, OSError, UnicodeDecodeError, ValueError, RecursionError):
            data = None
        if data is not None:
            listed = data.get("plugins") if isinstance(data, dict) else None
            read = (text, [(entry, _entry_source(entry, base)) for entry in (listed if isinstance(listed, list) else [])
                           if isinstance(entry, dict)])
    reader.marketplaces[file] = read
    return read


def _marketplace_entries(path: str, real: str, root: Root | None, limits: Limits, diagnostics: list[Diagnostic],
                         reader: _Reader) -> list[tuple[str, str, dict[str, Any], str, frozenset[str]]]:
    """Each entry of the nearest marketplace (``.claude-plugin/marketplace.json``, Codex's
    ``.agents/plugins/marketplace.json``) in the folder or up to MARKETPLACE_LEVELS above it (inside its
    root, for a root's ``plugins/``) whose local ``source`` is this folder: Claude Code's ``strict: false``
    entries and entries whose source has no manifest. The entry is the plugin's manifest; its paths are
    relative to the folder."""
    found: list[tuple[str, str, dict[str, Any], str, frozenset[str]]] = []
    base = real
    target = os.path.realpath(real)
    for _ in range(MARKETPLACE_LEVELS + 1):
        if root is not None and not is_within(base, root.real):
            break
        for dialect, rel in MARKETPLACES:
            file = os.path.join(base, rel)
            read = _marketplace(file, base, limits, reader)
            if read is None:
                continue
            text, listed = read
            for entry, source in listed:
                if source != target:
                    continue
                name = entry.get("name")
                shown = os.path.join(path, os.path.relpath(file, real)) if is_within(file, real) else file
                why = name_problem(name)
                if why:
                    diagnostics.append(Diagnostic("invalid_manifest", f"{shown}: marketplace entry {name!r} names "
                                                  f"{path}, but its name {why}; it is left out", shown,
                                                  line=_key_line(text, "name")))
                    continue
                manifest = {k: v for k, v in entry.items() if k not in ("source", "strict")}
                manifest[MARKETPLACE_ENTRY] = shown
                found.append((dialect, shown, manifest, text, frozenset(os.listdir(real))))
        if found:
            return found
        parent = os.path.dirname(base)
        if parent == base:
            break
        base = parent
    return found


def _manifest_name(manifest_path: str, real: str, limits: Limits, reader: _Reader) -> str | None:
    """The ``name`` a plugin's other manifest gives (``None`` when it cannot be read as one)."""
    try:
        data = json.loads(reader.read(manifest_path, Root(os.path.dirname(os.path.dirname(manifest_path)), real, -1),
                                      limits.max_file_bytes, "plugin manifest").decode("utf-8"))
    except (DomainError, OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


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


def _grant(plugin: Plugin, grant: Any, why: str, diagnostics: list[Diagnostic], sha256: str | None = None) -> None:
    """Apply the one ``trustedPlugins`` entry that chose ``plugin`` (``None``: nothing of its code is trusted,
    ``why``); the pin was checked when the grant was matched (``grants.resolve``)."""
    trust = Trust()
    if grant is not None:
        trust.listed = True
        if grant.sha256 is not None:  # grants.resolve chose it by its tree hash: _pin_digest's state
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
    if plugin.pin_state is None:
        real = plugin.boundary.real
        try:
            plugin.pin_state = (pins.vouched(real, expected) if expected else None) or pins.tree_state(real)
        except pins.PinLinkEscape as exc:
            plugin.pin_state = exc
    state = plugin.pin_state
    return "" if isinstance(state, pins.PinLinkEscape) else state[0]  # "" matches no pin


def _candidate(plugin: Plugin, winner: Plugin, expected: str | None) -> grants.Candidate:
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
    from harness_sidecar.resources import marketplaces as M

    diagnostics = catalog.diagnostics
    markets = M.find(catalog.roots, marketplace_paths or [], diagnostics)
    plugins = discover(catalog.roots, paths, disabled, trusted, limits, diagnostics, M.folders(markets))
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


def _substitute(value: str, root: str) -> str:
    return _VARIABLE.sub(lambda m: root, value)
