"""The builtin ``find_skills`` tool's declaration: its description, input schema, query bound and the
check of its arguments — what a thread's tool list needs. The matching and ranking behind a call live in
``resources.search``, imported at the first call or when the sidecar is idle (issue #32: the first
catalog does not wait for the search index's classes).
"""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.errors import DomainError

MAX_QUERY_CHARS = 200
FIND_SKILLS_DESCRIPTION = ("Search the skills that are not all listed in the system prompt by words: returns the skills "
                           "whose name, description or folder has the query's words (a skill's exact name first), "
                           "best first. Load one with load_skill.")
FIND_SKILLS_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What the skill is for, in words, or a skill's name."}},
    "required": ["query"],
    "additionalProperties": False,
}


def check_arguments(arguments: dict[str, Any]) -> str:
    """The query of a ``find_skills`` call; ``invalid_arguments`` for anything else."""
    extra = sorted(set(arguments) - {"query"})
    query = arguments.get("query")
    if extra or not isinstance(query, str):
        why = f"unexpected field(s) {', '.join(extra)}" if extra else "'query' must be a string"
        raise DomainError("invalid_arguments", f"find_skills takes exactly {{query}}: {why}")
    return check_query(query)


def check_query(query: str) -> str:
    """A search query's bound, the same for ``find_skills`` and ``tool_search``: 1 to ``MAX_QUERY_CHARS``
    characters, not only blanks; ``invalid_arguments`` otherwise."""
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise DomainError("invalid_arguments", f"the query must have 1 to {MAX_QUERY_CHARS} characters")
    return query
