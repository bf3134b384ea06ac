"""Sessions (protocol-v4 §5): what a turn's frozen view and a resumed thread cost.

- ``context/build`` of a thread with 20 skills activated by ``skills/activate``: the request's
  round trip through the real sidecar, p50 and p90 over many calls (target: p50 ≤ 2 ms).
- Resume: ``thread/start {sessionId, resume: true}`` of a thread whose 5 extensions each saved a
  64 KiB ``ctx.state``, against a fresh ``thread/start`` trusting the same 5 extensions (each of
  which reads ``ctx.state.get()`` in its ``thread_start`` handler), in one sidecar, as many pairs,
  the order within a pair alternating, the same settling after each start (a spare host is started
  after every start). The figure is the median of the pairs' ratios — of the CPU the sidecar and the
  thread's host spent (``/proc/*/task/*/schedstat``: what the machine's load moves least), and of the
  wall time. The CPU counts the processes that existed when the start began: the spare host started
  during it is the *next* thread's (the same work for both kinds, but counted by how far it got, which
  the other's wall time decides).

``python -m bench.sessions [--quick]`` runs them alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, SPARE_SETTLE_S, Raw, fmt, process_tree, summary  # noqa: E402


def cpu_ns(pids: list[int]) -> dict[int, int]:
    """Nanoseconds on a CPU of each of ``pids``, all its threads (``/proc/*/task/*/schedstat``: no 10 ms
    ticks); a process that exited meanwhile is left out."""
    spent = {}
    for member in pids:
        total = 0
        try:
            for task in os.listdir(f"/proc/{member}/task"):
                with open(f"/proc/{member}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        spent[member] = total
    return spent


EXTENSION = '''
def fill(call_id, arguments, ctx):
    ctx.state.set({"pad": "x" * arguments["bytes"], "n": 1})
    return "ok"
def started(event, ctx):
    state = ctx.state.get()
    assert event["reason"] != "resume" or state["n"] == 1
def activate(api):
    api.register_tool(name="fill_%(n)d", description="", input_schema={}, execute=fill)
    api.on("thread_start", started)
'''


def _skill(root: Path, name: str) -> None:
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Use when benchmarking {name}.\n---\n"
                                     + f"Step {name}: do the thing carefully.\n" * 40)


def context_build(root: Path, calls: int) -> dict:
    raw = Raw(SIDECAR)
    raw.call("initialize")
    thread = raw.call("thread/start", {"roots": [str(root)], "watch": False})["threadId"]
    for i in range(20):
        raw.call("skills/activate", {"threadId": thread, "name": f"skill-{i}"})
    built = raw.call("context/build", {"threadId": thread})
    assert len(built["activeSkills"]) == 20, built["activeSkills"]
    times = []
    for _ in range(calls + 20):
        started = time.perf_counter()
        raw.call("context/build", {"threadId": thread})
        times.append((time.perf_counter() - started) * 1000)
    raw.close()
    times = sorted(times[20:])
    return {"ms": summary(times), "p50_ms": statistics.median(times), "p90_ms": times[int(len(times) * 0.9)],
            "prompt_bytes": len(built["systemPrompt"].encode())}


def resume(root: Path, pairs: int, state_bytes: int = 64 * 1024) -> dict:
    ids = [f"keep-{n}" for n in range(5)]
    raw = Raw(SIDECAR)
    raw.call("initialize")
    base = {"roots": [str(root)], "trustedExtensions": ids, "watch": False}
    thread = raw.call("thread/start", {**base, "sessionId": "bench:resume"})["threadId"]
    for n in range(5):
        raw.call("tools/call", {"threadId": thread, "call": {"id": f"c{n}", "name": f"fill_{n}",
                                                              "arguments": {"bytes": state_bytes}}})
    closed = raw.call("thread/close", {"threadId": thread})
    assert all(len(json.dumps(v)) > state_bytes for v in closed["state"].values()) and len(closed["state"]) == 5
    time.sleep(SPARE_SETTLE_S)
    kinds = {"fresh": base, "resume": {**base, "sessionId": "bench:resume", "resume": True}}
    measured: dict[str, list[dict[str, float]]] = {"fresh": [], "resume": []}
    for pair in range(pairs + 1):  # the first pair warms the modules both use
        for kind in (("fresh", "resume") if pair % 2 else ("resume", "fresh")):
            pids = process_tree(raw.proc.pid)  # the sidecar and the spare host this start takes
            before = cpu_ns(pids)
            started = time.perf_counter()
            thread = raw.call("thread/start", kinds[kind])["threadId"]
            wall = (time.perf_counter() - started) * 1000
            after = cpu_ns(pids)
            sidecar = (after.get(raw.proc.pid, 0) - before.get(raw.proc.pid, 0)) / 1e6
            hosts = sum(after[p] - before[p] for p in after if p != raw.proc.pid and p in before) / 1e6
            if pair:
                measured[kind].append({"wall_ms": wall, "cpu_ms": sidecar + hosts, "sidecar_cpu_ms": sidecar,
                                       "host_cpu_ms": hosts})
            handed_back = raw.call("thread/close", {"threadId": thread})["state"]
            assert len(handed_back) == (5 if kind == "resume" else 0), handed_back.keys()  # it was handed back
            time.sleep(SPARE_SETTLE_S)
    raw.close()
    fresh, resumed = measured["fresh"], measured["resume"]

    def pair_ratios(key: str) -> list[float]:
        return [r[key] / f[key] for f, r in zip(fresh, resumed)]

    def medians(rows: list[dict[str, float]]) -> dict[str, float]:
        return {key: statistics.median(row[key] for row in rows) for key in rows[0]}

    return {"pairs": pairs, "state_bytes_each": state_bytes, "fresh": medians(fresh), "resume": medians(resumed),
            "cpu_pair_ratio": summary(pair_ratios("cpu_ms")), "wall_pair_ratio": summary(pair_ratios("wall_ms")),
            "ratio": statistics.median(pair_ratios("cpu_ms"))}


def run(runs: int, quick: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        for i in range(20):
            _skill(root, f"skill-{i}")
        for n in range(5):
            path = root / "extensions" / f"keep-{n}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(EXTENSION % {"n": n})
        os.environ["HARNESS_SIDECAR_STATE_DIR"] = str(Path(tmp) / "state")  # bench_env copies os.environ
        return {"context_build_20_skills": context_build(root, 200 if quick else 1000),
                "resume_5x64k": resume(root, runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=None, help="resume/fresh pairs (default 31, --quick 9)")
    args = parser.parse_args()
    results = run(args.runs or (9 if args.quick else 31), args.quick)
    build, resumed = results["context_build_20_skills"], results["resume_5x64k"]
    print(f"context/build, 20 active skills ({build['prompt_bytes']} bytes): p50 {build['p50_ms']:.3f} ms, "
          f"p90 {build['p90_ms']:.3f} ms, {fmt(build['ms'], ' ms', 3)}")
    fresh, again = resumed["fresh"], resumed["resume"]
    print(f"thread/start, 5 extensions, {resumed['pairs']} pairs (medians): fresh {fresh['wall_ms']:.1f} ms wall, "
          f"{fresh['cpu_ms']:.1f} ms CPU (sidecar {fresh['sidecar_cpu_ms']:.1f}, host {fresh['host_cpu_ms']:.1f}); "
          f"resume of 5 × 64 KiB state {again['wall_ms']:.1f} ms wall, {again['cpu_ms']:.1f} ms CPU (sidecar "
          f"{again['sidecar_cpu_ms']:.1f}, host {again['host_cpu_ms']:.1f}); resume/fresh, median of the pairs' "
          f"ratios: CPU {fmt(resumed['cpu_pair_ratio'], '', 3)}, wall {fmt(resumed['wall_pair_ratio'], '', 3)}")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
