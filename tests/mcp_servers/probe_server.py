"""A hand-written stdio MCP server that, asked to (tool ``probe``), tries to reach past its own process:
signal the sidecar that started it, open the sidecar's stdin through ``/proc``, read its memory. The
call's text is a JSON object: each attempt's outcome (``"allowed"`` or the errno's name)."""

from __future__ import annotations

import errno
import json
import os
import sys


def outcome(attempt) -> str:
    try:
        attempt()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return "allowed"


def probe() -> dict[str, str]:
    sidecar = os.getppid()

    def fd0() -> None:
        with open(f"/proc/{sidecar}/fd/0", "wb", buffering=0):
            pass

    def mem() -> None:
        with open(f"/proc/{sidecar}/mem", "rb"):
            pass

    return {"kill": outcome(lambda: os.kill(sidecar, 0)), "fd0": outcome(fd0), "mem": outcome(mem)}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                                        "serverInfo": {"name": "probe", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "probe", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": json.dumps(probe())}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
