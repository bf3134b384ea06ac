"""The live catalog's figures: ``python -m bench.watch [--skills N] [--edits N] [--idle SECONDS]``.

- *edit → settled change*: a SKILL.md of an N-skill root is rewritten; the time until the
  watch's callback has rescanned the root (``build_catalog`` off the loop, as the sidecar
  does) and diffed it with the previous snapshot — the library path ``catalog/changed``
  will take, without the JSON line. When the sidecar itself sends ``catalog/changed``
  (it lists it in ``initialize``'s notifications), the end-to-end figure is measured too:
  edit → the notification read by the editor.
- *idle CPU*: the process's CPU time (every thread) over a quiet period with the watch open.
- *set-up*: subscribing to the N-skill root (a kernel watch per skill folder).

Each measurement runs in a fresh process; figures are medians (and max) over the edits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.workspace import make_skills  # noqa: E402


def cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


async def library_figures(root: Path, count: int, edits: int, idle_s: float) -> dict:
    from harness_sidecar.base.limits import Limits
    from harness_sidecar.resources.catalog import build_catalog
    from harness_sidecar.resources.diff import diff
    from harness_sidecar.resources.watch import WatchHub

    loop = asyncio.get_running_loop()
    limits = Limits(max_skills_per_root=max(count, 2000))
    snapshot = await loop.run_in_executor(None, build_catalog, [str(root)], limits)
    done: asyncio.Queue = asyncio.Queue()

    async def rescan(change) -> None:
        nonlocal snapshot
        new = await loop.run_in_executor(None, build_catalog, [str(root)], limits)
        result = diff(snapshot, new)
        snapshot = new
        done.put_nowait((time.perf_counter(), result))

    hub = WatchHub()
    started = time.perf_counter()
    handle = hub.subscribe([str(root)], rescan)
    setup_ms = (time.perf_counter() - started) * 1000
    folders = hub.watched_folders
    await asyncio.sleep(0.5)
    latencies = []
    for i in range(edits):
        name = f"skill-{(i * 37) % count:05d}"
        path = root / "skills" / name / "SKILL.md"
        text = path.read_text().replace("Use when", f"Edit {i}, use when", 1)
        written = time.perf_counter()
        path.write_text(text)
        finished, result = await asyncio.wait_for(done.get(), 10)
        assert result.changed == [{"kind": "skill", "name": name}], result.to_wire()
        latencies.append((finished - written) * 1000)
        await asyncio.sleep(0.3)
    before = cpu_ms()
    await asyncio.sleep(idle_s)
    idle_cpu = cpu_ms() - before
    handle.close()
    hub.close()
    return {"skills": count, "setup_ms": setup_ms, "watched_folders": folders,
            "edit_to_diff_ms": {"median": statistics.median(latencies), "max": max(latencies), "runs": edits},
            "idle_seconds": idle_s, "idle_cpu_ms": idle_cpu, "threads": len(os.listdir("/proc/self/task"))}


def end_to_end(root: Path, count: int, edits: int) -> dict | None:
    """Edit → catalog/changed read by the editor, when the sidecar sends catalog/changed."""
    from harness_sidecar.console.client import SidecarProcess, child_env

    sidecar = SidecarProcess(env=child_env())
    try:
        info = sidecar.initialize()
        if "catalog/changed" not in info.get("capabilities", {}).get("notifications", []):
            return None
        thread = sidecar.call("thread/start", {"roots": [str(root)], "limits": {"maxSkillsPerRoot": max(count, 2000)}})
        time.sleep(1.0)  # the watch starts after the answer
        latencies = []
        for i in range(edits):
            path = root / "skills" / f"skill-{(i * 41 + 3) % count:05d}" / "SKILL.md"
            text = path.read_text().replace("Use when", f"E2E {i}, use when", 1)
            seen = len(sidecar.notifications)
            written = time.perf_counter()
            path.write_text(text)
            deadline = written + 10
            while time.perf_counter() < deadline:
                try:
                    sidecar._dispatch(sidecar.next_message(0.05))
                except Exception:  # noqa: BLE001 - queue.Empty: nothing yet
                    pass
                if any(n["method"] == "catalog/changed" and n["params"]["threadId"] == thread["threadId"]
                       for n in sidecar.notifications[seen:]):
                    latencies.append((time.perf_counter() - written) * 1000)
                    break
            time.sleep(0.3)
        return {"median": statistics.median(latencies), "max": max(latencies), "runs": len(latencies)}
    finally:
        sidecar.close()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watch", description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the measuring process: fresh, nothing else in it
        figures = asyncio.run(library_figures(Path(args.child), args.skills, args.edits, args.idle))
        print(json.dumps(figures))
        return 0
    with tempfile.TemporaryDirectory(prefix="harness-bench-watch-") as tmp:
        root = make_skills(Path(tmp) / "root", args.skills, 2000)
        time.sleep(2.1)  # no file younger than the header cache's racy window
        out = subprocess.run([sys.executable, "-m", "bench.watch", "--skills", str(args.skills), "--edits",
                              str(args.edits), "--idle", str(args.idle), "--child", str(root)],
                             capture_output=True, text=True, cwd=REPO, check=True)
        figures = json.loads(out.stdout)
        e2e = end_to_end(root, args.skills, args.edits)
    edit = figures["edit_to_diff_ms"]
    print(f"watch on {figures['skills']} skills: set-up {figures['setup_ms']:.1f} ms "
          f"({figures['watched_folders']} folders), {figures['threads']} thread(s)")
    print(f"edit SKILL.md → settled, rescanned and diffed: median {edit['median']:.1f} ms, "
          f"max {edit['max']:.1f} ms over {edit['runs']} edits (debounce 50 ms included)")
    print(f"idle with the watch open: {figures['idle_cpu_ms']:.1f} ms CPU over {figures['idle_seconds']:.0f} s")
    if e2e is None:
        print("edit → catalog/changed end to end: the sidecar does not send catalog/changed yet")
    else:
        print(f"edit → catalog/changed received: median {e2e['median']:.1f} ms, max {e2e['max']:.1f} ms "
              f"over {e2e['runs']} edits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
