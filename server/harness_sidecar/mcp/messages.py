"""What an MCP server may send the sidecar, checked against the specification (2025-11-25 schema).

The client reads three results (``initialize``, ``tools/list``, ``tools/call``) and a handful of
server messages; each is checked here before anything uses it, as strictly as the official SDK's
client checks them (its pydantic models of the 2025-11-25 schema): a required field that is
missing or of the wrong JSON type, an unknown content type, an ``inputSchema`` whose ``type`` is
not ``"object"``, a ``structuredContent`` that is not an object... each makes the whole result
not valid (``Invalid``, with the path of the first offence). Fields the schema does not name are
ignored (the schema allows them); an optional field may be ``null``, as the SDK allows. Unlike
the SDK's lax parsing, a boolean is only ``true``/``false`` (not ``"yes"`` or ``1``).

Plain functions over what ``jsonio.loads`` gives: no model objects are built, the result the
caller gets is the dict it passed.
"""

from __future__ import annotations

from typing import Any

LATEST_VERSION = "2025-11-25"  # offered in initialize
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # accepted in its answer

# JSON-RPC 2.0 error codes the client sends
METHOD_NOT_FOUND = -32601


class Invalid(ValueError):
    """A message or result that breaks the protocol; ``str()`` says what and where."""


# -- JSON-RPC envelopes -----------------------------------------------------------------------------

REQUEST, NOTIFICATION, RESPONSE, ERROR = "request", "notification", "response", "error"


def is_id(value: Any) -> bool:
    """A JSON-RPC id as MCP allows it: a string or an integer (not null, not a boolean, not a float)."""
    return type(value) is str or type(value) is int


def classify(message: Any) -> str:
    """Which JSON-RPC 2.0 message ``message`` is, or ``Invalid``.

    Requests and notifications carry an object ``params`` or none (MCP's params are objects);
    a response's ``result`` is an object (every MCP result is); an error's ``error`` has an
    integer ``code`` and a string ``message``, and its ``id`` may be null (a parse error).
    Batches (arrays), which no revision this client negotiates after 2025-03-26 allows, are not
    accepted, as the SDK does not accept them.
    """
    if type(message) is not dict:
        raise Invalid(f"a JSON-RPC message is an object, not {_kind(message)}")
    if message.get("jsonrpc") != "2.0":
        raise Invalid('a JSON-RPC message has "jsonrpc": "2.0"')
    if "method" in message:
        if type(message["method"]) is not str:
            raise Invalid("the method of a request or notification is a string")
        params = message.get("params")
        if params is not None and type(params) is not dict:
            raise Invalid("the params of an MCP request or notification are an object")
        if "id" not in message:
            return NOTIFICATION
        if not is_id(message["id"]):
            raise Invalid("a request id is a string or an integer")
        return REQUEST
    if "result" in message:
        if not is_id(message.get("id")):
            raise Invalid("a response id is a string or an integer")
        if type(message["result"]) is not dict:
            raise Invalid("an MCP result is an object")
        return RESPONSE
    if "error" in message:
        ident = message.get("id")
        if ident is not None and not is_id(ident):
            raise Invalid("an error response's id is a string, an integer or null")
        error = message["error"]
        if type(error) is not dict or type(error.get("code")) is not int or type(error.get("message")) is not str:
            raise Invalid("a JSON-RPC error has an integer code and a string message")
        return ERROR
    raise Invalid("neither a request, a notification nor a response")


# -- small checks -----------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "a boolean"
    if type(value) in (int, float):
        return "a number"
    if type(value) is str:
        return "a string"
    if type(value) is list:
        return "an array"
    if type(value) is dict:
        return "an object"
    return type(value).__name__


_NAMES = {str: "a string", bool: "a boolean", dict: "an object", list: "an array", int: "an integer"}


def _need(obj: dict[str, Any], key: str, typ: type, where: str) -> Any:
    """A required field of an exact JSON type."""
    if key not in obj:
        raise Invalid(f"{where}.{key} is missing")
    value = obj[key]
    if type(value) is not typ:
        raise Invalid(f"{where}.{key} must be {_NAMES[typ]}, not {_kind(value)}")
    return value


def _may(obj: dict[str, Any], key: str, typ: type, where: str) -> Any:
    """An optional field: absent, null, or of an exact JSON type."""
    value = obj.get(key)
    if value is not None and type(value) is not typ:
        raise Invalid(f"{where}.{key} must be {_NAMES[typ]}, not {_kind(value)}")
    return value


def _strings(value: Any, where: str) -> None:
    if value is not None:
        if type(value) is not list or not all(type(item) is str for item in value):
            raise Invalid(f"{where} must be an array of strings")


def _meta(obj: dict[str, Any], where: str) -> None:
    _may(obj, "_meta", dict, where)


def _one_of(obj: dict[str, Any], key: str, allowed: tuple[str, ...], where: str) -> None:
    value = obj.get(key)
    if value is not None and value not in allowed:
        raise Invalid(f"{where}.{key} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


def _icons(obj: dict[str, Any], where: str) -> None:
    icons = _may(obj, "icons", list, where)
    for i, icon in enumerate(icons or ()):
        here = f"{where}.icons[{i}]"
        if type(icon) is not dict:
            raise Invalid(f"{here} must be an object")
        _need(icon, "src", str, here)
        _may(icon, "mimeType", str, here)
        _strings(icon.get("sizes"), f"{here}.sizes")
        _one_of(icon, "theme", ("light", "dark"), here)


def _annotations(obj: dict[str, Any], where: str) -> None:
    """Content annotations: audience, priority (0–1), lastModified."""
    annotations = _may(obj, "annotations", dict, where)
    if annotations is None:
        return
    here = f"{where}.annotations"
    audience = annotations.get("audience")
    if audience is not None and (type(audience) is not list or not all(a in ("user", "assistant") for a in audience)):
        raise Invalid(f"{here}.audience must be an array of \"user\" and \"assistant\"")
    priority = annotations.get("priority")
    if priority is not None and (type(priority) not in (int, float) or not 0 <= priority <= 1):
        raise Invalid(f"{here}.priority must be a number from 0 to 1")
    _may(annotations, "lastModified", str, here)


def _object_schema(schema: Any, where: str) -> None:
    """``inputSchema``/``outputSchema``: an object schema at the root (whether it is valid JSON Schema
    beyond that is the tool pipeline's question, as it is for every tool)."""
    if type(schema) is not dict:
        raise Invalid(f"{where} must be an object, not {_kind(schema)}")
    if schema.get("type") != "object":
        raise Invalid(f'{where}.type must be "object"')
    _may(schema, "$schema", str, where)
    properties = _may(schema, "properties", dict, where)
    for name, sub in (properties or {}).items():
        if type(sub) is not dict and type(sub) is not bool:
            raise Invalid(f"{where}.properties[{name!r}] must be an object or a boolean")
    _strings(schema.get("required"), f"{where}.required")


# -- initialize -------------------------------------------------------------------------------------


def check_initialize(result: dict[str, Any]) -> str:
    """An ``InitializeResult``; returns its ``protocolVersion`` (whether it is one we speak is the caller's)."""
    where = "result"
    version = _need(result, "protocolVersion", str, where)
    capabilities = _need(result, "capabilities", dict, where)
    here = f"{where}.capabilities"
    for key in ("logging", "completions", "tasks"):
        _may(capabilities, key, dict, here)
    experimental = _may(capabilities, "experimental", dict, here)
    for key, value in (experimental or {}).items():
        if type(value) is not dict:
            raise Invalid(f"{here}.experimental[{key!r}] must be an object")
    for key, flags in (("prompts", ("listChanged",)), ("resources", ("subscribe", "listChanged")),
                       ("tools", ("listChanged",))):
        entry = _may(capabilities, key, dict, here)
        for flag in flags if entry is not None else ():
            _may(entry, flag, bool, f"{here}.{key}")
    info = _need(result, "serverInfo", dict, where)
    here = f"{where}.serverInfo"
    _need(info, "name", str, here)
    _need(info, "version", str, here)
    for key in ("title", "description", "websiteUrl"):
        _may(info, key, str, here)
    _icons(info, here)
    _may(result, "instructions", str, where)
    _meta(result, where)
    return version


# -- tools/list -------------------------------------------------------------------------------------


def check_tools_page(result: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """A ``ListToolsResult``: its tools (each checked) and its ``nextCursor``."""
    tools = _need(result, "tools", list, "result")
    for i, tool in enumerate(tools):
        _check_tool(tool, f"result.tools[{i}]")
    cursor = _may(result, "nextCursor", str, "result")
    _meta(result, "result")
    return tools, cursor


def _check_tool(tool: Any, where: str) -> None:
    if type(tool) is not dict:
        raise Invalid(f"{where} must be an object, not {_kind(tool)}")
    _need(tool, "name", str, where)
    if "inputSchema" not in tool:
        raise Invalid(f"{where}.inputSchema is missing")
    _object_schema(tool["inputSchema"], f"{where}.inputSchema")
    if tool.get("outputSchema") is not None:
        _object_schema(tool["outputSchema"], f"{where}.outputSchema")
    _may(tool, "title", str, where)
    _may(tool, "description", str, where)
    annotations = _may(tool, "annotations", dict, where)
    if annotations is not None:
        here = f"{where}.annotations"
        _may(annotations, "title", str, here)
        for flag in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
            _may(annotations, flag, bool, here)
    execution = _may(tool, "execution", dict, where)
    if execution is not None:
        _one_of(execution, "taskSupport", ("forbidden", "optional", "required"), f"{where}.execution")
    _icons(tool, where)
    _meta(tool, where)


# -- tools/call -------------------------------------------------------------------------------------


def check_call_result(result: dict[str, Any]) -> None:
    """A ``CallToolResult``: ``content`` an array of content blocks, ``isError`` a boolean,
    ``structuredContent`` an object (the latter two optional)."""
    content = result.get("content")
    if type(content) is not list:
        raise Invalid("result.content is missing" if content is None and "content" not in result
                      else f"result.content must be an array, not {_kind(content)}")
    for i, item in enumerate(content):
        if type(item) is dict and item.get("type") == "text" and type(item.get("text")) is str \
                and len(item) == 2:
            continue  # the common case, fully checked
        _check_block(item, f"result.content[{i}]")
    _may(result, "isError", bool, "result")
    _may(result, "structuredContent", dict, "result")
    _meta(result, "result")


_BLOCKS = ("text", "image", "audio", "resource_link", "resource")


def _check_block(item: Any, where: str) -> None:
    if type(item) is not dict:
        raise Invalid(f"{where} must be an object, not {_kind(item)}")
    kind = item.get("type")
    if kind not in _BLOCKS:
        raise Invalid(f"{where}.type must be one of {', '.join(map(repr, _BLOCKS))}, not {kind!r}")
    if kind == "text":
        _need(item, "text", str, where)
    elif kind in ("image", "audio"):
        _need(item, "data", str, where)
        _need(item, "mimeType", str, where)
    elif kind == "resource_link":
        _need(item, "name", str, where)
        _need(item, "uri", str, where)
        for key in ("title", "description", "mimeType"):
            _may(item, key, str, where)
        _may(item, "size", int, where)
        _icons(item, where)
    else:
        resource = _need(item, "resource", dict, where)
        here = f"{where}.resource"
        _need(resource, "uri", str, here)
        _may(resource, "mimeType", str, here)
        _meta(resource, here)
        if type(resource.get("text")) is not str and type(resource.get("blob")) is not str:
            raise Invalid(f"{here} must have a string text or a string blob")
    _annotations(item, where)
    _meta(item, where)
