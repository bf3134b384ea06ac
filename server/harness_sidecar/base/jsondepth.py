"""How deep JSON may nest: 512 levels of arrays and objects, in every message the sidecar reads.

Deeper JSON is refused (``invalid_params`` kind ``too_deep`` for a request), whoever sent it:
past a few hundred levels the standard library's encoder and decoder raise ``RecursionError``
and orjson refuses to write past 255, so a deep value that got in would fail somewhere later,
as an internal error or a lost answer. The check runs on every message, so it is cheap: a text
with at most 512 ``[`` and ``{`` bytes cannot be deeper (two ``bytes.count`` calls); a value with
more that orjson can write is not deeper than 255; only the rest is walked, and only a message
too deep to parse at all is scanned by hand.

Imports nothing at start-up: the endpoint reads the first requests before anything else loads.
"""

from __future__ import annotations

MAX_DEPTH = 512


class TooDeep(ValueError):
    """A JSON text nested deeper than ``MAX_DEPTH``.

    ``value`` is what can be known of it: the whole value when it could be parsed, else the
    text parsed up to the first too-deep container (that container and everything after it
    left out), or ``None`` when not even that parses. Enough to find a request's ``id``
    and ``method`` when they come first, as every client writes them.
    """

    def __init__(self, value: object, whole: bool) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")
        self.value = value
        self.whole = whole  # ``value`` is the whole text's (else members after the deep part are unknown)


def could_be_too_deep(data: bytes) -> bool:
    """Whether ``data`` has enough brackets to nest deeper than ``MAX_DEPTH`` (cheap; no false 'no')."""
    return data.count(b"[") + data.count(b"{") > MAX_DEPTH


def deeper_than_limit(value: object, budget: int | None = None) -> bool | None:
    """Whether a parsed value nests arrays and objects more than ``MAX_DEPTH`` levels (no recursion);
    with ``budget``, None once more than that many values would have to be looked at."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if type(item) is dict else item  # type: ignore[union-attr]
        if budget is not None:
            budget -= 1 + len(children)  # type: ignore[arg-type]
            if budget < 0:
                return None
        for child in children:  # type: ignore[union-attr]
            if type(child) is dict or type(child) is list:
                if depth >= MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False


def bounded_loads(loads: object, data: bytes) -> object:
    """``loads(data)``, raising ``TooDeep`` for a text nested deeper than ``MAX_DEPTH``.

    ``ValueError`` (malformed JSON, bad UTF-8) passes through as ``loads`` raises it.
    """
    try:
        value = loads(data)  # type: ignore[operator]
    except RecursionError:
        raise TooDeep(_head(loads, data), False) from None
    if type(value) is dict or type(value) is list:
        # a long text of few values (a 16 MB result): those walked, not its 16 MB of brackets counted
        deep = deeper_than_limit(value, WALKED_VALUES) if len(data) >= WALK_FROM else None
        if deep is None:
            deep = could_be_too_deep(data) and not _shallow(value) and deeper_than_limit(value)
        if deep:
            raise TooDeep(value, True)
    return value


WALK_FROM = 1 << 20
WALKED_VALUES = 10_000


def _shallow(value: object) -> bool:
    """A C-speed 'surely not too deep': orjson writes nothing nested past 255 levels (and refuses big
    integers and lone surrogates, which then go to the walk too). Several times cheaper than the walk."""
    try:
        import orjson

        orjson.dumps(value)
    except (ImportError, TypeError):
        return False
    return True


def _head(loads: object, data: bytes) -> object:
    """The text up to its first container nested past ``MAX_DEPTH``, closed and parsed; ``None`` if it cannot be.

    Scans tokens only up to that container: strings are skipped whole by the regular expression.
    """
    import re

    stack: list[bytes] = []
    for match in re.finditer(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', data, re.DOTALL):
        token = match.group()
        if token in (b"[", b"{"):
            if len(stack) >= MAX_DEPTH:
                closers = b"".join(b"]" if t == b"[" else b"}" for t in reversed(stack))
                try:
                    return loads(data[:match.start()] + b"null" + closers)  # type: ignore[operator]
                except (ValueError, RecursionError):
                    return None
            stack.append(token)
        elif token in (b"]", b"}"):
            if stack:
                stack.pop()
    return None
