"""``harness-sidecar check ROOT...``: explain every resource that would not load, for skill authors.

It reports what the editor's LSP mode shows for the same files: each resource file of the roots
goes through ``resources.lint`` (the LSP mode's one source of per-file diagnostics: frontmatter
rules, shadowing, text that is no placeholder, an extension's syntax error found by compiling it
without running it), beside what only a scan of the roots can see (missing roots, broken links,
folders without SKILL.md) and what activation finds. Shadowing is a warning: it fails ``check``
only with ``--strict``, which fails on any warning."""

from __future__ import annotations

import json
import os
import sys

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.activation import activate
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Catalog, build_catalog

USAGE = "usage: harness-sidecar check [--json] [--strict] ROOT [ROOT ...]"
# What the editor shows as a warning, not an error: the resource is served, or (shadowed) the
# author means it so (a project's skill overriding the user's)
WARNING_KINDS = frozenset(["shadowed"])


def activation_problems(catalog: Catalog, limits: Limits) -> list[Diagnostic]:
    """What discovery cannot see because it reads only the frontmatter: each listed skill is
    activated as ``skills/activate`` would (the whole SKILL.md read, its body decoded)."""
    problems = []
    for skill in catalog.skills.values():
        try:
            activate(catalog, skill.name, [], limits)
        except DomainError as exc:
            hint = "save the file as UTF-8" if exc.kind == "not_utf8" else None
            problems.append(Diagnostic(exc.kind, f"skill '{skill.name}' is listed but cannot be activated: "
                                       f"{exc.message}", exc.data.get("path", skill.source), hint,
                                       exc.data.get("line")))
    return problems


def _severity(d: Diagnostic) -> str:
    """``error`` (something left out), ``warning`` (served, or shadowed on purpose) or ``info``."""
    severity = d.extra.get("severity")
    if severity in ("info", "information", "hint"):
        return "info"
    if severity == "warning" or d.kind in WARNING_KINDS:
        return "warning"
    return "error"


_LINT_SEVERITY = {"error": "error", "warning": "warning", "information": "info", "hint": "info"}


def resource_files(catalog: Catalog) -> list[str]:
    """Every file of the roots the LSP mode lints: AGENTS.md, skills/<name>/SKILL.md,
    templates/<name>.md, extensions/<id>.py and the .py files of extensions/<id>/."""
    found: list[str] = []

    def listing(directory: str) -> list[str]:
        try:
            return sorted(n for n in os.listdir(directory) if not n.startswith("."))
        except OSError:
            return []

    for root in catalog.roots:
        found.append(os.path.join(root.path, "AGENTS.md"))
        skills = os.path.join(root.path, "skills")
        found += [os.path.join(skills, n, "SKILL.md") for n in listing(skills)]
        templates = os.path.join(root.path, "templates")
        found += [os.path.join(templates, n) for n in listing(templates) if n.endswith(".md")]
        extensions = os.path.join(root.path, "extensions")
        for name in listing(extensions):
            if name.startswith("_"):
                continue
            path = os.path.join(extensions, name)
            if name.endswith(".py"):
                found.append(path)
            elif os.path.isdir(path):
                for directory, subdirectories, files in os.walk(path):
                    subdirectories[:] = sorted(d for d in subdirectories if not d.startswith((".", "__pycache__")))
                    found += [os.path.join(directory, f) for f in sorted(files) if f.endswith(".py")]
    return [p for p in found if os.path.isfile(p)]


def lint_problems(catalog: Catalog, root_paths: list[str], limits: Limits) -> list[Diagnostic]:
    """What the LSP mode shows for each resource file, as diagnostics; what the catalog already
    says of a file (same path and kind) is not repeated."""
    from harness_sidecar.resources import lint

    said = {(d.path, d.kind) for d in catalog.diagnostics}
    problems = []
    for path in resource_files(catalog):
        try:
            with open(path, "rb") as f:
                data = f.read(limits.max_file_bytes + 1)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # unreadable, not UTF-8: the catalog or activation says so
        if len(data) > limits.max_file_bytes:
            continue
        for finding in lint.lint(path, text, root_paths, set(), limits):
            if (path, finding.kind) in said or finding.kind in ("trusted", "untrusted"):
                continue  # trust is the editor's setting; check lists extensions as "imported only when trusted"
            problems.append(Diagnostic(finding.kind, finding.message, path, None, finding.line + 1, finding.start + 1,
                                       {"severity": _LINT_SEVERITY[finding.severity]}
                                       if finding.severity != "error" else {}))
    return problems


def main(args: list[str]) -> int:
    as_json = "--json" in args
    strict = "--strict" in args
    roots = [a for a in args if a not in ("--json", "--strict")]
    if not roots or any(r.startswith("-") for r in roots):
        print(USAGE, file=sys.stderr)
        return 2
    roots = [os.path.abspath(r) for r in roots]
    limits = Limits()
    catalog = build_catalog(roots, limits)
    missing = _named_roots_missing(catalog.diagnostics)
    from harness_sidecar.resources import plugins

    plugins.attach(catalog, [], [], [], limits)  # the roots' plugins/ and commands/, linted like skills
    catalog.diagnostics.extend(activation_problems(catalog, limits))
    from harness_sidecar.resources import extension_sources as extensions

    found = extensions.discover(catalog.roots, [], limits, catalog.diagnostics)
    from harness_sidecar.hooks.declared import read_roots

    hooks = read_roots(roots, [])  # command hooks (hooks.json, settings*.json, config.toml): listed and linted, trusted by the editor alone
    catalog.diagnostics.extend(d for declared in hooks for d in declared.diagnostics)
    hooks += catalog.plugins.hooks  # a plugin's: linted where it was read (resources.plugins)
    catalog.diagnostics.extend(lint_problems(catalog, roots, limits))
    for d in catalog.diagnostics:
        if d.kind in WARNING_KINDS:
            d.extra.setdefault("severity", "warning")  # so --json says it too
    failing = ("error", "warning") if strict else ("error",)
    for path in missing:  # besides the problem listed: one line whatever the output format
        print(f"harness-sidecar check: root {path} does not exist", file=sys.stderr)
    status = 1 if any(_severity(d) in failing for d in catalog.diagnostics) else 0
    out = sys.stdout
    if as_json:
        wire = catalog.to_wire()
        wire["extensions"] = [e.to_wire() for e in found.values()]
        wire["hooks"] = [h.to_wire() for declared in hooks for h in declared.handlers]
        out.write(json.dumps({"catalog": wire, "diagnostics": [d.to_wire() for d in catalog.diagnostics]},
                             indent=2) + "\n")
        out.flush()
        return status
    problems = [d for d in catalog.diagnostics if _severity(d) == "error"]
    warnings = [d for d in catalog.diagnostics if _severity(d) == "warning"]
    notes = [d for d in catalog.diagnostics if _severity(d) == "info"]
    if problems:
        out.write(f"{len(problems)} problem(s):\n")
        _write(out, problems)
    if warnings:
        out.write(f"{len(warnings)} warning(s) (served anyway; --strict fails on them):\n")
        _write(out, warnings)
    if notes:
        out.write(f"{len(notes)} note(s):\n")
        _write(out, notes)
    if not catalog.diagnostics:
        out.write("no problems\n")
    out.write("\ncatalog:\n")
    for i in catalog.instructions:
        out.write(f"  instructions  {i.source}\n")
    for s in catalog.skills.values():
        out.write(f"  skill         {s.name}: {s.description}  ({s.source})\n")
    for t in catalog.templates.values():
        variables = ", ".join(t.variables) or "no variables"
        out.write(f"  template      {t.name} [{variables}]  ({t.source})\n")
    for e in found.values():
        out.write(f"  extension     {e.id} sha256={e.sha256[:12]}…  ({e.source}; imported only when trusted)\n")
    for declared in hooks:
        for h in declared.handlers:
            matcher = f" [{h.matcher.text}]" if h.matcher.text else ""
            digest = f" sha256={declared.source.sha256[:12]}…" if declared.source.sha256 else ""
            what = (h.command if h.type == "command" else f"{h.type} {h.label}") if h.supported else \
                f"({h.type or 'untyped'} handler: not supported here, never runs)"
            if h.dormant:
                what += " (dormant: the sidecar does not fire this event)"
            fields = [f"if {h.condition.text}"] if h.condition is not None else []
            fields += [name for name, on in (("once", h.once), ("async", h.run_async)) if on]
            if fields:
                what += f" [{', '.join(fields)}]"
            out.write(f"  hook          {h.event}{matcher}: {what}  ({declared.source.source}: "
                      f"{declared.source.path}{digest}; runs only when trusted)\n")
    _write_plugins(out, catalog)
    if not (catalog.instructions or catalog.skills or catalog.templates or found or hooks or catalog.plugins.plugins
            or catalog.plugins.command_templates):
        out.write("  (empty: nothing was found; a root holds AGENTS.md, skills/<name>/SKILL.md, "
                  "templates/<name>.md and extensions/)\n")
    out.flush()
    return status


def _named_roots_missing(diagnostics: list[Diagnostic]) -> list[str]:
    """A root named on ``check``'s command line that does not exist is a problem (v4 §3; a typo
    must not pass as "no problems"), not the note it is for an editor's default roots at
    ``thread/start``: its ``root_missing`` becomes an error. The paths, in order."""
    missing = []
    for d in diagnostics:
        if d.kind == "root_missing":
            d.extra.pop("severity", None)  # no severity: an error
            d.message = f"root {d.path} does not exist (it was named on the command line); nothing of it was checked"
            d.hint = f"check the path, or create {d.path} (with skills/<name>/SKILL.md in it) to use it"
            missing.append(d.path)
    return missing


def _write_plugins(out, catalog: Catalog) -> None:
    """The plugins and command templates ``check`` found, with what each brings."""
    for p in catalog.plugins.plugins:
        parts = [f"{len(p.skills)} skill(s)", f"{len(p.commands)} command(s)", f"{len(p.agents)} agent(s)",
                 f"{len(p.hooks)} hook handler(s)", f"{len(p.mcp_servers)} MCP server(s)",
                 f"{len(p.extensions)} extension(s)"]
        out.write(f"  plugin        {p.name}{' ' + p.version if p.version else ''} ({p.dialect} manifest): "
                  f"{', '.join(parts)}  ({p.path}; its code runs only when trusted)\n")
    for c in catalog.plugins.command_templates.values():
        out.write(f"  command       {c.name}  ({c.path})\n")
    for m in catalog.plugins.marketplaces:  # protocol-v4 §3 "Marketplaces, read"
        served = sum(e.installed for e in m.entries)
        out.write(f"  marketplace   {m.name}: {len(m.entries)} plugin(s), {served} served from here  ({m.path})\n")


def _write(out, diagnostics: list[Diagnostic]) -> None:
    for d in diagnostics:
        where = d.path or "-"
        if d.line is not None:
            where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
        out.write(f"  {where}\n    {d.kind}: {d.message}\n")
        if d.hint:
            out.write(f"    fix: {d.hint}\n")
