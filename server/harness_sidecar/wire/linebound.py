"""Every line the sidecar writes to stdout fits ``--max-result-bytes``: cutting what does not.

Answers to requests are bounded where they are made (a tool call's too-large result is a paired
error). This module bounds the rest — notifications and error responses — by cutting their
longest strings, each ending in a marker that says so, until the line fits; a reverse request
that does not fit is never sent (the endpoint fails it, as if the editor had refused).
"""

from __future__ import annotations

from typing import Any, Callable

MARKER = " … [cut by the sidecar: the line was {size} bytes; --max-result-bytes is {limit}]"
MAX_ROUNDS = 16
MIN_CUTTABLE = 64  # a line whose longest string is shorter than this is not cut further


def _longest_string(value: Any) -> tuple[tuple, str] | None:
    """The path (keys and indexes) and value of the longest string in ``value``; ``None`` if it holds none."""
    best: tuple[tuple, str] | None = None
    stack: list[tuple[tuple, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if type(item) is str:
            if best is None or len(item) > len(best[1]):
                best = (path, item)
        elif type(item) is dict:
            stack.extend((path + (k,), v) for k, v in item.items())
        elif type(item) is list:
            stack.extend((path + (i,), v) for i, v in enumerate(item))
    return best


def _replaced(value: Any, path: tuple, new: str) -> Any:
    """``value`` with the item at ``path`` replaced by ``new``; the containers on the path are copied."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if type(value) is dict else list(value)
    copy[head] = _replaced(value[head], rest, new)
    return copy


def fit(message: dict[str, Any], encode: Callable[[Any], bytes], limit: int, size: int) -> bytes | None:
    """The line of ``message`` (``size`` bytes, over ``limit``) with its longest strings cut to fit.

    ``None`` when cutting strings cannot make it fit (the caller drops it and says so on stderr).
    """
    marker = MARKER.format(size=size, limit=limit)
    current, data = message, b""
    for _ in range(MAX_ROUNDS):
        found = _longest_string(current)
        if found is None or len(found[1]) < MIN_CUTTABLE:
            return None
        path, text = found
        if text.endswith(marker):  # cut before, not enough: cut the text again, keep one marker
            text = text[:-len(marker)]
        excess = size - limit + len(marker.encode("utf-8")) + 8
        encoded = max(len(encode(text)), 1)  # the string's own bytes in the line (escapes included)
        keep = max(0, len(text) - -(-excess * len(text) // encoded) - 1)
        current = _replaced(current, path, text[:keep] + marker)
        data = encode(current)
        size = len(data)
        if size <= limit:
            return data
    return None
