"""``harness-sidecar check ROOT...``: explain every resource that would not load, for skill authors."""

from __future__ import annotations

import json
import os
import sys

from harness_sidecar.errors import DomainError
from harness_sidecar.limits import Limits
from harness_sidecar.resources.activation import activate
from harness_sidecar.resources.catalog import Catalog, Diagnostic, build_catalog

USAGE = "usage: harness-sidecar check [--json] ROOT [ROOT ...]"


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


def main(args: list[str]) -> int:
    as_json = "--json" in args
    roots = [a for a in args if a != "--json"]
    if not roots or any(r.startswith("-") for r in roots):
        print(USAGE, file=sys.stderr)
        return 2
    roots = [os.path.abspath(r) for r in roots]
    limits = Limits()
    catalog = build_catalog(roots, limits)
    from harness_sidecar.resources import plugins

    plugins.attach(catalog, [], [], [], limits)  # the roots' plugins/ and commands/, linted like skills
    catalog.diagnostics.extend(activation_problems(catalog, limits))
    from harness_sidecar.extensions import discovery as extensions

    found = extensions.discover(catalog.roots, [], limits, catalog.diagnostics)
    status = 1 if any(not d.is_warning for d in catalog.diagnostics) else 0
    out = sys.stdout
    if as_json:
        wire = catalog.to_wire()
        wire["extensions"] = [e.to_wire() for e in found.values()]
        out.write(json.dumps({"catalog": wire, "diagnostics": [d.to_wire() for d in catalog.diagnostics]},
                             indent=2) + "\n")
        out.flush()
        return status
    problems = [d for d in catalog.diagnostics if not d.is_warning]
    warnings = [d for d in catalog.diagnostics if d.is_warning]
    if problems:
        out.write(f"{len(problems)} problem(s):\n")
        _write(out, problems)
    if warnings:
        out.write(f"{len(warnings)} warning(s) (served anyway):\n")
        _write(out, warnings)
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
    _write_plugins(out, catalog)
    if not (catalog.instructions or catalog.skills or catalog.templates or found or catalog.plugins.plugins
            or catalog.plugins.command_templates):
        out.write("  (empty: nothing was found; a root holds AGENTS.md, skills/<name>/SKILL.md, "
                  "templates/<name>.md and extensions/)\n")
    out.flush()
    return status


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


def _write(out, diagnostics: list[Diagnostic]) -> None:
    for d in diagnostics:
        where = d.path or "-"
        if d.line is not None:
            where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
        out.write(f"  {where}\n    {d.kind}: {d.message}\n")
        if d.hint:
            out.write(f"    fix: {d.hint}\n")
