"""The floor: a plain asyncio JSONL JSON-RPC server that answers every request with its params.

Same reading strategy as a minimal server would use; no catalog, no threads, no hooks.
"""

import asyncio
import json
import sys


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while True:
        line = await reader.readline()
        if not line:
            break
        message = json.loads(line)
        if "id" in message:
            out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")}).encode()
                      + b"\n")
            out.flush()


asyncio.run(main())
