"""Command templates: ``commands/*.md`` of plugins and roots, as Claude Code and Codex write them.

A command template is data: a Markdown file with optional frontmatter (``description``,
``argument-hint``, ``allowed-tools``, ``model``: listed as metadata, never acted on) and a body
whose placeholders are filled from the text the user typed after ``/<name>``:

- ``$ARGUMENTS``: the whole text (trimmed);
- ``$1`` … ``$9``: its words, split as a POSIX shell would (``shlex``), missing ones empty;
- ``$NAME`` (Codex: upper-case letters, digits, ``_``): the value of a ``NAME=value`` word,
  left as written when no such word was given; ``$$`` is one ``$``.

Replacement is one pass: values are inserted as they are and never scanned again. A body
without any placeholder gets the text appended as ``ARGUMENTS: <text>`` (Claude Code's rule), so
what the user typed is never dropped. Claude Code's ``!`command``` lines (run a shell command)
and ``@file`` references (inline a file) are kept verbatim: the sidecar never runs or reads them,
and says so with one diagnostic kind ``template_feature_unsupported``.

(``harness_sidecar/commands.py`` is something else: commands that trusted extensions register.)
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from harness_sidecar.errors import DomainError
from harness_sidecar.limits import Limits
from harness_sidecar.names import name_problem
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.catalog import Diagnostic, Root, root_origin
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.resources.paths import decode_utf8, read_contained
from harness_sidecar.resources.records import Record

METADATA = ("description", "argument-hint", "allowed-tools", "model")
_PLACEHOLDER = re.compile(r"\$(?:(ARGUMENTS)\b|([1-9])|([A-Z][A-Z0-9_]*)|(\$))")
_NAMED_WORD = re.compile(r"([A-Z][A-Z0-9_]*)=(.*)", re.S)
_SHELL = re.compile(r"!`[^`\n]*`")
_FILE_REF = re.compile(r"(?<![\w`])@(?=[\w./~-]*[./])[\w./~-]*\w")
_SLASH = re.compile(r"/([a-z0-9]+(?:-[a-z0-9]+)*(?::[a-z0-9]+(?:-[a-z0-9]+)*)?)(?=\s|$)")


class CommandTemplate(Record):
    """One ``commands/<name>.md``; ``name`` is ``<plugin>:<local>`` for a plugin's."""

    __slots__ = ("name", "local_name", "path", "boundary", "origin", "metadata", "features", "stamp")
    _uncompared = frozenset(["stamp"])

    def __init__(self, name: str, local_name: str, path: str, boundary: Root, origin: dict[str, Any],
                 metadata: dict[str, Any], features: list[dict[str, str]], stamp: int | None = None) -> None:
        self.name = name
        self.local_name = local_name
        self.path = path
        self.boundary = boundary  # the root or plugin the file must stay inside
        self.origin = origin
        self.metadata = metadata  # the frontmatter's METADATA keys, as written
        self.features = features  # !`…` and @file found in the body (kept verbatim)
        self.stamp = stamp  # a hash of the body when scanned

    @property
    def source(self) -> str:  # the file, as other catalog entries name it (shadowing diagnostics)
        return self.path

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for key in METADATA:
            if key in self.metadata:
                out[_WIRE_KEYS[key]] = self.metadata[key]
        out.update(path=self.path, source=self.origin)
        if self.features:
            out["unsupported"] = [f["kind"] for f in self.features]
        return out


_WIRE_KEYS = {"description": "description", "argument-hint": "argumentHint", "allowed-tools": "allowedTools",
              "model": "model"}


def features_of(body: str) -> list[dict[str, str]]:
    """The ``!`command``` and ``@file`` uses in ``body``, in order (each kept verbatim when rendered)."""
    found = [(m.start(), {"kind": "shell", "text": m.group(0)}) for m in _SHELL.finditer(body)] if "!`" in body else []
    if "@" in body:
        found += [(m.start(), {"kind": "file", "text": m.group(0)}) for m in _FILE_REF.finditer(_SHELL.sub("", body))]
    return [f for _, f in sorted(found, key=lambda pair: pair[0])]


def feature_diagnostic(name: str, path: str, features: list[dict[str, str]], **extra: Any) -> Diagnostic:
    shown = ", ".join(f["text"] for f in features[:3]) + (" …" if len(features) > 3 else "")
    return Diagnostic("template_feature_unsupported",
                      f"command template '{name}' uses {len(features)} feature(s) the sidecar never runs or reads "
                      f"({shown}); they are kept verbatim in the rendered text", path,
                      "run the command or attach the file yourself if the model needs it",
                      extra={"name": name, "features": features, **extra})


def read_command(path: str, boundary: Root, limits: Limits) -> tuple[dict[str, Any], str]:
    """``(metadata, body)`` of a command template file inside ``boundary``. Raises ``DomainError``."""
    _, data = read_contained(path, boundary.real, limits.max_file_bytes, "command template")
    try:
        fm = frontmatter.parse(data, True, limits.max_frontmatter_bytes, required=False)
    except FrontmatterError as exc:
        raise DomainError(exc.problem.kind if exc.problem.kind in ("not_utf8", "too_large") else "invalid_frontmatter",
                          f"command template {path}: {exc.problem.message}", path=path,
                          line=exc.problem.line) from None
    metadata: dict[str, Any] = {}
    body_start = 0
    if fm is not None:
        for key in METADATA:
            value = fm.data.get(key)
            if value is None:
                continue
            if key == "allowed-tools" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                metadata[key] = value
            elif key == "argument-hint" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                # `argument-hint: [name]` is a YAML list; Claude Code shows it as written
                metadata[key] = "[" + ", ".join(value) + "]"
            elif isinstance(value, str):
                metadata[key] = value.strip()
            else:
                raise DomainError("invalid_frontmatter", f"command template {path}: '{key}' must be text, not "
                                  f"{type(value).__name__}", path=path, line=fm.lines.get(key))
        body_start = fm.body_start
    body = decode_utf8(data, path, "command template", body_start)
    return metadata, body.lstrip("\r\n") if fm is not None else body


def scan_folder(folder: str, boundary: Root, plugin: str | None, origin: dict[str, Any], limits: Limits,
                diagnostics: list[Diagnostic], files: list[str] | None = None) -> list[CommandTemplate]:
    """The command templates of ``folder`` (its ``*.md``), or of exactly ``files`` when given."""
    if files is None:
        try:
            with os.scandir(folder) as it:
                files = sorted(os.path.join(folder, e.name) for e in it
                               if e.name.endswith(".md") and not e.name.startswith("."))
        except FileNotFoundError:
            return []
        except OSError as exc:
            diagnostics.append(Diagnostic("unreadable", f"{folder} cannot be listed: {exc.strerror}", folder))
            return []
    found = []
    for path in files:
        local = os.path.basename(path)[:-3]
        why = name_problem(local)
        if why:
            diagnostics.append(Diagnostic("invalid_name", f"command template name '{local}' {why}", path,
                                          "rename the file to a lower-case, hyphenated name"))
            continue
        name = f"{plugin}:{local}" if plugin else local
        try:
            metadata, body = read_command(path, boundary, limits)
        except DomainError as exc:
            diagnostics.append(Diagnostic.from_error(exc, path))
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic.unreadable(exc, path))
            continue
        features = features_of(body)
        if features:
            diagnostics.append(feature_diagnostic(name, path, features, severity="warning"))
        found.append(CommandTemplate(name, local, path, boundary, origin, metadata, features, hash(body)))
    return found


def scan_root(root: Root, limits: Limits, diagnostics: list[Diagnostic]) -> list[CommandTemplate]:
    """A root's ``commands/*.md``: the same format as a plugin's, named without a prefix."""
    return scan_folder(os.path.join(root.path, "commands"), root, None, root_origin(root), limits, diagnostics)


# -- rendering ------------------------------------------------------------------------------------

def split_words(text: str) -> list[str]:
    """``text`` split as a POSIX shell would (quotes and backslashes); ``invalid_arguments`` if it cannot be."""
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        raise DomainError("invalid_arguments", f"the arguments cannot be split as a shell would: {exc}",
                          text=text[:200]) from None


def render_body(body: str, text: str) -> str:
    """Fill ``body``'s placeholders from ``text`` (see the module's docstring)."""
    text = text.strip()
    words = split_words(text)
    named = {}
    for word in words:
        match = _NAMED_WORD.fullmatch(word)
        if match:
            named[match.group(1)] = match.group(2)
    used = False

    def fill(m: re.Match[str]) -> str:
        nonlocal used
        whole, position, name, dollar = m.groups()
        if dollar:
            return "$"
        if whole:
            used = True
            return text
        if position:
            used = True
            i = int(position) - 1
            return words[i] if i < len(words) else ""
        if name in named:
            used = True
            return named[name]
        return m.group(0)

    out = _PLACEHOLDER.sub(fill, body)
    if not used and text and not _PLACEHOLDER.search(body):
        out = out.rstrip("\n") + f"\n\nARGUMENTS: {text}\n"
    return out


def render(template: CommandTemplate, text: str, limits: Limits) -> tuple[dict[str, str], list[Diagnostic]]:
    """The message ``/<name> text`` sends, and the diagnostics for features left verbatim."""
    try:
        _, body = read_command(template.path, template.boundary, limits)
    except DomainError as exc:
        if exc.kind == "resource_not_found":
            raise DomainError("template_not_found", f"command template '{template.name}' no longer exists at "
                              f"{template.path}", name=template.name, path=template.path) from None
        raise
    features = features_of(body)
    diagnostics = [feature_diagnostic(template.name, template.path, features)] if features else []
    return {"role": "user", "content": render_body(body, text)}, diagnostics


def parse_slash(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` of ``/name rest`` where name may be ``<plugin>:<name>``; else ``None``."""
    match = _SLASH.match(text)
    return (match.group(1), text[match.end():]) if match else None
