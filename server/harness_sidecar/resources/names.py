"""The one naming rule shared by skills, templates and extension ids."""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME_LENGTH = 64
WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid resource name, or ``None`` when it is."""
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name:
        return "must not be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"is {len(name)} characters long; at most {MAX_NAME_LENGTH} are allowed"
    if not NAME_PATTERN.fullmatch(name):
        return "must be lower-case letters and digits in groups joined by single hyphens (e.g. 'code-review')"
    if name in WINDOWS_DEVICE_NAMES:
        return f"'{name}' is a reserved Windows device name"
    return None

