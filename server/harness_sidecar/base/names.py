"""The naming rules: the one shared by skills, templates and extension ids; tool and MCP server names.

Plain data and ``re`` only: the wire params, the extension loader and the MCP module read the
same patterns from here.
"""

from __future__ import annotations

import re

# The resource-name rule (skills, templates, plugins, extension ids): the Agent Skills spec's skill
# name, lower-case letters and digits, single hyphens between, none first or last.
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# A command template's name (the file stem of commands/<name>.md, prompts/<name>.md): the resource-name
# rule with '_' allowed where a '-' is (v4: Claude Code serves commit-commands' clean_gone.md as /clean_gone).
COMMAND_NAME_PATTERN = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")
# A command template as listed and rendered: <name>, or <plugin>:<name> (a Codex home's prompts:<name>).
QUALIFIED_COMMAND_NAME = re.compile(rf"(?:{NAME_PATTERN.pattern}:)?{COMMAND_NAME_PATTERN.pattern}")

# An MCP server's name in thread/start.mcpServers; '__' is refused besides (it separates the parts of a full name).
MCP_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
# A plugin's MCP server as the sidecar names it: plugin_<plugin>_<server> (<plugin> a resource name,
# <server> the key in its .mcp.json normalised as Claude Code normalises it, plugin_server_part);
# '__' is refused besides, as above.
PLUGIN_MCP_SERVER_NAME = re.compile(rf"plugin_(?:{NAME_PATTERN.pattern})_[A-Za-z0-9_-]{{1,64}}")
# What of a plugin's server key stays in its name: Claude Code replaces every other character with '_'
# ("google calendar" -> plugin_<plugin>_google_calendar, tools mcp__plugin_<plugin>_google_calendar__<tool>).
_NOT_IN_SERVER_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_PLUGIN_SERVER_KEY = 64
# A tool's name, whatever provides it (dynamic, extension, MCP: mcp__<server>__<tool> whole), and
# exactly one longer form: a plugin's MCP tool, mcp__plugin_<plugin>_<server>__<tool>.
TOOL_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,64}}|mcp__{PLUGIN_MCP_SERVER_NAME.pattern}__[A-Za-z0-9_-]{{1,64}}")
MAX_NAME_LENGTH = 64
WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid resource name, or ``None`` when it is."""
    return _problem(name, NAME_PATTERN,
                    "must be lower-case letters and digits in groups joined by single hyphens (e.g. 'code-review')")


def command_name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid command template name (the resource-name rule, '_' allowed as a
    joiner like '-'), or ``None`` when it is."""
    return _problem(name, COMMAND_NAME_PATTERN,
                    "must be lower-case letters and digits in groups joined by single hyphens or underscores "
                    "(e.g. 'clean_gone', 'code-review')")


def _problem(name: object, pattern: re.Pattern[str], rule: str) -> str | None:
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name:
        return "must not be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"is {len(name)} characters long; at most {MAX_NAME_LENGTH} are allowed"
    if not pattern.fullmatch(name):
        return rule
    if name in WINDOWS_DEVICE_NAMES:
        return f"'{name}' is a reserved Windows device name"
    return None



def qualified_name_problem(name: object) -> str | None:
    """Why ``name`` is neither a resource name nor a plugin's ``<plugin>:<name>``, or ``None``.

    Skills and command templates of a plugin carry its name (Claude Code's convention): both
    parts follow the resource-name rule, joined by one ':'.
    """
    if isinstance(name, str) and name.count(":") == 1:
        plugin, _, local = name.partition(":")
        for part, what in ((plugin, "plugin name"), (local, "name")):
            why = name_problem(part)
            if why:
                return f"is '<plugin>:<name>' but its {what} '{part}' {why}"
        return None
    return name_problem(name)


def plugin_server_part(server: str) -> str:
    """A plugin's ``.mcp.json`` key as it appears in tool names: each character other than a letter,
    digit, '_' or '-' becomes '_' (Claude Code's normalisation of MCP server names)."""
    return _NOT_IN_SERVER_NAME.sub("_", server)


def plugin_server_key_problem(server: str) -> str | None:
    """Why a plugin's ``.mcp.json`` key cannot name a server, or ``None``: the peers accept any
    non-empty key (spaces, dots); only what cannot make a tool name is refused."""
    if not server.strip():
        return "its name must not be blank"
    if len(server) > MAX_PLUGIN_SERVER_KEY:
        return f"its name is {len(server)} characters long; at most {MAX_PLUGIN_SERVER_KEY} are allowed"
    if "__" in plugin_server_part(server):
        return "its name must not hold '__' (or two characters in a row that become '_'): it separates a tool name's parts"
    return None


def plugin_mcp_server_name(plugin: str, server: str) -> str:
    """The name the sidecar runs a plugin's MCP server under; its tools are mcp__<this>__<tool>."""
    return f"plugin_{plugin}_{plugin_server_part(server)}"
