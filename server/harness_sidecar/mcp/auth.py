"""OAuth 2.1 for a remote MCP server, as the MCP authorization specification says (protocol-v4 §4).

The flow is the official SDK's ``OAuthClientProvider`` (an ``httpx2.Auth`` the transport carries):
a 401 → the protected-resource metadata (``WWW-Authenticate`` ``resource_metadata``, else the
well-known URLs) → the authorization server's metadata (RFC 8414 / OpenID discovery, issuer
checked) → dynamic client registration (RFC 7591) → authorization code with PKCE (S256) and
``state``, ``resource`` (RFC 8707) → the token. What this module adds is the sidecar's part:

- the browser step goes to the editor: ``ui/openUrl {threadId, url, reason}`` when it declared
  ``capabilities.ui.openUrl``; otherwise (or when it answers ``opened: false``) the diagnostic
  ``mcp_auth_required`` with ``data: {server, url}``. Either way the thread's start does not wait:
  ``waiting`` is set and the server's tools join later (``remote.py``; catalog/changed).
- the redirect is a loopback listener on ``127.0.0.1:<port>`` (RFC 8252 §7.3), opened only when a
  login is needed, on the port of the stored registration when it is free (else a new port and a
  new registration; a plugin's ``oauth.callbackPort`` is that port, ``oauth.clientId`` a client
  registered beforehand), taking only the redirect that carries the ``state`` of the sign-in under
  way, and closed with the connection.
- tokens live in ``tokens.TokenFile`` (0600, one file per server URL); a token is refreshed once
  less than a tenth of its lifetime is left (so no expired token is sent), also after a restart
  (the issue time is stored); a 401 to a request that carried a token gets one refresh and one
  retry; when that fails too (the grant was revoked), the tokens are dropped and the user is asked
  again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from .process import write_stderr
from .tokens import TokenFile

CALLBACK_PATH = "/callback"
REFRESH_AT = 0.9  # of a token's lifetime: refreshed from then on


class _Provider(OAuthClientProvider):
    """The SDK's provider, with the refresh rules above."""

    def __init__(self, owner: OAuth, url: str, storage: TokenFile) -> None:
        metadata = OAuthClientMetadata(
            client_name="harness-sidecar", redirect_uris=[f"http://127.0.0.1{CALLBACK_PATH}"],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none")
        super().__init__(url, metadata, storage, redirect_handler=owner.redirect, callback_handler=owner.callback)
        self._owner = owner
        self._file = storage
        self.context.update_token_expiry = self._update_expiry  # type: ignore[method-assign]

    def _update_expiry(self, token: Any) -> None:
        expires_in = _seconds(token.expires_in)
        self.context.token_expiry_time = None if expires_in is None else time.time() + REFRESH_AT * expires_in

    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        issued = self._file.issued_at()
        expires_in = _seconds(tokens.expires_in) if tokens is not None else None
        if expires_in is not None and issued is not None:
            self.context.token_expiry_time = issued + REFRESH_AT * expires_in

    async def _auth_flow(self, request: Any) -> Any:
        """The SDK's flow, except that a 401 to a request that carried a token is first answered by one
        refresh and one retry; only if that fails is the SDK's full flow (a new login) run."""
        flow = super()._auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if (outgoing is request and response.status_code == 401 and not refreshed
                        and "Authorization" in request.headers and self.context.can_refresh_token()):
                    refreshed = True
                    refresh_response = yield await self._refresh_token()
                    if await self._handle_refresh_response(refresh_response):
                        self._add_auth_header(request)
                        response = yield request
                        if response.status_code != 401:
                            return
                    self.context.clear_tokens()
                    self._file.forget_tokens()
                if outgoing is request and response.status_code == 401:
                    await self._owner.listen(self.context)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


class OAuth:
    """One remote server's authorization: the provider, the loopback listener, the editor's part."""

    def __init__(self, url: str, label: str, servers: Any, name: str, preset: dict[str, Any] | None = None) -> None:
        self.url = url
        self.preset = preset or {}  # clientId, callbackPort (a plugin's oauth, as Claude Code reads it)
        self.label = label
        self.servers = servers  # the thread's McpServers: notify, open_url, thread_id
        self.name = name
        self.waiting = asyncio.Event()  # a login is needed: the thread's start goes on without this server
        self.file = TokenFile(url)
        self.provider = _Provider(self, url, self.file)
        self._listener: asyncio.Server | None = None
        self._port: int | None = None
        self._codes: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._state: str | None = None  # the state of the sign-in under way: only its redirect is taken

    async def listen(self, context: Any) -> None:
        """The loopback redirect, before a registration is made or used: the stored client's port when
        it can be had, else a new one (and the stored registration, made for another port, is dropped)."""
        if self._listener is not None:
            return
        from pydantic import AnyUrl

        fixed = self.preset.get("callbackPort")
        client = context.client_info
        if fixed is not None:  # a port the client was registered with elsewhere: that one or none
            self._listener = await asyncio.start_server(self._serve, "127.0.0.1", fixed)
        else:
            wanted = 0
            if client is not None and client.redirect_uris:
                wanted = urlsplit(str(client.redirect_uris[0])).port or 0
            try:
                self._listener = await asyncio.start_server(self._serve, "127.0.0.1", wanted)
            except OSError:
                self._listener = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self._port = self._listener.sockets[0].getsockname()[1]
        # Claude Code's redirect for a fixed port is http://localhost:<port>/callback: a client registered
        # for Claude Code (a plugin's clientId) expects exactly that one
        host = "localhost" if fixed is not None else "127.0.0.1"
        redirect = f"http://{host}:{self._port}{CALLBACK_PATH}"
        context.client_metadata.redirect_uris = [AnyUrl(redirect)]
        if self.preset.get("clientId"):  # a pre-registered public client: no dynamic registration
            from mcp.shared.auth import OAuthClientInformationFull

            if client is None or client.client_id != self.preset["clientId"]:
                context.client_info = OAuthClientInformationFull(
                    client_id=self.preset["clientId"], redirect_uris=[AnyUrl(redirect)],
                    grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                    token_endpoint_auth_method="none")
                await self.file.set_client_info(context.client_info)  # so that a later run can refresh
            return
        if client is not None and [str(u) for u in client.redirect_uris or []] != [redirect]:
            context.client_info = None  # registered for another redirect: register again
            self.file.forget_client()

    async def redirect(self, url: str) -> None:
        """The browser step: the editor opens ``url``, or is told it in ``mcp_auth_required``."""
        self._state = (parse_qs(urlsplit(url).query).get("state") or [None])[0]
        self.waiting.set()
        servers = self.servers
        reason = f"MCP server '{self.name}' needs you to sign in to use its tools"
        opened = None
        if servers.open_url is not None:
            opened = await servers.open_url(url, reason)
        if opened is not True:
            servers._notify({"threadId": servers.thread_id, "kind": "mcp_auth_required", "name": self.name,
                             "message": f"{reason}: open {url}", "data": {"server": self.name, "url": url}})

    async def callback(self) -> AuthorizationCodeResult:
        """The code the browser brings back to the loopback redirect."""
        query = await self._codes.get()
        if "code" not in query:
            from mcp.client.auth import OAuthFlowError

            raise OAuthFlowError(f"the authorization was refused: {query.get('error', 'no code')}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("ascii", "replace")
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == CALLBACK_PATH and ("code" in query or "error" in query):
                # Any local process can reach this port: a redirect without the state of the sign-in
                # under way (a forged code or error) is refused and changes nothing.
                if self._state is None or query.get("state") != self._state:
                    status, body = "400 Bad Request", "This is not the sign-in the editor is waiting for."
                else:
                    self._state = None
                    self._codes.put_nowait(query)
                    status, body = "200 OK", "Signed in. You can close this window and go back to the editor."
            else:
                status, body = "404 Not Found", "Not found."
            data = body.encode()
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                         f"{len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, IndexError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _seconds(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        write_stderr(f"an OAuth token's expires_in is not a number ({value!r}); it is used until refused\n")
        return None
