"""JSON-RPC 2.0 over a server's stdio, the client side of MCP's base protocol.

One ``Session`` per server process. The caller owns the pipes (``process.py``) and the read loop:
it hands every line the server wrote to ``receive()``, and says ``close()`` when the server's
stdout is over or the server is being stopped. The session:

- sends requests with integer ids and matches answers to them (an id the server echoes as a
  string of digits matches too, as the official SDKs allow); an answer to an id we abandoned is
  dropped, one to an id we never sent is logged to stderr and dropped;
- sends ``notifications/cancelled`` for a request whose awaiting task is cancelled (a timeout,
  or the editor's ``$/cancelRequest``) — never for ``initialize``, which the specification says
  must not be cancelled;
- answers the server's requests: ``ping`` with an empty result, anything else (sampling, roots,
  elicitation, ...) with a JSON-RPC error: the sidecar offers the server none of them;
- hands the server's notifications to ``on_notification(method, params)``.

Encoding and decoding are ``jsonio`` (orjson where it gives the standard library's answer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from harness_sidecar.base import jsondepth, jsonio
from .messages import ERROR, METHOD_NOT_FOUND, NOTIFICATION, REQUEST, RESPONSE, Invalid, classify
from .process import write_stderr

OnNotification = Callable[[str, dict[str, Any]], None]


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Closed(Exception):
    """The connection ended (the server's stdout is over, or it is being stopped) before an answer."""


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


class Session:
    """Requests out, answers in, over one server's stdin (a ``StreamWriter``) and stdout lines."""

    def __init__(self, label: str, stdin: asyncio.StreamWriter, on_notification: OnNotification,
                 on_broken: Callable[[str | None], Any], max_unsent: int) -> None:
        """``on_broken(None)``: its stdin is gone; ``on_broken(why)``: it broke the protocol (it is to be
        killed). More than ``max_unsent`` bytes waiting for it to read its stdin is such a break."""
        self.label = label
        self._stdin = stdin
        self._on_notification = on_notification
        self._on_broken = on_broken
        self._max_unsent = max_unsent
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._last_id = 0
        self.closed = False

    # -- out --------------------------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        self._stdin.write(jsonio.dumps(message) + b"\n")
        # Requests wait for the pipe to drain; answers to its pings and notifications do not, so a
        # server that sends without reading would otherwise grow this buffer without end.
        if self._stdin.transport.get_write_buffer_size() > self._max_unsent:
            self._on_broken(f"does not read its stdin (more than {self._max_unsent} bytes wait for it)")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its result (an object); ``RpcError`` or ``Closed`` if none comes.

        Cancelling the awaiting task sends ``notifications/cancelled`` (except for ``initialize``)
        and re-raises.
        """
        if self.closed:
            raise Closed
        self._last_id += 1
        ident = self._last_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._write(message)
            await self._stdin.drain()
            return await future
        except (ConnectionError, OSError):  # its stdin is gone: it exited, or closed it
            if not self.closed:
                self._on_broken(None)
            raise Closed from None
        except asyncio.CancelledError:
            if self._pending.get(ident) is future and not self.closed and method != "initialize":
                self.notify("notifications/cancelled", {"requestId": ident, "reason": "the call was abandoned "
                                                        "(timed out or cancelled by the editor)"})
            raise
        finally:
            if self._pending.get(ident) is future:
                del self._pending[ident]

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (no answer; written without waiting for the pipe to drain)."""
        if self.closed:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    # -- in ---------------------------------------------------------------------------------------

    def receive(self, line: bytes) -> None:
        """One line the server wrote; ``Invalid`` (a ``ValueError``) when it is not a JSON-RPC message."""
        try:
            message = jsondepth.bounded_loads(jsonio.loads, line)
        except jsondepth.TooDeep as exc:  # an answer that deep is the server's failure, never ours
            head = exc.value
            if type(head) is not dict or "method" in head or "id" not in head:
                raise Invalid(f"nested deeper than {jsondepth.MAX_DEPTH} levels") from None
            message = {"jsonrpc": "2.0", "id": head["id"], "error": {
                "code": -32603, "message": f"the server's answer is nested deeper than {jsondepth.MAX_DEPTH} levels"}}
        except (ValueError, RecursionError):
            raise Invalid("not JSON") from None
        kind = classify(message)
        if kind is RESPONSE or kind is ERROR:
            self._answer(message, kind)
        elif kind is NOTIFICATION:
            self._on_notification(message["method"], message.get("params") or {})
        elif kind is REQUEST:
            self._serve(message)

    def _answer(self, message: dict[str, Any], kind: str) -> None:
        ident = message.get("id")
        key = ident
        if type(key) is str:
            try:
                key = int(key)
            except ValueError:
                pass
        future = self._pending.pop(key, None) if type(key) is int else None  # type: ignore[arg-type]
        if future is None:
            if kind is ERROR and ident is None:
                error = message["error"]
                write_stderr(f"[{self.label}] reported an error: {error['message']} (code {error['code']})\n")
            elif not (type(key) is int and 0 < key <= self._last_id):  # a late answer to an abandoned one is normal
                write_stderr(f"[{self.label}] answered request id {_preview(ident)}, which it was never sent "
                             "(ignored)\n")
            return
        if future.done():
            return
        if kind is RESPONSE:
            future.set_result(message["result"])
        else:
            error = message["error"]
            future.set_exception(RpcError(error["code"], error["message"], error.get("data")))

    def _serve(self, message: dict[str, Any]) -> None:
        """A request from the server: ``ping`` is answered; nothing else is offered."""
        method = message["method"]
        if method == "ping":
            self._reply(message["id"], {"result": {}})
        else:
            self._reply(message["id"], {"error": {"code": METHOD_NOT_FOUND,
                                                  "message": f"the client does not offer {method}"}})

    def _reply(self, ident: Any, body: dict[str, Any]) -> None:
        if not self.closed:
            self._write({"jsonrpc": "2.0", "id": ident, **body})

    # -- the end ----------------------------------------------------------------------------------

    def close(self) -> None:
        """No more answers will come: every request awaiting one raises ``Closed``; nothing more is sent."""
        self.closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(Closed())
