"""MCP tools behind the sidecar's gate, against the same server called directly (issue 14).

- a ``tools/call`` of ``mcp__s__ping`` through one before and one after hook (an extension
  trusted in the thread), sequential p50 (and the sidecar process's CPU per call, its extension
  host's not included) and pipelined calls/s, against the SDK's own client
  calling ``ping`` on the same server (``bench.mcp_client``'s direct session), same run;
- ``thread/start`` naming two MCP servers (in a sidecar that already started one thread) against
  the two servers' own start-up (spawn → initialize → every tools/list page, concurrently).

``python -m bench.mcp_sidecar`` runs it alone; ``python -m bench`` includes it when the ``mcp``
extra is installed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, Raw, cpu_seconds, fmt, start_thread, summary  # noqa: E402
from bench.mcp_client import SDK_SERVER, direct_session, own_start  # noqa: E402
from bench.workspace import make_extension_root  # noqa: E402


async def direct_figures(calls: int, starts: int) -> dict:
    async with AsyncExitStack() as stack:
        session = await direct_session(stack, SDK_SERVER)
        for _ in range(50):
            await session.call_tool("ping", {})
        latencies = []
        for _ in range(calls):
            began = time.perf_counter()
            await session.call_tool("ping", {})
            latencies.append((time.perf_counter() - began) * 1000)
    own = [await own_start([SDK_SERVER, SDK_SERVER]) * 1000 for _ in range(starts)]
    return {"call_ms": summary(latencies), "two_servers_start_ms": summary(own)}


def sidecar_figures(root: Path, calls: int, pipelined: int, starts: int) -> dict:
    raw = Raw(SIDECAR)
    raw.call("initialize")
    server = {"name": "s", "command": SDK_SERVER, "startupTimeoutMs": 60000}
    thread = start_thread(raw, {"roots": [str(root)], "trustedExtensions": ["hooked"],
                                "mcpServers": [server]})["threadId"]
    names = [t["name"] for t in raw.call("tools/list", {"threadId": thread})["tools"]]
    assert "mcp__s__ping" in names, names
    request = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": "c", "name": "mcp__s__ping", "arguments": {}}}}
    for _ in range(50):
        raw.call("tools/call", request["params"])
    latencies = []
    cpu = cpu_seconds(raw.proc.pid)
    for i in range(calls):
        request["id"] = 10_000 + i
        began = time.perf_counter()
        raw.send(json.dumps(request).encode() + b"\n")
        raw.line()
        latencies.append((time.perf_counter() - began) * 1000)
    cpu_us = (cpu_seconds(raw.proc.pid) - cpu) / calls * 1e6  # the sidecar process's own, not its extension host's
    lines = []
    for i in range(pipelined):
        request["id"] = 100_000 + i
        lines.append(json.dumps(request).encode() + b"\n")
    began = time.perf_counter()
    writer = threading.Thread(target=raw.send, args=(b"".join(lines),))
    writer.start()
    for _ in range(pipelined):
        raw.line()
    rate = pipelined / (time.perf_counter() - began)
    writer.join()
    two = [dict(server, name="a"), dict(server, name="b")]
    start_ms = []
    for _ in range(starts):
        began = time.perf_counter()
        started = raw.call("thread/start", {"roots": [str(root)], "mcpServers": two})["threadId"]
        start_ms.append((time.perf_counter() - began) * 1000)
        raw.call("thread/close", {"threadId": started})
    raw.close()
    return {"call_ms": summary(latencies), "sidecar_cpu_us_per_call": cpu_us, "pipelined_calls_per_s": rate,
            "two_servers_start_ms": summary(start_ms)}


def run(calls: int = 300, pipelined: int = 2000, starts: int = 5) -> dict:
    with tempfile.TemporaryDirectory(prefix="harness-bench-mcp-") as tmp:
        root = make_extension_root(Path(tmp) / "hooked")  # its before and after hooks see every tool
        direct = asyncio.run(direct_figures(calls, starts))
        via = sidecar_figures(root, calls, pipelined, starts)
    results = {"direct": direct, "sidecar": via,
               "p50_ratio": via["call_ms"]["median"] / direct["call_ms"]["median"],
               "start_added_ms": via["two_servers_start_ms"]["median"] - direct["two_servers_start_ms"]["median"]}
    print(f"MCP tools/call through 1 before + 1 after hook: p50 {fmt(via['call_ms'], ' ms', 2)} (sidecar CPU "
          f"{via['sidecar_cpu_us_per_call']:.0f} µs per sequential call), pipelined "
          f"{via['pipelined_calls_per_s']:.0f}/s; the SDK's client directly: p50 {fmt(direct['call_ms'], ' ms', 2)}"
          f" → {results['p50_ratio']:.2f}×", flush=True)
    print(f"thread/start with two MCP servers {fmt(via['two_servers_start_ms'], ' ms')}, the servers' own start-up "
          f"{fmt(direct['two_servers_start_ms'], ' ms')}: +{results['start_added_ms']:.0f} ms", flush=True)
    return results


def targets(results: dict) -> list[tuple[str, bool, str]]:
    ratio = results["p50_ratio"]
    return [("MCP tools/call through two hooks p50 ≤ 1.5× the direct SDK call", ratio <= 1.5, f"{ratio:.2f}×")]


if __name__ == "__main__":
    outcome = run()
    for name, met, figure in targets(outcome):
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
