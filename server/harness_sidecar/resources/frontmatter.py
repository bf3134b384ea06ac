"""Frontmatter: find the ``---`` block at the top of a file and load it with safe YAML only.

Discovery reads a bounded prefix of a file, never its body; the functions here work on
that prefix and say precisely (line, column) what is wrong, so the same checks serve the
catalog, ``harness-sidecar check`` and the LSP mode.

Most frontmatters are a few ``key: value`` lines of plain or simply quoted text. Those are
read here without YAML (``plain_mapping``): importing the YAML library costs more than
reading a thousand skills. Only a block made entirely of such lines, whose values YAML's
resolver would read as strings, takes that path; anything else (lists, block scalars,
escapes, comments after a value, values YAML reads as numbers, booleans, dates or null, a
character YAML treats specially) goes to the safe YAML loader, so the result is what
``yaml.safe_load`` gives in every case (tests compare the two on real and generated files).
"""

from __future__ import annotations

import os
import re
from typing import Any

from harness_sidecar.base.names import name_problem
from harness_sidecar.base.records import Record

FIRST_CHUNK = 4096
_OPEN = re.compile(rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?(?:\n|\Z)")
_CLOSE = re.compile(rb"^---[ \t]*\r?$", re.M)


def _closing(data: bytes, start: int, eof: bool) -> re.Match[bytes] | None:
    """The closing ``---`` line at or after ``start``, if it is a whole line of ``data``.

    A line that reaches the end of ``data`` is whole only at the end of the file: a read
    cut at ``---`` may be the start of ``---more text`` and is no closing line.
    """
    closing = _CLOSE.search(data, start)
    if closing is not None and closing.end() == len(data) and not eof:
        return None
    return closing


class Problem(Record):
    """One reason a resource cannot be used; ``line``/``column`` are 1-based when known."""

    __slots__ = ("kind", "message", "hint", "line", "column")

    def __init__(self, kind: str, message: str, hint: str | None = None, line: int | None = None,
                 column: int | None = None) -> None:
        self.kind = kind
        self.message = message
        self.hint = hint
        self.line = line
        self.column = column


class Frontmatter(Record):
    __slots__ = ("data", "body_start", "lines", "end_line", "raw")

    def __init__(self, data: dict[str, Any], body_start: int, lines: dict[str, int] | None = None,
                 end_line: int = 0, raw: dict[str, str] | None = None) -> None:
        self.data = data
        self.body_start = body_start  # byte offset of the first byte after the closing line
        self.lines: dict[str, int] = {} if lines is None else lines  # top-level key -> 1-based line
        self.end_line = end_line  # 1-based line of the closing ---
        self.raw: dict[str, str] = {} if raw is None else raw  # top-level plain scalars as written (for hints)


class FrontmatterError(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def read_prefix(fd: int, max_frontmatter_bytes: int) -> tuple[bytes, bool]:
    """Read from ``fd`` just far enough to hold the frontmatter.

    Returns ``(data, eof)``. Reads ``FIRST_CHUNK`` bytes, then more only while no
    closing line was seen and the frontmatter could still fit the limit.
    """
    cap = max_frontmatter_bytes + 16  # the opening and closing lines themselves
    data = os.read(fd, min(FIRST_CHUNK, cap))
    if len(data) < min(FIRST_CHUNK, cap):
        return data, True
    if not _OPEN.match(data):
        return data, False
    while len(data) < cap:
        start = data.find(b"\n") + 1
        if _closing(data, start, False):
            return data, False
        chunk = os.read(fd, min(max(len(data), FIRST_CHUNK), cap - len(data)))
        if not chunk:
            return data, True
        data += chunk
    return data, False


def has_frontmatter(data: bytes) -> bool:
    """Whether ``data`` opens with a ``---`` line (a frontmatter block, closed or not)."""
    return _OPEN.match(data) is not None


def first_paragraph(data: bytes) -> str:
    """The first paragraph of a Markdown body that is not a heading, as one line: the description
    Claude Code gives a skill whose SKILL.md has no frontmatter ("" when there is none)."""
    text = data.decode("utf-8", "replace")
    paragraph: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if paragraph:
                break
            continue
        if stripped.startswith("#") and not paragraph:
            continue
        paragraph.append(stripped)
    return " ".join(" ".join(paragraph).split())


def split(data: bytes, eof: bool, max_frontmatter_bytes: int, required: bool) -> tuple[str | None, int, int]:
    """Locate the frontmatter in ``data``.

    Returns ``(yaml_text or None, body_start_offset, closing_line_number)``.
    Raises ``FrontmatterError`` for a missing (when required), unclosed, oversized or
    non-UTF-8 block.
    """
    opening = _OPEN.match(data)
    if not opening:
        if required:
            raise FrontmatterError(Problem(
                "invalid_frontmatter", "the file does not start with a '---' line",
                hint="start the file with '---', then 'name:' and 'description:' lines, then a closing '---'",
                line=1, column=1,
            ))
        return None, 0, 0
    start = opening.end()
    closing = _closing(data, start, eof)
    if closing is None or closing.start() - start > max_frontmatter_bytes:
        if closing is None and eof:
            raise FrontmatterError(Problem(
                "invalid_frontmatter", "the frontmatter has no closing '---' line",
                hint="add a line containing only '---' after the last frontmatter field", line=1, column=1,
            ))
        raise FrontmatterError(Problem(
            "too_large", f"the frontmatter is longer than maxFrontmatterBytes ({max_frontmatter_bytes} bytes)",
            hint="keep only name and description (and short metadata) in the frontmatter; move the rest to the body",
            line=1, column=1,
        ))
    raw = data[start:closing.start()]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: start + exc.start].count(b"\n") + 1
        raise FrontmatterError(Problem(
            "not_utf8", f"the frontmatter is not valid UTF-8 (byte {start + exc.start})",
            hint="save the file as UTF-8", line=line,
        )) from None
    body_start = closing.end()
    if data[body_start:body_start + 1] == b"\n":
        body_start += 1
    closing_line = data[:closing.start()].count(b"\n") + 1
    return text, body_start, closing_line


def load_yaml(text: str, first_line: int) -> tuple[dict[str, Any], dict[str, int]]:
    """Load ``text`` as ``yaml.safe_load`` would; return the mapping and each top-level key's line.

    ``first_line`` is the 1-based file line on which ``text`` starts. Nothing but plain
    data is ever constructed: tags such as ``!!python/object`` are errors.
    """
    data, lines, _ = _load(text, first_line)
    return data, lines


def _load(text: str, first_line: int) -> tuple[dict[str, Any], dict[str, int], dict[str, str]]:
    """``(mapping, key lines, raw text of top-level plain scalar values)``."""
    plain = _plain(text, first_line)
    if plain is not None:
        return plain
    return _load_with_yaml(text, first_line)


# -- plain key/value lines, read without YAML ----------------------------------------------------

# The implicit resolvers of YAML 1.1 as PyYAML (and its libyaml binding) apply them to plain
# scalars; a test checks that these are exactly the patterns of the installed yaml.resolver.
# A plain value any of them matches is not a string: it is left to YAML. Compiled on first
# use (a few milliseconds a fresh process should not pay when no value needs them).
IMPLICIT_RESOLVER_PATTERNS = [
    (r"""^(?:yes|Yes|YES|no|No|NO
                    |true|True|TRUE|false|False|FALSE
                    |on|On|ON|off|Off|OFF)$""", re.X),
    (r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
    (r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""", re.X),
    (r"^(?:<<)$", 0),
    (r"""^(?: ~
                    |null|Null|NULL
                    | )$""", re.X),
    (r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?
                     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""", re.X),
    (r"^(?:=)$", 0),
    (r"^(?:!|&|\*)$", 0),
]
# Every value the bool, merge, null, value and yaml resolvers match: a plain value whose first
# character is not one of NUMERIC_START can only be matched by these (a test checks both).
WORDS_NOT_TEXT = frozenset(["yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False",
                            "FALSE", "on", "On", "ON", "off", "Off", "OFF", "<<", "~", "null", "Null", "NULL", "",
                            "=", "!", "&", "*"])
NUMERIC_START = frozenset("-+0123456789.")
_compiled: list[re.Pattern[str]] = []


def _resolvers() -> list[re.Pattern[str]]:
    if not _compiled:
        _compiled.extend(re.compile(pattern, flags) for pattern, flags in IMPLICIT_RESOLVER_PATTERNS)
    return _compiled


# Characters YAML may not read as plain text: non-printables, tabs, carriage returns, the line
# breaks U+0085, U+2028, U+2029, and the byte-order mark (a newline is a line of its own).
_NOT_PLAIN_TEXT = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_KEY_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,63}):(?: +(.*))?")
# What may not start a plain scalar (YAML's indicators), and quotes (handled on their own).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


def _resolves_to_string(value: str) -> bool:
    if value in WORDS_NOT_TEXT:
        return False
    if value[0] in NUMERIC_START:
        return not any(pattern.match(value) for pattern in _resolvers())
    return True


# A value the fast path declines (YAML reads it); ``None`` is a value (YAML's null).
DECLINED: Any = object()
# The plain words the bool and null resolvers match, as SafeConstructor builds them.
_BOOLEANS = {"yes": True, "Yes": True, "YES": True, "no": False, "No": False, "NO": False, "true": True,
             "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False, "on": True, "On": True,
             "ON": True, "off": False, "Off": False, "OFF": False}
_NULLS = frozenset(["~", "null", "Null", "NULL"])
# Subsets of one resolver each that no resolver before it matches (bool, float, int, merge, null,
# timestamp, value is PyYAML's order), built as SafeConstructor builds them; any other number,
# date or time is left to YAML.
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")  # int: sign * int(digits)
_DECIMAL_FRACTION = re.compile(r"[-+]?[0-9]+\.[0-9]+")  # float: sign * float(digits)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")  # timestamp without a time: datetime.date


def _scalar(value: str) -> Any:
    """What YAML reads for the plain scalar ``value`` (not empty, stripped), or ``DECLINED``."""
    if value in WORDS_NOT_TEXT:
        if value in _BOOLEANS:
            return _BOOLEANS[value]
        return None if value in _NULLS else DECLINED  # '<<', '=', '!', '&', '*': YAML's own rules
    if value[0] not in NUMERIC_START:
        return value
    if not any(pattern.match(value) for pattern in _resolvers()):
        return value
    if _DECIMAL.fullmatch(value):
        return int(value)
    if _DECIMAL_FRACTION.fullmatch(value):
        return float(value)
    date = _DATE.fullmatch(value)
    if date is not None:
        import datetime

        try:
            return datetime.date(int(date.group(1)), int(date.group(2)), int(date.group(3)))
        except ValueError:  # '2024-13-45': YAML's error, with its line and column
            return DECLINED
    return DECLINED


def _plain_value(value: str) -> Any:
    """What YAML reads for ``value`` (the rest of a ``key: `` line, or a ``- `` item), or ``DECLINED``."""
    value = value.rstrip(" ")
    if not value:
        return DECLINED
    first = value[0]
    if first == "'":
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != "'" or "'" in inner.replace("''", ""):
            return DECLINED
        return inner.replace("''", "'")
    if first == '"':
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != '"' or '"' in inner or "\\" in inner:
            return DECLINED
        return inner
    if first == "[":
        return _flow_sequence(value)
    if first in _INDICATORS or ": " in value or value.endswith(":") or " #" in value:
        return DECLINED
    return _scalar(value)


# One item of a flow sequence on one line and what follows it: a double-quoted string without
# escapes, a single-quoted one, or a plain word; then ',' or the closing ']'.
_FLOW_ITEM = re.compile(r""" *(?:"([^"\\]*)"|'((?:[^']|'')*)'|([A-Za-z0-9_][A-Za-z0-9_./+-]*)) *([,\]])""")


def _flow_sequence(value: str) -> list[Any] | Any:
    """``[a, "b c", 'd']`` on one line: each item read as YAML reads it, or ``DECLINED``."""
    if value[1:].strip(" ") == "]":
        return []
    items: list[Any] = []
    position, end = 1, len(value)
    match = _FLOW_ITEM.match
    while True:
        item = match(value, position)
        if item is None:
            return DECLINED
        double, single, word, separator = item.groups()
        if double is not None:
            items.append(double)
        elif single is not None:
            items.append(single.replace("''", "'"))
        else:
            read = _scalar(word)
            if read is DECLINED:
                return DECLINED
            items.append(read)
        position = item.end()
        if separator == "]":
            return items if position == end else DECLINED


_CHILD = re.compile(r"( +)([A-Za-z][A-Za-z0-9_-]{0,63}):(?: +(.*))?")
_ITEM = re.compile(r"( *)- +(.*)")
_BLOCK_HEADERS = {"|": (False, True), "|-": (False, False), ">": (True, True), ">-": (True, False)}


def plain_mapping(text: str, first_line: int = 0) -> tuple[dict[str, Any], dict[str, int]] | None:
    """``text`` read without YAML, when it is made of simple lines only.

    Each line is blank, a comment starting in column 0, ``key: value``, ``key:`` followed by
    indented ``key: value`` lines (one level, the same indentation) or by ``- value`` lines (one
    list, indented or not), or ``key: |`` / ``>`` (``|-`` / ``>-``) and a block of lines of one
    indentation. A value is plain text, a boolean, null, a decimal integer or fraction, a date,
    simply quoted text, or a ``[item, ...]`` list of words or quoted text on one line. Returns the
    mapping and each top-level key's line (``first_line`` for the first line of ``text``; the first
    line of a repeated key, whose value is the last, as YAML gives it), or ``None`` when YAML must
    read the text. (Written for speed: it runs once per skill of every root.)
    """
    read = _plain(text, first_line)
    return None if read is None else (read[0], read[1])


def _plain(text: str, first_line: int) -> tuple[dict[str, Any], dict[str, int], dict[str, str]] | None:
    """``plain_mapping``'s reading and, as the YAML path gives it, the written text of each top-level
    plain scalar (what a hint quotes when YAML read it as something else than text)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if _NOT_PLAIN_TEXT.search(text):
        return None
    data: dict[str, Any] = {}
    lines: dict[str, int] = {}
    raw: dict[str, str] = {}
    rows = text.split("\n")
    fullmatch = _KEY_VALUE.fullmatch
    number = 0
    count = len(rows)
    while number < count:
        line = rows[number]
        number += 1
        if not line or line[0] == "#":
            continue
        match = fullmatch(line)
        if match is None:
            return None
        key, rest = match.groups()
        if key in WORDS_NOT_TEXT:  # the keys _resolves_to_string refuses: they start with a letter
            return None
        if key not in lines:
            lines[key] = number - 1 + first_line
        if rest is None or not rest.strip(" "):
            value, number = _nested(rows, number)
            if value is DECLINED:
                return None
            if value is None:
                raw[key] = ""  # an empty plain scalar
            data[key] = value
            continue
        first = rest[0]
        if first == "|" or first == ">":
            value, number = _block_scalar(rows, number, rest.rstrip(" "))
        else:
            value = _plain_value(rest)
            if first != "'" and first != '"' and first != "[":
                raw[key] = rest.rstrip(" ")  # a plain scalar, as written (a hint quotes it)
        if value is DECLINED:
            return None
        data[key] = value
    return data, lines, raw


def _nested(rows: list[str], number: int, indent: int = 0) -> tuple[Any, int]:
    """The value of a ``key:`` line (indented ``indent``) with nothing after it, from ``rows[number]``
    on: more indented ``key: value`` lines, ``- value`` lines (at the key's indentation too), or
    nothing (null); and the next row to read."""
    at = number
    while at < len(rows) and (not rows[at] or rows[at][0] == "#"):
        at += 1
    if at == len(rows):
        return None, number
    line = rows[at]
    text = line.lstrip(" ")
    spaces = len(line) - len(text)
    if text[:1] == "-" and spaces >= indent:
        return _sequence(rows, at)
    if spaces <= indent:
        return None, number  # the next key (or a line its reader refuses): null
    return _children(rows, at, spaces)


def _sequence(rows: list[str], number: int) -> tuple[Any, int]:
    """``- value`` lines of one indentation from ``rows[number]`` on (the first is one), and the next
    row to read (the first line indented less); ``DECLINED`` for anything else among them."""
    items: list[Any] = []
    indent = None
    while number < len(rows):
        line = rows[number]
        if not line or line[0] == "#":
            number += 1
            continue
        match = _ITEM.fullmatch(line)
        if match is None:
            if indent is not None and len(line) - len(line.lstrip(" ")) <= len(indent):
                break  # the next key (a sibling of the list's at its indentation): its reader checks it
            return DECLINED, number
        if indent is None:
            indent = match.group(1)
        elif match.group(1) != indent:
            if len(match.group(1)) < len(indent):
                break  # an item of an outer list: its reader checks it
            return DECLINED, number
        value = _plain_value(match.group(2))
        if value is DECLINED:
            return DECLINED, number
        items.append(value)
        number += 1
    return items, number


def _block_scalar(rows: list[str], number: int, header: str) -> tuple[Any, int]:
    """A ``|`` or ``>`` block (clipped, or stripped with ``-``) whose lines all have the indentation of
    the first, read as YAML reads it; ``DECLINED`` for anything else (an indentation indicator, ``+``,
    more-indented or leading blank lines, an empty block), and the next row to read."""
    how = _BLOCK_HEADERS.get(header)
    if how is None or number >= len(rows):
        return DECLINED, number
    folded, clip = how
    first = rows[number]
    text = first.lstrip(" ")
    indent = len(first) - len(text)
    if indent == 0 or not text:
        return DECLINED, number
    pieces = [text]
    blanks = 0
    last = number  # the row of the last line of text
    number += 1
    while number < len(rows):
        line = rows[number]
        text = line.lstrip(" ")
        if not text:
            if len(line) > indent:  # spaces past the indentation are text YAML keeps
                return DECLINED, number
            blanks += 1
            number += 1
            continue
        spaces = len(line) - len(text)
        if spaces == 0:
            break  # the next key, or a comment
        if spaces != indent:
            return DECLINED, number
        if folded:
            pieces.append(" " if not blanks else "\n" * blanks)
        else:
            pieces.append("\n" * (blanks + 1))
        pieces.append(text)
        blanks = 0
        last = number
        number += 1
    if clip and last < len(rows) - 1:  # the last line's own line break (none at the very end of the text)
        pieces.append("\n")
    return "".join(pieces), number


def _children(rows: list[str], number: int, indent: int) -> tuple[Any, int]:
    """The ``key: value`` lines indented ``indent`` from ``rows[number]`` on (each value as a top-level
    one, or nested again below a ``key:``), and the next row to read (the first line indented less)."""
    children: dict[str, Any] = {}
    while number < len(rows):
        line = rows[number]
        if not line or line[0] == "#":
            number += 1  # a comment in column 0 may sit among the indented lines
            continue
        match = _CHILD.fullmatch(line)
        if match is None:
            if len(line) - len(line.lstrip(" ")) < indent:
                break  # the next key: its reader checks it
            return DECLINED, number
        spaces = len(match.group(1))
        if spaces != indent:
            if spaces < indent:
                break
            return DECLINED, number
        key, rest = match.group(2), match.group(3)
        if not _resolves_to_string(key):
            return DECLINED, number
        number += 1
        if rest is None or not rest.strip(" "):
            value, number = _nested(rows, number, indent)
        else:
            value = _plain_value(rest)
        if value is DECLINED:
            return DECLINED, number
        children[key] = value
    return (children or DECLINED), number


# -- everything else: the safe YAML loader ---------------------------------------------------------

def _load_with_yaml(text: str, first_line: int) -> tuple[dict[str, Any], dict[str, int], dict[str, str]]:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            data: Any = None
        elif _plain_strings(node):
            # What safe construction returns for a mapping of strings, without its Python
            # machinery (about 40% of the YAML cost of discovery): the nodes' own values.
            data = {key.value: value.value for key, value in node.value}
        else:
            data = _simple_document(node)
            if data is _NOT_SIMPLE:
                data = loader.construct_document(node)
    except Exception as exc:  # noqa: BLE001 - constructors raise ValueError too ('2024-13-45', '!!int zz')
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        reason = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise FrontmatterError(Problem(
            "invalid_frontmatter", f"the frontmatter is not valid YAML: {reason}",
            hint="check quoting and indentation; a description containing ': ' needs quotes",
            line=(mark.line + first_line) if mark else first_line,
            column=(mark.column + 1) if mark else None,
        )) from None
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError(Problem(
            "invalid_frontmatter", f"the frontmatter must be a mapping of fields, not a {type(data).__name__}",
            hint="write 'name: …' and 'description: …' lines", line=first_line, column=1,
        ))
    lines: dict[str, int] = {}
    raw: dict[str, str] = {}
    if node is not None and hasattr(node, "value") and isinstance(node.value, list):
        for key_node, value_node in node.value:
            if isinstance(getattr(key_node, "value", None), str):
                lines.setdefault(key_node.value, key_node.start_mark.line + first_line)
                if isinstance(value_node, yaml.ScalarNode) and not value_node.style:  # plain: None, or "" (libyaml)
                    raw[key_node.value] = value_node.value  # as written, before YAML resolved it
    return data, lines, raw


_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_NOT_SIMPLE = object()


def _simple_document(node: Any) -> Any:
    """What safe construction returns for a document of mappings, lists, strings and nulls (the
    frontmatters of real skills: ``allowed-tools`` lists, ``metadata`` maps), built from the nodes
    without the constructor's Python machinery; ``_NOT_SIMPLE`` for anything else (numbers,
    booleans, dates, merge keys, explicit tags, a node met twice through an alias), which then
    goes to the safe constructor itself."""
    import yaml

    seen: set[int] = set()

    def build(n: Any) -> Any:
        if id(n) in seen:
            raise _Declined
        seen.add(id(n))
        if isinstance(n, yaml.ScalarNode):
            if n.tag == _STR_TAG:
                return n.value
            if n.tag == _NULL_TAG:
                return None
            raise _Declined
        if isinstance(n, yaml.SequenceNode) and n.tag == _SEQ_TAG:
            return [build(item) for item in n.value]
        if isinstance(n, yaml.MappingNode) and n.tag == _MAP_TAG:
            mapping: dict[str, Any] = {}
            for key, value in n.value:
                if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR_TAG):
                    raise _Declined  # null, numeric, merge ('<<') or complex keys: YAML's own rules
                mapping[key.value] = build(value)
            return mapping
        raise _Declined

    try:
        return build(node)
    except _Declined:
        return _NOT_SIMPLE


class _Declined(Exception):
    pass


def _plain_strings(node: Any) -> bool:
    """A mapping whose keys and values are all scalars the resolver tagged as strings."""
    import yaml

    return isinstance(node, yaml.MappingNode) and all(
        key.tag == _STR_TAG and value.tag == _STR_TAG
        and isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode)
        for key, value in node.value)


def parse(data: bytes, eof: bool, max_frontmatter_bytes: int, required: bool) -> Frontmatter | None:
    text, body_start, closing_line = split(data, eof, max_frontmatter_bytes, required)
    if text is None:
        return None
    mapping, lines, raw = _load(text, 2)
    return Frontmatter(mapping, body_start, lines, closing_line, raw)


MAX_DESCRIPTION_CHARS = 1024  # the Agent Skills specification's limit


def _yaml_reading(value: object) -> str:
    """How YAML read a plain scalar that is not text, for a hint: 'a bool', 'a number', …"""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _quote_hint(key: str, value: object, raw: str | None, fallback: str) -> tuple[str, str]:
    """``(message suffix, hint)`` for a field YAML did not read as text."""
    written = raw if raw is not None else fallback
    quoted = '"' + written.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return (f"; YAML reads {written} as {_yaml_reading(value)}",
            f"quote the value so YAML reads it as text: {key}: {quoted}")


def description_problem(value: object, line: int | None, required: bool, raw: str | None = None) -> Problem | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        if value is None:
            return Problem("invalid_frontmatter", "'description' must be a string (found missing)",
                           hint="add 'description: <when to use this, in one line>'", line=line)
        if raw is not None:
            why, hint = _quote_hint("description", value, raw, raw)
            return Problem("invalid_frontmatter", f"'description' must be a string (found a {type(value).__name__})"
                           + why, hint=hint, line=line)
        return Problem("invalid_frontmatter", f"'description' must be a string (found a {type(value).__name__})",
                       hint="add 'description: <when to use this, in one line>'", line=line)
    stripped = value.strip()
    if not stripped:
        return Problem("invalid_frontmatter", "'description' is blank",
                       hint="say when this skill should be used", line=line)
    return None


def check_skill(fm: Frontmatter, dir_name: str) -> list[Problem]:
    """Every rule a skill's frontmatter must meet, as a list of problems (empty when valid)."""
    return check_skill_as(fm, dir_name, None)[0]


# The name each peer serves a plugin's skill under when its frontmatter ``name`` is not its folder's.
PEER_NAMES = {"claude": "the folder's (Claude Code's rule)", "codex": "the frontmatter's (Codex's rule)"}


def check_skill_as(fm: Frontmatter, dir_name: str, dialect: str | None) -> tuple[list[Problem], list[Problem], str]:
    """``(problems, name warnings, served name)`` of a skill's frontmatter.

    ``dialect`` None (a root's skill): the frontmatter ``name`` must be the folder's, else
    ``name_mismatch`` / ``invalid_name`` are problems (the skill is refused). A plugin's skill
    (``"claude"`` / ``"codex"``) is served under the name its peer serves it under: Claude Code's
    the folder's, Codex's the frontmatter's (the folder's when that is no resource name); a name
    that differs is a warning, never a refusal.
    """
    name = fm.data.get("name")
    if dialect is None or not isinstance(name, str):
        return _check_skill(fm, dir_name), [], dir_name
    name_line = fm.lines.get("name", 2)
    warnings: list[Problem] = []
    served = dir_name
    if dialect == "codex" and name_problem(name) is None:
        served = name
    if name_problem(served):
        return _check_skill(fm, dir_name), [], dir_name
    if name != served or name != dir_name:
        why = name_problem(name)
        kind = "invalid_name" if why else "name_mismatch"
        said = f"name '{name}' {why}" if why else f"name '{name}' differs from its directory '{dir_name}'"
        warnings.append(Problem(kind, f"{said}; served as '{served}', {PEER_NAMES.get(dialect, 'the folder')} name",
                                hint=f"write 'name: {dir_name}' or rename the directory to match", line=name_line))
    problems: list[Problem] = []
    desc = description_problem(fm.data.get("description"), fm.lines.get("description", 1), required=True,
                               raw=fm.raw.get("description"))
    if desc:
        problems.append(desc)
    return problems, warnings, served


def _check_skill(fm: Frontmatter, dir_name: str) -> list[Problem]:
    problems: list[Problem] = []
    name = fm.data.get("name")
    name_line = fm.lines.get("name", 2)
    if name is None:
        if "name" in fm.data and "name" in fm.raw:  # 'name: ~', 'name: null'
            why, hint = _quote_hint("name", name, fm.raw["name"], dir_name)
            problems.append(Problem("invalid_frontmatter", "'name' must be a string" + why, hint=hint,
                                    line=name_line))
        else:
            problems.append(Problem("invalid_frontmatter", "'name' is missing",
                                    hint=f"add 'name: {dir_name}'", line=1))
    elif not isinstance(name, str):
        raw = fm.raw.get("name")
        if raw is not None:
            why, hint = _quote_hint("name", name, raw, dir_name)
        else:
            why, hint = "", f"write 'name: {dir_name}'"
        problems.append(Problem("invalid_frontmatter", f"'name' must be a string, not {type(name).__name__}" + why,
                                hint=hint, line=name_line))
    else:
        why = name_problem(name)
        if why:
            problems.append(Problem("invalid_name", f"name '{name}' {why}",
                                    hint="rename the skill (the directory and 'name:' together)", line=name_line))
        elif name != dir_name:
            problems.append(Problem("name_mismatch", f"name '{name}' differs from its directory '{dir_name}'",
                                    hint=f"write 'name: {dir_name}' or rename the directory to '{name}'",
                                    line=name_line))
    desc = description_problem(fm.data.get("description"), fm.lines.get("description", 1), required=True,
                               raw=fm.raw.get("description"))
    if desc:
        problems.append(desc)
    return problems


def one_line(description: str) -> str:
    """The catalog's text of a description: stripped, every whitespace run (line breaks of a
    ``|``/``>`` block or a quoted string across lines included) joined into one space."""
    return " ".join(description.split())  # str.split() splits on the same whitespace runs, faster


def skill_warnings(fm: Frontmatter) -> list[Problem]:
    """What a valid skill's frontmatter should change; the skill is still served."""
    description = fm.data.get("description")
    if isinstance(description, str) and len(description.strip()) > MAX_DESCRIPTION_CHARS:
        return [Problem("description_too_long",
                        f"the description is {len(description.strip())} characters; the Agent Skills limit is "
                        f"{MAX_DESCRIPTION_CHARS} (the skill is served, but other tools may refuse it)",
                        hint="say when to use the skill in fewer words; move details into the body",
                        line=fm.lines.get("description"))]
    return []
