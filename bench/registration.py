"""Registering many tools (issue 17): thread/start of one extension registering N tools, and how long
another thread's ``tools/list`` waits meanwhile; plus pipelined ``tools/call`` with a deep-ish argument
(600 brackets: the depth check's walk) against small arguments.

``python -m bench.registration [N ...]`` (default 10000 20000). ``limits.maxTools`` is raised to N.
Timing figures are noisy on a loaded machine; compare runs made together.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from harness_sidecar.console.client import child_env, sidecar_command  # noqa: E402


def _root(base: Path, name: str, extension: str | None = None) -> Path:
    root = base / name
    (root / "skills" / name).mkdir(parents=True)
    (root / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Use when {name}.\n---\nB\n")
    if extension is not None:
        (root / "extensions").mkdir()
        (root / "extensions" / "bench.py").write_text(extension)
    return root


class _Sidecar:
    """A buffered client (the test client reads stdout a byte at a time, which would time the client)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(sidecar_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=child_env())
        self.answers: dict[int, tuple[float, dict]] = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(1, "initialize", {"protocolVersion": "2", "clientInfo": {"name": "bench"}})
        self.wait(1)

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            message = json.loads(line)
            if "id" in message and "method" not in message:
                with self.cv:
                    self.answers[message["id"]] = (time.monotonic(), message)
                    self.cv.notify_all()

    def send(self, request_id: int, method: str, params: dict) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,  # type: ignore
                                          "params": params}).encode() + b"\n")
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def wait(self, request_id: int, timeout: float = 300) -> dict:
        with self.cv:
            self.cv.wait_for(lambda: request_id in self.answers, timeout)
            return self.answers[request_id][1]

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(10)


def registration(n: int) -> str:
    base = Path(tempfile.mkdtemp())
    root = _root(base, "many", f"""
def t(c, a):
    return 'x'
def activate(api):
    for i in range({n}):
        api.register_tool(name=f't{{i}}', description='', input_schema={{'type': 'object'}}, execute=t)
""")
    other = _root(base, "other")
    sidecar = _Sidecar()
    sidecar.send(2, "thread/start", {"roots": [str(other)]})
    quiet = sidecar.wait(2)["result"]["threadId"]
    began = time.monotonic()
    sidecar.send(3, "thread/start", {"roots": [str(root)], "trustedExtensions": ["bench"], "limits": {"maxTools": n}})
    waits, request_id = [], 10
    while 3 not in sidecar.answers:
        sent = time.monotonic()
        sidecar.send(request_id, "tools/list", {"threadId": quiet})
        sidecar.wait(request_id)
        waits.append(time.monotonic() - sent)
        request_id += 1
    done, answer = sidecar.answers[3]
    sidecar.close()
    status = answer["result"]["catalog"]["extensions"][0]["status"]
    return (f"{n:>6} tools: thread/start {done - began:.2f} s ({status}); the other thread's tools/list "
            f"meanwhile: {len(waits)} answered, max {max(waits) * 1000:.0f} ms, "
            f"median {statistics.median(waits) * 1000:.1f} ms")


def pipelined_calls(n: int, wide: bool) -> str:
    base = Path(tempfile.mkdtemp())
    root = _root(base, "echo", "def echo(c, a):\n    return 'ok'\ndef activate(api):\n"
                               "    api.register_tool(name='echo', description='', input_schema={}, execute=echo)\n")
    sidecar = _Sidecar()
    sidecar.send(2, "thread/start", {"roots": [str(root)], "trustedExtensions": ["bench"]})
    thread = sidecar.wait(2)["result"]["threadId"]
    arguments = {"a": [[1]] * 600} if wide else {"x": 1}
    frames = b"".join(json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": f"c{i}", "name": "echo", "arguments": arguments}}}).encode() + b"\n"
        for i in range(n))
    began = time.monotonic()
    sidecar.proc.stdin.write(frames)  # type: ignore[union-attr]
    sidecar.proc.stdin.flush()  # type: ignore[union-attr]
    sidecar.wait(10 + n - 1)
    elapsed = time.monotonic() - began
    before = os.times()
    sidecar.close()
    cpu = (os.times().children_user + os.times().children_system) - (before.children_user + before.children_system)
    what = "600-bracket arguments" if wide else "small arguments"
    return f"{n} pipelined tools/call, {what}: {n / elapsed:,.0f} calls/s (sidecar+host CPU {cpu:.1f} s in all)"


def main(argv: list[str]) -> None:
    for n in [int(a) for a in argv] or [10_000, 20_000]:
        print(registration(n), flush=True)
    for wide in (False, True):
        print(pipelined_calls(10_000, wide), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
