"""The local stand-in for the corpus's remote MCP servers: one server written with the official ``mcp``
SDK (``MCPServer``) on 127.0.0.1 serving both transports the plugins declare — streamable HTTP
(MCP 2025-06-18) at ``/mcp`` and the HTTP+SSE transport of 2024-11-05 at ``/sse`` (messages at
``/messages/``). No authorization: it stands in for the network, not for the real service's login.

Run by ``bench.corpus_peers.remote`` as a child process; the first stdout line is ``PORT <n>``.
Tools: ``echo {text}`` and ``headers`` (the names of the headers the request carried, no values).
"""

from __future__ import annotations

import socket

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

server = MCPServer("corpus-standin")


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="The names of the headers this request carried.")
def headers(ctx: Context) -> str:
    seen = ctx.request_context.request.headers if ctx.request_context.request is not None else {}
    return " ".join(sorted(seen.keys()))


def main() -> None:
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    http = server.streamable_http_app(transport_security=security)
    sse = server.sse_app(transport_security=security)
    # one app: both transports' routes; the streamable-HTTP session manager runs in its lifespan
    app = Starlette(routes=[*http.routes, *sse.routes], lifespan=http.router.lifespan_context)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
