"""A server's resources, resource templates and prompts (protocol-v4 §4): listed (every page) when it
declares the capability, kept as the catalog's ``mcpResources``/``mcpPrompts`` entries, and read
(``resources/read``, ``prompts/get``) for ``mcp/resource/read`` and ``mcp/prompt/get``.

Transport-independent: everything goes through ``request(method, params)``, the session's. Results
are checked as strictly as ``messages`` checks tools (``Invalid`` with the path of the offence).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.base import content as blocks

from .messages import Invalid, _may, _need

Request = Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]
MAX_PAGES = 1000


@dataclass
class Extras:
    """What a server offers besides tools, as catalog entries (without ``server``)."""

    resources: list[dict[str, Any]] = field(default_factory=list)  # resources, then templates
    prompts: list[dict[str, Any]] = field(default_factory=list)

    def keyed(self, server: str) -> dict[tuple[str, str], dict[str, Any]]:
        """Each entry by ``(kind, "<server>:<uri | uriTemplate | name>")``: what catalog/changed names."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in self.resources:
            out[("mcpResource", f"{server}:{entry.get('uri') or entry.get('uriTemplate')}")] = entry
        for entry in self.prompts:
            out[("mcpPrompt", f"{server}:{entry['name']}")] = entry
        return out


async def _pages(request: Request, method: str, key: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        result = await request(method, {"cursor": cursor} if cursor is not None else None)
        page = _need(result, key, list, "result")
        items.extend(page)
        cursor = _may(result, "nextCursor", str, "result")
        if cursor is None:
            return items
        if cursor in seen:
            raise Invalid(f"{method} repeated the cursor {cursor!r}")
        seen.add(cursor)
    raise Invalid(f"{method} gave more than {MAX_PAGES} pages")


def _entry(item: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    if type(item) is not dict:
        raise Invalid(f"{where} must be an object")
    out = {key: _need(item, key, str, where) for key in required}
    for key in optional:
        value = _may(item, key, str, where)
        if value is not None:
            out[key] = value
    return out


def _prompt(item: Any, where: str) -> dict[str, Any]:
    out = _entry(item, where, ("name",), ("description",))
    arguments = _may(item, "arguments", list, where)
    if arguments:
        out["arguments"] = []
        for i, argument in enumerate(arguments):
            here = f"{where}.arguments[{i}]"
            entry = _entry(argument, here, ("name",), ("description",))
            required = _may(argument, "required", bool, here)
            if required is not None:
                entry["required"] = required
            out["arguments"].append(entry)
    return out


async def list_extras(request: Request, capabilities: dict[str, Any]) -> Extras:
    """Every page of resources, templates and prompts the server's ``capabilities`` declare."""
    extras = Extras()
    if type(capabilities.get("resources")) is dict:
        resources = await _pages(request, "resources/list", "resources")
        extras.resources = [_entry(r, f"result.resources[{i}]", ("uri", "name"), ("description", "mimeType"))
                            for i, r in enumerate(resources)]
        templates = await _pages(request, "resources/templates/list", "resourceTemplates")
        extras.resources += [_entry(t, f"result.resourceTemplates[{i}]", ("uriTemplate", "name"),
                                    ("description", "mimeType")) for i, t in enumerate(templates)]
    if type(capabilities.get("prompts")) is dict:
        prompts = await _pages(request, "prompts/list", "prompts")
        extras.prompts = [_prompt(p, f"result.prompts[{i}]") for i, p in enumerate(prompts)]
    return extras


def check_read_result(result: dict[str, Any]) -> dict[str, Any]:
    """A ``ReadResourceResult``: ``contents`` of ``{uri, mimeType?, text | blob}``."""
    contents = _need(result, "contents", list, "result")
    for i, item in enumerate(contents):
        where = f"result.contents[{i}]"
        if type(item) is not dict:
            raise Invalid(f"{where} must be an object")
        _need(item, "uri", str, where)
        _may(item, "mimeType", str, where)
        if type(item.get("text")) is not str and type(item.get("blob")) is not str:
            raise Invalid(f"{where} must have a string text or a string blob")
    return result


def check_prompt_result(result: dict[str, Any]) -> dict[str, Any]:
    """A ``GetPromptResult``: ``messages`` of ``{role, content}``, ``description?``."""
    _may(result, "description", str, "result")
    messages = _need(result, "messages", list, "result")
    for i, message in enumerate(messages):
        where = f"result.messages[{i}]"
        if type(message) is not dict or message.get("role") not in ("user", "assistant"):
            raise Invalid(f'{where} must be an object with role "user" or "assistant"')
        why = blocks.problem(message.get("content"))
        if why is not None:
            raise Invalid(f"{where}.content: {why}")
    return result
