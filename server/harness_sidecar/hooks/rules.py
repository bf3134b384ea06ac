"""A handler's ``if`` (protocol-v4 §3): one permission rule in Claude Code's syntax, decided before the
handler starts — the handler runs only when the tool call (as the hooks see it: ``hooks.vocabulary``)
matches.

Claude Code's rules, as its hooks and permissions references state them:

- ``Tool`` (no parentheses): every call of that tool; ``mcp__server`` every tool of that server;
  ``*`` in a tool name is a wildcard (``mcp__github__*``).
- ``Bash(spec)``: ``spec`` matched against each subcommand of ``tool_input.command`` (split on ``&&``,
  ``||``, ``;``, ``|`` and newlines; leading ``VAR=value`` assignments stripped; commands inside
  ``$()`` and backticks checked too). ``*`` matches any characters; a trailing `` *`` is a word
  boundary (``Bash(ls *)`` takes ``ls -la`` and ``ls``, not ``lsof``); the legacy ``:*`` suffix is a
  prefix. A spec of more than the command name runs the hook anyway when the command holds
  ``$()``, backticks or ``$VAR``; a command that cannot be split runs it (the filter fails open).
- ``Read``/``Edit``/``Write``/``MultiEdit``/``NotebookEdit``/``Glob``/``Grep``(path pattern): gitignore
  style against the call's path (``file_path``, ``notebook_path``, or ``path``, default the cwd):
  ``//abs``, ``~/home``, ``/from-the-project`` (the folder holding the declaring ``.claude``/``.codex``
  folder, else the declaring file's folder), ``x`` or ``./x`` from the cwd; ``*`` within a segment,
  ``**`` across segments, a pattern without ``/`` matches the file's name at any depth.
- ``WebFetch(domain:host)``: the URL's host is ``host`` or under it.
- Any other ``Tool(spec)``: the tool's name must match; the spec is not understood here, so the hook
  runs (fails open, as Claude Code's filter does when it cannot decide).

Only tool events evaluate ``if``; on any other event a handler with ``if`` never runs.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"})
PATH_TOOLS = {"Read": "file_path", "Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path", "NotebookRead": "notebook_path", "Glob": "path", "Grep": "path",
              "LS": "path"}
_RULE = re.compile(r"\s*([A-Za-z0-9_\-*.]+)\s*(?:\((.*)\))?\s*", re.S)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SUBSHELL = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_SEPARATORS = re.compile(r"&&|\|\||;|\||\n")


class BadRule(ValueError):
    """An ``if`` that is not one permission rule."""


@dataclass(frozen=True)
class Rule:
    text: str
    tool: str
    spec: str | None  # None: the tool alone
    base: str | None = None  # the folder a ``/x`` path pattern starts from

    def matches(self, tool_name: str, tool_input: dict[str, Any], cwd: str) -> bool:
        if not _name_matches(self.tool, tool_name):
            return False
        if self.spec is None or self.spec in ("", "*"):
            return True
        if tool_name == "Bash":
            command = tool_input.get("command")
            return not isinstance(command, str) or _bash_matches(self.spec, command)
        if tool_name in PATH_TOOLS:
            path = tool_input.get(PATH_TOOLS[tool_name]) or (cwd if PATH_TOOLS[tool_name] == "path" else None)
            return not isinstance(path, str) or _path_matches(self.spec, path, cwd, self.base)
        if tool_name == "WebFetch" and self.spec.startswith("domain:"):
            url = tool_input.get("url")
            if not isinstance(url, str):
                return True
            host, want = (urlsplit(url).hostname or "").lower(), self.spec[7:].strip().lower()
            return host == want or host.endswith("." + want)
        return True  # a spec this sidecar does not read: the hook runs


def compile_rule(text: str, declared_in: str | None = None) -> Rule:
    """The rule ``text`` states; ``declared_in``: the file declaring it (for ``/x`` path patterns)."""
    found = _RULE.fullmatch(text)
    if not found or not text.strip():
        raise BadRule(f"'if' {text!r} is not a permission rule such as \"Bash(git *)\" or \"Edit(*.ts)\"")
    base = None
    if declared_in is not None:
        folder = os.path.dirname(os.path.abspath(declared_in))
        base = os.path.dirname(folder) if os.path.basename(folder) in (".claude", ".codex") else folder
    return Rule(text, found.group(1), found.group(2), base)


def _name_matches(pattern: str, name: str) -> bool:
    if pattern == name:
        return True
    if "*" in pattern:
        return fnmatch.fnmatchcase(name, pattern)
    return name.startswith(pattern + "__") and pattern.startswith("mcp__") and pattern.count("__") == 1


# -- Bash --------------------------------------------------------------------------------------------

def _bash_matches(spec: str, command: str) -> bool:
    commands = _subcommands(command)
    if commands is None:
        return True  # cannot be split: fail open
    if any(_command_matches(spec, c) for c in commands):
        return True
    words = spec.rstrip(":*").strip().split()
    return len(words) > 1 and ("$(" in command or "`" in command or re.search(r"\$[A-Za-z_{]", command) is not None)


def _subcommands(command: str) -> list[str] | None:
    inner = [a or b for a, b in _SUBSHELL.findall(command)]
    out = []
    for text in [_SUBSHELL.sub(" ", command), *inner]:
        for part in _SEPARATORS.split(text):
            try:
                words = shlex.split(part, posix=True)
            except ValueError:
                return None
            while words and _ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words:
                out.append(" ".join(words))
    return out


def _command_matches(spec: str, command: str) -> bool:
    spec = spec.strip()
    if spec.endswith(":*"):  # legacy prefix form
        prefix = spec[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ") or command.startswith(prefix)
    if spec.endswith(" *"):  # a word boundary
        head = spec[:-2].rstrip()
        if "*" not in head:
            return command == head or command.startswith(head + " ")
        return _glob(head, command) or _glob(head + " *", command)
    return _glob(spec, command)


def _glob(pattern: str, text: str) -> bool:
    regex = "".join(".*" if ch == "*" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, text, re.S) is not None


# -- paths --------------------------------------------------------------------------------------------

def _path_matches(spec: str, path: str, cwd: str, base: str | None) -> bool:
    spec = spec.strip()
    if spec.startswith("//"):
        root, pattern = "/", spec[2:]
    elif spec.startswith("~/"):
        root, pattern = os.path.expanduser("~"), spec[2:]
    elif spec.startswith("/"):
        root, pattern = base or cwd, spec[1:]
    else:
        root, pattern = cwd, spec[2:] if spec.startswith("./") else spec
    target = os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
    root = os.path.normpath(root)
    if root != "/" and not (target == root or target.startswith(root + os.sep)):
        return False
    relative = os.path.relpath(target, root)
    if "/" not in pattern.rstrip("/"):
        return _segment_glob(pattern.rstrip("/"), os.path.basename(target)) or \
            any(_segment_glob(pattern.rstrip("/"), part) for part in relative.split(os.sep)[:-1])
    return re.fullmatch(_path_regex(pattern.rstrip("/")), relative) is not None or \
        re.fullmatch(_path_regex(pattern.rstrip("/")) + "/.*", relative) is not None


def _segment_glob(pattern: str, name: str) -> bool:
    return re.fullmatch(_path_regex(pattern), name) is not None


def _path_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
