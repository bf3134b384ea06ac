"""``harness-sidecar check ROOT...``: explain every resource that would not load, for skill authors."""

from __future__ import annotations

import json
import os
import sys

from harness_sidecar.limits import Limits
from harness_sidecar.resources.catalog import build_catalog


def main(args: list[str]) -> int:
    as_json = "--json" in args
    roots = [a for a in args if a != "--json"]
    if not roots or any(r.startswith("-") for r in roots):
        print("usage: harness-sidecar check [--json] ROOT [ROOT ...]", file=sys.stderr)
        return 2
    roots = [os.path.abspath(r) for r in roots]
    catalog = build_catalog(roots, Limits())
    from harness_sidecar.extensions import discovery as extensions

    found = extensions.discover(catalog.roots, [], Limits(), catalog.diagnostics)
    if as_json:
        wire = catalog.to_wire()
        wire["extensions"] = [e.to_wire() for e in found.values()]
        print(json.dumps({"catalog": wire, "diagnostics": [d.to_wire() for d in catalog.diagnostics]}, indent=2))
        return 1 if catalog.diagnostics else 0
    out = sys.stdout
    if catalog.diagnostics:
        out.write(f"{len(catalog.diagnostics)} problem(s):\n")
        for d in catalog.diagnostics:
            where = d.path or "-"
            if d.line is not None:
                where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
            out.write(f"  {where}\n    {d.kind}: {d.message}\n")
            if d.hint:
                out.write(f"    fix: {d.hint}\n")
    else:
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
    return 1 if catalog.diagnostics else 0
