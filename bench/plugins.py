"""Plugins against plain roots, and the first catalog of a real plugin corpus: ``python -m bench.plugins``.

``--corpus DIR`` (or ``$HARNESS_PLUGIN_CORPUS``): a folder of real plugins, one per subfolder, kept
outside the repository (e.g. the plugin folders of openai/plugins, anthropics/claude-plugins-official,
wshobson/agents and obra/superpowers, copied unchanged into /work/corpus-plugins).

1. *50 plugins vs plain roots*: ``--count`` plugins of the corpus that bring skills or commands
   (those that also declare hooks or MCP servers first) are copied into one root's ``plugins/``;
   the same skills and commands are copied into one plain root per plugin (``skills/<name>/``,
   ``commands/<name>.md``). Each run is a fresh sidecar, modules loaded by a first ``thread/start``
   on an empty root, then the measured ``thread/start`` (MCP servers declared, none started: no
   ``trustedPlugins``); the two layouts alternate, in the same invocation.
2. *spawn → first catalog*: a fresh sidecar given every corpus plugin in ``thread/start.plugins``;
   from spawn to the ``thread/start`` answer.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, SIDECAR, Raw, cpu_seconds, fmt, summary

MANIFESTS = (".codex-plugin/plugin.json", ".claude-plugin/plugin.json")


def _manifest(plugin: Path) -> dict | None:
    for rel in MANIFESTS:
        try:
            return json.loads((plugin / rel).read_text())
        except (OSError, ValueError):
            continue
    return None


def _score(plugin: Path) -> tuple[int, int] | None:
    """(code declarations, data parts) of a plugin that brings skills or commands; None otherwise."""
    if _manifest(plugin) is None:
        return None
    skills = len(list(plugin.glob("skills/*/SKILL.md")))
    commands = len(list(plugin.glob("commands/*.md")))
    if not (skills or commands):
        return None
    code = int((plugin / "hooks/hooks.json").is_file()) + int((plugin / ".mcp.json").is_file())
    return code, skills + commands


def pick(corpus: Path, count: int) -> list[Path]:
    scored = [(s, p) for p in sorted(corpus.iterdir()) if p.is_dir() and (s := _score(p)) is not None]
    scored.sort(key=lambda item: (-item[0][0], item[1].name))  # hooks/MCP declarations first, then by name
    return [p for _, p in scored[:count]]


def lay_out(plugins: list[Path], where: Path) -> tuple[Path, list[Path]]:
    """One root holding the plugins, and one plain root per plugin with the same skills and commands."""
    plugin_root = where / "with-plugins"
    plain_roots = []
    for plugin in plugins:
        shutil.copytree(plugin, plugin_root / "plugins" / plugin.name, symlinks=True)
        plain = where / "plain" / plugin.name
        for skill in plugin.glob("skills/*/"):
            if (skill / "SKILL.md").is_file():
                shutil.copytree(skill, plain / "skills" / skill.name, symlinks=True)
        for command in plugin.glob("commands/*.md"):
            (plain / "commands").mkdir(parents=True, exist_ok=True)
            shutil.copy2(command, plain / "commands" / command.name)
        plain.mkdir(parents=True, exist_ok=True)
        plain_roots.append(plain)
    return plugin_root, plain_roots


def warm_thread_start(params: dict, empty: Path) -> tuple[float, float, dict]:
    """Wall ms of the request (the answer parsed), the sidecar's CPU ms for it (10 ms ticks), the result."""
    raw = Raw(SIDECAR)
    try:
        raw.call("initialize")
        raw.call("thread/start", {"roots": [str(empty)], "watch": False})
        cpu = cpu_seconds(raw.proc.pid)
        started = time.perf_counter()
        result = raw.call("thread/start", params)
        wall = (time.perf_counter() - started) * 1000
        return wall, (cpu_seconds(raw.proc.pid) - cpu) * 1000, result
    finally:
        raw.close()


def spawn_to_catalog(params: dict) -> tuple[float, dict]:
    spawned = time.perf_counter()
    raw = Raw(SIDECAR)
    try:
        raw.call("initialize")
        result = raw.call("thread/start", params)
        return (time.perf_counter() - spawned) * 1000, result
    finally:
        raw.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plugins", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=os.environ.get("HARNESS_PLUGIN_CORPUS"),
                        help="a folder of real plugins (default: $HARNESS_PLUGIN_CORPUS)")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    if not args.corpus or not Path(args.corpus).is_dir():
        parser.error("--corpus DIR (or $HARNESS_PLUGIN_CORPUS) must name a folder of plugins")
    corpus = Path(args.corpus).resolve()
    compileall.compile_dir(str(REPO / "server"), quiet=1)
    chosen = pick(corpus, args.count)
    if len(chosen) < args.count:
        print(f"only {len(chosen)} plugins of {corpus} bring skills or commands", file=sys.stderr)
    figures: dict = {"corpus": str(corpus), "plugins": len(chosen)}
    with tempfile.TemporaryDirectory(prefix="harness-bench-plugins-") as tmp:
        where = Path(tmp)
        (where / "empty").mkdir()
        plugin_root, plain_roots = lay_out(chosen, where)
        with_plugins = {"roots": [str(plugin_root)], "watch": False}
        plain = {"roots": [str(r) for r in plain_roots], "watch": False}
        times: dict[str, list[float]] = {"plugins": [], "plain": []}
        cpu: dict[str, list[float]] = {"plugins": [], "plain": []}
        shapes = {}
        for i in range(args.runs + 1):
            for name, params in (("plugins", with_plugins), ("plain", plain))[:: 1 if i % 2 else -1]:
                ms, cpu_ms, result = warm_thread_start(params, where / "empty")
                if i:  # the first round warms the page cache
                    times[name].append(ms)
                    cpu[name].append(cpu_ms)
                catalog = result["catalog"]
                shapes[name] = {"skills": len(catalog["skills"]), "commandTemplates": len(catalog["commandTemplates"]),
                                "hooks": len(catalog["hooks"]), "mcpServers": len(catalog["mcpServers"]),
                                "plugins": len(catalog["plugins"]), "answerBytes": len(json.dumps(result))}
        ratio = statistics.median(times["plugins"]) / statistics.median(times["plain"])
        cpu_ratio = statistics.mean(cpu["plugins"]) / statistics.mean(cpu["plain"])
        figures["layouts"] = {name: {"thread_start_ms": summary(t), "sidecar_cpu_ms_mean": statistics.mean(cpu[name]),
                                     "catalog": shapes[name]} for name, t in times.items()}
        figures["ratio_plugins_over_plain"] = ratio
        figures["cpu_ratio_plugins_over_plain"] = cpu_ratio
        print(f"{len(chosen)} plugins: thread/start {fmt(summary(times['plugins']), ' ms')}; catalog {shapes['plugins']}")
        print(f"same skills and commands as {len(plain_roots)} plain roots: thread/start "
              f"{fmt(summary(times['plain']), ' ms')}; catalog {shapes['plain']}")
        print(f"ratio (median plugins / median plain): {ratio:.2f}; the sidecar's CPU, mean "
              f"{statistics.mean(cpu['plugins']):.1f} / {statistics.mean(cpu['plain']):.1f} ms = {cpu_ratio:.2f}")

    every = sorted(str(p) for p in corpus.iterdir() if p.is_dir())
    full = {"roots": [], "plugins": every, "watch": False}
    spawn_times = []
    for i in range(args.runs + 1):
        ms, result = spawn_to_catalog(full)
        if i:
            spawn_times.append(ms)
    catalog = result["catalog"]
    shape = {"plugins": len(catalog["plugins"]), "skills": len(catalog["skills"]),
             "commandTemplates": len(catalog["commandTemplates"]), "agents": len(catalog["agents"]),
             "hooks": len(catalog["hooks"]), "mcpServers": len(catalog["mcpServers"]),
             "diagnostics": len(result["diagnostics"])}
    figures["full_corpus"] = {"folders": len(every), "spawn_to_catalog_ms": summary(spawn_times), "catalog": shape}
    print(f"full corpus ({len(every)} folders): spawn → first catalog {fmt(summary(spawn_times), ' ms')}; {shape}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
