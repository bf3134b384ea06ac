"""The JSON-RPC endpoint: lifecycle, dispatch, cancellation and the editor-bound requests.

Served requests (the editor's) and sent requests (``item/tool/call``) live in separate
tables. Every served request is answered exactly once, whatever happens: an error in a
handler, a ``$/cancelRequest``, ``exit``, or stdin reaching EOF while it is in flight.

Backpressure never stops answers: stdin is always read, so the editor's answers to the
sidecar's own requests (``ui/*``, ``item/tool/call``) and its notifications are applied at
once. At most ``max_in_flight`` requests run; the ones over it wait in arrival order in a
queue of at most ``max_queued_bytes`` (their raw frames: they are parsed again when they
start); one that does not fit is answered ``overloaded`` and nothing of it runs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from typing import Any, Awaitable, Callable, Protocol

from harness_sidecar import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from harness_sidecar.base import jsondepth, stdjson
from harness_sidecar.base.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    PeerError,
    RpcError,
    ServerNotInitialized,
    TooDeep,
    object_params,
)
from harness_sidecar.wire import linebound
from harness_sidecar.wire.lifecycle import initialize_result
from harness_sidecar.wire.sent import SentRequests
from harness_sidecar.wire.ending import SessionEnd
from harness_sidecar.wire.served import ServedRequests, _id_key
from harness_sidecar.wire.transport import BadFrame, TooLarge, Writer

logger = logging.getLogger(__name__)

class Service(Protocol):
    """What the endpoint serves (``threads.sidecar.Sidecar``, handed in by ``cli``: the wire imports
    nothing of the layers above it)."""

    methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]]
    begin_now: dict[str, Callable[..., Any]]
    max_result_bytes: int

    def oversize(self, method: str, result: Any, size: int) -> Any: ...

    async def close_all(self, reason: str) -> None: ...


_NO_ID = object()
WARM_DELAY_S = 0.2
# A young-generation pass after 20,000 net allocations instead of 700: a request's objects are
# freed by reference counting long before that; the few cycles (tasks, futures) wait a little.
GC_THRESHOLD = 20_000


def _preload(endpoint: "Endpoint") -> None:
    try:
        from harness_sidecar.base import jsonio

        # The faster codec (same answers) from now on; until then the standard library served.
        endpoint.loads = jsonio.loads
        endpoint.writer.jsonio = jsonio
        if endpoint.preload_service is not None:
            endpoint.preload_service()  # the modules behind the methods (cli: the threads and their discovery)
        # What start-up made (modules, classes, constants) lives as long as the process: out of
        # the collector's way, so its passes look at requests only (under a stream of calls they
        # were a quarter of the sidecar's CPU).
        gc.freeze()
    except Exception:  # noqa: BLE001 - the request that needs them will report the failure
        logger.debug("preloading failed", exc_info=True)


class Endpoint:
    def __init__(self, writer: Writer, service_factory: Callable[["Endpoint"], Service] | None = None,
                 max_in_flight: int = 1000, max_result_bytes: int = 16 * 1024 * 1024,
                 max_queued_bytes: int = 64 * 1024 * 1024, preload_service: Callable[[], None] | None = None) -> None:
        self.writer = writer
        self.preload_service = preload_service
        self.loads: Callable[[bytes], Any] = stdjson.loads  # jsonio.loads once preloaded
        self.max_in_flight = max_in_flight
        self.max_result_bytes = max_result_bytes
        self.max_queued_bytes = max_queued_bytes
        self.reader: Any = None  # the transport.Reader (never paused: answers must always be read)
        self.served = ServedRequests(self, max_in_flight, max_queued_bytes)  # the editor's requests
        self.sent = SentRequests(writer, max_result_bytes, self.editor_gone)  # the sidecar's, to the editor
        self.ending = SessionEnd(self.served, self.sent, self._close_service)  # shutdown, exit, EOF
        self.maybe_finish = self.ending.maybe_finish  # what ``served`` calls as each request is answered
        self._service_factory = service_factory
        self._service: Service | None = None
        self.initialized = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.client_capabilities: dict[str, Any] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None
        return self._loop

    def editor_gone(self) -> bool:
        """Nothing more can be asked of the editor: it closed stdin, we are exiting, or stdout broke."""
        ending = self.ending
        return ending.eof or ending.exiting or self.writer.broken

    @property
    def service(self) -> Service:
        if self._service is None:
            if self._service_factory is None:
                raise InternalError("the endpoint was given no methods to serve")
            self._service = self._service_factory(self)
            self._service.max_result_bytes = self.max_result_bytes
        return self._service

    # -- entry points ----------------------------------------------------------------------

    async def serve(self, start_reader: Callable[[Callable[[list[Any]], None]], None]) -> int:
        """Serve until ``exit`` or EOF; return the process exit code."""
        gc.set_threshold(GC_THRESHOLD, 20, 20)
        gc.enable()  # cli starts serving without it (what start-up makes is frozen by preload)
        loop = self._loop = asyncio.get_running_loop()
        exit_code = self.ending.start(loop)
        self.writer.coalesce(loop)
        if self.initialized:
            self._schedule_warm()
        start_reader(lambda batch: loop.call_soon_threadsafe(self.receive_batch, batch))
        try:
            return await exit_code
        finally:
            self.writer.flush()

    def receive_batch(self, batch: list[Any]) -> None:
        ending = self.ending
        try:
            for item in batch:
                if ending.exiting:
                    return  # nothing is read after 'exit'
                try:
                    self.receive(item)
                except Exception:  # noqa: BLE001 - one bad message must never end the session
                    logger.exception("failed to handle an incoming message")
        finally:
            if self.reader is not None:
                self.reader.handled(batch)

    def receive(self, item: Any) -> None:
        if isinstance(item, EOFError):
            self.ending.on_eof()
        elif isinstance(item, TooLarge):
            size = f" ({item.size} bytes)" if item.size is not None else ""
            self.send_error(None, InvalidRequest(f"message too large{size}: the limit is 16 MiB", "too_large"))
        elif isinstance(item, BadFrame):
            self.send_error(None, ParseError(f"bad Content-Length frame: {item.reason}"))
        else:
            self.receive_frame(item)

    def receive_frame(self, raw: bytes) -> None:
        try:
            # NaN and Infinity are not JSON; a message of at most MAX_DEPTH bytes cannot nest deeper than that
            message = self.loads(raw) if len(raw) <= jsondepth.MAX_DEPTH else jsondepth.bounded_loads(self.loads, raw)
        except jsondepth.TooDeep as exc:
            self._too_deep(exc.value, exc.whole)
            return
        except UnicodeDecodeError as exc:
            self.send_error(None, ParseError(f"the message is not valid UTF-8 (byte {exc.start})"))
            return
        except ValueError as exc:
            self.send_error(None, ParseError(f"malformed JSON: {exc}"))
            return
        except RecursionError:
            self.send_error(None, ParseError("the message is nested too deeply to parse"))
            return
        if isinstance(message, list):
            self.send_error(None, InvalidRequest("batches (JSON arrays) are not supported; send one object per line"))
            return
        if not isinstance(message, dict):
            self.send_error(None, InvalidRequest(f"a message must be a JSON object, not {type(message).__name__}"))
            return
        request_id = message.get("id", _NO_ID)
        if request_id is not _NO_ID and (not isinstance(request_id, (int, str)) or isinstance(request_id, bool)):
            self.send_error(None, InvalidRequest("'id' must be an integer or a string"))
            return
        usable_id = None if request_id is _NO_ID else request_id
        if "jsonrpc" in message and message["jsonrpc"] != "2.0":
            self.send_error(usable_id, InvalidRequest("'jsonrpc' must be \"2.0\" when present"))
            return
        method = message.get("method")
        if method is None:
            if request_id is not _NO_ID and ("result" in message or "error" in message):
                self.sent.on_response(request_id, message)
            else:
                self.send_error(usable_id, InvalidRequest("a request needs a 'method'"))
            return
        if not isinstance(method, str):
            self.send_error(usable_id, InvalidRequest("'method' must be a string"))
            return
        params = message.get("params", {})
        if request_id is _NO_ID:
            self._on_notification(method, params)
        else:
            self._on_request(request_id, method, params, raw)

    def _too_deep(self, message: Any, whole: bool) -> None:
        """A message nested deeper than 512 levels: a request is answered ``too_deep`` by its id, an
        answer to the sidecar's own request fails that request (its asker fails closed)."""
        error = TooDeep(f"the message is nested deeper than {jsondepth.MAX_DEPTH} levels of arrays and objects")
        request_id = message.get("id", _NO_ID) if type(message) is dict else _NO_ID
        if request_id is not _NO_ID and (type(request_id) is not int and type(request_id) is not str):
            request_id = _NO_ID
        if type(message) is dict and "method" not in message and request_id is not _NO_ID:
            future = self.sent.table.get(request_id) if type(request_id) is int else None
            if future is not None and not future.done():
                future.set_exception(PeerError(f"the editor's answer is nested deeper than {jsondepth.MAX_DEPTH} "
                                               f"levels"))
                return
        if whole and request_id is _NO_ID and type(message) is dict and type(message.get("method")) is str:
            logger.warning("dropped a %s notification nested deeper than %d levels", message["method"],
                           jsondepth.MAX_DEPTH)
            return
        key = None if request_id is _NO_ID else _id_key(request_id)
        if key is not None and key in self.served.table:
            request_id = _NO_ID  # never a second answer to a request in flight
        self.send_error(None if request_id is _NO_ID else request_id, error)

    # -- served requests ----------------------------------------------------------------------

    def _on_request(self, request_id: Any, method: str, params: Any, raw: bytes = b"") -> None:
        if method == "initialize":
            self._initialize(request_id, params)
            return
        if not self.initialized:
            self.send_error(request_id, ServerNotInitialized(f"'{method}' before 'initialize'"))
            return
        if self.ending.shutting_down:
            self.send_error(request_id, InvalidRequest(f"'{method}' after 'shutdown'", "shutting_down"))
            return
        key = _id_key(request_id)
        if key in self.served:
            self.send_error(request_id, InvalidRequest(f"request id {request_id!r} is already in flight",
                                                       "duplicate_id"))
            return
        if method == "shutdown":
            self.ending.shutting_down = True
            handler = self.ending.shutdown
        else:
            handler = self.service.methods.get(method)  # type: ignore[assignment]
            if handler is None:
                self.send_error(request_id, MethodNotFound(f"unknown method '{method}'"))
                return
        try:
            params = object_params(params)
        except InvalidParams as exc:
            self.send_error(request_id, exc)
            return
        self.served.admit_or_queue(request_id, method, handler, params, raw, key)

    def _initialize(self, request_id: Any, params: Any) -> None:
        try:
            params = object_params(params)
        except InvalidParams as exc:
            self.send_error(request_id, exc)
            return
        if self.initialized:
            self.send_error(request_id, InvalidRequest("'initialize' was already called", "already_initialized"))
            return
        self.set_capabilities(params)
        version = params.get("protocolVersion")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            logger.warning("client asked for protocol %r; serving protocol %s", version, PROTOCOL_VERSION)
        self.initialized = True
        self.send({"jsonrpc": "2.0", "id": request_id, "result": initialize_result(self.writer.framing)})
        self.preload()
        self._schedule_warm()

    def set_capabilities(self, params: dict[str, Any]) -> None:
        capabilities = params.get("capabilities")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}

    def _schedule_warm(self) -> None:
        # A spare extension host, started once the editor has its answer and no request is in
        # flight: a thread that trusts an extension then need not wait for a cold start, and the
        # spare's own start does not compete with the editor's first requests for the CPU.
        assert self._loop is not None
        self._loop.call_later(WARM_DELAY_S, self._warm)

    def _warm(self) -> None:
        ending = self.ending
        if ending.shutting_down or ending.exiting or ending.eof:
            return
        if self.served.table:  # the editor's first requests come first: start it once they are answered
            self._schedule_warm()
            return
        warm = getattr(self.service, "warm", None)
        if warm is not None:
            warm()

    def preload(self, now: bool = False) -> None:
        """Warm the modules the next requests need while the editor reads the answer; ``now``: here, in
        this thread (``cli``, before the event loop runs: no second thread competes for the GIL)."""
        if now:
            _preload(self)
            return
        threading.Thread(target=_preload, args=(self,), name="harness-preload", daemon=True).start()

    async def _close_service(self, reason: str) -> None:
        if self._service is not None:
            try:
                await self._service.close_all(reason)
            except Exception:  # noqa: BLE001 - ending the threads must not keep the session from ending
                logger.exception("closing the threads failed")

    # -- notifications ------------------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "exit":
            self.ending.exit(0 if self.ending.shutting_down else 1)
        elif method == "$/cancelRequest":
            target = params.get("id") if isinstance(params, dict) else None
            key = _id_key(target) if isinstance(target, (int, str)) else None
            task = self.served.table.get(key) if key is not None else None
            if task is not None:
                self.served.cancel(task, target)
            elif key is not None and key in self.served.queued:
                self.served.cancel_queued(self.served.queued[key], "before it started")
        elif method == "initialized":
            pass
        else:
            logger.debug("ignoring notification %s", method)

    # -- sent requests and notifications (the Peer the methods use) -----------------------------

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        return await self.sent.request(method, params, timeout_s)

    # -- output --------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """A notification or an error response, cut to fit ``--max-result-bytes`` (``linebound``)."""
        data = self.writer.encode(message)
        if len(data) > self.max_result_bytes:
            fitted = linebound.fit(message, self.writer.encode, self.max_result_bytes, len(data))
            error = message.get("error")
            if fitted is None and type(error) is dict:  # a request is answered, always: its code and kind only
                data_kind = error.get("data", {}).get("kind") if type(error.get("data")) is dict else None
                fitted = self.writer.encode({"jsonrpc": "2.0", "id": message.get("id"), "error": {
                    "code": error.get("code"), "message": "the error was over --max-result-bytes",
                    "data": {"kind": data_kind or "internal_error"}}})
            if fitted is None:
                logger.warning("dropped %s: %d bytes, over --max-result-bytes (%d), and not cuttable",
                               message.get("method") or "an error response", len(data), self.max_result_bytes)
                return
            data = fitted
        self.writer.write_encoded(data)

    def send_error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()})
