"""stdout that never holds a thread up (issue 32 item 4, protocol-v4 §6), on the real sidecar.

Thread A calls an extension tool whose result is 16 MB (one call in flight at a time, back to back);
thread B meanwhile sends ``tools/list`` probes, one at a time, each 2 ms after the last one's answer.
The editor reads stdout at pipe speed (a thread doing ``os.read`` of 1 MiB and splitting lines, no
parsing of the big answers). The figure: how long each probe waits for its answer, p50/p99/max.

The same run measures the sidecar as it was before the writer thread (``BASE``, exported from git),
the two interleaved run by run, so both see the same load.

``python -m bench.stdout [--quick] [--lines] [--base COMMIT] [--json FILE]``; ``--lines``: the 16 MB text is
200,000 lines (a newline is an escape in JSON: such a text is parsed and encoded, not passed through).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, SPARE_SETTLE_S, bench_env, close_process  # noqa: E402
from bench.workspace import make_extension_root  # noqa: E402

BASE = "20b5f90"  # main as v4-speedio forked from it: stdout written on the event loop

BIG_EXTENSION = '''
def big(call_id, arguments):
    return "x" * 16_000_000
def activate(api):
    api.register_tool(name="big", description="A 16 MB result.", input_schema={}, execute=big)
'''
# --lines: a text of 200,000 lines of 80 bytes (every newline an escape in JSON: parsed, not passed through)
LINES_EXTENSION = '''
def big(call_id, arguments):
    return ("x" * 79 + "\\n") * 200_000
def activate(api):
    api.register_tool(name="big", description="A 16 MB result.", input_schema={}, execute=big)
'''


class Editor:
    """A sidecar whose stdout is read at pipe speed on a thread; answers are matched by id."""

    def __init__(self, server: Path) -> None:
        env = {**bench_env(), "PYTHONPATH": str(server)}
        self.proc = subprocess.Popen(SIDECAR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, bufsize=0)
        self.arrived: dict[int, tuple[float, bytes]] = {}
        self.cond = threading.Condition()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        buf = bytearray()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            now = time.perf_counter()
            start = len(buf)
            buf += chunk
            lines = []
            newline = buf.find(b"\n", start)
            begin = 0
            while newline >= 0:
                lines.append(bytes(buf[begin:begin + 200]))  # the id is near the front; the rest is not read
                begin = newline + 1
                newline = buf.find(b"\n", begin)
            del buf[:begin]
            if lines:
                with self.cond:
                    for head in lines:
                        at = head.find(b'"id":')
                        if at < 0:
                            continue
                        digits = head[at + 5:].lstrip()
                        end = 0
                        while end < len(digits) and digits[end:end + 1].isdigit():
                            end += 1
                        if end:
                            self.arrived[int(digits[:end])] = (now, head)
                    self.cond.notify_all()

    def send(self, method: str, params: dict) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,  # type: ignore
                                          "params": params}).encode() + b"\n")
        return request_id

    def wait(self, request_id: int, timeout: float = 60) -> tuple[float, bytes]:
        with self.cond:
            if not self.cond.wait_for(lambda: request_id in self.arrived, timeout):
                raise TimeoutError(f"no answer to {request_id}")
            return self.arrived.pop(request_id)

    def call(self, method: str, params: dict) -> dict:
        _, head = self.wait(self.send(method, params))
        assert b'"error"' not in head[:60], head
        return json.loads(head) if head.endswith(b"}") else {}

    def close(self) -> None:
        close_process(self.proc)


def neighbour(server: Path, flooder: Path, quiet: Path, floods: int) -> list[float]:
    """Thread B's probe waits (ms) while thread A receives ``floods`` 16 MB results."""
    editor = Editor(server)
    editor.call("initialize", {})
    _, head = editor.wait(editor.send("thread/start", {"roots": [str(flooder)], "trustedExtensions": ["big"]}))
    a = _thread_id(head)
    time.sleep(SPARE_SETTLE_S)
    _, head = editor.wait(editor.send("thread/start", {"roots": [str(quiet)]}))
    b = _thread_id(head)
    waits: list[float] = []
    for i in range(floods + 1):  # the first result is a warm-up
        flood = editor.send("tools/call", {"threadId": a, "call": {"id": f"f{i}", "name": "big", "arguments": {}}})
        while True:
            probe = editor.send("tools/list", {"threadId": b})
            sent = time.perf_counter()
            arrived, _ = editor.wait(probe)
            if i:
                waits.append((arrived - sent) * 1000)
            with editor.cond:
                if flood in editor.arrived:
                    _, head = editor.arrived.pop(flood)
                    assert b'"text":"xxx' in head, head  # the 16 MB result, not an error
                    break
            time.sleep(0.002)
    editor.close()
    return waits


def _thread_id(head: bytes) -> str:
    at = head.find(b'"threadId":"') + len(b'"threadId":"')
    return head[at:head.find(b'"', at)].decode()


def percentiles(waits: list[float]) -> dict:
    waits = sorted(waits)
    return {"probes": len(waits), "p50_ms": waits[len(waits) // 2], "p99_ms": waits[min(len(waits) - 1,
                                                                                         int(len(waits) * 0.99))],
            "max_ms": waits[-1]}


def run(quick: bool, base: str, runs: int, lines: bool = False) -> dict:
    floods = 5 if quick else 15
    with tempfile.TemporaryDirectory(prefix="harness-bench-stdout-") as tmp_name:
        tmp = Path(tmp_name)
        flooder = make_extension_root(tmp / "flooder", "big", LINES_EXTENSION if lines else BIG_EXTENSION)
        quiet = tmp / "quiet"
        (quiet / "skills" / "demo").mkdir(parents=True)
        (quiet / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: Use when measuring.\n---\n")
        sides = {"today": REPO / "server"}
        if base:
            archive = subprocess.run(["git", "-C", str(REPO), "archive", base, "server"], check=True,
                                     capture_output=True)
            (tmp / "base").mkdir()
            subprocess.run(["tar", "-x", "-C", str(tmp / "base")], input=archive.stdout, check=True)
            sides["base"] = tmp / "base" / "server"
        waits: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(runs):
            for name, server in sides.items():
                waits[name] += neighbour(server, flooder, quiet, floods)
    return {name: percentiles(w) for name, w in waits.items()}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stdout", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--base", default=BASE, help="the commit to compare with ('' for none)")
    parser.add_argument("--runs", type=int, default=None, help="sidecars per side (default 1 quick, 3)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--lines", action="store_true", help="16 MB of 80-byte lines (escapes) instead of one run")
    args = parser.parse_args()
    results = run(args.quick, args.base, args.runs or (1 if args.quick else 3), args.lines)
    for name, r in results.items():
        label = "today" if name == "today" else args.base
        print(f"{label}: thread B's tools/list while thread A receives 16 MB results: p50 {r['p50_ms']:.1f} ms, "
              f"p99 {r['p99_ms']:.1f} ms, max {r['max_ms']:.1f} ms ({r['probes']} probes)")
    met = results["today"]["p99_ms"] <= 20
    print(f"  {'met   ' if met else 'MISSED'}  thread B's tools/list p99 ≤ 20 ms: {results['today']['p99_ms']:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONUNBUFFERED", None)
    raise SystemExit(main())
