"""What fencing costs a launch: ``python -m bench.launch_cost [N]`` from the repository root.

Command hooks are started per tool call, so a launch must stay cheap. For each mode (Landlock as
the kernel offers it; ``HARNESS_SIDECAR_LANDLOCK=5``, the pre-scope ruleset; ``off``) this starts
``/bin/true`` N times and waits for it: with ``subprocess.run`` (the floor: vfork, no fences),
through ``containment.launcher.popen`` (how hosts start: a ``preexec_fn``, so a fork), and through
``launcher.spawn`` as a command hook (its owner's zygote vforks it; the zygote is started before
timing); and separately times what a forked child spends entering its domain
(``landlock.enter_domain()``: NO_NEW_PRIVS and landlock_restrict_self). Medians in microseconds,
the kinds interleaved; noisy on a loaded machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from bench.common import LauncherTrue  # noqa: E402


def measure(n: int) -> dict[str, float]:
    from harness_sidecar.containment import landlock, launcher

    as_hook = LauncherTrue()
    enter = landlock.enter_domain()
    floor, launches, hooks = [], [], []
    for i in range(n + 20):
        started = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        middle = time.perf_counter()
        launcher.popen(launcher.Launch(["/bin/true"], launcher.HOOK), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
        last = time.perf_counter()
        hook_ms = as_hook.run_ms()
        if i >= 20:
            floor.append((middle - started) * 1e6)
            launches.append((last - middle) * 1e6)
            hooks.append(hook_ms * 1000)
    as_hook.close()
    inside = []
    for _ in range(n):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            started = time.perf_counter()
            enter()
            os.write(write, str((time.perf_counter() - started) * 1e6).encode())
            os._exit(0)
        os.close(write)
        inside.append(float(os.read(read, 64)))
        os.close(read)
        os.waitpid(pid, 0)
    return {"landlockAbi": landlock.abi(), "floor_us": statistics.median(floor),
            "launch_us": statistics.median(launches), "hook_us": statistics.median(hooks),
            "enter_domain_us": statistics.median(inside)}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    if os.environ.get("_LAUNCH_COST_CHILD"):
        print(json.dumps(measure(n)))
        return
    for mode in ("", "5", "off"):
        env = {**os.environ, "_LAUNCH_COST_CHILD": "1", "PYTHONPATH": str(REPO / "server")}
        env["HARNESS_SIDECAR_LANDLOCK"] = mode
        out = subprocess.run([sys.executable, "-m", "bench.launch_cost", str(n)], env=env, cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
        figures = json.loads(out)
        print(f"Landlock {mode or 'as offered':>10} (ABI {figures['landlockAbi']}): start+wait of /bin/true: "
              f"subprocess.run {figures['floor_us']:6.0f} µs, launcher.popen {figures['launch_us']:6.0f} µs, "
              f"as a hook (zygote) {figures['hook_us']:6.0f} µs; entering the domain in the child "
              f"{figures['enter_domain_us']:6.1f} µs (medians)")


if __name__ == "__main__":
    main()
