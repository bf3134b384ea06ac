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
import collections
import gc
import itertools
import logging
import threading
from typing import Any, Awaitable, Callable, Protocol

from harness_sidecar import PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from harness_sidecar.base import jsondepth, stdjson
from harness_sidecar.base.errors import (
    DomainError,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    PeerError,
    RequestCancelled,
    RpcError,
    ServerNotInitialized,
    TooDeep,
    as_rpc_error,
    object_params,
)
from harness_sidecar.wire import linebound
from harness_sidecar.wire.lifecycle import initialize_result
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


def _id_key(request_id: Any) -> tuple[type, Any]:
    return (type(request_id), request_id)


class _Queued:
    """A request waiting for one of the ``max_in_flight`` places: its raw frame, parsed again when it starts."""

    __slots__ = ("request_id", "method", "handler", "raw", "cancelled")

    def __init__(self, request_id: Any, method: str, handler: Callable[..., Any], raw: bytes) -> None:
        self.request_id = request_id
        self.method = method
        self.handler = handler
        self.raw = raw
        self.cancelled = False


class _Begun:
    """A served request its service began without an asyncio Task (``Sidecar.begin_now``): ``cancel`` is
    the service's canceller (it answers, cancelled); ``waiter`` a future for those who wait for the
    request's answer (``shutdown``, ``exit``), made only for them."""

    __slots__ = ("cancel", "answered", "_waiter")

    def __init__(self) -> None:
        self.cancel: Callable[[], None] = _nothing
        self.answered = False
        self._waiter: asyncio.Future | None = None

    def waiter(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future:
        if self._waiter is None:
            self._waiter = loop.create_future()
            if self.answered:
                self._waiter.set_result(None)
        return self._waiter

    def done(self) -> None:
        self.answered = True
        self.cancel = _nothing  # no cycle (canceller → respond → this) left for the collector
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _nothing() -> None:
    pass


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
        self._running = 0  # served requests holding one of the max_in_flight places
        self._queue: collections.deque[_Queued] = collections.deque()  # the others, in arrival order
        self._queued: dict[tuple[type, Any], _Queued] = {}
        self._queued_bytes = 0
        self._service_factory = service_factory
        self._service: Service | None = None
        self.initialized = False
        self.shutting_down = False
        self.eof = False
        self.exiting = False
        self._served: dict[tuple[type, Any], asyncio.Task | _Begun] = {}
        self._sent: dict[int, asyncio.Future] = {}
        self._sent_ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.exit_code: asyncio.Future[int] | None = None
        self.client_capabilities: dict[str, Any] = {}
        self._finishing = False

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
        self._loop = asyncio.get_running_loop()
        self.exit_code = self._loop.create_future()
        loop = self._loop
        self.writer.coalesce(loop)
        if self.initialized:
            self._schedule_warm()
        start_reader(lambda batch: loop.call_soon_threadsafe(self.receive_batch, batch))
        try:
            return await self.exit_code
        finally:
            self.writer.flush()

    def receive_batch(self, batch: list[Any]) -> None:
        try:
            for item in batch:
                if self.exiting:
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
            self._on_eof()
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
                self._on_response(request_id, message)
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
            future = self._sent.get(request_id) if type(request_id) is int else None
            if future is not None and not future.done():
                future.set_exception(PeerError(f"the editor's answer is nested deeper than {jsondepth.MAX_DEPTH} "
                                               f"levels"))
                return
        if whole and request_id is _NO_ID and type(message) is dict and type(message.get("method")) is str:
            logger.warning("dropped a %s notification nested deeper than %d levels", message["method"],
                           jsondepth.MAX_DEPTH)
            return
        key = None if request_id is _NO_ID else _id_key(request_id)
        if key is not None and key in self._served:
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
        if self.shutting_down:
            self.send_error(request_id, InvalidRequest(f"'{method}' after 'shutdown'", "shutting_down"))
            return
        key = _id_key(request_id)
        if key in self._served or key in self._queued:
            self.send_error(request_id, InvalidRequest(f"request id {request_id!r} is already in flight",
                                                       "duplicate_id"))
            return
        if method == "shutdown":
            self.shutting_down = True
            handler = self._shutdown
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
        if method != "shutdown" and self._running >= self.max_in_flight:
            if self._queued_bytes + len(raw) > self.max_queued_bytes:
                self.send_error(request_id, DomainError(
                    "overloaded", f"'{method}' was not run: {self.max_in_flight} requests are running and the "
                                  f"queue behind them is full (--max-queued-bytes {self.max_queued_bytes})",
                    limit=self.max_in_flight))
                return
            entry = _Queued(request_id, method, handler, raw)
            self._queue.append(entry)
            self._queued[key] = entry
            self._queued_bytes += len(raw)
            return
        self._start_request(request_id, method, handler, params)

    def _start_request(self, request_id: Any, method: str, handler: Callable[..., Any], params: dict) -> None:
        assert self._loop is not None
        counted = method != "shutdown"  # shutdown waits for the others: it must not hold a place
        if counted:
            self._running += 1
        begin_now = self._service.begin_now.get(method) if self._service is not None else None
        if begin_now is not None and self._begin_now(request_id, method, begin_now, params):
            return
        # named for its method: ``_cancel`` answers for a task cancelled before it started
        self._served[_id_key(request_id)] = self._loop.create_task(
            self._answer(request_id, method, handler, params, counted), name=method)

    def _begin_now(self, request_id: Any, method: str, begin_now: Callable[..., Any], params: dict) -> bool:
        """Begin a request without a task (its common case: ``Sidecar.begin_now``); False if it needs one."""
        begun = _Begun()
        key = _id_key(request_id)
        self._served[key] = begun

        def respond(result: Any, error: BaseException | None) -> None:
            if begun.answered:
                return
            begun.done()
            try:
                self._reply(request_id, method, result, error)
            finally:
                self._running -= 1
                self._answered(request_id)

        try:
            cancel = begin_now(params, respond)
        except Exception as exc:  # noqa: BLE001 - answered like a handler's failure
            respond(None, exc)
            return True
        if cancel is None and not begun.answered:
            del self._served[key]
            return False
        begun.cancel = cancel or _nothing
        return True

    def _cancel(self, task: asyncio.Task | _Begun, request_id: Any) -> None:
        """Cancel a served request. One cancelled before its first step never runs ``_answer``: it is
        answered for when it ends (a callback only then — not a loop turn more for every request)."""
        if type(task) is _Begun:
            task.cancel()  # answers it, cancelled
            return
        if not task.cancelling():  # once: a second cancel must not answer twice
            method = task.get_name()
            task.add_done_callback(lambda t: self._cancelled_before_start(t, request_id, method, method != "shutdown"))
        task.cancel()

    def _admit(self) -> None:
        """Start queued requests, in arrival order, while places are free."""
        while self._queue and self._running < self.max_in_flight:
            entry = self._queue.popleft()
            if entry.cancelled:
                continue
            del self._queued[_id_key(entry.request_id)]
            self._queued_bytes -= len(entry.raw)
            try:
                params = object_params(self.loads(entry.raw).get("params", {}))
            except Exception as exc:  # noqa: BLE001 - it parsed when it arrived; never leave it unanswered
                self.send_error(entry.request_id, as_rpc_error(entry.method, exc))
                continue
            self._start_request(entry.request_id, entry.method, entry.handler, params)

    def _cancel_queued(self, entry: _Queued, why: str) -> None:
        entry.cancelled = True
        self._queued.pop(_id_key(entry.request_id), None)
        self._queued_bytes -= len(entry.raw)
        self.send_error(entry.request_id, RequestCancelled(f"'{entry.method}' was cancelled {why}"))

    def _cancelled_before_start(self, task: asyncio.Task, request_id: Any, method: str, counted: bool) -> None:
        # A task cancelled before its first step never runs _answer: answer for it here.
        if task.cancelled():
            self.send_error(request_id, RequestCancelled(f"'{method}' was cancelled"))
            if counted:
                self._running -= 1
            self._answered(request_id)

    async def _answer(self, request_id: Any, method: str, handler: Callable[..., Any], params: dict,
                      counted: bool = True) -> None:
        try:
            result = await handler(params)
        except (asyncio.CancelledError, Exception) as exc:  # noqa: BLE001 - every request is answered
            self._reply(request_id, method, None, exc)
        else:
            self._send_result(request_id, method, result)
        finally:
            if counted:
                self._running -= 1
            self._answered(request_id)

    def _reply(self, request_id: Any, method: str, result: Any, error: BaseException | None) -> None:
        """The answer to a served request: its result, or what its handler's exception means."""
        if error is None:
            self._send_result(request_id, method, result)
        elif isinstance(error, asyncio.CancelledError):
            self.send_error(request_id, RequestCancelled(f"'{method}' was cancelled"))
        elif isinstance(error, RpcError):
            self.send_error(request_id, error)
        else:
            logger.error("%s failed", method, exc_info=error)
            self.send_error(request_id, as_rpc_error(method, error))

    def _answered(self, request_id: Any) -> None:
        """A served request is answered: it leaves the table, a queued one may start, EOF may end the session."""
        self._served.pop(_id_key(request_id), None)
        if self._queue:
            self._admit()
        self._maybe_finish()

    def _send_result(self, request_id: Any, method: str, result: Any) -> None:
        """A response, never over ``max_result_bytes`` and never anything but standard JSON."""
        message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        try:
            data = self.writer.encode(message)
        except (ValueError, TypeError) as exc:  # not JSON data: never on stdout
            logger.error("the answer to %s is not JSON: %s", method, exc)
            self.send_error(request_id, InternalError(f"the answer to '{method}' contained a value that is not "
                                                      f"JSON ({exc})"))
            return
        if len(data) > self.max_result_bytes:
            replacement = self.service.oversize(method, result, len(data)) if self._service is not None else None
            if replacement is None:
                self.send_error(request_id, DomainError(
                    "too_large", f"the answer to '{method}' is {len(data)} bytes; --max-result-bytes is "
                                 f"{self.max_result_bytes}", size=len(data), limit=self.max_result_bytes))
                return
            data = self.writer.encode({"jsonrpc": "2.0", "id": request_id, "result": replacement})
        self.writer.write_encoded(data, answer=True)  # a large one may be overtaken (wire/outbox.py)

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
        if self.shutting_down or self.exiting or self.eof:
            return
        if self._served:  # the editor's first requests come first: start it once they are answered
            self._schedule_warm()
            return
        warm = getattr(self.service, "warm", None)
        if warm is not None:
            warm()

    def preload(self) -> None:
        """Warm the modules the next requests need while the editor reads the answer."""
        threading.Thread(target=_preload, args=(self,), name="harness-preload", daemon=True).start()

    async def _shutdown(self, params: dict) -> None:
        while True:  # the requests in flight, and the queued ones as they start
            others = [self._waitable(t) for t in self._served.values() if t is not asyncio.current_task()]
            if not others:
                break
            await asyncio.wait(others)
        await self._close_service("shutdown")
        return None

    async def _close_service(self, reason: str) -> None:
        if self._service is not None:
            try:
                await self._service.close_all(reason)
            except Exception:  # noqa: BLE001 - ending the threads must not keep the session from ending
                logger.exception("closing the threads failed")

    # -- notifications ------------------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "exit":
            self._exit(0 if self.shutting_down else 1)
        elif method == "$/cancelRequest":
            target = params.get("id") if isinstance(params, dict) else None
            key = _id_key(target) if isinstance(target, (int, str)) else None
            task = self._served.get(key) if key is not None else None
            if task is not None:
                self._cancel(task, target)
            elif key is not None and key in self._queued:
                self._cancel_queued(self._queued[key], "before it started")
        elif method == "initialized":
            pass
        else:
            logger.debug("ignoring notification %s", method)

    def _exit(self, code: int) -> None:
        """``exit``: after ``shutdown``, finish what was asked before it; without, cancel everything."""
        assert self.exit_code is not None
        self.exiting = True
        self._fail_sent_requests("the editor sent 'exit'")
        for entry in list(self._queued.values()):
            self._cancel_queued(entry, "by exit before it started")
        pending = [self._waitable(t) for t in self._served.values()]
        if not self.shutting_down:
            for (_, request_id), task in list(self._served.items()):
                self._cancel(task, request_id)
        if pending:
            asyncio.ensure_future(self._exit_after(pending, code))
        elif not self.exit_code.done():
            self.exit_code.set_result(code)

    def _waitable(self, served: asyncio.Task | _Begun) -> asyncio.Future:
        assert self._loop is not None
        return served.waiter(self._loop) if type(served) is _Begun else served  # type: ignore[return-value]

    async def _exit_after(self, pending: list[asyncio.Future], code: int) -> None:
        await asyncio.wait(pending)
        if self.exit_code is not None and not self.exit_code.done():
            self.exit_code.set_result(code)

    def _on_eof(self) -> None:
        self.eof = True
        self._fail_sent_requests("the editor closed stdin")
        self._maybe_finish()

    def _fail_sent_requests(self, reason: str) -> None:
        for future in self._sent.values():
            if not future.done():
                future.set_exception(PeerError(reason))

    def _maybe_finish(self) -> None:
        if self.eof and not self._served and not self._queued and self.exit_code is not None \
                and not self.exit_code.done() \
                and not self._finishing:
            self._finishing = True
            asyncio.ensure_future(self._finish_eof())

    async def _finish_eof(self) -> None:
        await self._close_service("eof")
        if self.exit_code is not None and not self.exit_code.done():
            self.exit_code.set_result(0)

    # -- sent requests and notifications (the Peer the methods use) -----------------------------

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        if self.eof or self.exiting or self.writer.broken:
            raise PeerError("the editor is gone")
        assert self._loop is not None
        request_id = next(self._sent_ids)
        data = self.writer.encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        if len(data) > self.max_result_bytes:  # never sent: the asker gets what a refusal gives it
            logger.warning("did not send %s: %d bytes, over --max-result-bytes (%d)", method, len(data),
                           self.max_result_bytes)
            raise PeerError(f"the {method} request would be {len(data)} bytes, over --max-result-bytes "
                            f"({self.max_result_bytes}); it was not sent")
        future = self._loop.create_future()
        self._sent[request_id] = future
        try:
            self.writer.write_encoded(data)
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            self._cancel_sent(request_id)
            raise TimeoutError(f"no answer to {method} within {timeout_s:g} s") from None
        except asyncio.CancelledError:
            self._cancel_sent(request_id)  # the editor may stop asking the user: nobody waits any more
            raise
        finally:
            self._sent.pop(request_id, None)

    def _cancel_sent(self, request_id: int) -> None:
        if not (self.eof or self.exiting or self.writer.broken):
            self.notify("$/cancelRequest", {"id": request_id})

    def _on_response(self, request_id: Any, message: dict[str, Any]) -> None:
        future = self._sent.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            logger.info("ignoring a response to unknown or expired request %r", request_id)
            return
        if "error" in message:
            error = message["error"]
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(PeerError(str(text or error)))
        else:
            future.set_result(message.get("result"))

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
