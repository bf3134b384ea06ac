"""Params of every method the sidecar serves: declared once as shapes, parsed into records.

Each shape below is both the params' JSON Schema (``wire/protocol.py`` puts it in the
document ``harness-sidecar schema`` prints) and their parser: a wrong shape is ``-32602``,
``data.kind = "invalid_params"``, ``data.field`` naming the field (``roots[0]``,
``trustedExtensions[0].sha256``, ``limits.hookTimeoutMs``). Editors may send fields the
sidecar does not read (ignored), and ``null`` for an optional field means "absent".
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from harness_sidecar.base.errors import InvalidParams
from harness_sidecar.base.inputschema import InvalidSchema
from harness_sidecar.base.inputschema import compile as compile_schema
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.records import Record
from harness_sidecar.base.names import (
    MAX_NAME_LENGTH,
    MCP_SERVER_NAME,
    NAME_PATTERN,
    TOOL_NAME,
    WINDOWS_DEVICE_NAMES,
    name_problem,
)
from harness_sidecar.base.results import ToolCall
from harness_sidecar.resources.named_extensions import ExplicitExtension, TrustedExtension
from harness_sidecar.wire.shapes import (
    MISSING,
    AnyValue,
    Shape,
    Arr,
    Bool,
    Convert,
    Either,
    Field,
    Int,
    Map,
    Obj,
    Str,
    opt,
)

if TYPE_CHECKING:
    from harness_sidecar.mcp.model import McpServerConfig

BUILTIN_TOOLS = ("load_skill", "find_skills", "tool_search")  # builtin names (tool_search: v4 §5, with deferToolsOver), never a dynamic tool's
SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
DEFAULT_INPUT_SCHEMA = {"type": "object", "properties": {}}


# -- the values params are made of ----------------------------------------------------------

def _check_extension_id(value: str, where: str) -> None:
    why = name_problem(value)
    if why:
        why = why[len(repr(value)) + 1:] if why.startswith(repr(value) + " ") else why  # not the id twice
        raise InvalidParams(f"'{where}': extension id {value!r} {why}", where)


def _check_absolute_path(value: str, where: str) -> None:
    if "\x00" in value:
        raise InvalidParams(f"'{where}' contains a NUL character", where)
    if not value.startswith("/") or not os.path.isabs(value):
        raise InvalidParams(f"'{where}' must be an absolute path, not {value!r}", where)


def _check_mcp_server_name(value: str, where: str) -> None:
    if "__" in value:
        raise InvalidParams(f"'{where}': server name {value!r} must not contain '__' (it separates the parts of "
                            "mcp__<server>__<tool>)", where)


THREAD_ID = Str(name="ThreadId", description="A thread's id, as thread/start answered it (thread-N).")
SESSION_ID = Str(name="SessionId", pattern=r"[A-Za-z0-9._:-]{1,128}",
                 pattern_error="'{where}': session id {value!r} must be 1-128 of A-Za-z0-9._:-",
                 description="An editor-chosen, stable name of a conversation: 1-128 of A-Za-z0-9._:- (thread ids "
                             "stay per process).")
EXTENSION_ID = Str(
    name="ExtensionId", check=_check_extension_id,
    description="An extension's id: the skill-name rule (lower-case letters and digits in groups joined by single "
                "hyphens, at most 64 characters, not a Windows device name).",
    schema_extra={"pattern": f"^(?:{NAME_PATTERN.pattern})$", "maxLength": MAX_NAME_LENGTH,
                  "not": {"enum": sorted(WINDOWS_DEVICE_NAMES)}})
ABSOLUTE_PATH = Str(name="AbsolutePath", check=_check_absolute_path,
                    description="An absolute path (no NUL character).",
                    schema_extra={"pattern": "^/[^\\u0000]*$"})
JSON_OBJECT = Map(AnyValue(), name="JsonObject", description="Any JSON object.")
INPUT_SCHEMA = Map(AnyValue(), name="InputSchema",
                   description="A JSON Schema (draft 2020-12 unless its $schema names another draft) that the "
                               "arguments of a tool or command must satisfy.")
REQUEST_ID = Either(Str(), Int(), name="RequestId", error="'{where}' must be a string or an integer, not {type}")
TOOL_NAME_SHAPE = Str(pattern=TOOL_NAME.pattern, name="ToolName",
                      pattern_error="'{where}': tool name {value!r} must be 1-64 letters, digits, '_' or '-'",
                      description="1-64 of A-Za-z0-9_-.")


# -- thread/start ------------------------------------------------------------------------------

# The records thread/start makes are written out (``base.records``), not ``@dataclass``: the first
# thread/start of a fresh process imports this module, and a dataclass compiles its methods then.

class TrustedHooks(Record):
    """A hooks file the editor lets run (protocol-v3 §5), maybe pinned to its sha256."""

    __slots__ = ("path", "sha256")

    def __init__(self, path: str, sha256: str | None = None) -> None:
        self.path = path
        self.sha256 = sha256


class DynamicTool(Record):
    """One of ``thread/start.dynamicTools``: a tool the editor runs (``item/tool/call``)."""

    __slots__ = ("name", "description", "input_schema", "compiled", "namespace", "hook_as")
    _uncompared = frozenset({"compiled"})

    def __init__(self, name: str, description: str, input_schema: dict[str, Any], compiled: Any = None,
                 namespace: str | None = None, hook_as: Any = None) -> None:
        self.name = name
        self.description = description
        self.input_schema = input_schema
        # The checked schema (inputschema.CompiledSchema), so the tool need not compile it again.
        self.compiled = compiled
        self.namespace = namespace  # a Codex namespace's tool: listed as <namespace>__<tool> (protocol-v4 §5)
        self.hook_as = hook_as  # hooks.vocabulary.HookAs: the tool as command hooks see it (protocol-v4 §3)


class ThreadStartParams(Record):
    """``thread/start``'s params, parsed (``THREAD_START_PARAMS``)."""

    __slots__ = ("roots", "trusted_extensions", "extensions", "dynamic_tools", "limits", "cwd",
                 "extension_settings", "watch", "mcp_servers", "trusted_hooks", "plugins", "disabled_plugins",
                 "trusted_plugins", "marketplaces", "session_id", "resume", "state")

    def __init__(self, roots: list[str], trusted_extensions: list[TrustedExtension] | None = None,
                 extensions: list[ExplicitExtension] | None = None, dynamic_tools: list[DynamicTool] | None = None,
                 limits: Limits | None = None, cwd: str | None = None,
                 extension_settings: dict[str, dict[str, Any]] | None = None, watch: bool = True,
                 mcp_servers: list[McpServerConfig] | None = None, trusted_hooks: list[TrustedHooks] | None = None,
                 plugins: list[str] | None = None, disabled_plugins: list[str] | None = None,
                 trusted_plugins: list[TrustedPlugin] | None = None, marketplaces: list[str] | None = None,
                 session_id: str | None = None, resume: bool = False, state: dict[str, Any] | None = None) -> None:
        self.roots = roots
        self.trusted_extensions = [] if trusted_extensions is None else trusted_extensions
        self.extensions = [] if extensions is None else extensions
        self.dynamic_tools = [] if dynamic_tools is None else dynamic_tools
        self.limits = Limits() if limits is None else limits
        self.cwd = cwd
        self.extension_settings = {} if extension_settings is None else extension_settings
        self.watch = watch
        self.mcp_servers = [] if mcp_servers is None else mcp_servers
        self.trusted_hooks = [] if trusted_hooks is None else trusted_hooks
        self.plugins = [] if plugins is None else plugins
        self.disabled_plugins = [] if disabled_plugins is None else disabled_plugins
        self.trusted_plugins = [] if trusted_plugins is None else trusted_plugins
        self.marketplaces = [] if marketplaces is None else marketplaces  # protocol-v4 §3 "Marketplaces, read"
        # protocol-v4 §5: threads that resume
        self.session_id = session_id
        self.resume = resume
        self.state = state  # extension id → its state, overriding what is saved


class TrustedPlugin(Record):
    """One entry of ``thread/start.trustedPlugins``: which of a plugin's code may run."""

    __slots__ = ("name", "sha256", "hooks", "mcp_servers", "extensions", "path")

    def __init__(self, name: str, sha256: str | None = None, hooks: bool = True, mcp_servers: bool | list[str] = True,
                 extensions: bool | list[str] = True, path: str | None = None) -> None:
        self.name = name
        self.sha256 = sha256
        self.hooks = hooks
        self.mcp_servers = mcp_servers
        self.extensions = extensions
        self.path = path  # the plugin's folder: the grant applies to the candidate there only


def _no_repeats(attr: str, message: str, suffix: str = "",
                seed: tuple[str, ...] = ()) -> Callable[[list[Any], str], None]:
    """An ``Arr(unique=...)`` check: an item whose ``attr`` an earlier item (or ``seed``) has is invalid params.

    ``message`` is a fixed template the editor's text only fills: ``{where}`` is the item's path
    (``mcpServers[1]``), ``{value}`` the repeated value; ``data.field`` is that path + ``suffix``.
    """
    def check(items: list[Any], where: str) -> None:
        seen = set(seed)
        for i, item in enumerate(items):
            value = getattr(item, attr)
            if value in seen:
                path = f"{where}[{i}]"
                raise InvalidParams(message.format(where=path, value=value), path + suffix)
            seen.add(value)
    return check


_unique_trusted = _no_repeats("id", "'{where}': extension '{value}' is trusted twice")
_unique_explicit = _no_repeats("id", "'{where}': extension id '{value}' is listed twice", ".id")
_unique_servers = _no_repeats("name", "'{where}.name': MCP server '{value}' is listed twice", ".name")
_unique_plugins = _no_repeats("name", "'{where}.name': plugin '{value}' is trusted twice", ".name")


def _mcp_server_config(name: str, command: list[str] | None = None, env: dict[str, str] | None = None,
                       cwd: str | None = None, required: bool = False, startup_timeout_ms: int = 10000,
                       tools: dict[str, Any] | None = None, type: str = "stdio", url: str | None = None,
                       headers: dict[str, str] | None = None, hook_as: dict[str, Any] | None = None) -> McpServerConfig:
    # Imported here, by the first thread/start naming a server: not on every thread/start's way.
    from harness_sidecar.mcp.model import McpServerConfig

    return McpServerConfig(name, command or [], env or {}, cwd, required, startup_timeout_ms,
                           (tools or {}).get("allow"), (tools or {}).get("deny") or [],
                           transport=type, url=url, headers=headers or {}, hook_as=hook_as or {})


def _check_mcp_transport(config: McpServerConfig, where: str) -> None:
    """stdio needs ``command``; ``http`` and ``sse`` need an http(s) ``url`` and take no ``command``."""
    if config.transport == "stdio":
        if not config.command:
            raise InvalidParams(f"'{where}.command' is required (a stdio server; a remote one has type "
                                "\"http\" or \"sse\" and a url)", f"{where}.command")
        if config.url is not None:
            raise InvalidParams(f"'{where}.url' is for a remote server: give type \"http\" or \"sse\"",
                                f"{where}.url")
        return
    if config.url is None:
        raise InvalidParams(f"'{where}.url' is required (a {config.transport} server)", f"{where}.url")
    if config.command:
        raise InvalidParams(f"'{where}.command' is for a stdio server, not a {config.transport} one",
                            f"{where}.command")


def _hook_as(name: str, input: dict[str, str] | None = None) -> Any:
    from harness_sidecar.hooks.vocabulary import HookAs

    return HookAs(name, dict(input or {}))


def _check_hook_as_input(value: Any, where: str) -> None:
    seen: dict[str, str] = {}
    for theirs, ours in value.input.items():
        if ours in seen:
            raise InvalidParams(f"'{where}': fields '{seen[ours]}' and '{theirs}' both name our field '{ours}'",
                                f"{where}.input.{theirs}")
        seen[ours] = theirs


HOOK_AS = Obj(
    [Field("name", TOOL_NAME_SHAPE, description="The tool's name in the harness the hooks were written for "
                                                "(Claude Code's Bash, Read, Edit…; Codex's apply_patch): "
                                                "matchers, if rules and tool_name see this name."),
     opt("input", Map(Str()),
         description="{<their field>: <our field>}: tool_input has our field under their name (fields not "
                     "in the map pass through); an updatedInput is mapped back before validation.")],
    cls=_hook_as, incoming=True, check=_check_hook_as_input, name="HookAs",
    description="The tool as command hooks see it (protocol.md § The tool vocabulary hooks were written for).",
    error="'{where}' must be an object {{name, input?}}")


def _compile_dynamic(tool: DynamicTool, where: str) -> None:
    try:
        tool.compiled = compile_schema(tool.input_schema)
    except InvalidSchema as exc:
        raise InvalidParams(f"'{where}.inputSchema' is not valid JSON Schema: {exc.message}",
                            f"{where}.inputSchema") from None


PINNED_EXTENSION = Obj(
    [Field("id", EXTENSION_ID),
     opt("path", ABSOLUTE_PATH,
         description="The extension's .py file or package folder (compared canonically): the grant applies to "
                     "the candidate there only. Without it, an explicit source of this id (thread/start.extensions) "
                     "counts as the path."),
     opt("sha256", Str(pattern=SHA256_HEX.pattern, pattern_error="'{where}' must be 64 hexadecimal digits"),
         description="The extension's bytes must hash to this (any case), or it is not imported (hash_mismatch).")],
    cls=lambda id, path=None, sha256=None: TrustedExtension(id, sha256.lower() if sha256 else None, path),
    incoming=True, name="PinnedExtension",
    description="A grant applies to the candidates (same-id extensions of every root and explicit source) that "
                "match all it names; it takes effect only when exactly one matches and that one wins its id "
                "(otherwise nothing runs: trust_ambiguous).")
TRUSTED_EXTENSION = Either(
    Convert(EXTENSION_ID, TrustedExtension), PINNED_EXTENSION, name="TrustedExtension",
    error="'{where}' must be an id string or an {{id, path?, sha256?}} object")
EXPLICIT_EXTENSION = Obj(
    [Field("id", EXTENSION_ID),
     Field("path", ABSOLUTE_PATH, description="A .py file or a package directory.")],
    cls=ExplicitExtension, incoming=True, name="ExplicitExtension",
    error="'{where}' must be an object {{id, path}}")
def _function_tool(name: str, description: str = "", input_schema: dict[str, Any] | None = None,
                   type: str | None = None, hook_as: Any = None) -> DynamicTool:
    return DynamicTool(name, description, input_schema if input_schema is not None else dict(DEFAULT_INPUT_SCHEMA),
                       hook_as=hook_as)


_DYNAMIC_FIELDS = [
    opt("type", Str(enum=("function",)), description="Codex's tag of a function tool; may be left out."),
    Field("name", Str(pattern=TOOL_NAME.pattern, pattern_error=TOOL_NAME_SHAPE.pattern_error,
                      schema_extra={"not": {"enum": list(BUILTIN_TOOLS)}}),
          description="1-64 of A-Za-z0-9_-; not a builtin tool's name nor another dynamic tool's."),
    opt("description", Str(), default=""),
    opt("inputSchema", INPUT_SCHEMA, attr="input_schema",
        description="Must be valid JSON Schema. Default: {\"type\": \"object\", \"properties\": {}}."),
    opt("hookAs", HOOK_AS, attr="hook_as")]
DYNAMIC_TOOL = Obj(
    _DYNAMIC_FIELDS, cls=_function_tool, incoming=True, check=_compile_dynamic, name="DynamicTool",
    description="A tool the editor executes (item/tool/call).",
    error="'{where}' must be an object {{name, description, inputSchema}}")
_NAMESPACED_NAME = Str(pattern="[A-Za-z0-9_-]{1,64}",
                       pattern_error="'{where}': {value!r} must be 1-64 letters, digits, '_' or '-'",
                       check=lambda value, where: _no_separator(value, where), schema_extra={"not": {"pattern": "__"}})


def _no_separator(value: str, where: str) -> None:
    if "__" in value:
        raise InvalidParams(f"'{where}': {value!r} must not contain '__' (it separates <namespace>__<tool>)", where)


NAMESPACE_TOOL = Obj(
    [Field("type", Str(enum=("function",)), description="Codex's only kind of namespaced tool."),
     Field("name", _NAMESPACED_NAME, description="1-64 of A-Za-z0-9_-, without '__'."),
     *_DYNAMIC_FIELDS[2:]],
    cls=_function_tool, incoming=True, check=_compile_dynamic, name="DynamicNamespaceTool",
    error="'{where}' must be an object {{type: \"function\", name, description, inputSchema}}")


def _namespace(type: str, name: str, tools: list[DynamicTool], description: str = "") -> list[DynamicTool]:
    for tool in tools:
        tool.namespace, tool.name = name, f"{name}__{tool.name}"
    return tools


def _check_flattened(tools: list[DynamicTool], where: str) -> None:
    for i, tool in enumerate(tools):
        if len(tool.name) > 64:
            path = f"{where}.tools[{i}].name"
            raise InvalidParams(f"'{path}': '{tool.name}' is longer than 64 characters", path)


DYNAMIC_NAMESPACE = Obj(
    [Field("type", Str(enum=("namespace",))),
     Field("name", _NAMESPACED_NAME, description="1-64 of A-Za-z0-9_-, without '__': the tools are listed as "
                                                 "<namespace>__<tool>."),
     Field("tools", Arr(NAMESPACE_TOOL, min_items=1)),
     opt("description", Str(), default="")],
    cls=_namespace, incoming=True, check=_check_flattened, name="DynamicToolNamespace",
    description="Codex's namespace of dynamic tools: each nested tool is flattened to <namespace>__<tool> "
                "(at most 64 characters, else invalid params) and called with item/tool/call {tool: "
                "<namespace>__<tool>, namespace}.")


class _DynamicEntry(Shape):
    """One ``dynamicTools`` entry: a function tool, or (``type: "namespace"``) Codex's namespace of them."""

    json_types = (dict,)
    expected = "an object"

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"oneOf": [DYNAMIC_TOOL.schema(defs), DYNAMIC_NAMESPACE.schema(defs)]}

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is dict and value.get("type") == "namespace":
            return DYNAMIC_NAMESPACE.parse(value, where)
        return [DYNAMIC_TOOL.parse(value, where)]


class _DynamicTools(Arr):
    """``dynamicTools``: the entries, namespaces flattened; a name declared twice is invalid params."""

    def parse(self, value: Any, where: str) -> Any:
        entries = super().parse(value, where)
        seen = set(BUILTIN_TOOLS)
        tools = []
        for i, entry in enumerate(entries):
            for j, tool in enumerate(entry):
                if tool.name in seen:
                    path = f"{where}[{i}].tools[{j}].name" if tool.namespace else f"{where}[{i}].name"
                    raise InvalidParams(f"'{path}': tool '{tool.name}' is already declared", path)
                seen.add(tool.name)
                tools.append(tool)
        return tools


DYNAMIC_TOOLS = _DynamicTools(_DynamicEntry())
_LIMIT_DEFAULTS = Limits()
LIMITS = Obj(
    [opt(wire, Int(minimum=0, default=getattr(_LIMIT_DEFAULTS, attr), error="'{where}' must be a non-negative integer")
         if wire not in Limits.MINIMUMS else Int(minimum=Limits.MINIMUMS[wire], default=getattr(_LIMIT_DEFAULTS, attr)),
         attr=attr) for wire, attr in Limits.WIRE_NAMES.items() if wire not in Limits.STRING_LIMITS]
    + [opt("commandHookFailure", Str(enum=Limits.STRING_LIMITS["commandHookFailure"], default="closed"),
           attr="command_hook_failure",
           description="What a failed command hook of an event that can block does: \"closed\" (default) blocks "
                       "(hook_failed); \"open\" reports a diagnostic and lets the call go on.")],
    cls=Limits, incoming=True, closed=True, null_absent=False, name="Limits",
    unknown_error="unknown limit '{key}'; known: {known}",
    description="Bounds the thread runs under; each a non-negative integer. An unknown limit is invalid params.")
TRUSTED_HOOKS = Obj(
    [Field("path", ABSOLUTE_PATH, description="A root's hooks file: hooks.json, settings.json, settings.local.json "
                                            "or config.toml (also under its .claude/ and .codex/)."),
     opt("sha256", Str(pattern=SHA256_HEX.pattern, pattern_error="'{where}' must be 64 hexadecimal digits"),
         description="The file must hash to this (any case), or its hooks do not run (hook_untrusted).")],
    cls=lambda path, sha256=None: TrustedHooks(path, sha256.lower() if sha256 else None),
    incoming=True, name="TrustedHooks", error="'{where}' must be an object {{path, sha256?}}")
MCP_SERVER = Obj(
    [Field("name", Str(pattern=MCP_SERVER_NAME.pattern, check=_check_mcp_server_name,
                       pattern_error="'{where}': server name {value!r} must be 1-32 letters, digits, '_' or '-'",
                       schema_extra={"not": {"pattern": "__"}}),
           description="1-32 of A-Za-z0-9_-, without '__'; unique in the list."),
     opt("type", Str(enum=("stdio", "http", "sse"), default="stdio"),
         description="stdio (a child process, the default), http (streamable HTTP, MCP 2025-06-18) or sse "
                     "(the 2024-11-05 HTTP+SSE transport)."),
     opt("command", Arr(Str(), min_items=1), description="argv of the server (stdio; required there)."),
     opt("url", Str(pattern=r"^https?://\S+$", pattern_error="'{where}' must be an http:// or https:// URL"),
         description="The server's endpoint (http and sse; required there)."),
     opt("headers", Map(Str()), description="HTTP headers sent with every request (http and sse); ${VAR} is "
                                            "expanded from the sidecar's environment, an unset VAR as empty."),
     opt("env", Map(Str()), description="Added to the sidecar's environment."),
     opt("cwd", ABSOLUTE_PATH, description="Default: the sidecar's working directory."),
     opt("required", Bool(default=False), description="A required server that fails fails thread/start "
                                                     "(error kind mcp_unavailable)."),
     opt("startupTimeoutMs", Int(minimum=0, default=10000), attr="startup_timeout_ms"),
     opt("tools", Obj([opt("allow", Arr(Str())), opt("deny", Arr(Str()))], incoming=True),
         description="Filters on the server's own tool names; deny wins."),
     opt("hookAs", Map(HOOK_AS), attr="hook_as",
         description="{<the server's tool name>: {name, input?}}: how command hooks see those tools.")],
    cls=_mcp_server_config, incoming=True, check=_check_mcp_transport, name="McpServerConfig",
    # stdio (type absent, null or "stdio") needs command and takes no url; http and sse the other way round
    **{"if": {"properties": {"type": {"enum": ["http", "sse"]}}, "required": ["type"]},
       "then": {"required": ["url"], "properties": {"url": {"type": "string"}, "command": {"type": "null"}}},
       "else": {"required": ["command"], "properties": {"command": {"type": "array"}, "url": {"type": "null"}}}},
    description="An MCP server the editor chose for this thread: stdio (command) or remote (type http|sse, url, "
                "headers?).")
def _check_plugin_name(value: str, where: str) -> None:
    why = name_problem(value)
    if why:
        raise InvalidParams(f"'{where}': plugin name {value!r} {why}", where)


PLUGIN_NAME = Str(name="PluginName", check=_check_plugin_name,
                  description="A plugin's name (its manifest's name): the skill-name rule.",
                  schema_extra={"pattern": f"^(?:{NAME_PATTERN.pattern})$", "maxLength": MAX_NAME_LENGTH})


def _check_disabled_plugin(value: str, where: str) -> None:
    if value.startswith("/"):
        _check_absolute_path(value, where)
    else:
        _check_plugin_name(value, where)


DISABLED_PLUGIN = Str(name="DisabledPlugin", check=_check_disabled_plugin,
                      description="A plugin's name, or an absolute path: the plugin in that folder (compared "
                                  "canonically).",
                      schema_extra={"anyOf": [{"pattern": f"^(?:{NAME_PATTERN.pattern})$",
                                               "maxLength": MAX_NAME_LENGTH},
                                              {"pattern": "^/[^\\u0000]*$"}]})
_SOME_OR_ALL = Either(Bool(), Arr(Str()), error="'{where}' must be true, false or a list of names")
TRUSTED_PLUGIN = Obj(
    [Field("name", PLUGIN_NAME),
     opt("path", ABSOLUTE_PATH,
         description="The plugin's folder (compared canonically): the grant applies to the candidate there only. "
                     "Without it, a thread/start.plugins folder of this name counts as the path."),
     opt("sha256", Str(pattern=SHA256_HEX.pattern, pattern_error="'{where}' must be 64 hexadecimal digits"),
         description="The plugin's whole tree must hash to this (protocol.md § Plugins), or none of its code "
                     "is trusted (hash_mismatch)."),
     opt("hooks", Bool(default=True), description="Its command hooks may run. Default true."),
     opt("mcpServers", _SOME_OR_ALL, default=True, attr="mcp_servers",
         description="Its MCP servers may start: all (true), none (false) or those named. Default true."),
     opt("extensions", _SOME_OR_ALL, default=True,
         description="Its extensions may be imported: all, none or those ids (without the plugin prefix). "
                     "Default true.")],
    cls=lambda name, path=None, sha256=None, hooks=True, mcp_servers=True, extensions=True: TrustedPlugin(
        name, sha256.lower() if sha256 else None, hooks, mcp_servers, extensions, path),
    incoming=True, name="TrustedPlugin",
    description="Code of a plugin the editor trusts, from the user's settings; its data needs no trust. It applies "
                "to the same-name plugins (every root's and thread/start.plugins') matching all it names, and takes "
                "effect only when exactly one matches and that one wins its name (otherwise: trust_ambiguous).")
THREAD_START = Obj(
    [Field("roots", Arr(ABSOLUTE_PATH), description="Ordered: the earlier root wins a resource of the same kind "
                                                    "and name."),
     opt("trustedExtensions", Arr(TRUSTED_EXTENSION, unique=_unique_trusted),
         description="The only extensions ever imported, in this order; an id listed twice is invalid params."),
     opt("extensions", Arr(EXPLICIT_EXTENSION, unique=_unique_explicit),
         description="Explicit extension sources; one wins over a root's extension of the same id and counts as "
                     "the path of a trustedExtensions grant of its id that names none. An id listed twice is invalid "
                     "params."),
     opt("dynamicTools", DYNAMIC_TOOLS, attr="dynamic_tools",
         description="Tools the editor runs; a Codex type:\"namespace\" entry's tools are flattened to "
                     "<namespace>__<tool>. A name declared twice (after flattening) is invalid params."),
     opt("limits", LIMITS),
     opt("cwd", ABSOLUTE_PATH, description="The user's working directory, for extensions (ctx.cwd)."),
     opt("extensionSettings", Map(JSON_OBJECT), description="Settings per extension id (ctx.settings); settings "
                                                           "for an untrusted or unknown id are a diagnostic."),
     opt("watch", Bool(default=True), description="Watch the roots and send catalog/changed."),
     opt("mcpServers", Arr(MCP_SERVER, unique=_unique_servers), attr="mcp_servers"),
     opt("trustedHooks", Arr(TRUSTED_HOOKS), attr="trusted_hooks",
         description="Hooks files whose command hooks may run (protocol.md § Command hooks); every other declared "
                     "hook is listed untrusted and never run."),
     opt("plugins", Arr(ABSOLUTE_PATH), description="Plugin folders besides the roots' plugins/<name>/ (e.g. "
                                                    "the user's Claude Code or Codex plugin cache), in order. One "
                                                    "wins its name over a root's plugin and counts as the path of a "
                                                    "trustedPlugins grant of its name that names none."),
     opt("disabledPlugins", Arr(DISABLED_PLUGIN), attr="disabled_plugins",
         description="Plugins the thread leaves out: by name, or (an absolute path) by folder."),
     opt("trustedPlugins", Arr(TRUSTED_PLUGIN, unique=_unique_plugins), attr="trusted_plugins",
         description="The only plugins whose code (hooks, MCP servers, extensions) may run."),
     opt("marketplaces", Arr(ABSOLUTE_PATH), description="Marketplaces besides the roots' (v4): a marketplace.json, "
                                                         "or a folder holding .claude-plugin/marketplace.json or "
                                                         ".agents/plugins/marketplace.json; listed in "
                                                         "catalog.marketplaces, their local plugins loaded."),
     opt("sessionId", SESSION_ID, attr="session_id",
         description="The editor's stable name of the conversation: extension state and activated skills are saved "
                     "under it (protocol.md § Sessions)."),
     opt("resume", Bool(default=False),
         description="Hand back what was saved under sessionId (extension state, activated skills); requires "
                     "sessionId. Without it a sessionId starts afresh."),
     opt("state", Map(AnyValue()),
         description="Extension id → its state (JSON, at most limits.extensionStateBytes as compact JSON): "
                     "overrides what is saved; the shape thread/close answers.")],
    cls=ThreadStartParams, incoming=True, name="ThreadStartParams", check=lambda start, where: _check_session(start))


def _check_session(start: ThreadStartParams) -> None:
    if start.resume and start.session_id is None:
        raise InvalidParams("'resume' needs a 'sessionId' to resume", "resume")
    for ext_id, value in (start.state or {}).items():
        _check_extension_id(ext_id, f"state.{ext_id}")
        size = _json_size(value)
        if size > start.limits.extension_state_bytes:
            raise InvalidParams(f"'state.{ext_id}' is {size} bytes as JSON; the limit is "
                                f"{start.limits.extension_state_bytes} (limits.extensionStateBytes)", f"state.{ext_id}")


def _json_size(value: Any) -> int:
    import json

    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def parse_thread_start(params: dict[str, Any]) -> ThreadStartParams:
    return THREAD_START.parse(params, "")


# -- requests naming a thread ---------------------------------------------------------------------

THREAD_PARAMS = Obj([Field("threadId", THREAD_ID)], incoming=True, name="ThreadParams")


def thread_id(params: dict[str, Any]) -> str:
    value = params.get("threadId", MISSING)
    if type(value) is str:
        return value
    if value is MISSING:
        raise InvalidParams("'threadId' is required", "threadId")
    raise THREAD_ID.wrong_type(value, "threadId")


# Records new with v2 are NamedTuples: a dataclass costs ~0.5 ms (frozen: ~0.9 ms) to create at
# import, on the way to the first thread/start; a NamedTuple ~0.1 ms.


class ToolsCallParams(NamedTuple):
    thread_id: str
    revision: int | None
    call: ToolCall


TOOL_CALL = Obj(
    [Field("id", REQUEST_ID, description="Comes back as the result's toolCallId."),
     Field("name", Str()),
     opt("arguments", JSON_OBJECT, default_factory=dict)],
    cls=ToolCall, incoming=True, name="ToolCall")
TOOLS_CALL = Obj(
    [Field("threadId", THREAD_ID),
     opt("revision", Int(minimum=1), default=None,
         description="The catalog revision the model saw (tools/list); a tool removed or changed since is stale_tool."),
     Field("call", TOOL_CALL)],
    cls=ToolsCallParams, incoming=True, name="ToolsCallParams")


def parse_tools_call(params: dict[str, Any]) -> ToolsCallParams:
    return TOOLS_CALL.parse(params, "")


class SkillsActivateParams(NamedTuple):
    thread_id: str
    name: str
    resources: list[str]
    path: str | None = None  # a candidate's SKILL.md: chooses a shadowed same-name skill (protocol-v4 §5)


class SkillsDeactivateParams(NamedTuple):
    thread_id: str
    name: str


class ThreadForkParams(NamedTuple):
    thread_id: str
    session_id: str | None = None


class TemplatesRenderParams(NamedTuple):
    thread_id: str
    name: str
    arguments: dict[str, Any]
    text: str | None = None


class CommandsRunParams(NamedTuple):
    thread_id: str
    name: str
    arguments: dict[str, Any]
    text: str | None = None  # the rest of a slash line, instead of arguments (v3)


def _commands_run(thread_id: str, name: str, arguments: dict[str, Any] | None = None,
                  text: str | None = None) -> CommandsRunParams:
    if arguments is not None and text is not None:
        raise InvalidParams("'text' and 'arguments' exclude each other: give one", "text")
    return CommandsRunParams(thread_id, name, arguments if arguments is not None else {}, text)


class InputSubmitParams(NamedTuple):
    thread_id: str
    text: str


class LoopEventParams(NamedTuple):
    thread_id: str
    event: str
    payload: dict[str, Any]


SKILLS_ACTIVATE = Obj(
    [Field("threadId", THREAD_ID), Field("name", Str()),
     opt("resources", Arr(Str(error="'{where}' must be a string")), default_factory=list,
         description="Paths relative to the skill's directory; each answered once, in request order."),
     opt("path", ABSOLUTE_PATH, default=None,
         description="A candidate's SKILL.md path (the catalog's winner or a shadowed same-name skill): that one "
                     "is activated; a path that is no candidate of the name is skill_not_found, never the winner.")],
    cls=SkillsActivateParams, incoming=True, name="SkillsActivateParams")
SKILLS_DEACTIVATE = Obj([Field("threadId", THREAD_ID), Field("name", Str())], cls=SkillsDeactivateParams,
                        incoming=True, name="SkillsDeactivateParams")
THREAD_FORK = Obj(
    [Field("threadId", THREAD_ID, description="The open thread to fork."),
     opt("sessionId", SESSION_ID, default=None, description="The new thread's session (where its state is saved).")],
    cls=ThreadForkParams, incoming=True, name="ThreadForkParams")
TEMPLATES_RENDER = Obj(
    [Field("threadId", THREAD_ID), Field("name", Str()),
     opt("arguments", Map(Str(), values_checked_later=True), default_factory=dict,
         description="Values must be strings (else error kind invalid_arguments); extra arguments are ignored."),
     opt("text", Str(), default=None,
         description="What the user typed after /<name>: fills a command template's $ARGUMENTS, $1…$9 and "
                     "$NAME; for a {{variable}} template it is read as key=value words.")],
    cls=TemplatesRenderParams, incoming=True, name="TemplatesRenderParams")
COMMANDS_RUN = Obj(
    [Field("threadId", THREAD_ID), Field("name", Str()),
     opt("arguments", JSON_OBJECT, default=None,
         description="Checked against the command's inputSchema (else error kind invalid_arguments)."),
     opt("text", Str(), default=None,
         description="Instead of arguments: the rest of a slash line. A command registered with raw_arguments "
                     "receives {text}; another command's text is read as key=value words.")],
    cls=_commands_run, incoming=True, name="CommandsRunParams",
    description="arguments and text exclude each other (invalid params on 'text' when both are given).")
INPUT_SUBMIT = Obj([Field("threadId", THREAD_ID), Field("text", Str(), description="What the user typed.")],
                   cls=InputSubmitParams, incoming=True, name="InputSubmitParams")
CANCEL = Obj([Field("id", REQUEST_ID, description="The id of the request to cancel.")], incoming=True,
             name="CancelParams")


class McpResourceReadParams(NamedTuple):
    thread_id: str
    server: str
    uri: str


class McpPromptGetParams(NamedTuple):
    thread_id: str
    server: str
    name: str
    arguments: dict[str, str]


MCP_RESOURCE_READ = Obj(
    [Field("threadId", THREAD_ID), Field("server", Str(), description="The MCP server's name, as in the catalog."),
     Field("uri", Str(), description="A listed resource's uri, or one a listed uriTemplate expands to.")],
    cls=McpResourceReadParams, incoming=True, name="McpResourceReadParams")
MCP_PROMPT_GET = Obj(
    [Field("threadId", THREAD_ID), Field("server", Str()), Field("name", Str(), description="The prompt's name."),
     opt("arguments", Map(Str()), default_factory=dict, description="The prompt's arguments (strings).")],
    cls=McpPromptGetParams, incoming=True, name="McpPromptGetParams")


def parse_mcp_resource_read(params: dict[str, Any]) -> McpResourceReadParams:
    return MCP_RESOURCE_READ.parse(params, "")


def parse_mcp_prompt_get(params: dict[str, Any]) -> McpPromptGetParams:
    return MCP_PROMPT_GET.parse(params, "")


def parse_skills_activate(params: dict[str, Any]) -> SkillsActivateParams:
    return SKILLS_ACTIVATE.parse(params, "")


def parse_skills_deactivate(params: dict[str, Any]) -> SkillsDeactivateParams:
    return SKILLS_DEACTIVATE.parse(params, "")


def parse_thread_fork(params: dict[str, Any]) -> ThreadForkParams:
    return THREAD_FORK.parse(params, "")


def parse_templates_render(params: dict[str, Any]) -> TemplatesRenderParams:
    return TEMPLATES_RENDER.parse(params, "")


def parse_commands_run(params: dict[str, Any]) -> CommandsRunParams:
    return COMMANDS_RUN.parse(params, "")


def parse_input_submit(params: dict[str, Any]) -> InputSubmitParams:
    return INPUT_SUBMIT.parse(params, "")


# -- loop/event (v3) -------------------------------------------------------------------------------


class _LoopEvent(Shape):
    """``loop/event`` params: the schema has one variant per event (its payload closed); parsing is
    ``loop.parse_payload``, made from the same table (``loop.PAYLOADS``)."""

    json_types = (dict,)
    expected = "an object"

    def _variants(self) -> list[Obj]:
        from harness_sidecar.hooks.loop import PAYLOADS

        shapes = {str: Str(), bool: Bool(), dict: JSON_OBJECT, list: Arr(AnyValue()), int: Int()}
        variants = []
        for event, fields in PAYLOADS.items():
            payload = Obj([Field(key, shapes[kind], required=required) for key, (kind, required) in fields.items()],
                          incoming=True, closed=True, name=f"LoopEventPayload_{event}")
            needed = any(required for _, required in fields.values())
            variants.append(Obj([Field("threadId", THREAD_ID), Field("event", Str(enum=(event,))),
                                 Field("payload", payload, required=needed)], incoming=True))
        return variants

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"oneOf": [v.schema(defs) for v in self._variants()]}

    def parse(self, value: Any, where: str) -> Any:
        from harness_sidecar.hooks.loop import parse_payload

        if type(value) is not dict:
            raise self.wrong_type(value, where)
        thread = thread_id(value)
        if "event" not in value:
            raise InvalidParams("'event' is required", "event")
        return LoopEventParams(thread, value["event"], parse_payload(value["event"], value.get("payload")))


LOOP_EVENT = _LoopEvent(name="LoopEventParams",
                        description="The editor's agent loop reports a boundary; payload fields by event "
                                    "(protocol.md § Loop events). An unknown payload field is invalid params.")


def parse_loop_event(params: dict[str, Any]) -> LoopEventParams:
    return LOOP_EVENT.parse(params, "")


# -- initialize ----------------------------------------------------------------------------------

UI_KEYS = ("confirm", "select", "input", "notify", "status", "elicit")  # threads.Sidecar._ui reads capabilities.ui.<key>
UI_CAPABILITIES = Obj([opt(key, Bool(), description=f"The editor can answer ui/{key}.") for key in UI_KEYS]
                      + [opt("sendMessage", Bool(), description="The editor takes chat/send (ctx.ui.send_message)."),
                         opt("draft", Bool(), description="v4: the editor takes chat/draft (ctx.ui.set_editor_text)."),
                         opt("compact", Bool(), description="v4: the editor takes chat/compact (ctx.ui.compact)."),
                         opt("model", Bool(), description="v4: the editor takes chat/model (ctx.ui.set_model)."),
                         opt("progress", Bool(), description="v4: the editor takes tools/progress (ctx.ui.progress)."),
                         opt("openUrl", Bool(), description="The editor can answer ui/openUrl (opens a remote MCP "
                                                            "server's sign-in page in the user's browser).")],
                      incoming=True, name="UiCapabilities",
                      description="What the editor can show; undeclared means unsupported.")
INITIALIZE = Obj(
    [opt("clientInfo", Obj([Field("name", Str()), opt("version", Str())], incoming=True, name="ClientInfo")),
     opt("protocolVersion", Str(), description="Logged when it is not 1 or 2; the answer is protocolVersion 2."),
     opt("capabilities", Obj([opt("ui", UI_CAPABILITIES),
                              opt("sampling", Bool(), description="The editor answers model/sample (an MCP server's "
                                                                  "sampling/createMessage, v4 §4)."),
                              opt("hookPrompt", Bool(), description="The editor's model answers hook/prompt: prompt "
                                  "and agent hooks run (protocol-v4 §3); without it they are listed supported: false "
                                  "and block what they decide."),
                              opt("conversation", Bool(), description="v4: the editor answers session/messages "
                                                                      "(ctx.messages, the context event's messages).")],
                             incoming=True, name="ClientCapabilities",
                             description="Other keys are ignored."))],
    incoming=True, name="InitializeParams",
    description="initialize never fails on its params: a capability that is not true is unsupported, a "
                "malformed clientInfo is ignored.")

