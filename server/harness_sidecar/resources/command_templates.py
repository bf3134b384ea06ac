"""Command templates: ``commands/*.md`` of plugins and roots, as Claude Code and Codex write them.

A command template is data: a Markdown file with optional frontmatter (``description``,
``argument-hint``, ``allowed-tools``, ``model``: listed as metadata, never acted on) and a body
whose placeholders are filled from the text the user typed after ``/<name>``, by the rule of the
peer the file was written for (its *dialect*):

- **Claude Code** (a root's ``commands/``; a plugin with ``.claude-plugin/plugin.json``), as
  Claude Code ≥ 2.1 reads it (``utils/argumentSubstitution.ts``; the 2.1.19 and 2.1.210
  changelog entries): ``$ARGUMENTS`` is the text as typed (trimmed); ``$ARGUMENTS[N]`` and
  ``$N`` are its words **0-based** (``$0`` the first), split as a shell would (an unbalanced quote
  falls back to splitting on whitespace); a ``$N`` past the last word stays as written; names in
  the frontmatter's ``arguments`` are ``$name`` for the word at their position; a body that
  nothing changed gets ``\n\nARGUMENTS: <text>`` appended.
- **Codex** (a plugin with only ``.codex-plugin/plugin.json``; a ``.codex`` root's ``prompts/``), as
  ``codex-rs/tui/src/bottom_pane/prompt_args.rs`` reads it: ``$1`` … ``$9`` the words 1-based
  (missing ones empty), ``$ARGUMENTS`` the words joined by one space, ``$NAME``
  (``[A-Z][A-Z0-9_]*``) the value of a ``NAME=value`` word. Where Codex refuses (a ``$NAME``
  without its ``NAME=`` word) the sidecar leaves ``$NAME`` as written, so shell variables in a
  prompt's code survive; a body without placeholders gets the text appended as Claude's does
  (Codex drops it), so what the user typed is never lost; text that cannot be split is
  ``invalid_arguments``.

``$$`` and a ``$`` before anything that is no placeholder stay as written in both. Replacement
is one pass: values are inserted as they are and never scanned again. Claude Code's shell
expansion (`` !`command` `` after whitespace or at a line start, and a ```` ```! ```` block) and
``@path`` file references (a path-like word after whitespace: see ``is_path_like``) are kept
verbatim: the sidecar never runs or reads them, and says so with one diagnostic kind
``template_feature_unsupported``. A Claude command that uses ``$1`` … ``$9`` but never ``$0``
gets the warning ``positional_shift``: written for the old 1-based reading, it now loses its
first word.

(``harness_sidecar/commands.py`` is something else: commands that trusted extensions register.)
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.names import QUALIFIED_COMMAND_NAME, command_name_problem
from harness_sidecar.resources import frontmatter
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Root, root_origin
from harness_sidecar.resources.frontmatter import FrontmatterError
from harness_sidecar.resources.paths import decode_utf8, read_contained
from harness_sidecar.base.records import Record

METADATA = ("description", "argument-hint", "allowed-tools", "model")
CLAUDE, CODEX = "claude", "codex"
# Claude Code: $ARGUMENTS[N], $N (not before a word character), $name (frontmatter `arguments`;
# not before `[` or a word character) and $ARGUMENTS (a prefix, as its replaceAll has it)
_CLAUDE_PLACEHOLDER = re.compile(r"\$(?:ARGUMENTS\[(\d+)\]|(\d+)(?!\w)|([A-Za-z_]\w*))", re.ASCII)  # JS's \w, \d
# Codex: $$ (kept), $1..$9, $ARGUMENTS (a prefix), $NAME
_CODEX_PLACEHOLDER = re.compile(r"\$(?:(\$)|([1-9])|(ARGUMENTS)|([A-Z][A-Z0-9_]*))")
_NAMED_WORD = re.compile(r"([A-Z][A-Z0-9_]*)=(.*)", re.S)
_ONE_BASED = re.compile(r"\$([1-9])(?!\w|[.,]\d)", re.ASCII)  # not a price: $1,500 $2.0M
_ZERO = re.compile(r"\$(?:0(?!\w)|ARGUMENTS\[0\])", re.ASCII)
# Claude Code's prompt shell expansion (promptShellExecution.ts): a ```! block, and !`…` at the
# start of the text or a line, or after whitespace
_SHELL_BLOCK = re.compile(r"```!\s*\n?[\s\S]*?\n?```")
_SHELL_INLINE = re.compile(r"(?<!\S)!`[^`]+`")
# Claude Code's @-mentions (attachments.ts): @"a path" or @word after whitespace or a line start,
# the word ending at a word character
_QUOTED_REF = re.compile(r'(?<!\S)@"[^"\n]+"')
_WORD_REF = re.compile(r"(?<!\S)@(\S*\w)")
_PATH_CHARS = re.compile(r"[\w.~/@+ -]+")
_NPM_SCOPE = re.compile(r"[a-z0-9~][\w.~-]*/[a-z0-9~][\w.~-]*(?:@\S*)?", re.I)
# the last part of a path-like word: file extensions and extension-less file names people attach
_EXTENSIONS = frozenset("""md mdx markdown txt rst adoc py pyi ipynb js jsx ts tsx mjs cjs json jsonc json5 yaml yml
    toml ini cfg conf env properties sh bash zsh fish ps1 rb go rs java kt kts swift c h cc cpp cxx hpp cs fs php
    html htm css scss sass less vue svelte astro sql prisma graphql gql proto xml csv tsv lock log gradle tf tfvars
    hcl lua pl pm r ex exs erl dart scala clj m mm plist pdf png jpg jpeg gif svg webp diff patch tex bib zig nix
    dockerfile mk cmake bzl ipynb""".split())
_FILE_NAMES = frozenset(["Makefile", "Dockerfile", "Gemfile", "Rakefile", "Procfile", "Justfile", "LICENSE",
                         "README", "CHANGELOG", "Cargo", "Brewfile"])
_SLASH = re.compile(rf"/({QUALIFIED_COMMAND_NAME.pattern})(?=\s|$)")


class CommandTemplate(Record):
    """One ``commands/<name>.md``; ``name`` is ``<plugin>:<local>`` for a plugin's."""

    __slots__ = ("name", "local_name", "path", "boundary", "origin", "metadata", "features", "stamp", "dialect")
    _uncompared = frozenset(["stamp"])

    def __init__(self, name: str, local_name: str, path: str, boundary: Root, origin: dict[str, Any],
                 metadata: dict[str, Any], features: list[dict[str, str]], stamp: int | None = None,
                 dialect: str = CLAUDE) -> None:
        self.dialect = dialect  # CLAUDE | CODEX: whose rule fills its placeholders
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


def is_path_like(word: str) -> bool:
    """Whether ``@word`` names a file as Claude Code attaches one, not a decorator, a handle or a package.

    Claude Code tries every ``@word`` after whitespace as a path relative to its working directory
    and attaches it only when the file exists, so the words that are never files there are left
    out: a word without ``/`` is a file only with a file extension (``@README.md``; not
    ``@pytest.fixture``, ``@app.route``, ``@jane.smith``) or as a known file name (``@Makefile``);
    an npm scope ``@scope/pkg`` (two parts, the last without a file extension; ``@types/node``,
    ``@anthropic-ai/claude-agent-sdk@latest``) names a package, not a folder ``scope`` of the
    working directory. ``./``, ``../``, ``~/``, ``/`` and a dotfile are always paths."""
    word = word.split("#", 1)[0]  # @file.md#L10-20
    if not _PATH_CHARS.fullmatch(word):  # @app.route('/x'), @veritasacta/verify](https://…): code, not a path
        return False
    if word.startswith(("./", "../", "~/", "/")) or (word[0] == "." and len(word) > 1 and word[1] != "."):
        return True
    last = word.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = last.rpartition(".")
    has_file_name = bool(dot and stem and ext.lower() in _EXTENSIONS) or last in _FILE_NAMES
    if "/" in word:
        return has_file_name or word.endswith("/") or not _NPM_SCOPE.fullmatch(word)
    return has_file_name


def features_of(body: str, dialect: str = CLAUDE) -> list[dict[str, str]]:
    """The shell expansions and ``@file`` references of a Claude Code ``body``, in order (each kept
    verbatim when rendered). Codex reads neither: its prompts have none."""
    if dialect != CLAUDE:
        return []
    found: list[tuple[int, dict[str, str]]] = []
    rest = body
    if "```!" in body or "!`" in body:
        for pattern in (_SHELL_BLOCK, _SHELL_INLINE):
            for m in pattern.finditer(rest):
                found.append((m.start(), {"kind": "shell", "text": m.group(0)}))
            rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)  # no @ inside a shell command
    if "@" in rest:
        for m in _QUOTED_REF.finditer(rest):
            if is_path_like(m.group(0)[2:-1]):
                found.append((m.start(), {"kind": "file", "text": m.group(0)}))
        for m in _WORD_REF.finditer(rest):
            if not m.group(1).startswith('"') and " " not in m.group(1) and is_path_like(m.group(1)):
                found.append((m.start(), {"kind": "file", "text": m.group(0)}))
    return [f for _, f in sorted(found, key=lambda pair: pair[0])]


def first_one_based(body: str) -> int:
    """The offset of the first ``$1`` … ``$9`` that ``positional_shift`` counts (-1 if none)."""
    match = _ONE_BASED.search(body)
    return match.start() if match else -1


def positional_shift(name: str, path: str, body: str, dialect: str) -> Diagnostic | None:
    """The warning for a Claude command written for the 1-based reading: ``$1`` … but never ``$0``."""
    if dialect != CLAUDE or _ZERO.search(body):
        return None
    used = sorted({f"${m.group(1)}" for m in _ONE_BASED.finditer(body)})
    if not used:
        return None
    example = " ".join(f"{p}={w}" for p, w in zip(used[:2], ("b", "c")))
    return Diagnostic("positional_shift",
                      f"command template '{name}' uses {', '.join(used)} but never $0: Claude Code ≥ 2.1 counts "
                      f"the words from $0, so $1 is the second word (for '/{name} a b c': $0=a {example}); the "
                      "first word reaches this text only through $ARGUMENTS, and a $N past the last word stays "
                      "as written (a shell's or awk's $1 here is filled in too when enough words are typed)", path,
                      "write $0 for the first word (and $1 for the second …), or $ARGUMENTS for the whole text",
                      extra={"name": name, "placeholders": used, "severity": "warning"})


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
        names = fm.data.get("arguments")  # Claude Code: $name for the word at the name's position
        if isinstance(names, str):
            names = names.split()
        if isinstance(names, list):
            metadata["arguments"] = [n for n in names if isinstance(n, str) and n.strip() and not n.isdigit()]
        body_start = fm.body_start
    body = decode_utf8(data, path, "command template", body_start)
    return metadata, body.lstrip("\r\n") if fm is not None else body


def plugin_dialect(boundary: Root) -> str:
    """Whose rule a plugin's commands follow: Claude Code's when it has ``.claude-plugin/plugin.json``
    (with both manifests too: Codex serves no plugin commands, so only Claude Code reads them),
    else Codex's."""
    claude = os.path.join(boundary.real, ".claude-plugin", "plugin.json")
    codex = os.path.join(boundary.real, ".codex-plugin", "plugin.json")
    return CODEX if not os.path.isfile(claude) and os.path.isfile(codex) else CLAUDE


def scan_folder(folder: str, boundary: Root, plugin: str | None, origin: dict[str, Any], limits: Limits,
                diagnostics: list[Diagnostic], files: list[str] | None = None,
                dialect: str | None = None) -> list[CommandTemplate]:
    """The command templates of ``folder`` (its ``*.md``), or of exactly ``files`` when given.

    ``dialect`` defaults to the plugin's (``plugin_dialect``) for a plugin's, Claude Code's for a root's."""
    if dialect is None:
        dialect = plugin_dialect(boundary) if plugin else CLAUDE
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
        why = command_name_problem(local)
        if why:
            diagnostics.append(Diagnostic("invalid_name", f"command template name '{local}' {why}", path,
                                          "rename the file to a lower-case name of letters, digits, '-' and '_'"))
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
        features = features_of(body, dialect)
        if features:
            diagnostics.append(feature_diagnostic(name, path, features, severity="warning"))
        shift = positional_shift(name, path, body, dialect)
        if shift is not None:
            diagnostics.append(shift)
        found.append(CommandTemplate(name, local, path, boundary, origin, metadata, features, hash(body), dialect))
    return found


def is_codex_home(root: Root) -> bool:
    """A root that is a Codex home: a folder named ``.codex`` (``~/.codex``, a project's ``.codex/``).
    Not any folder with a ``config.toml`` and a ``prompts/``: too many projects have both."""
    return os.path.basename(os.path.normpath(root.path)) == ".codex"


def scan_root(root: Root, limits: Limits, diagnostics: list[Diagnostic]) -> list[CommandTemplate]:
    """A root's ``commands/*.md`` (Claude Code's format, named without a prefix) and, in a Codex
    home, its ``prompts/*.md`` (Codex's custom prompts, named ``prompts:<name>`` as Codex's
    ``/prompts:<name>``)."""
    found = scan_folder(os.path.join(root.path, "commands"), root, None, root_origin(root), limits, diagnostics,
                        dialect=CLAUDE)
    if is_codex_home(root):
        found += scan_folder(os.path.join(root.path, "prompts"), root, "prompts", root_origin(root), limits,
                             diagnostics, dialect=CODEX)
    return found


# -- rendering ------------------------------------------------------------------------------------

def split_words(text: str) -> list[str]:
    """``text`` split as a POSIX shell would (quotes and backslashes); ``invalid_arguments`` if it cannot be."""
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        raise DomainError("invalid_arguments", f"the arguments cannot be split as a shell would: {exc}",
                          text=text[:200]) from None


def render_body(body: str, text: str, dialect: str = CLAUDE, names: list[str] | None = None) -> str:
    """Fill ``body``'s placeholders from ``text`` by ``dialect``'s rule (see the module's docstring);
    ``names`` are a Claude command's frontmatter ``arguments``."""
    text = text.strip()
    out = _render_claude(body, text, names or []) if dialect == CLAUDE else _render_codex(body, text)
    if out == body and text:  # nothing was filled in: what the user typed is appended, not dropped
        out = out.rstrip("\n") + f"\n\nARGUMENTS: {text}\n"
    return out


def _render_claude(body: str, text: str, names: list[str]) -> str:
    if not text:
        words: list[str] = []
    else:
        try:
            words = shlex.split(text, posix=True)
        except ValueError:  # Claude Code falls back to splitting on whitespace
            words = text.split()
    position = {name: i for i, name in reversed(list(enumerate(names)))}

    def fill(m: re.Match[str]) -> str:
        indexed, short, name = m.groups()
        if indexed is not None or short is not None:
            i = int(indexed if indexed is not None else short)
            return words[i] if i < len(words) else m.group(0)  # past the last word: as written (2.1.210)
        if name in position and not body.startswith("[", m.end()):
            i = position[name]
            return words[i] if i < len(words) else ""
        if name.startswith("ARGUMENTS"):
            return text + name[len("ARGUMENTS"):]
        return m.group(0)

    return _CLAUDE_PLACEHOLDER.sub(fill, body)


def _render_codex(body: str, text: str) -> str:
    if "$" not in body:
        return body
    words = split_words(text)
    named = {}
    for word in words:
        match = _NAMED_WORD.fullmatch(word)
        if match:
            named[match.group(1)] = match.group(2)

    def fill(m: re.Match[str]) -> str:
        dollar, position, whole, name = m.groups()
        if dollar:
            return "$$"
        if position:
            i = int(position) - 1
            return words[i] if i < len(words) else ""
        if whole:
            return " ".join(words)
        return named.get(name, m.group(0))

    return _CODEX_PLACEHOLDER.sub(fill, body)


def render(template: CommandTemplate, text: str, limits: Limits) -> tuple[dict[str, str], list[Diagnostic]]:
    """The message ``/<name> text`` sends, and the diagnostics for features left verbatim."""
    try:
        metadata, body = read_command(template.path, template.boundary, limits)
    except DomainError as exc:
        if exc.kind == "resource_not_found":
            raise DomainError("template_not_found", f"command template '{template.name}' no longer exists at "
                              f"{template.path}", name=template.name, path=template.path) from None
        raise
    features = features_of(body, template.dialect)
    diagnostics = [feature_diagnostic(template.name, template.path, features)] if features else []
    content = render_body(body, text, template.dialect, metadata.get("arguments"))
    return {"role": "user", "content": content}, diagnostics


def parse_slash(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` of ``/name rest`` where name may be ``<plugin>:<name>``; else ``None``."""
    match = _SLASH.match(text)
    return (match.group(1), text[match.end():]) if match else None
