"""The part of the LSP mode served by pygls: the sidecar's custom requests, requests to the
client, cancellation and the end of the session. Imported by ``lsp`` on a thread, off the
path to the first diagnostic (see ``lsp``'s docstring); pygls and lsprotocol are imported
only here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import Any, Callable

from lsprotocol import types  # noqa: F401 - the heavy import this module exists to hold
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCRequestMessage, JsonRPCResponseMessage

from harness_sidecar import SERVER_NAME, __version__
from harness_sidecar.base.errors import KIND_OF_CODE, InvalidParams, PeerError, RpcError, as_rpc_error, object_params

logger = logging.getLogger(__name__)


class SidecarProtocol(LanguageServerProtocol):
    """Keeps the sidecar's own messages as plain JSON.

    pygls turns the params of methods it does not know into namedtuples (renaming keys
    that are not identifiers); the sidecar's methods and the answers to its
    ``item/tool/call`` requests must stay dicts, exactly as on the JSONL wire.
    """

    custom_methods: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent_ids: set[Any] = set()

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data:
            method = data.get("method")
            if method in self.custom_methods and "id" in data:
                return JsonRPCRequestMessage(id=data["id"], method=method, jsonrpc=data["jsonrpc"],
                                             params=data.get("params"))
            if method is None and "error" not in data and data.get("id") in self.sent_ids:
                return JsonRPCResponseMessage(id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result"))
        return super().structure_message(data)


class SidecarLanguageServer(LanguageServer):
    def report_server_error(self, error: Exception, source: Any) -> None:
        # A failed custom request is answered with its error; do not also pop up a message.
        logger.debug("request failed: %s", error)


class LspPeer:
    """The ``threads.Peer`` of the LSP mode: notifications and requests to the client."""

    def __init__(self, server: SidecarLanguageServer, capabilities: Any = None) -> None:
        self.server = server
        self._ids = itertools.count(1)
        # The sidecar's own capabilities (ui/*): initializationOptions.capabilities, as JSONL's
        # initialize.capabilities.
        self.client_capabilities: dict[str, Any] = capabilities if isinstance(capabilities, dict) else {}

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.server.protocol.notify(method, params)

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        protocol: SidecarProtocol = self.server.protocol  # type: ignore[assignment]
        # A string id: pygls keeps the incoming requests by id too, and a client that numbers its own
        # requests 1, 2, … (vscode-languageclient) must not have an answer to ours taken for one of them.
        msg_id = f"harness-sidecar-{next(self._ids)}"
        protocol.sent_ids.add(msg_id)
        try:
            future = asyncio.wrap_future(protocol.send_request(method, params, msg_id=msg_id))
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))  # the editor may close its dialog
            raise TimeoutError(f"no answer to {method} within {timeout_s:g} s") from None
        except asyncio.CancelledError:
            protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except JsonRpcException as exc:
            raise PeerError(exc.message) from None
        finally:
            protocol.sent_ids.discard(msg_id)


def _custom_handler(method: str, handler: Any) -> Any:
    async def serve(params: Any) -> Any:
        try:
            return await handler(object_params(params))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug is logged and answered with its kind, no traceback
            if not isinstance(exc, RpcError):
                logger.exception("%s failed", method)
            error = as_rpc_error(method, exc).to_error()
            raise JsonRpcException(error["message"], error["code"], error["data"]) from None

    serve.__name__ = f"serve_{method.replace('/', '_')}"
    return serve


class _Discard:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


class _Out:
    """pygls's writer: every error it writes leaves with an ``error.data.kind``."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def write(self, data: bytes) -> None:
        head, _, body = data.partition(b"\r\n\r\n")
        if b'"error"' in body:
            message = json.loads(body)
            error = message.get("error") if isinstance(message, dict) and "method" not in message else None
            if isinstance(error, dict) and not (isinstance(error.get("data"), dict) and "kind" in error["data"]):
                if error.get("data") is not None:
                    logger.debug("error data from pygls: %s", error["data"])
                error["data"] = {"kind": KIND_OF_CODE.get(error.get("code"), "internal_error")}
                self.session.send(message)
                return
        self.session.writer.write_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def close(self) -> None:
        pass


class Backend:
    """pygls, set up as if it had served this session's ``initialize`` itself."""

    def __init__(self, session: Any, make_sidecar: Callable[[Any], Any]) -> None:
        self.session = session
        server = SidecarLanguageServer(SERVER_NAME, __version__, protocol_cls=SidecarProtocol,
                                       text_document_sync_kind=types.TextDocumentSyncKind.Full)
        options = session.core.initialize_params.get("initializationOptions")
        sidecar = make_sidecar(LspPeer(server, options.get("capabilities") if isinstance(options, dict) else None))
        # The client watches the files (it registered our globs): the threads start no watcher and
        # their roots are registered with the client as they start.
        sidecar.watching = not session.core.client_watches
        sidecar.watch_requested = session.watch_roots if session.core.client_watches else None
        self.sidecar = sidecar
        self.own_watch: Any = None
        SidecarProtocol.custom_methods = frozenset(sidecar.methods)
        for method, handler in sidecar.methods.items():
            server.feature(method)(_custom_handler(method, handler))
        self.server = server
        self.protocol: SidecarProtocol = server.protocol  # type: ignore[assignment]
        # The router answered initialize; pygls runs it again unheard, to know the client.
        self.protocol.set_writer(_Discard())
        replay = {"jsonrpc": "2.0", "id": "harness-sidecar-replay", "method": "initialize",
                  "params": {"processId": None, "rootUri": None, "capabilities": {},
                             **session.core.initialize_params}}
        try:
            self.protocol.handle_message(self.protocol.structure_message(replay))
        except JsonRpcException:
            replay["params"] = {"processId": None, "rootUri": None, "capabilities": {}}
            self.protocol.handle_message(self.protocol.structure_message(replay))
        self.protocol.set_writer(_Out(session))

    def handle(self, message: dict[str, Any]) -> int | None:
        """Hand one message to pygls; the exit code when it was ``exit``."""
        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as exc:
            if "id" in message and "method" in message:
                self.session.send_error(message["id"], InvalidParams(f"'{message['method']}': invalid params"))
            else:
                logger.warning("dropping a malformed %s: %s", message.get("method", "response"), exc)
            return None
        try:
            self.protocol.handle_message(structured)
        except SystemExit as exc:  # pygls's exit handler
            return int(exc.code or 0)
        return None

    def files_changed(self, paths: list[str]) -> None:
        """The client's didChangeWatchedFiles (on the loop): the threads rescan."""
        self.sidecar.files_changed(paths)

    def run(self, inbox: Any, first: dict[str, Any]) -> int:
        return asyncio.run(self._main(inbox, first))

    async def _main(self, inbox: Any, first: dict[str, Any]) -> int:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()
        session = self.session

        def process(batch: list[Any]) -> None:
            for item in batch:
                if done.done():
                    return
                if isinstance(item, EOFError):
                    done.set_result(0)
                    return
                message = item if isinstance(item, dict) else session.decode(item)
                if message is None:
                    continue
                try:
                    session.route(message, in_loop=True)
                except Exception:  # noqa: BLE001 - one bad message must never end the session
                    logger.exception("failed to handle a message")
                if session.exit_code is not None:
                    done.set_result(session.exit_code)
                    return

        if not session.core.client_watches:
            # The client cannot watch for us: watch the server's own roots for the live diagnostics.
            self.own_watch = self.sidecar.watch(session.core.roots, lambda change: session.core.republish())
        inbox.connect(lambda batch: loop.call_soon_threadsafe(process, batch), [first])
        try:
            return await done
        finally:
            if self.own_watch is not None:
                self.own_watch.close()
