"""A tool result's content items as they cross the wire (protocol-v4 §4, "Content as it comes"): MCP's
content blocks — ``text``, ``image``, ``audio``, ``resource_link`` and an embedded ``resource`` — pass
through every tool result unchanged; this module owns the one check of their shape.

The check is MCP's (2025-11-25 schema) for the fields the sidecar and an editor read: ``text.text``;
``image``/``audio``'s base64 ``data`` and ``mimeType``; a link's ``name`` and ``uri``; an embedded
resource's ``uri`` and its ``text`` or ``blob``. Other fields (annotations, ``_meta``, ``title``…) are
kept as they are. Plain functions over JSON values and no imports: the extension host uses it too.
"""

from __future__ import annotations

from typing import Any

TYPES = ("text", "image", "audio", "resource_link", "resource")
# the fields each type must have, as strings
_REQUIRED = {"text": ("text",), "image": ("data", "mimeType"), "audio": ("data", "mimeType"),
             "resource_link": ("name", "uri")}
SHAPES = ("{type: 'text', text}, {type: 'image' | 'audio', data, mimeType}, {type: 'resource_link', name, uri}, "
          "{type: 'resource', resource: {uri, text | blob}}")


def problem(item: Any) -> str | None:
    """Why ``item`` is not a content block of MCP's shapes, or None when it is one."""
    if type(item) is not dict:
        return "a content item is an object"
    kind = item.get("type")
    if kind not in TYPES:
        return f"a content item's type is one of {', '.join(TYPES)}, not {kind!r}"[:200]
    if kind == "resource":
        resource = item.get("resource")
        if type(resource) is not dict or type(resource.get("uri")) is not str:
            return "an embedded resource has resource: {uri, text | blob}"
        if type(resource.get("text")) is not str and type(resource.get("blob")) is not str:
            return "an embedded resource has a string text or a string blob"
        return None
    for key in _REQUIRED[kind]:
        if type(item.get(key)) is not str:
            return f"an item of type {kind} needs a string {key}"
    return None


def valid(content: Any) -> bool:
    """``content`` is a list of content blocks."""
    if type(content) is not list:
        return False
    for item in content:
        if type(item) is dict and item.get("type") == "text" and type(item.get("text")) is str:
            continue  # the common case
        if problem(item) is not None:
            return False
    return True


def first_problem(content: Any) -> str | None:
    """Why ``content`` is not a list of content blocks (naming the first bad item), or None."""
    if type(content) is not list:
        return "content is a list of content items"
    for i, item in enumerate(content):
        why = problem(item)
        if why is not None:
            return f"content[{i}]: {why}"
    return None
