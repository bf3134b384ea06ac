"""Failures of a TAP stream (node --test, the Neovim plugin's tests) as one line each.

A client's own test suite runs as a child process; when one of its tests fails, the pytest
summary should say which and why on one line, not paste 150 lines of TAP. ``failures`` reads
``not ok N - name`` lines and the ``error:`` / ``location:`` of their YAML blocks (node's
format); a failing parent whose only reason is its failing subtests is left out, since the
subtest names the cause.
"""

from __future__ import annotations

import re

_NOT_OK = re.compile(r"^(?P<indent>\s*)not ok(?: \d+)? - (?P<name>.*?)(?:\s+#.*)?$")
_FIELD = re.compile(r"^\s*(?P<key>error|location|failureType):\s?(?P<value>.*)$")


def failures(tap: str) -> list[str]:
    """One line per failing test: ``name: error (file:line)``."""
    lines = tap.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        match = _NOT_OK.match(line)
        if not match:
            continue
        fields: dict[str, str] = {}
        j = i + 1
        if j < len(lines) and lines[j].strip() == "---":
            j += 1
            while j < len(lines) and lines[j].strip() != "...":
                field = _FIELD.match(lines[j])
                if field:
                    value = field["value"].strip()
                    if value in ("|-", "|", ">-", ">"):  # a block scalar: its first line is enough
                        value = lines[j + 1].strip() if j + 1 < len(lines) else ""
                    fields.setdefault(field["key"], value.strip("'\""))
                j += 1
        if fields.get("failureType") == "subtestsFailed":
            continue
        where = fields.get("location", "").rsplit("/", 1)[-1]
        reason = fields.get("error", "")
        out.append(f"{match['name']}: {reason or 'failed'}" + (f" ({where})" if where else ""))
    return out


def summary(what: str, tap: str, rest: str = "") -> str:
    """An assertion message whose first line names every failing test; the whole output follows."""
    failed = failures(tap)
    head = f"{what}: {len(failed)} failed: " + "; ".join(failed) if failed else f"{what} failed (no 'not ok' line)"
    return head + "\n\n" + tap[-6000:] + ("\n" + rest[-3000:] if rest else "")
