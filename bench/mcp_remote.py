"""Remote (streamable HTTP) MCP servers through the sidecar, against the SDK's own client (issue 31).

- ``tools/call`` of ``mcp__r__echo`` through one before hook (a trusted extension's ``tool_call``),
  sequential p50, against the SDK's ``streamable_http_client`` + ``ClientSession`` calling ``echo``
  on the same server directly; the two alternate in rounds in one run, so the ratio holds where
  absolute figures drift on a loaded machine;
- ``thread/start`` with 5 remote servers, one of which accepts connections and never answers:
  the answer must not wait past that one's ``startupTimeoutMs``; and spawn → first catalog (spawn
  the sidecar, initialize, that thread/start answered).

The server is tests/mcp_servers/http_server.py (the SDK's ``MCPServer`` on uvicorn, 127.0.0.1).
``python -m bench.mcp_remote [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, Raw, cpu_seconds, fmt, summary  # noqa: E402

HTTP_SERVER = REPO / "tests" / "mcp_servers" / "http_server.py"
ONE_BEFORE_HOOK = "def activate(api):\n    api.on('tool_call', lambda event, ctx: None)\n"
SLOW_TIMEOUT_MS = 2000


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(HTTP_SERVER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    line = proc.stdout.readline()
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/mcp"


def silent_listener() -> tuple[socket.socket, str]:
    """A server that accepts connections and never answers (the slow one)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(sock.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    return sock, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


async def direct_rounds(url: str, calls: int) -> list[float]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(20):
            await session.call_tool("echo", {"text": "x"})
        latencies = []
        for _ in range(calls):
            began = time.perf_counter()
            await session.call_tool("echo", {"text": "x"})
            latencies.append((time.perf_counter() - began) * 1000)
        return latencies


def sidecar_rounds(raw: Raw, thread: str, calls: int, base: int) -> list[float]:
    request = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": "c", "name": "mcp__r__echo", "arguments": {"text": "x"}}}}
    latencies = []
    for i in range(calls):
        request["id"] = base + i
        began = time.perf_counter()
        raw.send(json.dumps(request).encode() + b"\n")
        answer = json.loads(raw.line())
        latencies.append((time.perf_counter() - began) * 1000)
        assert not answer["result"]["result"]["isError"], answer
    return latencies


def run(rounds: int = 5, calls: int = 200) -> dict:
    proc, url = start_server()
    others = [start_server() for _ in range(4)]
    slow, slow_url = silent_listener()
    try:
        with tempfile.TemporaryDirectory(prefix="harness-bench-remote-") as tmp:
            root = Path(tmp) / "root"
            (root / "extensions").mkdir(parents=True)
            (root / "extensions" / "gate.py").write_text(ONE_BEFORE_HOOK)
            raw = Raw(SIDECAR)
            raw.call("initialize")
            thread = raw.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["gate"], "mcpServers": [
                {"name": "r", "type": "http", "url": url}]})["threadId"]
            for _ in range(20):
                sidecar_rounds(raw, thread, 1, 1)
            direct: list[float] = []
            via: list[float] = []
            cpu = 0.0
            for r in range(rounds):  # alternate: the same load on both
                direct += asyncio.run(direct_rounds(url, calls))
                began_cpu = cpu_seconds(raw.proc.pid)
                via += sidecar_rounds(raw, thread, calls, 10_000 * (r + 1))
                cpu += cpu_seconds(raw.proc.pid) - began_cpu  # the sidecar's own, not its extension host's
            raw.close()

            five = [{"name": f"s{i}", "type": "http", "url": u, "startupTimeoutMs": SLOW_TIMEOUT_MS}
                    for i, (_, u) in enumerate(others)]
            five.append({"name": "slow", "type": "http", "url": slow_url, "startupTimeoutMs": SLOW_TIMEOUT_MS})
            starts, firsts = [], []
            for _ in range(max(1, rounds // 2)):
                began = time.perf_counter()
                raw = Raw(SIDECAR)
                raw.call("initialize")
                for attempt in range(2):  # the first thread of a process also imports the SDK's client
                    asked = time.perf_counter()
                    result = raw.call("thread/start", {"roots": [str(root)], "mcpServers": five})
                    done = time.perf_counter()
                    names = {t["name"].split("__")[1] for t in result["tools"] if t["name"].startswith("mcp__")}
                    assert names == {"s0", "s1", "s2", "s3"}, names
                    if attempt == 0:
                        firsts.append((done - began) * 1000)
                    else:
                        starts.append((done - asked) * 1000)
                raw.close()
    finally:
        slow.close()
        for p in [proc, *(o for o, _ in others)]:
            p.kill()
            p.wait()
    results = {"direct_call_ms": summary(direct), "sidecar_call_ms": summary(via),
               "p50_ratio": statistics.median(via) / statistics.median(direct),
               "sidecar_cpu_us_per_call": cpu / len(via) * 1e6,
               "five_servers_start_ms": summary(starts), "spawn_to_first_catalog_ms": summary(firsts),
               "slow_timeout_ms": SLOW_TIMEOUT_MS}
    print(f"remote MCP tools/call through 1 before hook: p50 {fmt(results['sidecar_call_ms'], ' ms', 2)}; the SDK's "
          f"client directly: p50 {fmt(results['direct_call_ms'], ' ms', 2)} → {results['p50_ratio']:.2f}×; the sidecar's CPU "
          f"{results['sidecar_cpu_us_per_call']:.0f} µs a call", flush=True)
    print(f"thread/start with 5 remote servers, one silent (startupTimeoutMs {SLOW_TIMEOUT_MS}): "
          f"{fmt(results['five_servers_start_ms'], ' ms')} (a second thread); spawn → first catalog (the SDK's "
          f"import included) {fmt(results['spawn_to_first_catalog_ms'], ' ms')}", flush=True)
    return results


def targets(results: dict) -> list[tuple[str, bool, str]]:
    ratio = results["p50_ratio"]
    held = results["five_servers_start_ms"]["median"] - results["slow_timeout_ms"]
    return [("remote MCP tools/call through a before hook p50 ≤ 1.3× the SDK's client", ratio <= 1.3,
             f"{ratio:.2f}×"),
            ("thread/start not held past the slow server's startupTimeoutMs (+500 ms)", held <= 500,
             f"+{held:.0f} ms")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    outcome = run(rounds=2, calls=50) if args.quick else run()
    for name, met, figure in targets(outcome):
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
