"""A hand-written stdio MCP server (no SDK), to test the client against exact answers.

``--version V`` answers ``initialize`` with protocol version V; ``--init-error`` answers it with a
JSON-RPC error. It offers one tool, ``say``, which returns its ``text``.

Hostile on request: ``--flood`` writes 70 MiB without a newline before anything else;
``--garbage-on-call`` writes a line that is not JSON-RPC (and invalid UTF-8 on stderr) before each
answer; ``--ask-client METHOD`` sends the client a request METHOD during each call and returns the
client's answer as the call's text.

Exact answers on request: ``--init-result JSON`` / ``--tools JSON`` / ``--result JSON`` are sent
verbatim as the ``initialize`` / ``tools/list`` / ``tools/call`` result; ``--stray`` writes, before
each call's answer, an answer to an id the client never sent and an error with a null id;
``--string-ids`` echoes ids as strings of digits; ``--reverse N`` holds N calls and answers them
last first; ``--log`` sends two ``notifications/message`` (a string, an object) before each answer.
``--resources N`` declares resources and prompts: N resources ``raw://r/<i>`` listed two a page (the
cursor is the next index), one template, N prompts two a page; ``--bad-resources`` answers
``resources/list`` with what is not a ListResourcesResult.
``--elicit N`` sends the client N ``elicitation/create`` requests at once during each call and
returns the N answers (one a line) as the call's text.
``--record FILE`` appends every line the client sends to FILE. ``--ping-flood`` answers a call
with 80 MiB of pings (each with a 64 KiB id) and never reads its stdin again.
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
parser.add_argument("--init-result")
parser.add_argument("--tools")
parser.add_argument("--result")
parser.add_argument("--stray", action="store_true")
parser.add_argument("--string-ids", action="store_true")
parser.add_argument("--reverse", type=int, default=0)
parser.add_argument("--log", action="store_true")
parser.add_argument("--record")
parser.add_argument("--ping-flood", action="store_true")
parser.add_argument("--resources", type=int, default=0)
parser.add_argument("--bad-resources", action="store_true")
parser.add_argument("--elicit", type=int, default=0)
args = parser.parse_args()
held: list[dict] = []


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if args.flood:
    sys.stdout.write("x" * (70 << 20))
    sys.stdout.flush()
    time.sleep(60)

def call_result(message: dict, text: str) -> dict:
    if args.result:
        return json.loads(args.result)
    return {"content": [{"type": "text", "text": text}]}


for line in sys.stdin:
    if args.record:
        with open(args.record, "a", encoding="utf-8") as f:
            f.write(line)
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue  # notifications
    if args.string_ids:
        ident = str(ident)
    if method == "initialize" and args.init_result:
        send({"jsonrpc": "2.0", "id": ident, "result": json.loads(args.init_result)})
    elif method == "initialize" and args.init_error:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": "not today"}})
    elif method == "initialize":
        offered = {"tools": {}, **({"resources": {}, "prompts": {}} if args.resources or args.bad_resources else {})}
        send({"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": args.version, "capabilities": offered,
            "serverInfo": {"name": "raw", "version": "1"}}})
    elif method == "resources/list" and args.bad_resources:
        send({"jsonrpc": "2.0", "id": ident, "result": {"resources": [{"name": "no uri"}]}})
    elif method in ("resources/list", "prompts/list"):
        start = int((message.get("params") or {}).get("cursor") or 0)
        end = min(start + 2, args.resources)
        items = [{"uri": f"raw://r/{i}", "name": f"r{i}"} if method == "resources/list" else
                 {"name": f"p{i}", "arguments": [{"name": "x", "required": i % 2 == 0}]} for i in range(start, end)]
        page = {("resources" if method == "resources/list" else "prompts"): items}
        if end < args.resources:
            page["nextCursor"] = str(end)
        send({"jsonrpc": "2.0", "id": ident, "result": page})
    elif method == "resources/templates/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"resourceTemplates": [
            {"uriTemplate": "raw://t/{name}", "name": "t", "mimeType": "text/plain"}]}})
    elif method == "tools/list" and args.tools:
        send({"jsonrpc": "2.0", "id": ident, "result": json.loads(args.tools)})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "say", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    elif method == "tools/call":
        text = message["params"].get("arguments", {}).get("text", "")
        if args.ping_flood:
            pad = "p" * (64 << 10)
            for i in range(1280):
                send({"jsonrpc": "2.0", "id": f"{i}-{pad}", "method": "ping"})
            time.sleep(60)
        if args.garbage_on_call:
            sys.stdout.write("<html>not json</html>\n")
            sys.stderr.buffer.write(b"bad bytes \xff\xfe here\n")
            sys.stderr.flush()
        if args.ask_client:
            send({"jsonrpc": "2.0", "id": "ask-1", "method": args.ask_client, "params": {
                "messages": [], "maxTokens": 1}})
            text = sys.stdin.readline().strip()  # the client's answer
        if args.elicit:
            for i in range(args.elicit):
                send({"jsonrpc": "2.0", "id": f"elicit-{i}", "method": "elicitation/create", "params": {
                    "message": f"question {i}", "requestedSchema": {"type": "object", "properties": {
                        "ok": {"type": "boolean"}}}}})
            text = "\n".join(sys.stdin.readline().strip() for _ in range(args.elicit))
        if args.stray:
            send({"jsonrpc": "2.0", "id": 987654, "result": {"content": [{"type": "text", "text": "stray"}]}})
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "a parse error of its own"}})
        if args.log:
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}})
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "warning", "logger": "db", "data": {"rows": 3}}})
        if args.reverse:
            held.append({"jsonrpc": "2.0", "id": ident, "result": call_result(message, text)})
            if len(held) == args.reverse:
                for answer in reversed(held):
                    send(answer)
                held.clear()
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": call_result(message, text)})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
