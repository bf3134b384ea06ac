"""A stand-in for the sidecar: starts MCP servers with ``harness_sidecar.mcp`` and serves stdin/stdout.

``owner.py CONFIGS_JSON``: starts the servers, prints ``{"status": ...}`` on stdout, then echoes each
stdin line back as ``{"stdin": line}`` (so a test sees that no server read the owner's stdin or wrote
to its stdout), and closes the servers at EOF. Tests kill it with SIGKILL to see its servers die.
"""

from __future__ import annotations

import asyncio
import json
import sys

from harness_sidecar.mcp import McpServerConfig, McpServers


async def main() -> None:
    configs = [McpServerConfig(**config) for config in json.loads(sys.argv[1])]
    servers = await McpServers.start("thread-1", configs)
    print(json.dumps({"status": servers.status()}), flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        print(json.dumps({"stdin": line.rstrip("\n")}), flush=True)
    await servers.close()


asyncio.run(main())
