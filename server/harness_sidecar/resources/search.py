"""Finding skills by what they are for: the builtin ``find_skills`` tool's matching and ranking.

Offered when ``limits.catalogBytes`` leaves skills out of the system prompt's listing, so the
model can still find (and then ``load_skill``) every skill of the catalog. Matching looks
at names and descriptions, case-insensitively; the answer is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness_sidecar.errors import DomainError

MAX_RESULTS = 20
MAX_QUERY_CHARS = 200
FIND_SKILLS_DESCRIPTION = ("Search the skills that are not all listed in the system prompt: returns the skills whose "
                           "name or description matches the query (words, or a name or its start), best first. "
                           "Load one with load_skill.")
FIND_SKILLS_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Words to look for, or a skill's name or its start."}},
    "required": ["query"],
    "additionalProperties": False,
}
_WORD = re.compile(r"[^\W_]+")


def rank(entries: Iterable[tuple[str, str]], query: str) -> list[tuple[str, str]]:
    """The ``(name, description)`` entries that match ``query``, best first.

    Order: the exact name; names starting with the query; names containing every word;
    entries whose name or description contains every word; then entries containing some
    of the words (more words first). Ties go by more words in the name, then by name.
    Words are runs of letters and digits; a query written with spaces also matches the
    hyphenated name (``fill form`` finds ``fill-form``).
    """
    wanted = query.strip().lower()
    words = list(dict.fromkeys(_WORD.findall(wanted)))
    slug = "-".join(words)
    if not wanted:
        return []
    scored = []
    for name, description in entries:
        in_name = sum(1 for w in words if w in name)
        text = f"{name} {description.lower()}"
        found = sum(1 for w in words if w in text)
        if name == wanted or name == slug:
            tier = 0
        elif name.startswith(wanted) or (slug and name.startswith(slug)):
            tier = 1
        elif words and in_name == len(words):
            tier = 2
        elif words and found == len(words):
            tier = 3
        elif found:
            tier = 4
        else:
            continue
        scored.append(((tier, -found, -in_name, name), (name, description)))
    scored.sort(key=lambda item: item[0])
    return [entry for _, entry in scored]


def find_skills(entries: Iterable[tuple[str, str]], arguments: dict[str, Any],
                limit: int = MAX_RESULTS) -> tuple[str, dict[str, Any]]:
    """The text and details of a ``find_skills`` answer; ``invalid_arguments`` for a bad query."""
    extra = sorted(set(arguments) - {"query"})
    query = arguments.get("query")
    if extra or not isinstance(query, str):
        why = f"unexpected field(s) {', '.join(extra)}" if extra else "'query' must be a string"
        raise DomainError("invalid_arguments", f"find_skills takes exactly {{query}}: {why}")
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise DomainError("invalid_arguments", f"the query must have 1 to {MAX_QUERY_CHARS} characters")
    matches = rank(entries, query)
    shown = matches[:limit]
    if not shown:
        text = f"No skill matches {query.strip()!r}. Try other words, or a shorter start of a name."
    else:
        text = "".join(f"{name}: {description}\n" for name, description in shown)
        if len(matches) > len(shown):
            text += (f"({len(matches) - len(shown)} more match{'es' if len(matches) - len(shown) != 1 else ''}: "
                     "use more specific words)\n")
        text += "Load one with the load_skill tool.\n"
    return text, {"matches": [name for name, _ in shown], "total": len(matches)}
