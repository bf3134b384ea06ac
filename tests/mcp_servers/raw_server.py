"""A hand-written stdio MCP server (no SDK), to test the client against exact answers.

``--version V`` answers ``initialize`` with protocol version V; ``--init-error`` answers it with a
JSON-RPC error. It offers one tool, ``say``, which returns its ``text``.
"""

from __future__ import annotations

import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--version", default="2025-11-25")
parser.add_argument("--init-error", action="store_true")
args = parser.parse_args()


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # notifications
    if method == "initialize" and args.init_error:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": "not today"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": args.version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "say", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
