"""``commands/list``, ``commands/run`` and ``input/submit``: the user's own actions.

A command is registered by an extension and run by the user (tool hooks do not run: the
user is not the model). ``input/submit`` takes what the user typed before it goes to the
model: the extensions' ``input`` handlers may transform it, handle it or (failing) block
it; then ``/<template> key=value …`` is rendered, ``/<command> key=value …`` is run, and
anything else is sent as typed.
"""

from __future__ import annotations

import re

from harness_sidecar.base.errors import DomainError

# -- typed input ---------------------------------------------------------------------------------


_SLASH = re.compile(r"/([A-Za-z0-9_-]+)(?=\s|$)")


def parse_slash(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` of ``/name rest``, else ``None``."""
    match = _SLASH.match(text)
    return (match.group(1), text[match.end():]) if match else None


def parse_arguments(text: str) -> dict[str, str]:
    """``key=value`` words; a value may be quoted with ``"`` (``\\"`` and ``\\\\`` inside).

    Raises ``DomainError(invalid_arguments)`` for a word without ``=`` or an unclosed quote.
    """
    arguments: dict[str, str] = {}
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return arguments
        start = i
        while i < n and text[i] != "=" and not text[i].isspace():
            i += 1
        key = text[start:i]
        if i >= n or text[i] != "=" or not key:
            word = text[start:i] if key else text[start:].split(None, 1)[0]
            raise DomainError("invalid_arguments", f"'{word}' is not key=value (quote a value with spaces: "
                                                   f"key=\"a value\")", request=word)
        i += 1
        if i < n and text[i] == '"':
            i += 1
            value = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\':
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise DomainError("invalid_arguments", f"the value of '{key}' has no closing quote", request=key)
            i += 1
            arguments[key] = "".join(value)
        else:
            start = i
            while i < n and not text[i].isspace():
                i += 1
            arguments[key] = text[start:i]
