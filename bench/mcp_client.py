"""harness_sidecar.mcp against the SDK's own client: ``python -m bench.mcp_client [--calls N]``.

Same run, same servers, same machine, so ratios hold where absolute figures drift:

- a call: the median latency of sequential calls and the calls/s of 32 calls in flight, through
  ``McpServers.call`` and through the SDK's ``stdio_client`` + ``ClientSession`` directly, against
  the Python test server (``ping``) and the reference server (``echo``, needs ``npm ci`` in
  tests/mcp_servers/everything);
- start-up of the two servers: ``McpServers.start`` (the first one in a process, before anything
  imported the SDK, and later ones) against the servers' own start-up (spawn → initialize → every
  tools/list page, through the SDK directly, concurrently).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from harness_sidecar.mcp import McpServerConfig, McpServers  # noqa: E402

SDK_SERVER = [sys.executable, str(REPO / "tests" / "mcp_servers" / "sdk_server.py")]
EVERYTHING = REPO / "tests/mcp_servers/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
IN_FLIGHT = 32


def servers() -> list[tuple[str, list[str], str, dict]]:
    out = [("python", SDK_SERVER, "ping", {})]
    if shutil.which("node") and EVERYTHING.exists():
        out.append(("everything", [shutil.which("node") or "node", str(EVERYTHING), "stdio"], "echo",
                    {"message": "x"}))
    return out


async def timed_calls(call, calls: int) -> tuple[float, float]:
    """(p50 ms of sequential calls, calls/s with IN_FLIGHT in flight)."""
    for _ in range(20):
        await call()
    latencies = []
    for _ in range(calls):
        began = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - began)
    began = time.perf_counter()
    for _ in range(calls // IN_FLIGHT):
        await asyncio.gather(*(call() for _ in range(IN_FLIGHT)))
    rate = (calls // IN_FLIGHT) * IN_FLIGHT / (time.perf_counter() - began)
    return statistics.median(latencies) * 1000, rate


async def direct_session(stack: AsyncExitStack, command: list[str]):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    read, write = await stack.enter_async_context(
        stdio_client(StdioServerParameters(command=command[0], args=command[1:]), errlog=open("/dev/null", "w")))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    cursor = None
    while True:
        from mcp_types import PaginatedRequestParams

        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        cursor = page.next_cursor
        if cursor is None:
            return session


async def own_start(commands: list[list[str]]) -> float:
    """The servers' own start-up: seconds from spawning ``commands`` at once to every one of them
    initialized with all its tools/list pages read, each through the SDK's client directly."""
    stop = asyncio.Event()
    ready = [asyncio.Event() for _ in commands]

    async def hold(command: list[str], listed: asyncio.Event) -> None:
        async with AsyncExitStack() as stack:  # each session lives in its own task, as anyio wants
            await direct_session(stack, command)
            listed.set()
            await stop.wait()

    began = time.perf_counter()
    holders = [asyncio.create_task(hold(command, listed)) for command, listed in zip(commands, ready)]
    await asyncio.gather(*(listed.wait() for listed in ready))
    elapsed = time.perf_counter() - began
    stop.set()
    await asyncio.gather(*holders)
    return elapsed


async def bench_calls(calls: int) -> None:
    for label, command, tool, arguments in servers():
        async with AsyncExitStack() as stack:
            session = await direct_session(stack, command)
            direct = await timed_calls(lambda: session.call_tool(tool, arguments), calls)
        ours = await McpServers.start("bench", [McpServerConfig("s", command, startup_timeout_ms=60000)])
        try:
            via = await timed_calls(lambda: ours.call("s", tool, arguments, 60), calls)
        finally:
            await ours.close()
        print(f"call {label:<10} p50 direct {direct[0]:.3f} ms, via McpServers {via[0]:.3f} ms "
              f"(x{via[0] / direct[0]:.2f}); {IN_FLIGHT} in flight: direct {direct[1]:.0f}/s, "
              f"via {via[1]:.0f}/s (x{direct[1] / via[1]:.2f} time per call)")


async def bench_start(runs: int) -> None:
    pair = servers()
    if len(pair) < 2:
        pair = pair * 2
    configs = [McpServerConfig(f"s{i}", command, startup_timeout_ms=60000) for i, (_, command, _, _) in
               enumerate(pair)]
    began = time.perf_counter()
    first = await McpServers.start("bench", configs)
    cold = time.perf_counter() - began
    await first.close()
    own, ours = [], []
    for _ in range(runs):
        own.append(await own_start([config.command for config in configs]))
        began = time.perf_counter()
        started = await McpServers.start("bench", configs)
        ours.append(time.perf_counter() - began)
        await started.close()
    own_ms, ours_ms = statistics.median(own) * 1000, statistics.median(ours) * 1000
    print(f"start {'+'.join(label for label, *_ in pair)}: first McpServers.start in a process (the SDK not "
          f"imported) {cold * 1000:.0f} ms; then median of {runs}: own start-up {own_ms:.0f} ms, "
          f"McpServers.start {ours_ms:.0f} ms (+{ours_ms - own_ms:.0f} ms, x{ours_ms / own_ms:.2f})")


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_client", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=640)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    await bench_start(args.starts)  # first: the cold figure is of a process that has not imported the SDK
    await bench_calls(args.calls)


if __name__ == "__main__":
    asyncio.run(main())
