"""The first thread/start of a fresh process, and Codex beside it: ``python -m bench.first``.

A targeted part of ``python -m bench`` (same functions), for a noisy machine where the whole
bench is too much: ``--cases 1000x102400,10000x200`` picks the trees, ``--runs`` the runs.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import tempfile
import time
from pathlib import Path

from bench.__main__ import REPO, codex_comparison, fmt, thread_start_case
from bench.codex import CodexAppServer, find_codex
from bench.common import SIDECAR, Raw, summary
from bench.workspace import make_skills


def initialize_comparison(runs: int, codex: str, workspace: Path, home: Path) -> dict:
    """Spawn → ``initialize`` answered, alternating: the sidecar and Codex's app-server (a warm-up each first)."""
    ours, theirs = [], []
    for i in range(runs + 1):
        started = time.perf_counter()
        raw = Raw(SIDECAR)
        raw.call("initialize")
        elapsed = (time.perf_counter() - started) * 1000
        raw.close()
        started = time.perf_counter()
        app = CodexAppServer(codex, workspace, home)
        try:
            app.call("initialize", {"clientInfo": {"name": "harness-sidecar-bench", "version": "0"}})
            codex_elapsed = (time.perf_counter() - started) * 1000
        finally:
            app.close()
        if i:
            ours.append(elapsed)
            theirs.append(codex_elapsed)
    return {"sidecar_ms": summary(ours), "codex_ms": summary(theirs),
            "ratio": statistics.median(ours) / statistics.median(theirs)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="1000x102400,10000x200", help="COUNTxBODYBYTES, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-codex", action="store_true")
    parser.add_argument("--cold", action="store_true", help="drop the tree's file data from the page cache "
                        "before every Codex comparison run (bench.workspace.evict)")
    parser.add_argument("--early-off", action="store_true", help="a third series in the Codex comparison: "
                        "the sidecar without its early-scan helper")
    parser.add_argument("--no-first", action="store_true", help="the Codex comparison only")
    parser.add_argument("--initialize", action="store_true", help="also spawn → initialize answered, the "
                        "sidecar and Codex alternating (--runs each)")
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "server"), quiet=1)
    cases = [tuple(int(n) for n in case.split("x")) for case in args.cases.split(",")]
    codex, version = (None, "--no-codex") if args.no_codex else find_codex()
    with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
        empty = make_skills(Path(tmp) / "warm-up", 1, 200)
        trees = {case: make_skills(Path(tmp) / f"ws-{case[0]}-{case[1]}" / ".agents", *case) for case in cases}
        time.sleep(2.1)
        if args.initialize and codex is not None:
            init = initialize_comparison(args.runs, codex, empty.parent, Path(tmp) / "codex-home")
            print(f"spawn → initialize answered: sidecar {fmt(init['sidecar_ms'], ' ms')}, Codex {version} "
                  f"{fmt(init['codex_ms'], ' ms')}: ratio {init['ratio']:.2f}×", flush=True)
        for (count, body), root in trees.items():
            if not args.no_first:
                case = thread_start_case(root, count, args.runs, empty)
                print(f"{count}x{body}B  first thread/start {fmt(case['first_ms'], ' ms')}"
                      f"  spawn→first answered {fmt(case['spawn_to_first_ms'], ' ms')}"
                      f"  warm process {fmt(case['ms'], ' ms')}  warm {fmt(case['warm_ms'], ' ms')}", flush=True)
            if codex is None:
                print(f"  Codex comparison left out: {version}")
                continue
            comparison = codex_comparison(root, count, args.runs, codex, Path(tmp) / "codex-home", args.cold,
                                          args.early_off)
            off = (f"; without the early scan {fmt(comparison['sidecar_early_off_ms'], ' ms')}: "
                   f"{comparison['ratio_early_off']:.2f}×") if args.early_off else ""
            print(f"  spawn → first answer{' (file data cold)' if args.cold else ''}: sidecar "
                  f"{fmt(comparison['sidecar_ms'], ' ms')}, Codex {version} {fmt(comparison['codex_ms'], ' ms')} "
                  f"({comparison['codex_listed']} skills listed): ratio {comparison['ratio']:.2f}×{off}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
