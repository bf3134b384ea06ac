"""Spawn → first ``thread/start`` answered, over a large real corpus, and activation time there.

    python -m bench.spawn [CORPUS] [--runs N] [--activations N]

CORPUS (or ``HARNESS_BENCH_CORPUS``): a directory of public skill repositories (bench/real_corpus.py
lays them out as roots). Each run is a fresh sidecar, as an editor starts it: from the spawn to the
answer of its first ``thread/start`` over all the roots, imports included: *cold* with an empty
header cache (every SKILL.md's frontmatter parsed, as on the very first start) and *cached* with the
header cache a previous sidecar wrote (resources/header_cache.py: every later start). The files
themselves are in the OS page cache after the first run, as they are for an editor opened twice. Then ``skills/activate`` round trips of skills spread over the catalog (no
resources): p50 and p90. Figures are medians with min and max; say the machine's load beside them.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import tempfile
import time

from bench.common import REPO, SIDECAR, Raw, cpu_seconds, fmt, summary
from bench.real_corpus import corpus_dir, describe, roots


def _first_thread_start(params: dict, cache: str) -> tuple[float, float, float, Raw, dict]:
    os.environ["HARNESS_SIDECAR_CACHE_DIR"] = cache  # Raw's environment is this process's
    spawned = time.perf_counter()
    raw = Raw(SIDECAR)
    raw.call("initialize")
    started = time.perf_counter()
    result = raw.call("thread/start", params)
    done = time.perf_counter()
    cpu = cpu_seconds(raw.proc.pid) * 1000  # the sidecar's own CPU to this point: less noisy than the clock
    return (done - spawned) * 1000, (done - started) * 1000, cpu, raw, result


def spawn_to_first_thread_start(root_list: list[str], runs: int, activations: int) -> dict:
    """Two series, run by turns so that they share the machine's noise: *cold*, every SKILL.md
    parsed (an empty header cache, as on the very first start), and *cached*, the header cache
    a previous sidecar left (every later start of an editor on the same skills)."""
    params = {"roots": root_list, "limits": {"maxSkillsPerRoot": 2000}}
    figures: dict[str, list[float]] = {"cold": [], "cold_request": [], "cold_cpu": [], "cached": [],
                                       "cached_request": [], "cached_cpu": []}
    activation_ms: list[float] = []
    skills = diagnostics = 0
    with tempfile.TemporaryDirectory(prefix="harness-bench-cache-") as tmp:
        cached_dir = os.path.join(tmp, "cached")
        for run in range(runs + 1):  # run 0 warms the page cache and fills the cached series' cache
            for series in ("cold", "cached"):
                cache = cached_dir if series == "cached" else os.path.join(tmp, f"cold-{run}")
                spawn_ms, request_ms, cpu_ms, raw, result = _first_thread_start(params, cache)
                if run:
                    figures[series].append(spawn_ms)
                    figures[series + "_cpu"].append(cpu_ms)
                    figures[series + "_request"].append(request_ms)
                names = [s["name"] for s in result["catalog"]["skills"]]
                skills, diagnostics = len(names), len(result["diagnostics"])
                if run == runs and series == "cached" and activations:
                    step = max(1, len(names) // activations)
                    for name in names[::step][:activations]:
                        began = time.perf_counter()
                        try:
                            raw.call("skills/activate", {"threadId": result["threadId"], "name": name})
                        except RuntimeError:
                            continue  # an invalid body: not an activation to time
                        activation_ms.append((time.perf_counter() - began) * 1000)
                raw.close()
    os.environ.pop("HARNESS_SIDECAR_CACHE_DIR", None)
    activation = sorted(activation_ms)
    return {"cold_ms": summary(figures["cold"]), "cold_request_ms": summary(figures["cold_request"]),
            "cold_cpu_ms": summary(figures["cold_cpu"]), "cached_cpu_ms": summary(figures["cached_cpu"]),
            "cached_ms": summary(figures["cached"]), "cached_request_ms": summary(figures["cached_request"]),
            "skills": skills, "diagnostics": diagnostics,
            "activation_p50_ms": statistics.median(activation) if activation else None,
            "activation_p90_ms": activation[int(len(activation) * 0.9)] if activation else None,
            "activations": len(activation)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spawn", description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", help="a directory of skill repositories (or HARNESS_BENCH_CORPUS)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--activations", type=int, default=200)
    args = parser.parse_args()
    corpus = corpus_dir(args.corpus)
    root_list = roots(corpus)
    compileall.compile_dir(str(REPO / "server"), quiet=1)
    print(describe(corpus, root_list), flush=True)
    figures = spawn_to_first_thread_start(root_list, args.runs, args.activations)
    print(f"{figures['skills']} skills listed, {figures['diagnostics']} diagnostics")
    for series, what in (("cold", "every SKILL.md parsed"), ("cached", "header cache of a previous start")):
        print(f"spawn → first thread/start answered, {what}: {fmt(figures[series + '_ms'], ' ms')}"
              f"  (the request alone {fmt(figures[series + '_request_ms'], ' ms')}; sidecar CPU "
              f"{fmt(figures[series + '_cpu_ms'], ' ms', 0)})")
    if figures["activations"]:
        print(f"skills/activate round trip: p50 {figures['activation_p50_ms']:.2f} ms, "
              f"p90 {figures['activation_p90_ms']:.2f} ms over {figures['activations']} skills")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
