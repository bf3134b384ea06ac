"""Spawn → first ``thread/start`` answered, over a large real corpus, and activation time there.

    python -m bench.spawn [CORPUS] [--runs N] [--activations N]

CORPUS (or ``HARNESS_BENCH_CORPUS``): a directory of public skill repositories (bench/real_corpus.py
lays them out as roots). Each run is a fresh sidecar, as an editor starts it: from the spawn to the
answer of its first ``thread/start`` over all the roots, imports and the cold parse of every
SKILL.md's frontmatter included (the header cache lives in the process, so every run starts cold;
the files themselves are in the OS page cache after the first run, as they are for an editor
opened twice). Then ``skills/activate`` round trips of skills spread over the catalog (no
resources): p50 and p90. Figures are medians with min and max; say the machine's load beside them.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import time

from bench.common import REPO, SIDECAR, Raw, fmt, summary
from bench.real_corpus import corpus_dir, describe, roots


def spawn_to_first_thread_start(root_list: list[str], runs: int, activations: int) -> dict:
    params = {"roots": root_list, "limits": {"maxSkillsPerRoot": 2000}}
    spawn_ms, request_ms, activation_ms = [], [], []
    skills = diagnostics = 0
    for run in range(runs + 1):  # the first run warms the page cache and the bytecode: not counted
        spawned = time.perf_counter()
        raw = Raw(SIDECAR)
        raw.call("initialize")
        started = time.perf_counter()
        result = raw.call("thread/start", params)
        done = time.perf_counter()
        if run:
            spawn_ms.append((done - spawned) * 1000)
            request_ms.append((done - started) * 1000)
        names = [s["name"] for s in result["catalog"]["skills"]]
        skills, diagnostics = len(names), len(result["diagnostics"])
        if run == runs and activations:
            step = max(1, len(names) // activations)
            for name in names[::step][:activations]:
                began = time.perf_counter()
                try:
                    raw.call("skills/activate", {"threadId": result["threadId"], "name": name})
                except RuntimeError:
                    continue  # a skill changed since, or an invalid body: not an activation to time
                activation_ms.append((time.perf_counter() - began) * 1000)
        raw.close()
    activation = sorted(activation_ms)
    return {"spawn_to_first_ms": summary(spawn_ms), "thread_start_ms": summary(request_ms), "skills": skills,
            "diagnostics": diagnostics,
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
    print(f"spawn → first thread/start answered: {fmt(figures['spawn_to_first_ms'], ' ms')}"
          f"  (the request alone {fmt(figures['thread_start_ms'], ' ms')}; {figures['skills']} skills listed, "
          f"{figures['diagnostics']} diagnostics)")
    if figures["activations"]:
        print(f"skills/activate round trip: p50 {figures['activation_p50_ms']:.2f} ms, "
              f"p90 {figures['activation_p90_ms']:.2f} ms over {figures['activations']} skills")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
