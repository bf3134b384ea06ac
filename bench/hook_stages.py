"""Where a trivial command hook's time goes, process by process (issue 32 item 3's profile).

One sidecar with a PreToolUse command hook (``exit 0`` unless ``--command``), driven with tools/call
round trips; the sidecar and its zygote run with marks added from outside (functions wrapped at
start-up, no source changed): each mark is one ``write`` of ``CLOCK_MONOTONIC`` to the sidecar's
stderr, so every process's marks are on one clock. Per call, the time between consecutive marks:

- ``sent``: the driver writes the request; ``received``: the event loop has it (``Endpoint.receive_batch``:
  the reader thread read it and woke the loop); ``tools/call``: its method begins (a task of its own);
  ``hooks begin``: the call reaches its command hooks
  (``ToolCallHooks.around_tool``); ``decided``: ``hooks.command.run_handler`` begins (the call's
  PreToolUse handlers matched);
- ``request out``: the zygote's start request sent and the hook's pipes in the loop (``Zygote._pump``
  returned); ``zygote read``: the zygote has the request (often before ``_pump`` returned: it ran on
  the other CPU, or took ours at the ``sched_yield``); ``spawned``: its ``posix_spawn`` returned
  (the hook has exec'd: ``vfork``);
- ``pid read``: the sidecar handled the zygote's pid (``_Transport.started``: meanwhile the hook
  runs); ``exit read``: the sidecar read the hook's exit (``_Transport.exited``);
- ``hook done``: ``run_handler`` returned; ``core``: the tool itself begins (``Pipeline._core``);
  ``answer out``: the answer written (``Writer.write_bytes``);
  ``answered``: the driver has read it.

Marks are taken in the order they came, so a row's ``n`` says how often that order happened. The
same calls without a hook give the baseline (``sent`` → ``answer out`` → ``answered``). Marks cost
a few µs each; read the figures as shares, not as the hook's real total (``bench.hooks`` gives that).
``python -m bench.hook_stages [--runs 400] [--command 'exit 0']``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import Raw, bench_env  # noqa: E402
from bench.hooks import call_line, make_root, open_thread, round_trip_ms, spawn_true_ms  # noqa: E402

CONTAINMENT = REPO / "server" / "harness_sidecar" / "containment"

MARK = '''
import os as _os, time as _time
def mark(name):
    _os.write(2, b"STAGE %s %d\\n" % (name.encode(), _time.monotonic_ns()))
'''

# the zygote's program, wrapped: marks when it reads a request and when posix_spawn returns
ZYGOTE = MARK + '''
import sys
sys.path.insert(0, {containment!r})
import zygote_process as zp
_handle, _spawn = zp.Zygote.handle, zp.spawn
def handle(self, data, fds):
    mark("zygote read")
    return _handle(self, data, fds)
def spawn(plan, stdio):
    pid = _spawn(plan, stdio)
    mark("spawned")
    return pid
zp.Zygote.handle, zp.spawn = handle, spawn
zp.main()
'''

# the sidecar, wrapped the same way, then served as ``python -m harness_sidecar`` would
SIDECAR = MARK + '''
import functools, sys
from harness_sidecar.containment import zygote
from harness_sidecar.hooks import command
from harness_sidecar.wire import transport
zygote.PROGRAM = {program!r}
def around(owner, name, before=None, after=None):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        if before:
            mark(before)
        out = original(*args, **kwargs)
        if after:
            mark(after)
        return out
    setattr(owner, name, wrapped)
_run_handler = command.run_handler
async def run_handler(*args, **kwargs):
    mark("decided")
    answer = await _run_handler(*args, **kwargs)
    mark("hook done")
    return answer
command.run_handler = run_handler  # hooks.dispatch calls it through the module
from harness_sidecar.hooks.tool_call import ToolCallHooks
_around_tool = ToolCallHooks.around_tool
async def around_tool(*args, **kwargs):
    mark("hooks begin")
    return await _around_tool(*args, **kwargs)
ToolCallHooks.around_tool = around_tool
from harness_sidecar.threads.tools import ToolMethods
from harness_sidecar.tools.pipeline import Pipeline
_tools_call, _core = ToolMethods.tools_call, Pipeline._core
async def tools_call(*args, **kwargs):
    mark("tools/call")
    return await _tools_call(*args, **kwargs)
async def core(*args, **kwargs):
    mark("core")
    return await _core(*args, **kwargs)
ToolMethods.tools_call, Pipeline._core = tools_call, core
from harness_sidecar.wire.endpoint import Endpoint
around(Endpoint, "receive_batch", before="received")
around(zygote.Zygote, "_pump", after="request out")
around(zygote._Transport, "started", before="pid read")
around(zygote._Transport, "exited", before="exit read")
around(transport.Writer, "write_bytes", before="answer out")
from harness_sidecar.cli import main
sys.exit(main([]))
'''

ORDER = ["sent", "received", "tools/call", "hooks begin", "decided", "request out", "zygote read", "spawned", "pid read", "exit read", "hook done", "core",
         "answer out", "answered"]


class Marked(Raw):
    """A sidecar whose stderr (its marks, and its zygote's) goes to ``log``."""

    def __init__(self, tmp: Path, log: Path) -> None:
        program = tmp / "zygote_marked.py"
        program.write_text(ZYGOTE.format(containment=str(CONTAINMENT)))
        self.log = open(log, "wb")
        env = {**bench_env(), "PYTHONPATH": str(REPO / "server")}
        self.proc = subprocess.Popen([sys.executable, "-P", "-c", SIDECAR.format(program=str(program))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env)
        self.next_id = 1

    def close(self) -> None:
        super().close()
        self.log.close()


def stages(tmp: Path, runs: int, hooks: list[dict] | None, name: str) -> dict[str, list[float]]:
    log = tmp / f"{name}.log"
    raw = Marked(tmp, log)
    thread = open_thread(raw, make_root(tmp / name, hooks))
    for i in range(1, 11):  # warm-up
        round_trip_ms(raw, thread, i)
    calls = []
    for i in range(11, 11 + runs):
        sent = time.monotonic_ns()
        raw.send(call_line(thread, i))
        raw.line()
        calls.append((sent, time.monotonic_ns()))
        spawn_true_ms(1)  # as bench.hooks interleaves its floor
    raw.close()
    marks = []
    for line in log.read_bytes().splitlines():
        if line.startswith(b"STAGE "):
            label, _, at = line[6:].decode().rpartition(" ")
            marks.append((int(at), label))
    marks.sort()
    out: dict[str, list[float]] = {}
    k = 0
    for sent, answered in calls:
        seen = {"sent": sent, "answered": answered}
        while k < len(marks) and marks[k][0] < sent:
            k += 1
        j = k
        while j < len(marks) and marks[j][0] <= answered:
            seen.setdefault(marks[j][1], marks[j][0])
            j += 1
        present = sorted(seen, key=lambda label: (seen[label], ORDER.index(label)))  # in the order they came
        for a, b in zip(present, present[1:]):
            out.setdefault(f"{a} → {b}", []).append((seen[b] - seen[a]) / 1000)
        out.setdefault("total", []).append((answered - sent) / 1000)
    return out


def show(title: str, figures: dict[str, list[float]]) -> None:
    print(title)
    for label, values in figures.items():
        values.sort()
        print(f"  {label:28} p10 {values[len(values) // 10]:7.1f}  p50 {statistics.median(values):7.1f} µs"
              f"  (n={len(values)})")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hook_stages", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--command", default="exit 0")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="harness-bench-stages-") as tmp_name:
        tmp = Path(tmp_name)
        hooked = stages(tmp, args.runs, [{"type": "command", "command": args.command}], "hooked")
        plain = stages(tmp, args.runs, None, "plain")
    show(f"tools/call with a PreToolUse hook running {args.command!r}:", hooked)
    show("tools/call without hooks:", plain)
    print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONUNBUFFERED", None)
    raise SystemExit(main())
