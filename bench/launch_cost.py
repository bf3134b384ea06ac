"""What fencing costs a launch: ``python -m bench.launch_cost [N]`` from the repository root.

Command hooks are started per tool call, so a launch must stay cheap. For each mode (Landlock as
the kernel offers it; ``HARNESS_SIDECAR_LANDLOCK=5``, the pre-scope ruleset; ``off``) this starts
``/bin/true`` N times through ``containment.launcher.popen`` and waits for it, and separately times
what the forked child spends entering its domain (``landlock.enter_domain()``: NO_NEW_PRIVS and
landlock_restrict_self). Medians in microseconds; noisy on a loaded machine.
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


def measure(n: int) -> dict[str, float]:
    from harness_sidecar.containment import landlock, launcher

    enter = landlock.enter_domain()
    launches = []
    for i in range(n + 20):
        started = time.perf_counter()
        launcher.popen(launcher.Launch(["/bin/true"], launcher.HOOK), stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
        if i >= 20:
            launches.append((time.perf_counter() - started) * 1e6)
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
    return {"landlockAbi": landlock.abi(), "launch_us": statistics.median(launches),
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
        print(f"Landlock {mode or 'as offered':>10} (ABI {figures['landlockAbi']}): launch+wait of /bin/true "
              f"{figures['launch_us']:8.0f} µs median; entering the domain in the child {figures['enter_domain_us']:6.1f} µs")


if __name__ == "__main__":
    main()
