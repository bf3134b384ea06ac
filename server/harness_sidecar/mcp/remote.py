"""Remote MCP servers (protocol-v4 §4): streamable HTTP (``type: "http"``) and HTTP+SSE (``"sse"``).

A remote server is a ``_Connection`` whose pipes are an HTTP transport: everything above the wire
(initialize, tools/list and its pages, list_changed, calls, timeouts, cancellation, output schemas,
exits and restarts, hooks, names, trust) is the stdio server's code in ``servers.py``; the session is
``session.py``'s, fed from and draining into the transport instead of a child's stdout and stdin.

The transports are the official SDK's (``mcp.client.streamable_http.streamable_http_client``,
``mcp.client.sse.sse_client``): they own the wire details of MCP 2025-06-18 (POST answered by JSON
or an SSE stream, ``Mcp-Session-Id``, the GET stream, resuming a broken stream with
``Last-Event-ID``, the DELETE at the end) and of 2024-11-05 (the ``endpoint`` event), and they carry
the OAuth flow (``auth.py``) as an ``httpx2.Auth``. They are imported here only, and this module is
imported only by a thread that names a remote server: a thread without one imports nothing of them.

- ``headers`` values have ``${VAR}`` (and ``${VAR:-default}``) expanded from the sidecar's
  environment when the server is connected (as Claude Code and Codex do); an unset VAR is empty.
- A connection that breaks (the server is killed, the network drops) ends this connection: a call
  in flight is answered (``mcp_exit``: the SDK resolves a POST whose stream ended without an answer,
  and a request the transport can no longer send fails ``Closed``), the server turns ``exited``
  (``thread/diagnostic`` ``mcp_exit``) and the next call to it reconnects (a new session), as a
  stdio server is restarted.
- Containment: there is no child process; what the grant lets run is the sidecar sending the
  server the thread's tool calls. The connection ends with its thread (the session is DELETEd).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
from typing import Any

from .messages import ERROR
from .process import exited_within, write_stderr
from .session import Closed, Session

logger = logging.getLogger(__name__)

CONNECTION_CLOSED = -32000  # the code the SDK's transports give a request they can no longer answer
LOGIN_TIMEOUT_S = 600.0  # how long a server waiting for the user's login may take to initialize
MAX_UNSENT = 10000  # messages waiting for the transport; more is a stuck transport
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


_loaded: asyncio.Future[None] | None = None


def _import_sdk() -> None:
    import mcp.client.sse  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401
    import mcp_types  # noqa: F401

    from .auth import OAuth  # noqa: F401 - the SDK's OAuth provider


async def load_sdk() -> None:
    """Import the SDK's client (≈1 s of CPU the first time) in a worker thread, once per process: the
    event loop keeps serving the other threads meanwhile, and the servers of one thread share it."""
    global _loaded
    if _loaded is None:
        _loaded = asyncio.ensure_future(asyncio.to_thread(_import_sdk))
    try:
        await asyncio.shield(_loaded)
    except BaseException:
        if _loaded.done():
            _loaded = None  # an import that failed is tried again (and says why) by the next start
        raise


def expand(value: str, environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}`` from the environment (an unset or empty VAR: the default, or empty)."""
    env = os.environ if environ is None else environ
    return _VAR.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)


def expand_headers(headers: dict[str, str]) -> dict[str, str]:
    return {key: expand(value) for key, value in headers.items()}


class _RemoteEnd:
    """What ``servers.py`` reads of a server's process, for a server that has none."""

    def __init__(self) -> None:
        self.exited = asyncio.Event()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=1)
        self.why = "closed the connection"
        self.returncode = None

    def describe_exit(self) -> str:
        return self.why

    def exit_status(self) -> dict[str, Any]:
        return {}

    def kill_group(self, sig: int = 0) -> None:
        pass

    async def wait_exit(self, timeout: float) -> bool:
        return await exited_within(self.exited, timeout)

    async def drain_stderr(self, timeout: float) -> None:
        pass

    async def reap(self) -> None:
        pass


class RemoteSession(Session):
    """``Session`` over a transport: messages go to ``outbox`` (the transport's writer drains it)."""

    def __init__(self, label: str, outbox: asyncio.Queue[dict[str, Any]], on_notification: Any,
                 on_broken: Any, on_lost: Any, max_message_bytes: int, on_request: Any = None) -> None:
        super().__init__(label, _NoPipe(), on_notification, on_broken, max_message_bytes,  # type: ignore[arg-type]
                         on_request)
        self._outbox = outbox
        self._on_lost = on_lost

    def _write(self, message: dict[str, Any]) -> None:
        self._outbox.put_nowait(message)
        if self._outbox.qsize() > MAX_UNSENT:
            self._on_broken(f"does not take what is sent to it (more than {MAX_UNSENT} messages wait)")

    def _answer(self, message: dict[str, Any], kind: str) -> None:
        # The transport answers a request whose stream ended without an answer (the server died, the
        # network dropped) with this error: the connection is lost, the call is answered as an exit.
        error = message.get("error") if kind is ERROR else None
        if (isinstance(error, dict) and error.get("code") == CONNECTION_CLOSED
                and str(error.get("message", "")).startswith("SSE stream")):
            ident = message.get("id")
            future = self._pending.pop(ident, None) if type(ident) is int else None
            if future is not None and not future.done():
                self._on_lost(f"lost the connection ({error['message']})")
                future.set_exception(Closed())
                return
        super()._answer(message, kind)


class _NoPipe:
    async def drain(self) -> None:
        pass


_classes: dict[type, type] = {}


def connection_class(base: type, start_failed: type[Exception], max_message_bytes: int) -> type:
    """``RemoteConnection``, a subclass of ``servers._Connection``, which servers.py hands in (so that this
    module never imports servers.py: servers imports it, lazily, and the layers keep no circle)."""
    made = _classes.get(base)
    if made is not None:
        return made
    _StartFailed = start_failed
    MAX_MESSAGE_BYTES = max_message_bytes

    class RemoteConnection(base):  # type: ignore[misc, valid-type]
        """One session with a remote server (one ``Mcp-Session-Id``, or one SSE stream)."""

        def __init__(self, server: Any) -> None:  # servers._Server
            super().__init__(server)
            self.process = _RemoteEnd()  # type: ignore[assignment]
            self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
            self._ending = asyncio.Event()
            self._runner: asyncio.Task[None] | None = None
            self._connected = asyncio.Event()
            self.auth: Any = None  # auth.OAuth, for a server without an Authorization header
            self._connecting: asyncio.Future[list[dict[str, Any]]] | None = None

        # -- start ------------------------------------------------------------------------------------

        async def spawn(self) -> None:
            config = self.server.config
            owner = self.server.owner
            headers = expand_headers(config.headers)
            if not any(key.lower() == "authorization" for key in headers):  # a bearer header needs no OAuth
                from .auth import OAuth

                self.auth = OAuth(expand(config.url or ""), self.server.label, owner, self.server.name, config.oauth)
            owner._live.add(self)
            self.session = RemoteSession(self.server.label, self._outbox, self._on_notification, self._broken,
                                         self._lost, MAX_MESSAGE_BYTES, self._on_request)  # roots, elicitation, sampling
            self._runner = asyncio.create_task(self._run(headers), name=f"mcp-remote {self.server.label}")
            self._pump = self._runner

        async def connect(self, timeout_s: float) -> list[dict[str, Any]]:
            """As a stdio server's, except that a server waiting for the user's login does not hold the
            thread's start: it returns no tools now, and they join when it is authorised (catalog/changed)."""
            self._connecting = asyncio.ensure_future(super().connect(LOGIN_TIMEOUT_S))
            waiters = [self._connecting]
            login = None
            if self.auth is not None:
                login = asyncio.ensure_future(self.auth.waiting.wait())
                waiters.append(login)
            done, _ = await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            if login is not None and login not in done:
                login.cancel()
            if self._connecting in done:
                return self._connecting.result()
            if login is not None and login in done:
                self.server.owner._keep(asyncio.create_task(self._after_login()))
                return []
            self._connecting.cancel()
            raise _StartFailed(f"did not finish initializing and listing its tools within {timeout_s * 1000:.0f} ms")

        async def _after_login(self) -> None:
            """The start goes on once the user has logged in: the server's tools join the thread."""
            assert self._connecting is not None
            server = self.server
            try:
                tools = await self._connecting
            except _StartFailed as exc:
                if not self.stopping and not server.owner.closing:
                    server.owner._notify({"threadId": server.owner.thread_id, "kind": "mcp_unavailable",
                                          "name": server.name, "message": f"MCP server '{server.name}' {exc}"})
                    server._fail(str(exc))
                    await self.kill()
                return
            except asyncio.CancelledError:
                return
            if server.conn is self and not server.owner.closing:
                server.listing = server._filter(tools)
                server.owner._tools_changed()
                if self.extras != server.extras:  # its resources and prompts join too (v4 §4)
                    server._set_extras(self.extras)

        async def _gone_reason(self) -> str:
            await self.process.wait_exit(2.0)
            return self.failure or "closed the connection during start-up"

        # -- the transport ----------------------------------------------------------------------------

        async def _run(self, headers: dict[str, str]) -> None:
            session = self.session
            assert session is not None
            config = self.server.config
            url = expand(config.url or "")
            if not url.startswith(("http://", "https://")):
                self.failure = f"has no http(s) url to connect to ({url!r}; its entry's url is {config.url!r})"
                self.eof = True
                session.close()
                self.process.exited.set()
                return
            try:
                from mcp.shared._httpx_utils import create_mcp_http_client

                if config.transport == "http":
                    from mcp.client.streamable_http import streamable_http_client

                    client = create_mcp_http_client(headers=headers, auth=self.auth.provider if self.auth else None)
                    client.event_hooks["response"].append(self._refused)
                    async with client, streamable_http_client(
                            url, http_client=client,
                            max_sse_event_size=MAX_MESSAGE_BYTES) as (read, write):  # one message, as on stdio
                        await self._serve(read, write)
                else:
                    from mcp.client.sse import sse_client

                    async with sse_client(url, headers=headers,
                                          auth=self.auth.provider if self.auth else None) as (read, write):
                        await self._serve(read, write)
            except Exception as exc:  # noqa: BLE001 - what the transport raised is why the connection ended
                if self.failure is None and not self.stopping:
                    self.failure = _describe(exc)
            finally:
                self.eof = True
                session.close()
                self.process.exited.set()
                if not self.stopping:
                    self.finish()

        async def _serve(self, read: Any, write: Any) -> None:
            sender = asyncio.create_task(self._send_all(write))
            receiver = asyncio.create_task(self._receive_all(read))
            ending = asyncio.create_task(self._ending.wait())
            try:
                await asyncio.wait([sender, receiver, ending], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sender, receiver, ending):
                    task.cancel()
                await asyncio.gather(sender, receiver, ending, return_exceptions=True)
            for task in (sender, receiver):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]

        async def _refused(self, response: Any) -> None:
            """A 401/403 the editor's own Authorization header got (OAuth answers its own): say so, not
            the transport's 'Server returned an error response'."""
            if response.status_code in (401, 403) and self.auth is None and self.failure is None:
                self.failure = (f"refused the Authorization header of its entry (HTTP {response.status_code}); "
                                "check the token in its headers")

        async def _send_all(self, write: Any) -> None:
            from mcp.shared.message import SessionMessage
            from mcp_types import jsonrpc_message_adapter

            while True:
                message = await self._outbox.get()
                await write.send(SessionMessage(jsonrpc_message_adapter.validate_python(message)))

        async def _receive_all(self, read: Any) -> None:
            session = self.session
            assert session is not None
            async for item in read:
                if isinstance(item, Exception):
                    write_stderr(f"[{self.server.label}] transport: {_describe(item)}\n")
                    continue
                try:
                    session.receive(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode())
                except Exception as exc:  # noqa: BLE001 - one bad message is not the connection's end
                    write_stderr(f"[{self.server.label}] ignored a message that is not MCP: {exc}\n")
            self.failure = self.failure or "closed the connection"

        # -- the end ----------------------------------------------------------------------------------

        def _lost(self, why: str) -> None:
            if self.failure is None:
                self.failure = why
            self._ending.set()

        def _broken(self, what: str | None) -> None:
            self._violation(what or "closed the connection")

        def _violation(self, what: str) -> None:
            if self.failure is None:
                self.failure = what
                if self.ready:
                    write_stderr(f"[{self.server.label}] {what}: closing the connection\n")
            self._ending.set()

        async def _finish(self) -> None:
            self._ending.set()
            if self._connecting is not None and not self._connecting.done():
                self._connecting.cancel()
            if self._runner is not None and not self._runner.done():
                done, _ = await asyncio.wait([self._runner], timeout=3.0)
                if not done:
                    self._runner.cancel()
                    await asyncio.wait([self._runner], timeout=2.0)
            if self.session is not None:
                self.session.close()
            if self.auth is not None:
                await self.auth.close()
            self.process.exited.set()
            self.server.owner._live.discard(self)
            self.server.on_exit(self)
            self.dead.set()

        async def stop(self) -> None:
            self.stopping = True
            if self.session is not None:
                self.session.close()
            await self.finish()

        async def kill(self) -> None:
            await self.stop()

    _classes[base] = RemoteConnection
    return RemoteConnection


def _describe(exc: BaseException) -> str:
    """One line for what ended a connection: the innermost cause of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    name = type(exc).__name__
    text = str(exc) or name
    if "401" in text or name == "OAuthFlowError":
        return f"is not authorised ({text})"
    return f"could not be reached or closed the connection ({name}: {text})"
