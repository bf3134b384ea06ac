"""What an extension hands back is JSON data, or it is the extension's fault.

``to_json`` copies a value by its exact type only — ``dict`` with ``str`` keys, ``list``,
``tuple``, ``str``, ``int``, finite ``float``, ``bool``, ``None`` — so no method of the
extension's own classes runs (a ``__str__``, ``__eq__`` or ``__bool__`` that raises or hangs
is never called), and the copy shares nothing with the extension. Anything else, ``NaN``,
``Infinity``, integers JSON parsers cannot hold as text, and nesting past ``MAX_DEPTH`` are
refused with the path of the offending value. Runs in the host process.
"""

from __future__ import annotations

import math

from harness_sidecar.extensions.host.answers import UiAnswer

MAX_DEPTH = 100
MAX_INT_BITS = 4000 * 3  # well inside the 4,300-digit limit of int → str


class NotJsonData(ValueError):
    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _type_name(value: object) -> str:
    try:
        return type(value).__qualname__
    except Exception:  # noqa: BLE001 - a hostile metaclass
        return "object"


def to_json(value: object, path: str = "$", depth: int = 0) -> object:
    """A fresh copy of ``value`` made of plain JSON types; raises ``NotJsonData``."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:  # type: ignore[union-attr]
            raise NotJsonData(path, "an integer too large for JSON")
        return value
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise NotJsonData(path, f"{value!r} is not JSON (NaN and Infinity are not numbers in JSON)")
        return value
    if depth >= MAX_DEPTH:
        raise NotJsonData(path, f"nested deeper than {MAX_DEPTH} levels")
    if kind is dict:
        out = {}
        for key, item in value.items():  # type: ignore[union-attr]
            if type(key) is not str:
                raise NotJsonData(path, f"a key of type {_type_name(key)}; JSON keys are strings")
            out[key] = to_json(item, f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]", depth + 1)
        return out
    if kind is list or kind is tuple:
        return [to_json(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]  # type: ignore[arg-type]
    if kind is UiAnswer:  # the host's own answer of ctx.ui.*: its value
        return to_json(value.value, path, depth + 1)  # type: ignore[attr-defined]
    raise NotJsonData(path, f"a {_type_name(value)} is not JSON data")
