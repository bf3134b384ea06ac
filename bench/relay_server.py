"""The two-process floor: an asyncio JSONL server that relays every request to a second Python process.

The least any design with a separate extension host can do per call: the server parses the
request, forwards it over a socketpair to a worker process, the worker parses it and answers,
the server parses the answer and writes the response — stdlib JSON, one flush per message on
both hops, no catalog, no hooks. ``tools/call`` CPU (sidecar + host) is measured against this
floor's CPU (server + worker) in the same run (issue 17).
"""

import asyncio
import json
import os
import socket
import sys


def worker(sock: socket.socket) -> None:
    """The second process: answer each forwarded request with its params."""
    reader = sock.makefile("rb")
    for line in reader:
        message = json.loads(line)
        sock.sendall(json.dumps({"id": message["id"], "result": message.get("params")}).encode() + b"\n")
    os._exit(0)


async def serve(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    channel_in, channel_out = await asyncio.open_connection(sock=sock, limit=16 * 1024 * 1024)
    out = sys.stdout.buffer
    waiting: dict = {}

    async def answers() -> None:
        while True:
            line = await channel_in.readline()
            if not line:
                return
            answer = json.loads(line)
            request_id = waiting.pop(answer["id"])
            out.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": answer["result"]}).encode() + b"\n")
            out.flush()

    relay = asyncio.ensure_future(answers())
    ticket = 0
    while True:
        line = await stdin.readline()
        if not line:
            break
        message = json.loads(line)
        if "id" in message:
            ticket += 1
            waiting[ticket] = message["id"]
            channel_out.write(json.dumps({"id": ticket, "params": message.get("params")}).encode() + b"\n")
            await channel_out.drain()
    channel_out.write_eof()  # the worker ends after the last answer
    await relay


def main() -> None:
    ours, theirs = socket.socketpair()
    if os.fork() == 0:
        ours.close()
        worker(theirs)
    theirs.close()
    asyncio.run(serve(ours))


main()
