"""JSON by the standard library alone, as the sidecar writes and reads it: compact UTF-8, no NaN.

Imports nothing but ``json``: the transport writes the first ``initialize`` answer and the endpoint
reads the first requests with it, before ``jsonio`` (and orjson) is loaded; ``jsonio`` falls back
to it where orjson would answer differently.
"""

from __future__ import annotations

import json

# Built once: json.dumps with any non-default option builds a new encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # NaN and Infinity are not JSON


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON. Raises ``ValueError``/``TypeError`` for what is not JSON data."""
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from \ud800 in the input): escape everything
        return _ASCII_ENCODER.encode(value).encode("ascii")


def loads(data: bytes) -> object:
    """The value of one JSON text; ``ValueError`` (or ``RecursionError``) when it is not JSON."""
    return _DECODER.decode(data.decode("utf-8"))
