"""Pins checked at start (issue 27, protocol-v4 §1), on the real sidecar, as same-run ratios.

1. *thread/start over 50 plugins, every one pinned, against the same 50 trusted unpinned*: one
   sidecar, each ``thread/start`` followed by its ``thread/close``, the two interleaved (code parts
   off in both — ``hooks/mcpServers/extensions: false`` — so only the pins differ). The plugins are
   the ``--corpus`` folders (``bench.plugins``' choice) or, without one, the real plugins of
   tests/fixtures/plugins copied under 50 names. The first pinned start of the process (every file
   read and hashed) is reported too.
2. *the two designs*, in this process, over the same 50 trees: the check (``resources.pins``:
   one ``lstat`` per entry, a file read again only when its identity changed) against a private
   copy (``shutil.copytree`` of each tree, what a snapshot at every ``thread/start`` would cost).
3. *a pinned hook's start against an unpinned one's*: a plugin (the superpowers fixture plus a
   PreToolUse ``exit 0`` hook on ``load_skill``) trusted with and without ``sha256`` in two sidecars;
   tools/call round trips interleaved (the hook's start, its run and the check before and after).

``python -m bench.pins [--quick] [--corpus DIR] [--json PATH]``.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, Raw, fmt, summary  # noqa: E402
from bench.plugins import pick  # noqa: E402

from harness_sidecar.resources import pins  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "plugins"
MANIFESTS = (".codex-plugin/plugin.json", ".claude-plugin/plugin.json")


def fifty_plugins(where: Path, corpus: Path | None, count: int) -> list[tuple[str, Path]]:
    """``count`` plugin folders under ``where/root/plugins`` and their names."""
    plugins = where / "root" / "plugins"
    out = []
    if corpus is not None:
        for source in pick(corpus, count):
            shutil.copytree(source, plugins / source.name, symlinks=True)
    else:
        sources = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
        for i in range(count):
            source = sources[i % len(sources)]
            target = plugins / f"{source.name}-{i}"
            shutil.copytree(source, target, symlinks=True)
            for rel in MANIFESTS:  # a name of its own, in every manifest it has
                manifest = target / rel
                if manifest.is_file():
                    data = json.loads(manifest.read_text())
                    data["name"] = target.name
                    manifest.write_text(json.dumps(data))
    for folder in sorted(plugins.iterdir()):
        for rel in MANIFESTS:
            if (folder / rel).is_file():
                out.append((json.loads((folder / rel).read_text())["name"], folder))
                break
    return out


def start_close_ms(raw: Raw, params: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    result = raw.call("thread/start", params)
    elapsed = (time.perf_counter() - started) * 1000
    raw.call("thread/close", {"threadId": result["threadId"]})
    return elapsed, result


def thread_starts(where: Path, plugins: list[tuple[str, Path]], runs: int) -> dict:
    root = where / "root"
    off = {"hooks": False, "mcpServers": False, "extensions": False}
    unpinned = {"roots": [str(root)], "watch": False, "trustedPlugins": [{"name": n, **off} for n, _ in plugins]}
    pinned = {"roots": [str(root)], "watch": False,
              "trustedPlugins": [{"name": n, "sha256": pins.tree_sha256(str(p)), **off} for n, p in plugins]}
    raw = Raw(SIDECAR)
    try:
        raw.call("initialize")
        first_pinned, result = start_close_ms(raw, pinned)  # the process's first: every tree read and hashed
        assert not [d for d in result["diagnostics"] if d["kind"] in ("hash_mismatch", "pin_link_escape")], \
            result["diagnostics"]
        assert all(p.get("sha256") for p in result["catalog"]["plugins"])
        start_close_ms(raw, unpinned)
        times: dict[str, list[float]] = {"pinned": [], "unpinned": []}
        for i in range(runs):
            for name, params in (("pinned", pinned), ("unpinned", unpinned))[:: 1 if i % 2 else -1]:
                times[name].append(start_close_ms(raw, params)[0])
    finally:
        raw.close()
    files = sum(1 for _, p in plugins for f in p.rglob("*") if f.is_file() or f.is_symlink())
    out = {name: summary(t) for name, t in times.items()}
    out.update(first_pinned_ms=first_pinned, plugins=len(plugins), files=files,
               ratio=statistics.median(times["pinned"]) / statistics.median(times["unpinned"]),
               # load from other processes only ever slows a start down: the fastest of each is steadier
               best_ratio=min(times["pinned"]) / min(times["unpinned"]))
    return out


def designs(where: Path, plugins: list[tuple[str, Path]], runs: int) -> dict:
    """The check against a private copy, over the same trees, in this process: what each start of
    pinned code costs (``TreePin.start_check``), what a catalog scan costs for a tree inotify vouches
    for (``pins.vouched``), and what copying the trees costs (a snapshot per thread/start)."""
    held = [pins.TreePin(os.path.realpath(p), pins.tree_sha256(str(p)), n) for n, p in plugins]
    time.sleep(pins._RACY_NS / 1e9)  # past the clock's grain: identities now stand for contents
    for pin in held:
        assert pin.holds() is None
    check, vouch, copy = [], [], []
    for i in range(runs):
        started = time.perf_counter()
        for pin in held:
            assert pin.holds() is None
        check.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        for pin in held:
            assert pins.vouched(pin.path, pin.expected) is not None
        vouch.append((time.perf_counter() - started) * 1000)
        target = where / f"copies-{i}"
        started = time.perf_counter()
        for _, p in plugins:
            shutil.copytree(p, target / p.name, symlinks=True)
        copy.append((time.perf_counter() - started) * 1000)
        shutil.rmtree(target)
    c, v, s = summary(check), summary(vouch), summary(copy)
    return {"check_ms": c, "vouched_ms": v, "copy_ms": s, "copy_over_check": s["median"] / c["median"]}


def hook_plugin(path: Path) -> Path:
    shutil.copytree(FIXTURES / "superpowers", path, symlinks=True)
    # read as the Claude Code plugin it also is: its .codex-plugin's "hooks": {} turns hooks off (v4 §3)
    shutil.rmtree(path / ".codex-plugin", ignore_errors=True)
    (path / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "load_skill", "hooks": [{"type": "command", "command": "exit 0"}]}]}}))
    skill = path / "skills" / "demo"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Use when benchmarking.\n---\nBody.\n")
    return path


def _manifest_name(folder: Path) -> str:
    for rel in MANIFESTS:
        if (folder / rel).is_file():
            return json.loads((folder / rel).read_text())["name"]
    raise ValueError(folder)


def hook_starts(where: Path, runs: int) -> dict:
    plugin = hook_plugin(where / "hooked")
    name = _manifest_name(plugin)
    project = where / "project"
    project.mkdir()
    sides = {"pinned": Raw(SIDECAR), "unpinned": Raw(SIDECAR)}
    threads = {}
    for side, raw in sides.items():
        raw.call("initialize")
        grant = {"name": name, "mcpServers": False, "extensions": False}
        if side == "pinned":
            grant["sha256"] = pins.tree_sha256(str(plugin))
        started = raw.call("thread/start", {"roots": [str(project)], "plugins": [str(plugin)], "watch": False,
                                            "trustedPlugins": [grant]})
        assert [h["trusted"] for h in started["catalog"]["hooks"] if h["event"] == "PreToolUse"] == [True]
        threads[side] = started["threadId"]
    times: dict[str, list[float]] = {side: [] for side in sides}
    for i in range(runs + 5):  # interleaved; five warm-up rounds
        for side in (("pinned", "unpinned") if i % 2 else ("unpinned", "pinned")):
            started = time.perf_counter()
            answer = sides[side].call("tools/call", {"threadId": threads[side], "call": {
                "id": f"c{i}", "name": "load_skill", "arguments": {"name": f"{name}:demo"}}})
            elapsed = (time.perf_counter() - started) * 1000
            assert not answer["result"]["isError"], answer
            if i >= 5:
                times[side].append(elapsed)
    for raw in sides.values():
        raw.close()
    out = {side: summary(t) for side, t in times.items()}
    out["files"] = sum(1 for f in plugin.rglob("*") if f.is_file() or f.is_symlink())
    out["ratio"] = out["pinned"]["median"] / out["unpinned"]["median"]
    # each round's two calls ran back to back: their ratio sees the same load
    out["paired_ratio"] = statistics.median(p / u for p, u in zip(times["pinned"], times["unpinned"]))
    out["best_ratio"] = min(times["pinned"]) / min(times["unpinned"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pins", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--corpus", default=os.environ.get("HARNESS_PLUGIN_CORPUS"))
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--json")
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "server"), quiet=1)
    corpus = Path(args.corpus).resolve() if args.corpus else None
    results: dict = {"corpus": str(corpus) if corpus else "tests/fixtures/plugins, copied"}
    with tempfile.TemporaryDirectory(prefix="harness-bench-pins-") as tmp:
        where = Path(tmp)
        plugins = fifty_plugins(where, corpus, args.count)
        t = results["thread_start"] = thread_starts(where, plugins, 21 if args.quick else 61)
        print(f"thread/start, {t['plugins']} plugins ({t['files']} files) trusted: pinned "
              f"{fmt(t['pinned'], ' ms')} vs unpinned {fmt(t['unpinned'], ' ms')}: {t['ratio']:.2f}× "
              f"(fastest of each: {t['best_ratio']:.2f}×); "
              f"the process's first pinned start (every file hashed) {t['first_pinned_ms']:.1f} ms", flush=True)
        d = results["designs"] = designs(where, plugins, 5 if args.quick else 15)
        print(f"the same {t['plugins']} trees: checked as at a start {fmt(d['check_ms'], ' ms', 2)}, vouched for "
              f"by inotify (a catalog scan) {fmt(d['vouched_ms'], ' ms', 3)}, copied {fmt(d['copy_ms'], ' ms', 2)} "
              f"({d['copy_over_check']:.0f}× the check)", flush=True)
        h = results["hook"] = hook_starts(where, 100 if args.quick else 300)
        print(f"tools/call with a trivial PreToolUse hook of a plugin ({h['files']} files): pinned "
              f"{fmt(h['pinned'], ' ms', 2)} vs unpinned {fmt(h['unpinned'], ' ms', 2)}: {h['ratio']:.3f}× "
              f"(median of each round's pair: {h['paired_ratio']:.3f}×, fastest of each: {h['best_ratio']:.3f}×)",
              flush=True)
    checks = [("thread/start, every plugin pinned ≤ 1.2× unpinned (median)", t["ratio"] <= 1.2, f"{t['ratio']:.2f}×"),
              ("a pinned hook's start ≤ 1.1× an unpinned one's (median)", h["ratio"] <= 1.1, f"{h['ratio']:.3f}×")]
    for name, met, figure in checks:
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONUNBUFFERED", None)
    raise SystemExit(main())
