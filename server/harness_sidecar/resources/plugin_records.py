"""The records of plugins (``resources.plugins``): a ``Plugin`` and what it brings (``Agent``, ``McpServer``),
its ``Trust``, and the ``PluginSet`` a catalog holds; how a ``${CLAUDE_PLUGIN_ROOT}`` in a server's command
is filled in, and the check that a pinned extension's bytes are the ones its tree hash read."""

from __future__ import annotations

import hashlib
import os
import re
from typing import TYPE_CHECKING, Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.names import plugin_mcp_server_name
from harness_sidecar.base.records import Record
from harness_sidecar.resources import catalog as C
from harness_sidecar.resources import command_templates as T
from harness_sidecar.resources.catalog import Root

if TYPE_CHECKING:  # what a plugin's hooks are read into (resources.plugin_parts, when it has hooks), its pin
    from harness_sidecar.hooks.declared import Declared, Handler
    from harness_sidecar.resources import pins

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


def _substitute(value: str, root: str) -> str:
    return _VARIABLE.sub(lambda m: root, value)
