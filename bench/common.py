"""What the benchmarks share: driving a sidecar with raw bytes, process CPU, summaries, tool-call load."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CLK_TCK = os.sysconf("SC_CLK_TCK")


def bench_env() -> dict[str, str]:
    """A user's environment: bytecode compiled and used, no PYTHONUNBUFFERED."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(REPO / "server")
    # every start parses what it reads (the figures say "nothing warmed"), unless a bench asks for
    # the header cache a previous start left (bench.spawn's cached series)
    env.setdefault("HARNESS_SIDECAR_CACHE_DIR", "off")
    return env


SIDECAR = [sys.executable, "-P", "-m", "harness_sidecar"]
ECHO = [sys.executable, str(REPO / "bench" / "echo_server.py")]
RELAY = [sys.executable, str(REPO / "bench" / "relay_server.py")]


class Raw:
    """A sidecar driven with raw bytes, so the client spends as little CPU as possible."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**bench_env(), **(env or {})})
        self.next_id = 1

    def send(self, data: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def line(self) -> bytes:
        assert self.proc.stdout
        return self.proc.stdout.readline()

    def call(self, method: str, params: dict | None = None) -> dict:
        request_id = self.next_id
        self.next_id += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                              "params": params or {}}).encode() + b"\n")
        while True:
            message = json.loads(self.line())
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def rchar(self) -> int:
        with open(f"/proc/{self.proc.pid}/io") as f:
            return int(next(line for line in f if line.startswith("rchar")).split()[1])

    def peak_rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            kb = int(next(line for line in f if line.startswith("VmHWM")).split()[1])
        return kb / 1024

    def close(self) -> None:
        close_process(self.proc)


def close_process(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Close a server's stdin and let it exit; kill it if it has not within ``grace`` s. Either way it is reaped."""
    try:
        assert proc.stdin
        proc.stdin.close()
        proc.wait(grace)
    except Exception:  # noqa: BLE001
        proc.kill()
        proc.wait()


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (a sidecar and its extension hosts)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return found


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU of ``pid`` (and of every process under it)."""
    total = 0
    for member in process_tree(pid) if children else [pid]:
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / CLK_TCK


def summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "runs": len(values)}


def pipelined(raw: "Raw", payload: bytes, count: int, runs: int, children: bool = False,
              warm_up: bool = True) -> tuple[list, list]:
    """``count`` requests written at once (``runs`` times, after a warm-up unless ``warm_up`` is False):
    calls/s, µs of CPU per call."""
    rates, cpu_per_call = [], []
    first = 1 if warm_up else 0
    for run in range(runs + first):
        cpu_before = cpu_seconds(raw.proc.pid, children)
        started = time.perf_counter()
        writer = threading.Thread(target=raw.send, args=(payload,))
        writer.start()
        for _ in range(count):
            raw.line()
        elapsed = time.perf_counter() - started
        writer.join()
        cpu = cpu_seconds(raw.proc.pid, children) - cpu_before
        if run >= first:
            rates.append(count / elapsed)
            cpu_per_call.append(cpu / count * 1e6)
    return rates, cpu_per_call


SPARE_SETTLE_S = 0.5


def start_thread(raw: "Raw", params: dict, settle_s: float = SPARE_SETTLE_S) -> dict:
    """thread/start, then ``settle_s`` of quiet: a thread trusting an extension takes the spare host and
    the sidecar starts the next spare at once (the first one ``WARM_DELAY_S`` after initialize). Letting
    that process finish importing keeps a neighbour's start-up out of the figures measured next."""
    result = raw.call("thread/start", params)
    time.sleep(settle_s)
    return result


def echo_lines(method: str, thread: str, count: int) -> list[bytes]:
    """``count`` JSONL requests (ids 1 to ``count``) calling the tool 'echo' in ``thread``, each with its
    own text: ``tools/call`` of an extension's echo, or the echo server's ``echo``."""
    return [json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": {
        "threadId": thread, "call": {"id": f"c{i}", "name": "echo", "arguments": {"text": f"hello {i}"}}}}).encode()
        + b"\n" for i in range(1, count + 1)]


def tool_calls(command: list[str], root: Path | None, sequential: int, pipelined_count: int, runs: int,
               include_children: bool = False) -> dict:
    """tools/call of the 'hooked' extension's echo (or the echo server's echo): pipelined rate, round trip,
    CPU per call (with ``include_children``, of the sidecar's extension hosts too)."""
    raw = Raw(command)
    if root is not None:
        raw.call("initialize")
        thread = start_thread(raw, {"roots": [str(root)], "trustedExtensions": ["hooked"]})["threadId"]
        tools = [t["name"] for t in raw.call("tools/list", {"threadId": thread})["tools"]]
        assert "echo" in tools, f"the hooked extension did not load: {tools}"
        lines = echo_lines("tools/call", thread, pipelined_count)
    else:
        lines = echo_lines("echo", "t", pipelined_count)
    # sequential round trips
    latencies = []
    for i in range(sequential):
        started = time.perf_counter()
        raw.send(lines[i % len(lines)])
        raw.line()
        latencies.append((time.perf_counter() - started) * 1e6)
    rates, cpu_per_call = pipelined(raw, b"".join(lines), pipelined_count, runs, include_children)
    raw.close()
    return {"sequential_us": summary(latencies[len(latencies) // 10:]), "pipelined_calls_per_s": summary(rates),
            "server_cpu_us_per_call": summary(cpu_per_call)}


def fmt(s: dict[str, float], unit: str = "", digits: int = 1) -> str:
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


class OwnLoop:
    """An event loop kept for a whole bench run, for the hooks of one owner (``owner``: a zygote of its own,
    made under this loop); ``close`` ends that zygote, then the loop."""

    def __init__(self, owner: str) -> None:
        import asyncio

        self.asyncio, self.owner = asyncio, owner
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        from harness_sidecar.containment import zygote

        zygote.end(self.owner)
        self.loop.run_until_complete(self.asyncio.sleep(0.1))
        self.loop.close()


class LauncherTrue(OwnLoop):
    """``containment.launcher.spawn`` of ``/bin/true`` (or ``argv``) as a command hook (kind ``HOOK``:
    through its owner's zygote, started at the first run) from one event loop kept for the whole run,
    waiting for its exit: the floor every hook pays for the launcher and its fences."""

    def __init__(self, argv: list[str] | None = None, owner: str = "bench") -> None:
        from harness_sidecar.containment import launcher

        super().__init__(owner)
        self.launcher = launcher
        self.argv = argv or ["/bin/true"]

    def run_ms(self) -> float:
        asyncio, launcher = self.asyncio, self.launcher

        class Exit(asyncio.SubprocessProtocol):
            def __init__(self) -> None:
                self.done = asyncio.get_running_loop().create_future()

            def process_exited(self) -> None:
                self.done.set_result(None)

        async def once() -> float:
            started = time.perf_counter()
            transport, proto = await launcher.spawn(launcher.Launch(self.argv, launcher.HOOK, owner=self.owner), Exit,
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE)
            await proto.done
            transport.close()
            return (time.perf_counter() - started) * 1000

        return self.loop.run_until_complete(once())
