"""Spawn → first catalog over the whole plugin corpus, the sidecar beside Codex, in one run:
``python -m bench.corpus_peers.speed [--runs 7]`` (after ``python -m bench.corpus_peers.fetch``).

- **sidecar**: a fresh process (``bench.common.SIDECAR``, bytecode compiled, no header cache) given every
  corpus plugin folder in one ``thread/start {roots: [], plugins: [...], watch: false}``; from spawn to
  that answer parsed.
- **codex**: ``codex app-server`` 0.171.0 (the native binary under the npm package, not its node
  launcher) with a ``CODEX_HOME`` where every corpus plugin was ``plugin/install``ed once before the
  runs (a local copy, no network): one workspace per repository whose ``.agents/plugins/marketplace.json``
  names that repository's plugins; from spawn to ``plugin/list`` and then ``skills/list`` (``cwds``: the
  workspaces) answered — the same work, Codex's way: its plugins and their skills.

The two alternate (a warm-up round first, not counted). Peak RSS is each process's ``VmHWM`` and CPU its
(and its children's) user + system time, both read after its last answer; CPU is the figure a loaded
machine disturbs least (Codex's is summed over its threads). The speed issue (protocol-v4 §6) asks for ≤ 0.5× Codex's time and ≤ 0.4× its RSS.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.codex import CodexAppServer
from bench.common import REPO, SIDECAR, Raw, cpu_seconds, fmt, summary
from bench.corpus_peers.fetch import peers_dir
from bench.corpus_peers.fetch import cache_dir


def codex_native() -> Path | None:
    """The Rust binary the npm package's launcher runs (timing the launcher would add node's start)."""
    found = sorted((peers_dir() / "node_modules" / "@openai").glob("codex-*/vendor/*/bin/codex"))
    return found[0] if found else None


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) / 1024


def lay_out_codex(plugins: list[dict], tree: Path, where: Path) -> tuple[list[str], list[tuple[Path, str]]]:
    """One workspace per repository naming its plugins (links to the laid-out folders): the ``cwds``, and
    ``(marketplace file, plugin name)`` of each plugin to install (a name met twice in one repository once)."""
    by_repo: dict[str, list[dict]] = {}
    for p in plugins:
        by_repo.setdefault(p["repo"], []).append(p)
    cwds, entries = [], []
    for r, (repo, members) in enumerate(sorted(by_repo.items())):
        ws = where / f"ws{r:02d}"
        (ws / ".agents" / "plugins").mkdir(parents=True)
        listed, seen = [], set()
        for i, p in enumerate(members):
            name = p["name"] or Path(p["path"]).name
            if name in seen:
                continue
            seen.add(name)
            os.symlink((tree / repo.replace("/", "+") / p["path"]).resolve(), ws / f"p{i:03d}")
            listed.append({"name": name, "source": {"source": "local", "path": f"./p{i:03d}"},
                           "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"}})
        market = ws / ".agents" / "plugins" / "marketplace.json"
        market.write_text(json.dumps({"name": f"corpus-{r:02d}", "plugins": listed}))
        cwds.append(str(ws))
        entries += [(market, e["name"]) for e in listed]
    return cwds, entries


def install_all(binary: Path, home: Path, cwds: list[str], entries: list[tuple[Path, str]]) -> int:
    codex = CodexAppServer(str(binary), Path(cwds[0]), home, client="harness-corpus-speed")
    try:
        codex.call("plugin/list", {"cwds": cwds})
        installed = 0
        for market, name in entries:
            try:
                codex.call("plugin/install", {"marketplacePath": str(market), "pluginName": name})
                installed += 1
            except RuntimeError:
                pass
        return installed
    finally:
        codex.close(grace=2)  # Codex lingers after its stdin closes: killed after 2 s (the figures are taken)


def codex_run(binary: Path, home: Path, cwds: list[str]) -> tuple[float, float, float, dict]:
    started = time.perf_counter()
    codex = CodexAppServer(str(binary), Path(cwds[0]), home, client="harness-corpus-speed")
    try:
        listed = codex.call("plugin/list", {"cwds": cwds})
        skills = codex.call("skills/list", {"cwds": cwds})
        ms = (time.perf_counter() - started) * 1000
        rss = peak_rss_mb(codex.proc.pid)
        cpu = cpu_seconds(codex.proc.pid, children=True) * 1000
    finally:
        codex.close(grace=2)  # Codex lingers after its stdin closes: killed after 2 s (the figures are taken)
    shape = {"plugins": sum(len(m.get("plugins", [])) for m in listed.get("marketplaces", [])),
             "installed": sum(1 for m in listed.get("marketplaces", []) for p in m.get("plugins", [])
                              if p.get("installed")),
             # each cwd's entry lists the installed plugins' skills again: counted once by path
             "skills": len({k.get("path") or k["name"] for e in skills.get("data", []) for k in e.get("skills", [])})}
    return ms, rss, cpu, shape


def sidecar_run(folders: list[str]) -> tuple[float, float, float, dict]:
    started = time.perf_counter()
    raw = Raw(SIDECAR)
    try:
        raw.call("initialize")
        result = raw.call("thread/start", {"roots": [], "plugins": folders, "watch": False})
        ms = (time.perf_counter() - started) * 1000
        rss = raw.peak_rss_mb()
        cpu = cpu_seconds(raw.proc.pid, children=True) * 1000
    finally:
        raw.close()
    catalog = result["catalog"]
    shape = {"plugins": len(catalog["plugins"]), "skills": len(catalog["skills"]),
             "commandTemplates": len(catalog["commandTemplates"]), "hooks": len(catalog["hooks"]),
             "mcpServers": len(catalog["mcpServers"]), "answerBytes": len(json.dumps(result))}
    return ms, rss, cpu, shape


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    index = json.loads((cache_dir() / "plugins.json").read_text())
    plugins, tree = index["plugins"], cache_dir() / "repos"
    folders = list(dict.fromkeys(str((tree / p["repo"].replace("/", "+") / p["path"]).resolve()) for p in plugins))
    binary = codex_native()
    if binary is None:
        sys.exit("codex is not installed: python -m bench.corpus_peers.compare --install-peers")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    compileall.compile_dir(str(REPO / "server"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="harness-corpus-speed-") as tmp:
        where = Path(tmp)
        cwds, entries = lay_out_codex(plugins, tree, where)
        home = where / "codex-home"
        home.mkdir()
        t = time.monotonic()
        installed = install_all(binary, home, cwds, entries)
        print(f"codex: {installed} of {len(entries)} plugins installed in {time.monotonic() - t:.0f}s (not timed)",
              file=sys.stderr)
        times: dict[str, list[float]] = {"sidecar": [], "codex": []}
        rss: dict[str, list[float]] = {"sidecar": [], "codex": []}
        cpu: dict[str, list[float]] = {"sidecar": [], "codex": []}
        shapes: dict[str, dict] = {}
        for i in range(args.runs + 1):
            for who in ("sidecar", "codex")[:: 1 if i % 2 else -1]:
                ms, mb, cpu_ms, shape = sidecar_run(folders) if who == "sidecar" else codex_run(binary, home, cwds)
                shapes[who] = shape
                if i:  # the first round warms the page cache and both binaries
                    times[who].append(ms)
                    rss[who].append(mb)
                    cpu[who].append(cpu_ms)
    ratio = statistics.median(times["sidecar"]) / statistics.median(times["codex"])
    rss_ratio = statistics.median(rss["sidecar"]) / statistics.median(rss["codex"])
    cpu_ratio = statistics.median(cpu["sidecar"]) / statistics.median(cpu["codex"])
    figures = {"plugins": len(plugins), "folders": len(folders), "codex": version, "codexInstalled": installed,
               "runs": args.runs, "spawn_to_catalog_ms": {k: summary(v) for k, v in times.items()},
               "peak_rss_mb": {k: summary(v) for k, v in rss.items()},
               "cpu_ms": {k: summary(v) for k, v in cpu.items()}, "catalogs": shapes,
               "ratio_time": ratio, "ratio_rss": rss_ratio, "ratio_cpu": cpu_ratio,
               "loadavg": os.getloadavg()}
    print(f"{len(folders)} plugin folders ({len(plugins)} plugins), {args.runs} runs each, alternating")
    print(f"sidecar thread/start: {fmt(summary(times['sidecar']), ' ms')}; CPU {fmt(summary(cpu['sidecar']), ' ms')}; "
          f"peak RSS "
          f"{statistics.median(rss['sidecar']):.1f} MB; {shapes['sidecar']}")
    print(f"{version} plugin/list + skills/list: {fmt(summary(times['codex']), ' ms')}; CPU "
          f"{fmt(summary(cpu['codex']), ' ms')}; peak RSS "
          f"{statistics.median(rss['codex']):.1f} MB; {shapes['codex']}")
    print(f"ratio (medians) time {ratio:.2f}× (goal ≤ 0.5×), peak RSS {rss_ratio:.2f}× (goal ≤ 0.4×), "
          f"CPU {cpu_ratio:.2f}×; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
