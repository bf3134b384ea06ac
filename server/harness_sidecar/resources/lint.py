"""Findings on one resource file as an author writes it, from the editor's (unsaved) text.

The rules are the catalog's own (``frontmatter.check_skill``, ``names``, the placeholder
grammar), applied to a document instead of a directory scan, with positions: 0-based
line and character columns (code points; the LSP layer converts to the client's units).
Used by the LSP mode for live diagnostics and hovers, and by ``check`` for every file of its
roots (one source of per-file diagnostics for both).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from harness_sidecar.base.limits import Limits
from harness_sidecar.resources import command_templates, frontmatter
from harness_sidecar.resources.catalog import (
    PLACEHOLDER,
    Root,
    resolve_roots,
    skill_in_root,
    template_in_root,
)
from harness_sidecar.resources.frontmatter import FrontmatterError, Problem
from harness_sidecar.base.names import name_problem
from harness_sidecar.resources.paths import is_within

BRACES = re.compile(r"\{\{[^{}\n]*\}\}")

ERROR, WARNING, INFORMATION, HINT = "error", "warning", "information", "hint"


@dataclass
class Finding:
    line: int  # 0-based
    start: int  # 0-based code point column
    end: int
    severity: str
    kind: str
    message: str


@dataclass
class Resource:
    kind: str  # skill | template | instructions | extension | command
    root: Root
    name: str  # skill, template or command template name, extension id; "" for instructions


def classify(path: str, roots: list[Root]) -> Resource | None:
    """Which resource of which root ``path`` is, or ``None`` for a file outside every root."""
    path = os.path.normpath(path)
    for root in roots:
        if not is_within(path, root.path):
            continue
        parts = os.path.relpath(path, root.path).split(os.sep)
        if parts == ["AGENTS.md"]:
            return Resource("instructions", root, "")
        if len(parts) == 3 and parts[0] == "skills" and parts[2] == "SKILL.md":
            return Resource("skill", root, parts[1])
        if len(parts) == 2 and parts[0] == "templates" and parts[1].endswith(".md"):
            return Resource("template", root, parts[1][:-3])
        if len(parts) == 2 and parts[0] == "commands" and parts[1].endswith(".md"):
            return Resource("command", root, parts[1][:-3])  # Claude Code's, as command_templates reads it
        if len(parts) == 2 and parts[0] == "prompts" and parts[1].endswith(".md") and \
                command_templates.is_codex_home(root):
            return Resource("command", root, "prompts:" + parts[1][:-3])
        if parts[0] == "extensions" and path.endswith(".py"):
            if len(parts) == 2:
                return Resource("extension", root, parts[1][:-3])
            if len(parts) >= 3:
                return Resource("extension", root, parts[1])
    return None


def _line_span(lines: list[str], line: int) -> tuple[int, int, int]:
    """A 0-based line clamped to the document and the span of its text."""
    line = max(0, min(line, len(lines) - 1)) if lines else 0
    text = lines[line] if lines else ""
    return line, 0, len(text)


def _value_span(lines: list[str], line: int) -> tuple[int, int, int]:
    """The value part of a ``key: value`` line (the whole line if there is no colon)."""
    line, start, end = _line_span(lines, line)
    text = lines[line] if lines else ""
    colon = text.find(":")
    if colon >= 0 and text[colon + 1:].strip():
        start = colon + 1 + (len(text[colon + 1:]) - len(text[colon + 1:].lstrip()))
    return line, start, end


def _from_problem(problem: Problem, lines: list[str], severity: str = ERROR) -> Finding:
    if problem.line is None:
        line, start, end = _line_span(lines, 0)
    elif problem.column is not None:
        line, _, end = _line_span(lines, problem.line - 1)
        start = min(problem.column - 1, end)
        end = max(end, start + 1)
    else:
        line, start, end = _value_span(lines, problem.line - 1)
    message = problem.message + (f" — {problem.hint}" if problem.hint else "")
    return Finding(line, start, end, severity, problem.kind, message)


def _shadowing(resource: Resource, roots: list[Root], limits: Limits) -> tuple[str | None, list[str]]:
    """``(the earlier root's file that shadows this one, [later roots' files this one shadows])``.

    Looks up the one name in each other root (on disk), not whole catalogs: cheap enough for
    every keystroke.
    """
    find = skill_in_root if resource.kind == "skill" else template_in_root
    for root in roots:
        if root.index < resource.root.index:
            winner = find(root, resource.name, limits)
            if winner is not None:
                return winner.source, []
    shadows = []
    for root in roots:
        if root.index > resource.root.index:
            loser = find(root, resource.name, limits)
            if loser is not None:
                shadows.append(loser.source)
    return None, shadows


def lint(path: str, text: str, root_paths: list[str], trusted: set[str], limits: Limits | None = None) -> list[Finding]:
    """Every finding for the document ``path`` with content ``text`` (empty outside the roots)."""
    limits = limits or Limits()
    roots = resolve_roots(root_paths, [])
    resource = classify(path, roots)
    if resource is None:
        return []
    lines = text.split("\n")
    findings: list[Finding] = []
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_file_bytes:
        findings.append(Finding(0, 0, len(lines[0]), ERROR, "too_large",
                                f"{size} bytes; maxFileBytes is {limits.max_file_bytes}: the sidecar leaves it out"))
    real = os.path.realpath(path)
    if os.path.exists(path) and not is_within(real, resource.root.real):
        findings.append(Finding(0, 0, len(lines[0]), ERROR, "path_escape",
                                f"{path} resolves to {real}, outside the root {resource.root.path}: it is rejected"))
    if resource.kind == "skill":
        findings += _lint_skill(path, text, lines, resource, roots, limits)
    elif resource.kind == "template":
        findings += _lint_template(path, text, lines, resource, roots, limits)
    elif resource.kind == "extension":
        findings += _lint_extension(path, text, lines, resource, trusted)
    elif resource.kind == "command":
        findings += _lint_command(text, lines, resource, limits)
    return findings


def _lint_command(text: str, lines: list[str], resource: Resource, limits: Limits) -> list[Finding]:
    """A root's command template: its dialect's ``positional_shift`` on the first ``$1`` … and each
    shell expansion or file reference the sidecar keeps verbatim, as the catalog reports them."""
    dialect = command_templates.CODEX if resource.name.startswith("prompts:") else command_templates.CLAUDE
    try:
        fm = frontmatter.parse(text.encode("utf-8", "surrogatepass"), True, limits.max_frontmatter_bytes,
                               required=False)
    except FrontmatterError as exc:
        return [_from_problem(exc.problem, lines)]
    body_line = fm.end_line if fm is not None else 0
    body = "\n".join(lines[body_line:])
    findings = []

    def at(offset: int, length: int) -> tuple[int, int, int]:
        line = body_line + body.count("\n", 0, offset)
        start = offset - (body.rfind("\n", 0, offset) + 1)
        return line, start, start + min(length, len(lines[line]) - start)

    shift = command_templates.positional_shift(resource.name, "", body, dialect)
    if shift is not None:
        first = command_templates.first_one_based(body)
        line, start, end = at(first, 2)
        findings.append(Finding(line, start, end, WARNING, "positional_shift",
                                shift.message + (f" — {shift.hint}" if shift.hint else "")))
    cursor = 0
    for feature in command_templates.features_of(body, dialect)[:50]:
        offset = body.find(feature["text"], cursor)
        if offset < 0:
            continue
        cursor = offset + len(feature["text"])
        line, start, end = at(offset, len(feature["text"].split("\n", 1)[0]))
        what = "runs a shell command" if feature["kind"] == "shell" else "attaches a file"
        findings.append(Finding(line, start, end, INFORMATION, "template_feature_unsupported",
                                f"{feature['text'].splitlines()[0]}: in Claude Code this {what}; the sidecar "
                                "keeps it verbatim in the rendered text"))
    return findings


def _lint_skill(path: str, text: str, lines: list[str], resource: Resource, roots: list[Root],
                limits: Limits) -> list[Finding]:
    try:
        fm = frontmatter.parse(text.encode("utf-8", "surrogatepass"), True, limits.max_frontmatter_bytes,
                               required=True)
    except FrontmatterError as exc:
        return [_from_problem(exc.problem, lines)]
    assert fm is not None
    findings = [_from_problem(p, lines) for p in frontmatter.check_skill(fm, resource.name)]
    if findings:
        return findings
    findings = [_from_problem(p, lines, WARNING) for p in frontmatter.skill_warnings(fm)]
    shadowed_by, shadows = _shadowing(resource, roots, limits)
    line, start, end = _value_span(lines, fm.lines.get("name", 2) - 1)
    if shadowed_by:
        findings.append(Finding(line, start, end, INFORMATION, "shadowed",
                                f"shadowed by {shadowed_by} (an earlier root wins): this skill is not used"))
    for other in shadows:
        findings.append(Finding(line, start, end, INFORMATION, "shadows", f"this skill shadows {other}"))
    return findings


def _lint_template(path: str, text: str, lines: list[str], resource: Resource, roots: list[Root],
                   limits: Limits) -> list[Finding]:
    findings = []
    why = name_problem(resource.name)
    if why:
        findings.append(Finding(0, 0, len(lines[0]), ERROR, "invalid_name",
                                f"template name '{resource.name}' (the file name) {why}"))
    body_start = 0
    try:
        fm = frontmatter.parse(text.encode("utf-8", "surrogatepass"), True, limits.max_frontmatter_bytes,
                               required=False)
    except FrontmatterError as exc:
        return findings + [_from_problem(exc.problem, lines)]
    if fm is not None:
        body_start = fm.end_line
        problem = frontmatter.description_problem(fm.data.get("description"), fm.lines.get("description"),
                                                  required=False)
        if problem:
            findings.append(_from_problem(problem, lines))
    for number in range(body_start, len(lines)):
        for match in BRACES.finditer(lines[number]):
            if not PLACEHOLDER.fullmatch(match.group(0)):
                inner = match.group(0)[2:-2].strip()
                suggestion = f" — write {{{{{inner}}}}} to make it one" if PLACEHOLDER.fullmatch(
                    "{{" + inner + "}}") else ""
                findings.append(Finding(number, match.start(), match.end(), HINT, "not_a_placeholder",
                                        f"{match.group(0)} is not a placeholder and stays literal{suggestion}"))
    if not findings and not why:
        shadowed_by, _ = _shadowing(resource, roots, limits)
        if shadowed_by:
            findings.append(Finding(0, 0, len(lines[0]), INFORMATION, "shadowed",
                                    f"shadowed by {shadowed_by} (an earlier root wins): this template is not used"))
    return findings


def _lint_extension(path: str, text: str, lines: list[str], resource: Resource, trusted: set[str]) -> list[Finding]:
    line, start, end = _line_span(lines, 0)
    why = name_problem(resource.name)
    if why:
        return [Finding(line, start, end, ERROR, "invalid_name", f"extension id '{resource.name}' {why}")]
    findings = syntax_errors(path, text, lines)
    if resource.name in trusted:
        findings.append(Finding(line, start, end, INFORMATION, "trusted",
                                f"extension '{resource.name}' is trusted: the sidecar imports it when a thread starts"))
    else:
        findings.append(Finding(line, start, end, INFORMATION, "untrusted",
                                f"extension '{resource.name}' is not trusted: the sidecar never imports it "
                                f"(add '{resource.name}' to trustedExtensions to load it)"))
    return findings


def syntax_errors(path: str, text: str, lines: list[str]) -> list[Finding]:
    """A Python file's syntax error, found by compiling its source without running any of it
    (``compile()`` builds a code object; nothing is imported or executed)."""
    try:
        compile(text.encode("utf-8", "surrogatepass"), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        number = max(0, (exc.lineno or 1) - 1)
        line, _, end = _line_span(lines, number)
        start = min(max(0, (exc.offset or 1) - 1), end)
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return [Finding(line, start, max(end, start + 1), ERROR, "syntax_error",
                        f"{type(exc).__name__}: {exc.msg}{where}: importing this extension would fail")]
    except ValueError as exc:  # NUL bytes in the source
        return [Finding(0, 0, len(lines[0]) if lines else 0, ERROR, "syntax_error",
                        f"{exc}: importing this extension would fail")]
    return []


def outside_roots(path: str, root_paths: list[str]) -> Finding | None:
    """An explanation for a file laid out like a resource that no root contains, else ``None``.

    Without it an author whose roots do not exist (the default ``<workspace>/.agents``) sees a
    broken SKILL.md get no diagnostics at all and cannot tell why.
    """
    roots = resolve_roots(root_paths, [])
    if classify(path, roots) is not None:
        return None
    parts = os.path.normpath(path).split(os.sep)
    if len(parts) >= 3 and parts[-3] == "skills" and parts[-1] == "SKILL.md":
        what, root = "a skill", os.sep.join(parts[:-3])
    elif len(parts) >= 2 and parts[-2] == "templates" and parts[-1].endswith(".md"):
        what, root = "a template", os.sep.join(parts[:-2])
    else:
        return None
    listed = ", ".join(root_paths) or "none"
    return Finding(0, 0, 0, INFORMATION, "outside_roots",
                   f"this looks like {what} of the root {root}, which is not one of the roots ({listed}): "
                   f"it is neither checked nor loaded — add {root} to the roots (initializationOptions.roots)")


def hover(path: str, text: str, line: int, character: int, root_paths: list[str],
          limits: Limits | None = None, markdown: bool = True) -> tuple[str, int, int] | None:
    """Hover text for the position (and the column span it covers), or ``None``.

    ``markdown=False`` gives plain text, for a client that declared no markdown support.
    """
    limits = limits or Limits()
    roots = resolve_roots(root_paths, [])
    resource = classify(path, roots)
    lines = text.split("\n")
    if resource is None or line >= len(lines):
        return None
    code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    bold = (lambda s: f"**{s}**") if markdown else (lambda s: s)
    if resource.kind == "template":
        try:
            fm = frontmatter.parse(text.encode("utf-8", "surrogatepass"), True, limits.max_frontmatter_bytes,
                                   required=False)
        except FrontmatterError:
            fm = None
        if fm is not None and line < fm.end_line:
            return None  # the frontmatter is not rendered: a {{x}} there is no variable
        for match in PLACEHOLDER.finditer(lines[line]):
            if match.start() <= character < match.end():
                name = match.group(1)
                return (f"{code(name)}: a template variable — {code('templates/render')} must supply "
                        f"{code('arguments.' + name)} (a string)", match.start(), match.end())
        return None
    if resource.kind != "skill":
        return None
    try:
        fm = frontmatter.parse(text.encode("utf-8", "surrogatepass"), True, limits.max_frontmatter_bytes,
                               required=True)
    except FrontmatterError:
        return None
    if fm is None or fm.lines.get("name", 0) - 1 != line:
        return None
    description = fm.data.get("description")
    shadowed_by, shadows = _shadowing(resource, roots, limits)
    if shadowed_by:
        standing = f"{bold('shadowed')} by {code(shadowed_by)}"
    elif not frontmatter.check_skill(fm, resource.name):
        standing = bold("wins") + (f" (shadows {', '.join(code(s) for s in shadows)})" if shadows else "")
    else:
        standing = "not in the catalog (see the diagnostics)"
    return (f"{bold(str(fm.data.get('name')))} — "
            f"{frontmatter.one_line(description) if isinstance(description, str) else '(no description)'}"
            f"\n\nsource: {code(os.path.normpath(path))}\n\n{standing}", 0, len(lines[line]))
