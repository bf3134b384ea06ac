"""Claude Code's matcher rules (protocol-v3 §5), decided once when a declaration is read.

- absent, ``""`` or ``"*"``: every value;
- only letters, digits, ``_``, ``-``, spaces, ``,`` and ``|``: a set of exact names split on ``|``
  and ``,`` (each stripped of spaces) — ``"Bash"``, ``"Edit|Write"``, ``"Read, Grep"``;
- anything else: an unanchored regular expression (Python ``re.search``) — ``"mcp__.*"``,
  ``"^Notebook"``.

The value matched is the tool's name as the sidecar names it (``mcp__<server>__<tool>`` for an
MCP tool), or the event's own value (``startup`` for SessionStart, the trigger for compaction).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAMES = re.compile(r"[A-Za-z0-9_\- ,|]*")


class BadMatcher(ValueError):
    """A matcher that is neither a name set nor a valid regular expression."""


@dataclass(frozen=True)
class Matcher:
    text: str | None  # as declared (None: absent)
    names: frozenset[str] | None = None  # the exact-name form
    regex: re.Pattern[str] | None = None  # the regular-expression form

    def matches(self, value: str) -> bool:
        if self.names is not None:
            return value in self.names
        if self.regex is not None:
            return self.regex.search(value) is not None
        return True


def compile_matcher(text: str | None) -> Matcher:
    """The matcher ``text`` declares; raises ``BadMatcher`` for an invalid regular expression."""
    if text is None or text.strip() in ("", "*"):
        return Matcher(text)
    if _NAMES.fullmatch(text):
        names = frozenset(n.strip() for n in re.split(r"[|,]", text) if n.strip())
        return Matcher(text, names=names) if names else Matcher(text)
    try:
        return Matcher(text, regex=re.compile(text))
    except re.error as exc:
        raise BadMatcher(f"matcher {text!r} is not a valid regular expression: {exc}") from None
