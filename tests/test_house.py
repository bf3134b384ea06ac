"""The house as its imports draw it: no import circle, and every folder uses only the layers below it.

Every import counts — at the top of a module, inside a function (a lazy import for start-up speed is
still an arrow) and under ``TYPE_CHECKING``. The layers, bottom up, are ``LAYERS``; the package root
holds only the entry (``__main__``, ``cli``) and the version constants. ``docs/architecture.md``
draws the same picture for people.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "harness_sidecar"

# bottom up: a folder may import its own modules and those of the folders before it, nothing after it
LAYERS = ("base", "containment", "mcp", "hooks", "resources", "extensions", "tools", "wire", "threads", "console")
ROOT_MODULES = {"__init__", "__main__", "cli"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("harness_sidecar",) + parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (``from pkg import mod`` names ``pkg.mod``)."""
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parent + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # harness_sidecar.x.y.Name → harness_sidecar.x.y
                target = target.rpartition(".")[0]
            if target and target != name and target != "harness_sidecar":
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "(root)"


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back_through_others():
    assert [" <-> ".join(circle) for circle in circles(graph())] == []


def test_every_folder_imports_only_the_layers_below_it():
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    wrong = []
    for module, targets in graph().items():
        here = folder_of(module)
        for target in targets:
            there = folder_of(target)
            if here == "(root)" or there == here:
                continue
            if there == "(root)" or rank[there] > rank[here]:
                wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_the_package_root_holds_only_the_entry():
    loose = {p.stem for p in PACKAGE.glob("*.py")} - ROOT_MODULES
    assert loose == set()
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


def test_the_extension_host_imports_nothing_of_the_sidecars_side():
    """The host process runs next to extension code: it reaches only what both sides share (base, the
    hook rules, the channel and board, its own fences), never the sidecar's side, even transitively."""
    edges = graph()
    reached: set[str] = set()
    todo = [m for m in edges if m.startswith("harness_sidecar.extensions.host")]
    while todo:
        for target in edges[todo.pop()]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    sidecar_side = ("extensions.sidecar", "resources", "tools", "wire", "threads", "console", "mcp",
                    "hooks.boundaries", "hooks.command", "hooks.declared", "containment.launcher",
                    "containment.spawning", "containment.zygote", "cli")
    assert sorted(m for m in reached if m.removeprefix("harness_sidecar.").startswith(sidecar_side)) == []


if __name__ == "__main__":  # python tests/test_house.py: the graph as the closing notes give it
    edges = graph()
    per_folder: dict[str, int] = {}
    for module in edges:
        per_folder[folder_of(module)] = per_folder.get(folder_of(module), 0) + 1
    arrows: dict[tuple[str, str], int] = {}
    for module, targets in edges.items():
        for target in targets:
            pair = (folder_of(module), folder_of(target))
            if pair[0] != pair[1]:
                arrows[pair] = arrows.get(pair, 0) + 1
    order = ("(root)",) + tuple(reversed(LAYERS))
    print("modules per folder:", ", ".join(f"{f} {per_folder.get(f, 0)}" for f in order if f in per_folder))
    for here in order:
        out = sorted(((there, n) for (h, there), n in arrows.items() if h == here), key=lambda x: order.index(x[0]))
        if out:
            print(f"{here} -> " + ", ".join(f"{there} ({n})" for there, n in out))
    print("circles:", circles(edges) or "none")
