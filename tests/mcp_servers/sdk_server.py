"""A stdio MCP server written with the official ``mcp`` SDK, for the tests of ``harness_sidecar.mcp``.

Tools: ``echo {text}`` and ``ping`` (with and without arguments), ``fail`` (an ``isError`` result),
``crash`` (the handler raises), ``sleep {seconds}`` (records a cancellation it receives),
``toggle`` (adds or removes the tool ``extra`` and sends ``notifications/tools/list_changed``),
``exit {code}`` (the process exits), ``mixed`` (every kind of content plus ``structuredContent``),
``whoami`` (environment and working directory).

``tools/list`` pages: ``--page-size N`` tools per page (default 2).
Misbehaviour on request: ``--garbage`` writes a line that is not JSON-RPC before anything else,
``--silent`` never answers anything, ``--exit-at-start CODE`` exits before reading,
``--stderr TEXT`` writes TEXT (may hold newlines) to stderr at start,
``--tool-name NAME`` adds a tool with that exact name, ``--spawn-child FILE`` starts a grandchild
process that sleeps (its pid written to FILE), ``--linger`` ignores SIGTERM and stays after stdin
closes.
Events (a cancellation, a start) are appended as lines to the file named by ``$MCP_TEST_EVENTS``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--page-size", type=int, default=2)
parser.add_argument("--garbage", action="store_true")
parser.add_argument("--silent", action="store_true")
parser.add_argument("--exit-at-start", type=int)
parser.add_argument("--stderr")
parser.add_argument("--tool-name", action="append", default=[])
parser.add_argument("--spawn-child")
parser.add_argument("--linger", action="store_true")
args = parser.parse_args()

EVENTS = os.environ.get("MCP_TEST_EVENTS")


def event(text: str) -> None:
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(text + "\n")


event(f"start {os.getpid()}")
if args.linger:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if args.stderr:
    sys.stderr.write(args.stderr)
    sys.stderr.flush()
if args.spawn_child:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.DEVNULL)
    with open(args.spawn_child, "w", encoding="utf-8") as f:
        f.write(str(child.pid))
if args.exit_at_start is not None:
    sys.exit(args.exit_at_start)
if args.garbage:
    sys.stdout.write("this is not JSON-RPC\n")
    sys.stdout.flush()
if args.silent:
    for _line in sys.stdin:  # read, never answer
        pass
    if args.linger:
        time.sleep(600)
    sys.exit(0)

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.server import NotificationOptions, Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

OBJECT = {"type": "object", "properties": {}}
state = {"extra": False}


def tools() -> list[types.Tool]:
    listed = [
        types.Tool(name="echo", description="Echo the text back.",
                   input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                 "required": ["text"]}),
        types.Tool(name="ping", description="Answer pong.", input_schema=OBJECT),
        types.Tool(name="fail", description="Always an error result.", input_schema=OBJECT),
        types.Tool(name="crash", description="The handler raises.", input_schema=OBJECT),
        types.Tool(name="sleep", description="Sleep for a while.",
                   input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}),
        types.Tool(name="toggle", description="Add or remove the tool 'extra'.", input_schema=OBJECT),
        types.Tool(name="exit", description="Exit the process.",
                   input_schema={"type": "object", "properties": {"code": {"type": "integer"}}}),
        types.Tool(name="mixed", description="Every kind of content.", input_schema=OBJECT),
        types.Tool(name="whoami", description="Environment and working directory.", input_schema=OBJECT),
    ]
    if state["extra"]:
        listed.append(types.Tool(name="extra", description="Exists after toggle.", input_schema=OBJECT))
    listed += [types.Tool(name=name, description="A tool with a given name.", input_schema=OBJECT)
               for name in args.tool_name]
    return listed


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    everything = tools()
    end = start + args.page_size
    return types.ListToolsResult(tools=everything[start:end],
                                 next_cursor=str(end) if end < len(everything) else None)


def text(value: str) -> list[types.TextContent]:
    return [types.TextContent(text=value)]


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    name = params.name
    if name == "echo":
        return types.CallToolResult(content=text(arguments["text"]))
    if name == "ping":
        return types.CallToolResult(content=text("pong"))
    if name == "fail":
        return types.CallToolResult(content=text("it failed on purpose"), is_error=True)
    if name == "crash":
        raise RuntimeError("the handler crashed")
    if name == "sleep":
        seconds = float(arguments.get("seconds", 30))
        event(f"sleep {ctx.request_id}")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            event(f"cancelled {ctx.request_id}")
            raise
        return types.CallToolResult(content=text(f"slept {seconds}"))
    if name == "toggle":
        state["extra"] = not state["extra"]
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=text(f"extra is {'on' if state['extra'] else 'off'}"))
    if name == "exit":
        sys.stdout.flush()
        os._exit(int(arguments.get("code", 3)))
    if name == "mixed":
        return types.CallToolResult(
            content=[
                types.TextContent(text="plain text"),
                types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
                types.ResourceLink(name="notes", uri="file:///tmp/notes.txt", mime_type="text/plain"),
                types.EmbeddedResource(resource=types.TextResourceContents(
                    uri="memo://one", mime_type="text/markdown", text="# memo")),
            ],
            structured_content={"answer": 42, "items": ["a", "b"]},
        )
    if name == "whoami":
        return types.CallToolResult(content=text(
            f"cwd={os.getcwd()} MCP_TEST_VALUE={os.environ.get('MCP_TEST_VALUE')} "
            f"HARNESS_TEST_INHERITED={os.environ.get('HARNESS_TEST_INHERITED')}"))
    if name == "extra" or name in args.tool_name:
        return types.CallToolResult(content=text(f"{name} ran"))
    raise ValueError(f"unknown tool {name}")


server = Server("harness-test-server", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream,
                         server.create_initialization_options(NotificationOptions(tools_changed=True)))


anyio.run(main)
if args.linger:
    time.sleep(600)
