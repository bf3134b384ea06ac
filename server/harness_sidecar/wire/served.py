"""The requests the editor sent, from admission to answer: at most ``max_in_flight`` run; the ones over
it wait in arrival order in a queue of at most ``max_queued_bytes`` (their raw frames, parsed again when
they start); each is answered exactly once — its result, what its handler's exception means, or
cancelled — and leaves the table (python-lsp-jsonrpc's endpoint keeps served and sent requests apart
the same way: ``sent`` has the others). Owned by ``endpoint.Endpoint``, whose output it writes through.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any, Callable

from harness_sidecar.base.errors import DomainError, InternalError, RequestCancelled, RpcError, as_rpc_error, \
    object_params

logger = logging.getLogger("harness_sidecar.wire.endpoint")


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


class ServedRequests:
    """The table of served requests in flight (``table``) and the queue behind them."""

    def __init__(self, endpoint: Any, max_in_flight: int, max_queued_bytes: int) -> None:
        # endpoint.Endpoint: its output (send_error, writer, max_result_bytes), its service, its loop, maybe_finish
        self.endpoint = endpoint
        self.max_in_flight = max_in_flight
        self.max_queued_bytes = max_queued_bytes
        self.running = 0  # served requests holding one of the max_in_flight places
        self.queue: collections.deque[_Queued] = collections.deque()  # the others, in arrival order
        self.queued: dict[tuple[type, Any], _Queued] = {}
        self.queued_bytes = 0
        self.table: dict[tuple[type, Any], asyncio.Task | _Begun] = {}

    def __contains__(self, key: tuple[type, Any]) -> bool:
        return key in self.table or key in self.queued

    def admit_or_queue(self, request_id: Any, method: str, handler: Callable[..., Any], params: dict,
                       raw: bytes, key: tuple[type, Any]) -> None:
        """Start a request now, or queue it behind the ``max_in_flight`` running (``overloaded`` when the
        queue is full); ``shutdown`` never waits for a place."""
        if method != "shutdown" and self.running >= self.max_in_flight:
            if self.queued_bytes + len(raw) > self.max_queued_bytes:
                self.endpoint.send_error(request_id, DomainError(
                    "overloaded", f"'{method}' was not run: {self.max_in_flight} requests are running and the "
                                  f"queue behind them is full (--max-queued-bytes {self.max_queued_bytes})",
                    limit=self.max_in_flight))
                return
            entry = _Queued(request_id, method, handler, raw)
            self.queue.append(entry)
            self.queued[key] = entry
            self.queued_bytes += len(raw)
            return
        self.start(request_id, method, handler, params)

    def start(self, request_id: Any, method: str, handler: Callable[..., Any], params: dict) -> None:
        assert self.endpoint.loop is not None
        counted = method != "shutdown"  # shutdown waits for the others: it must not hold a place
        if counted:
            self.running += 1
        begin_now = self.endpoint._service.begin_now.get(method) if self.endpoint._service is not None else None
        if begin_now is not None and self._begin_now(request_id, method, begin_now, params):
            return
        # named for its method: ``_cancel`` answers for a task cancelled before it started
        self.table[_id_key(request_id)] = self.endpoint.loop.create_task(
            self._answer(request_id, method, handler, params, counted), name=method)

    def _begin_now(self, request_id: Any, method: str, begin_now: Callable[..., Any], params: dict) -> bool:
        """Begin a request without a task (its common case: ``Sidecar.begin_now``); False if it needs one."""
        begun = _Begun()
        key = _id_key(request_id)
        self.table[key] = begun

        def respond(result: Any, error: BaseException | None) -> None:
            if begun.answered:
                return
            begun.done()
            try:
                self._reply(request_id, method, result, error)
            finally:
                self.running -= 1
                self.answered(request_id)

        try:
            cancel = begin_now(params, respond)
        except Exception as exc:  # noqa: BLE001 - answered like a handler's failure
            respond(None, exc)
            return True
        if cancel is None and not begun.answered:
            del self.table[key]
            return False
        begun.cancel = cancel or _nothing
        return True

    def cancel(self, task: asyncio.Task | _Begun, request_id: Any) -> None:
        """Cancel a served request. One cancelled before its first step never runs ``_answer``: it is
        answered for when it ends (a callback only then — not a loop turn more for every request)."""
        if type(task) is _Begun:
            task.cancel()  # answers it, cancelled
            return
        if not task.cancelling():  # once: a second cancel must not answer twice
            method = task.get_name()
            task.add_done_callback(lambda t: self._cancelled_before_start(t, request_id, method, method != "shutdown"))
        task.cancel()

    def admit(self) -> None:
        """Start queued requests, in arrival order, while places are free."""
        while self.queue and self.running < self.max_in_flight:
            entry = self.queue.popleft()
            if entry.cancelled:
                continue
            del self.queued[_id_key(entry.request_id)]
            self.queued_bytes -= len(entry.raw)
            try:
                params = object_params(self.endpoint.loads(entry.raw).get("params", {}))
            except Exception as exc:  # noqa: BLE001 - it parsed when it arrived; never leave it unanswered
                self.endpoint.send_error(entry.request_id, as_rpc_error(entry.method, exc))
                continue
            self.start(entry.request_id, entry.method, entry.handler, params)

    def cancel_queued(self, entry: _Queued, why: str) -> None:
        entry.cancelled = True
        self.queued.pop(_id_key(entry.request_id), None)
        self.queued_bytes -= len(entry.raw)
        self.endpoint.send_error(entry.request_id, RequestCancelled(f"'{entry.method}' was cancelled {why}"))

    def _cancelled_before_start(self, task: asyncio.Task, request_id: Any, method: str, counted: bool) -> None:
        # A task cancelled before its first step never runs _answer: answer for it here.
        if task.cancelled():
            self.endpoint.send_error(request_id, RequestCancelled(f"'{method}' was cancelled"))
            if counted:
                self.running -= 1
            self.answered(request_id)

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
                self.running -= 1
            self.answered(request_id)

    def _reply(self, request_id: Any, method: str, result: Any, error: BaseException | None) -> None:
        """The answer to a served request: its result, or what its handler's exception means."""
        if error is None:
            self._send_result(request_id, method, result)
        elif isinstance(error, asyncio.CancelledError):
            self.endpoint.send_error(request_id, RequestCancelled(f"'{method}' was cancelled"))
        elif isinstance(error, RpcError):
            self.endpoint.send_error(request_id, error)
        else:
            logger.error("%s failed", method, exc_info=error)
            self.endpoint.send_error(request_id, as_rpc_error(method, error))

    def answered(self, request_id: Any) -> None:
        """A served request is answered: it leaves the table, a queued one may start, EOF may end the session."""
        self.table.pop(_id_key(request_id), None)
        if self.queue:
            self.admit()
        self.endpoint.maybe_finish()

    def _send_result(self, request_id: Any, method: str, result: Any) -> None:
        """A response, never over ``max_result_bytes`` and never anything but standard JSON."""
        message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        try:
            # pieces: a host's long text is written from the bytes it came in (jsonio.dumps_parts)
            data = self.endpoint.writer.encode_parts(message)
        except (ValueError, TypeError) as exc:  # not JSON data: never on stdout
            logger.error("the answer to %s is not JSON: %s", method, exc)
            self.endpoint.send_error(request_id, InternalError(f"the answer to '{method}' contained a value that is not "
                                                      f"JSON ({exc})"))
            return
        size = len(data) if type(data) is bytes else sum(map(len, data))
        if size > self.endpoint.max_result_bytes:
            replacement = self.endpoint.service.oversize(method, result, size) if self.endpoint._service is not None else None
            if replacement is None:
                self.endpoint.send_error(request_id, DomainError(
                    "too_large", f"the answer to '{method}' is {size} bytes; --max-result-bytes is "
                                 f"{self.endpoint.max_result_bytes}", size=size, limit=self.endpoint.max_result_bytes))
                return
            data = self.endpoint.writer.encode({"jsonrpc": "2.0", "id": request_id, "result": replacement})
        self.endpoint.writer.write_encoded(data, answer=True)  # a large one may be overtaken (wire/outbox.py)
