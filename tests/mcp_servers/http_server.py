"""A remote MCP server written with the official ``mcp`` SDK (``MCPServer``), for tests/test_mcp_remote.py.

``--transport http`` (streamable HTTP, MCP 2025-06-18, at ``/mcp``) or ``sse`` (2024-11-05, at
``/sse``), on 127.0.0.1 at a free port; the first stdout line is ``PORT <n>``.

Tools: ``echo {text}``, ``sleep {seconds}``, ``headers`` (the request's headers it was sent:
``authorization`` and ``x-test``), ``pid`` (the server's pid, for a test that kills it mid-call).
``--bearer TOKEN``: every request without ``Authorization: Bearer TOKEN`` is answered 401.
``--oauth``: the server is its own OAuth 2.1 authorization server (``--client-id`` and
``--client-redirect``: one pre-registered public client and no dynamic registration) (the SDK's routes: metadata,
dynamic registration, authorize, token, revoke; protected-resource metadata) with an in-memory
provider that approves every authorization at once (the "user" is whoever follows the redirect);
access tokens live ``--token-seconds`` (default 3600). ``--delay-start S`` sleeps before it listens.
Events go to ``$MCP_TEST_EVENTS``: ``request <method> <path>`` for every HTTP request, ``token <kind>``
for each token it issues, ``expired`` for a token presented past its lifetime, ``sleeping``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import socket
import time

parser = argparse.ArgumentParser()
parser.add_argument("--transport", choices=("http", "sse"), default="http")
parser.add_argument("--bearer")
parser.add_argument("--oauth", action="store_true")
parser.add_argument("--token-seconds", type=int, default=3600)
parser.add_argument("--delay-start", type=float, default=0.0)
parser.add_argument("--json-response", action="store_true")
parser.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
parser.add_argument("--client-id", help="a pre-registered public client (with --client-redirect); no dynamic "
                                        "registration then")
parser.add_argument("--client-redirect", help="the one redirect URI the pre-registered client may use")
args = parser.parse_args()

EVENTS = os.environ.get("MCP_TEST_EVENTS")


def event(text: str) -> None:
    if EVENTS:
        with open(EVENTS, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if args.delay_start:
    time.sleep(args.delay_start)

import uvicorn  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.transport_security import TransportSecuritySettings  # noqa: E402

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", args.port))
PORT = sock.getsockname()[1]
BASE = f"http://127.0.0.1:{PORT}"

auth_kwargs: dict = {}
if args.oauth:
    from mcp.server.auth.provider import AccessToken, AuthorizationCode, RefreshToken, construct_redirect_uri
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions

    class Provider:
        """Approves every authorization at once; tokens in memory."""

        def __init__(self) -> None:
            self.clients: dict = {}
            self.codes: dict = {}
            self.access: dict = {}
            self.refresh: dict = {}
            self.expiry: dict = {}

        async def get_client(self, client_id):
            return self.clients.get(client_id)

        async def register_client(self, client_info):
            self.clients[client_info.client_id] = client_info
            event("register")

        async def authorize(self, client, params):
            code = secrets.token_urlsafe(16)
            self.codes[code] = AuthorizationCode(
                code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
                code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
            return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

        async def load_authorization_code(self, client, authorization_code):
            return self.codes.get(authorization_code)

        def _issue(self, client_id, scopes, kind):
            access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
            self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                              expires_at=int(time.time()) + args.token_seconds)
            self.expiry[access] = time.time() + args.token_seconds  # to the fraction of a second
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
            event(f"token {kind}")
            from mcp.shared.auth import OAuthToken

            return OAuthToken(access_token=access, token_type="Bearer", expires_in=args.token_seconds,
                              refresh_token=refresh, scope=" ".join(scopes) or None)

        async def exchange_authorization_code(self, client, authorization_code):
            self.codes.pop(authorization_code.code, None)
            return self._issue(client.client_id, authorization_code.scopes, "code")

        async def load_refresh_token(self, client, refresh_token):
            return self.refresh.get(refresh_token)

        async def exchange_refresh_token(self, client, refresh_token, scopes):
            self.refresh.pop(refresh_token.token, None)
            return self._issue(client.client_id, scopes or refresh_token.scopes, "refresh")

        async def load_access_token(self, token):
            found = self.access.get(token)
            if found is not None and self.expiry[token] < time.time():
                event("expired")  # a client sent a token past its lifetime
                return None
            return found

        async def revoke_token(self, token):
            self.access.pop(token.token, None)
            self.refresh.pop(getattr(token, "token", ""), None)

    PROVIDER = Provider()
    if args.client_id:
        from mcp.shared.auth import OAuthClientInformationFull

        PROVIDER.clients[args.client_id] = OAuthClientInformationFull(
            client_id=args.client_id, redirect_uris=[args.client_redirect], token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    auth_kwargs = {"auth_server_provider": PROVIDER, "auth": AuthSettings(
        issuer_url=BASE, resource_server_url=f"{BASE}/mcp" if args.transport == "http" else f"{BASE}/sse",
        client_registration_options=ClientRegistrationOptions(enabled=not args.client_id),
        revocation_options=RevocationOptions(enabled=True))}

server = MCPServer("remote-test-server", **auth_kwargs)


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Sleep for a while.")
async def sleep(seconds: float = 30.0) -> str:
    event("sleeping")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="The headers this request carried.")
def headers(ctx: Context) -> str:
    seen = ctx.request_context.request.headers if ctx.request_context.request is not None else {}
    return f"authorization={seen.get('authorization')} x-test={seen.get('x-test')}"


@server.tool(description="The server's pid.")
def pid() -> str:
    return str(os.getpid())


if args.oauth:
    @server.tool(description="Forget the access tokens only (refresh tokens stay good).")
    def drop_access() -> str:
        PROVIDER.access.clear()
        return "dropped"

    @server.tool(description="Revoke every token the server issued (the user withdrew the grant).")
    def revoke_all() -> str:
        PROVIDER.access.clear()
        PROVIDER.refresh.clear()
        return "revoked"


security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
if args.transport == "http":
    app = server.streamable_http_app(json_response=args.json_response, transport_security=security)
else:
    app = server.sse_app(transport_security=security) if "transport_security" in \
        server.sse_app.__code__.co_varnames else server.sse_app()

if args.bearer:
    inner = app

    async def app(scope, receive, send):  # noqa: F811 - a bearer check in front of the server
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            if auth != f"Bearer {args.bearer}":
                event("refused")
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

served = app


async def app(scope, receive, send):  # noqa: F811 - every HTTP request is an event ("request POST /mcp")
    if scope["type"] == "http":
        event(f"request {scope['method']} {scope['path']}")
    await served(scope, receive, send)

sock.listen(2048)  # before PORT is said: a client connecting while uvicorn starts is queued, not refused
print(f"PORT {PORT}", flush=True)
config = uvicorn.Config(app, log_level="warning", lifespan="on")
uvicorn.Server(config).run(sockets=[sock])
