"""The naming rules: the one shared by skills, templates and extension ids; tool and MCP server names.

Plain data and ``re`` only: the wire params, the extension loader and the MCP module read the
same patterns from here.
"""

from __future__ import annotations

import re

# A tool's name, whatever provides it (dynamic, extension, MCP: mcp__<server>__<tool> whole).
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# An MCP server's name in thread/start.mcpServers; '__' is refused besides (it separates the parts of a full name).
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")

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

