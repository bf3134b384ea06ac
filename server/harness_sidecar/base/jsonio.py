"""JSON for the wire and the channel: orjson where it gives the standard library's exact answer.

orjson (Rust) encodes a tool call's frames 10-15× and decodes them about 5× faster than the
standard library, and a call crosses four of them in the sidecar and three in the host. Where
the two would differ, the standard library decides, so nothing changes for anyone:

- integers outside 64 bits: orjson would read them as floats (a digit run of 19 or more
  sends the text to the standard library) and refuses to write them (the standard library
  writes them);
- lone surrogates (``"\\ud800"``): orjson refuses both ways; the standard library reads them and
  writes them escaped;
- malformed input: the standard library reads it again, so errors keep its messages;
- NaN and Infinity: refused when read, both ways. When written, orjson writes ``null`` where the
  standard library (with ``allow_nan=False``) refuses: a non-finite float can reach an answer
  only from outside JSON data (an MCP server's parsed result), and either way no bare ``NaN``
  is ever written.

The extension host calls ``standard_library_only(SMALL_BYTES)`` for writing: under an address-space
limit (``limits.hostMemoryMb``) orjson's ``dumps`` dies of SIGSEGV when its output outgrows what it
can map (seen from about 128 MB under 2 GB), where the standard library raises ``MemoryError``. Only
a value that is surely small goes to orjson there: its ``marshal`` (version 0: no back-references, so
every repeat is counted) is at most ``SMALL_BYTES``, and JSON writes no value in more than 6 times its
marshalled bytes (a control character: 1 byte, ``\u0000``: 6). A call's step and outcome frames are
that small, and the standard library took 6 µs of a call's host CPU to write them. orjson's ``loads``
fails cleanly there ("Not enough memory…"), so reading stays fast.
"""

from __future__ import annotations

import json
import os
import marshal

import orjson

from harness_sidecar.base import stdjson

# A run of 19 digits: every digit mapped to "0", then a plain substring search (4x faster than a regex).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else i for i in range(256))
_NINETEEN_DIGITS = b"0" * 19

JSONDecodeError = json.JSONDecodeError


_fast = True
_small: int | None = None  # with standard_library_only(): orjson still writes values this small (marshalled)
SMALL_BYTES = 64 * 1024  # JSON of at most ~400 KB
_INF, _NEG_INF, _NAN = b"f\x03inf", b"f\x04-inf", b"f\x03nan"  # marshal (version 0) of the non-finite floats


def standard_library_only(small: int | None = None) -> None:
    """Write with the standard library only (see above), but for values of at most ``small`` marshalled
    bytes; reading is unaffected."""
    global _fast, _small
    _fast = False
    _small = small


def dumps(value: object) -> bytes:
    """Compact UTF-8 JSON. Raises ``ValueError``/``TypeError`` for what is not JSON data."""
    try:
        if not _fast:
            marshalled = b"" if _small is None else marshal.dumps(value, 0)
            if not marshalled or len(marshalled) > _small or _INF in marshalled or _NEG_INF in marshalled \
                    or _NAN in marshalled:  # type: ignore[operator]
                raise TypeError  # orjson would write NaN as null: the standard library refuses it
        return orjson.dumps(value)
    except (TypeError, ValueError):  # a big integer, a lone surrogate, or not JSON at all: the standard library says
        return stdjson.dumps(value)


def loads(data: bytes) -> object:
    """The value of one JSON text; ``ValueError`` (or ``RecursionError``) when it is not JSON.

    ``NaN`` and ``Infinity`` are refused; an integer keeps every digit.
    """
    long = len(data) >= LONG_TEXT
    if long or _NINETEEN_DIGITS not in data.translate(_DIGITS_AS_ZERO):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library gives the verdict and the message
        else:
            if not long:
                return value
            exact = _no_overflowed_integer(value)  # a few values looked at, not every byte read again
            if exact is None:  # too many values to look at: the digit runs say
                exact = _NINETEEN_DIGITS not in data.translate(_DIGITS_AS_ZERO)
            if exact:
                return value
    return stdjson.loads(data)


# A long text (a 16 MB tool result) is parsed first and its values looked at, at most VALUES_LOOKED_AT of
# them: an integer outside 64 bits is a float of at least 2**63 there (orjson's reading of it). The digit
# scan of every byte (bytes.translate: ~15-20 ms of 16 MB on the event loop) is left for texts of many values.
LONG_TEXT = 1 << 20
VALUES_LOOKED_AT = 10_000
_OVERFLOW = float(2 ** 63)


def _no_overflowed_integer(value: object) -> bool | None:
    """Whether no float of ``value`` could be an integer orjson read past 64 bits; None: too many values."""
    todo = [value]
    budget = VALUES_LOOKED_AT
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict or kind is list:
            budget -= len(item)  # type: ignore[arg-type]
            if budget < 0:
                return None
            todo.extend(item.values() if kind is dict else item)  # type: ignore[union-attr,arg-type]
        elif kind is float and abs(item) >= _OVERFLOW:  # type: ignore[arg-type]
            return False
    return True


# -- Long strings read as they come, and passed through (issue 32 item 4) -------------------------------------------
# A host's 16 MB tool result is one long JSON string. Parsing it whole (orjson: 7-30 ms of 16 MB) and writing it again
# for the editor (~4 ms) held the event loop in one turn each. The channel now decodes a string that spans a long
# line's pieces slice by slice as they arrive (``extensions.channel.LongStrings``: orjson reads every slice, so what is
# not JSON is refused as before); ``loads_spans`` parses the rest of the line with each such string a placeholder and
# puts the values back. A string whose bytes are what orjson writes for it (``plain``: no backslash, or each slice
# written again to see) has its bytes kept (the last ``KEPT``; let go after ``MISSES`` encodings that did not use
# them) and ``dumps_parts`` writes an answer as pieces, the encoded rest around those bytes (memoryviews: no copy).
KEPT = 2
_NONCE = os.urandom(8).hex()  # placeholders no host or editor can write (they never see it)
_kept: dict[int, tuple[str, memoryview]] = {}  # id(text) -> (text, its JSON string's bytes, quotes included)


def loads_spans(data: bytes, spans: list[tuple[int, int, str, bool]]) -> object:
    """``loads(data)``, given the values of some of its strings: ``(opening quote, closing quote, value, plain)``
    in order (``plain``: its bytes are what orjson writes for it — kept for ``dumps_parts``). Raises as ``loads``."""
    if not spans:
        return loads(data)
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    texts: dict[str, tuple[str, memoryview | None]] = {}
    at = 0
    nonce = _NONCE.encode()
    for start, end, text, plain in spans:
        placeholder = f"\x00{_NONCE}:{len(texts)}"
        texts[placeholder] = (text, view[start:end + 1] if plain else None)
        pieces += (view[at:start], b'"\\u0000%s:%d"' % (nonce, len(texts) - 1))
        at = end + 1
    pieces.append(view[at:])
    value = loads(b"".join(pieces))  # malformed only if ``data`` is: each span was a string, and is one
    if not _put_back(value, texts):
        return loads(data)
    for text, raw in texts.values():
        if raw is not None:
            _kept[id(text)] = (text, raw)
            while len(_kept) > KEPT:
                del _kept[next(iter(_kept))]
    return value


def _put_back(value: object, texts: dict[str, tuple[str, memoryview | None]]) -> bool:
    """Each placeholder in ``value`` replaced by its text; False if one is not a value of a list or object."""
    left = len(texts)
    todo = [value]
    while todo and left:
        item = todo.pop()
        is_dict = type(item) is dict
        if not is_dict and type(item) is not list:  # the whole value a scalar: nothing to put back into
            continue
        for key, child in (item.items() if is_dict else enumerate(item)):  # type: ignore[union-attr,arg-type]
            if type(child) is str and child in texts:
                item[key] = texts[child][0]  # type: ignore[index]  # a value replaced: the container keeps its size
                left -= 1
            elif type(child) is dict or type(child) is list:
                todo.append(child)
        if is_dict and any(key in texts for key in item):  # type: ignore[union-attr]
            return False
    return left == 0


def kept() -> bool:
    """Whether long strings ``loads_spans`` read wait to be written (``dumps_parts``)."""
    return bool(_kept)


MISSES = 64  # encodings that found none of the kept strings, after which they are let go
_misses = 0


def dumps_parts(value: object) -> list[bytes | memoryview]:
    """``dumps(value)`` as pieces to be written one after the other: the bytes a long string came in (``loads_spans``)
    are not encoded again, nor copied."""
    global _misses
    if not _kept:
        return [dumps(value)]
    found: dict[bytes, memoryview] = {}
    skeleton = _with_placeholders(value, found, [VALUES_LOOKED_AT])
    if not found:
        _misses += 1
        if _misses >= MISSES:  # never to be written (a result answered otherwise): no walk of every answer for them
            _kept.clear()
        return [dumps(value)]
    _misses = 0
    try:
        if not _fast:
            raise TypeError
        out = orjson.dumps(skeleton)
    except (TypeError, ValueError):  # what orjson does not write as dumps would: dumps writes it all
        return [dumps(value)]
    parts: list[bytes | memoryview] = []
    view = memoryview(out)
    at = 0
    for placeholder, raw in found.items():
        start = out.find(placeholder, at)
        if start < 0:  # never (each was written once): written whole
            return [dumps(value)]
        parts += (view[at:start], raw)
        at = start + len(placeholder)
    parts.append(view[at:])
    return parts


def _with_placeholders(value: object, found: dict[bytes, memoryview], budget: list[int], depth: int = 0) -> object:
    """``value`` with each kept long string replaced by a placeholder (its copy: only containers are copied)."""
    kind = type(value)
    if kind is str:
        kept = _kept.get(id(value))
        if kept is not None and kept[0] is value:
            placeholder = b'"\\u0000%s:%d"' % (_NONCE.encode(), len(found))
            found[placeholder] = kept[1]
            del _kept[id(value)]
            return f"\x00{_NONCE}:{len(found) - 1}"
        return value
    if kind is not dict and kind is not list:
        return value
    budget[0] -= len(value)  # type: ignore[arg-type]
    if budget[0] < 0 or depth > 64:
        return value  # not looked into: written as it is
    if kind is dict:
        return {k: _with_placeholders(v, found, budget, depth + 1) for k, v in value.items()}  # type: ignore[union-attr]
    return [_with_placeholders(v, found, budget, depth + 1) for v in value]  # type: ignore[union-attr]
