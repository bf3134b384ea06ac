"""A hand-written stdio MCP server (no SDK), to test the client against exact answers.

``--version V`` answers ``initialize`` with protocol version V; ``--init-error`` answers it with a
JSON-RPC error. It offers one tool, ``say``, which returns its ``text``.

Hostile on request: ``--flood`` writes 70 MiB without a newline before anything else;
``--garbage-on-call`` writes a line that is not JSON-RPC (and invalid UTF-8 on stderr) before each
answer; ``--ask-client METHOD`` sends the client a request METHOD during each call and returns the
client's answer as the call's text.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--version", default="2025-11-25")
parser.add_argument("--init-error", action="store_true")
parser.add_argument("--flood", action="store_true")
parser.add_argument("--garbage-on-call", action="store_true")
parser.add_argument("--ask-client")
args = parser.parse_args()


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if args.flood:
    sys.stdout.write("x" * (70 << 20))
    sys.stdout.flush()
    time.sleep(60)

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
        if args.garbage_on_call:
            sys.stdout.write("<html>not json</html>\n")
            sys.stderr.buffer.write(b"bad bytes \xff\xfe here\n")
            sys.stderr.flush()
        if args.ask_client:
            send({"jsonrpc": "2.0", "id": "ask-1", "method": args.ask_client, "params": {
                "messages": [], "maxTokens": 1}})
            text = sys.stdin.readline().strip()  # the client's answer
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
