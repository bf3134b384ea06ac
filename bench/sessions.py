"""Sessions (protocol-v4 §5): what a turn's frozen view and a resumed thread cost.

- ``context/build`` of a thread with 20 skills activated by ``skills/activate``: the request's
  round trip through the real sidecar, p50 and p90 over many calls (target: p50 ≤ 2 ms).
- Resume: ``thread/start {sessionId, resume: true}`` of a thread whose 5 extensions each saved a
  64 KiB ``ctx.state``, against a fresh ``thread/start`` trusting the same 5 extensions (each of
  which reads ``ctx.state.get()`` in its ``thread_start`` handler), alternated in one sidecar with
  the same settling after each (a spare host is started after every start): the ratio of the
  medians (target: ≤ 1.2), the median of each pair's ratio (less moved by a neighbour's load), and
  the CPU the sidecar and its hosts spent per start (``/proc/*/task/*/schedstat``: what the load of
  the machine moves least).

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


def cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU of ``pid``, its threads and every process under it (``/proc/*/task/*/schedstat``:
    no 10 ms ticks); a process that exited meanwhile is not counted."""
    total = 0
    for member in process_tree(pid):
        try:
            for task in os.listdir(f"/proc/{member}/task"):
                with open(f"/proc/{member}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total

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


def resume(root: Path, runs: int, state_bytes: int = 64 * 1024) -> dict:
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
    fresh, resumed = [], []
    cpu = {"fresh": 0.0, "resume": 0.0}  # the sidecar's and its hosts' CPU over the timed starts
    for run in range(runs + 1):
        for series, params in ((fresh, base), (resumed, {**base, "sessionId": "bench:resume", "resume": True})):
            before = cpu_ns(raw.proc.pid)
            started = time.perf_counter()
            thread = raw.call("thread/start", params)["threadId"]
            series.append((time.perf_counter() - started) * 1000)
            if run:
                cpu["resume" if series is resumed else "fresh"] += (cpu_ns(raw.proc.pid) - before) / 1e9
            handed_back = raw.call("thread/close", {"threadId": thread})["state"]
            assert len(handed_back) == (5 if series is resumed else 0), handed_back.keys()  # it was handed back
            time.sleep(SPARE_SETTLE_S)
    raw.close()
    fresh, resumed = fresh[1:], resumed[1:]  # the first pair warms the modules both use
    pairs = [b / a for a, b in zip(fresh, resumed)]  # each resume beside the fresh start just before it
    return {"fresh_ms": summary(fresh), "resume_ms": summary(resumed),
            "cpu_ms_per_start": {k: v * 1000 / runs for k, v in cpu.items()},
            "ratio": statistics.median(resumed) / statistics.median(fresh), "pair_ratio": summary(pairs),
            "state_bytes_each": state_bytes}


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
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    results = run(args.runs or (5 if args.quick else 15), args.quick)
    build, resumed = results["context_build_20_skills"], results["resume_5x64k"]
    print(f"context/build, 20 active skills ({build['prompt_bytes']} bytes): p50 {build['p50_ms']:.3f} ms, "
          f"p90 {build['p90_ms']:.3f} ms, {fmt(build['ms'], ' ms', 3)}")
    print(f"thread/start, 5 extensions: fresh {fmt(resumed['fresh_ms'], ' ms')}, resume of 5 × 64 KiB state "
          f"{fmt(resumed['resume_ms'], ' ms')}: ratio of medians {resumed['ratio']:.3f}, per pair "
          f"{fmt(resumed['pair_ratio'], '', 3)}; CPU per start (sidecar and hosts): fresh "
          f"{resumed['cpu_ms_per_start']['fresh']:.1f} ms, resume {resumed['cpu_ms_per_start']['resume']:.1f} ms")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
