"""Params of every method, checked into dataclasses; a wrong shape is -32602 naming the field."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.errors import InvalidParams
from harness_sidecar.limits import Limits
from harness_sidecar.resources.names import name_problem

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
BUILTIN_TOOLS = ("load_skill",)  # claimed before any dynamic or extension tool
SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
_TYPE_NAMES = {str: "a string", dict: "an object", list: "an array", int: "an integer", bool: "a boolean"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {str: "string", dict: "object", list: "array", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), type(value).__name__)


def require(obj: dict[str, Any], key: str, kind: type, where: str = "", optional: bool = False,
            default: Any = None) -> Any:
    """Fetch ``obj[key]`` and check its JSON type; ``where`` prefixes the field name in errors."""
    name = f"{where}{key}"
    if key not in obj or (optional and obj[key] is None):
        if optional:
            return default
        raise InvalidParams(f"'{name}' is required", name)
    value = obj[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise InvalidParams(f"'{name}' must be {_TYPE_NAMES.get(kind, kind.__name__)}, not {_type_name(value)}", name)
    return value


def thread_id(params: dict[str, Any]) -> str:
    return require(params, "threadId", str)


@dataclass
class TrustedExtension:
    id: str
    sha256: str | None = None


@dataclass
class ExplicitExtension:
    id: str
    path: str


@dataclass
class DynamicTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ThreadStartParams:
    roots: list[str]
    trusted_extensions: list[TrustedExtension] = field(default_factory=list)
    extensions: list[ExplicitExtension] = field(default_factory=list)
    dynamic_tools: list[DynamicTool] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)


def _extension_id(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidParams(f"'{name}' must be a string, not {_type_name(value)}", name)
    why = name_problem(value)
    if why:
        raise InvalidParams(f"'{name}': extension id '{value}' {why}", name)
    return value


def _absolute_path(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"'{name}' must be a non-empty string, not {_type_name(value)}", name)
    if "\x00" in value:
        raise InvalidParams(f"'{name}' contains a NUL character", name)
    if not os.path.isabs(value):
        raise InvalidParams(f"'{name}' must be an absolute path, not {value!r}", name)
    return value


def parse_limits(raw: dict[str, Any]) -> Limits:
    values: dict[str, int] = {}
    for key, value in raw.items():
        attr = Limits.WIRE_NAMES.get(key)
        name = f"limits.{key}"
        if attr is None:
            raise InvalidParams(f"unknown limit '{key}'; known: {', '.join(Limits.WIRE_NAMES)}", name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidParams(f"'{name}' must be a non-negative integer", name)
        values[attr] = value
    return Limits(**values)


def parse_thread_start(params: dict[str, Any]) -> ThreadStartParams:
    roots = [_absolute_path(r, f"roots[{i}]") for i, r in enumerate(require(params, "roots", list))]
    trusted: list[TrustedExtension] = []
    seen: set[str] = set()
    for i, item in enumerate(require(params, "trustedExtensions", list, optional=True, default=[])):
        where = f"trustedExtensions[{i}]"
        if isinstance(item, str):
            entry = TrustedExtension(_extension_id(item, where))
        elif isinstance(item, dict):
            ext_id = _extension_id(item.get("id"), where + ".id")
            sha = require(item, "sha256", str, where + ".", optional=True)
            if sha is not None and not SHA256_HEX.fullmatch(sha):
                raise InvalidParams(f"'{where}.sha256' must be 64 hexadecimal digits", where + ".sha256")
            entry = TrustedExtension(ext_id, sha.lower() if sha else None)
        else:
            raise InvalidParams(f"'{where}' must be an id string or an {{id, sha256}} object", where)
        if entry.id in seen:
            raise InvalidParams(f"'{where}': extension '{entry.id}' is trusted twice", where)
        seen.add(entry.id)
        trusted.append(entry)
    explicit: list[ExplicitExtension] = []
    for i, item in enumerate(require(params, "extensions", list, optional=True, default=[])):
        where = f"extensions[{i}]"
        if not isinstance(item, dict):
            raise InvalidParams(f"'{where}' must be an object {{id, path}}", where)
        ext_id = _extension_id(item.get("id"), where + ".id")
        if any(e.id == ext_id for e in explicit):
            raise InvalidParams(f"'{where}': extension id '{ext_id}' is listed twice", where + ".id")
        explicit.append(ExplicitExtension(ext_id, _absolute_path(item.get("path"), where + ".path")))
    dynamic: list[DynamicTool] = []
    for i, item in enumerate(require(params, "dynamicTools", list, optional=True, default=[])):
        where = f"dynamicTools[{i}]"
        if not isinstance(item, dict):
            raise InvalidParams(f"'{where}' must be an object {{name, description, inputSchema}}", where)
        name = require(item, "name", str, where + ".")
        if not TOOL_NAME.fullmatch(name):
            raise InvalidParams(f"'{where}.name': tool name {name!r} must be 1-64 letters, digits, '_' or '-'",
                                where + ".name")
        if name in BUILTIN_TOOLS or any(d.name == name for d in dynamic):
            raise InvalidParams(f"'{where}.name': tool '{name}' is already declared", where + ".name")
        description = require(item, "description", str, where + ".", optional=True, default="")
        schema = require(item, "inputSchema", dict, where + ".", optional=True,
                         default={"type": "object", "properties": {}})
        dynamic.append(DynamicTool(name, description, schema))
    limits = parse_limits(require(params, "limits", dict, optional=True, default={}))
    return ThreadStartParams(roots, trusted, explicit, dynamic, limits)


@dataclass
class ToolCall:
    id: str | int
    name: str
    arguments: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


def parse_tool_call(params: dict[str, Any]) -> ToolCall:
    call = require(params, "call", dict)
    if "id" not in call:
        raise InvalidParams("'call.id' is required", "call.id")
    call_id = call["id"]
    if not isinstance(call_id, (str, int)) or isinstance(call_id, bool):
        raise InvalidParams(f"'call.id' must be a string or an integer, not {_type_name(call_id)}", "call.id")
    name = require(call, "name", str, "call.")
    arguments = require(call, "arguments", dict, "call.", optional=True, default={})
    return ToolCall(call_id, name, arguments)
