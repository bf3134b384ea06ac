"""Running user code: the event-loop thread for coroutines (``Loop``), a handler's call judged by its
deadline (``invoke``), each handler's own copy of the event, and the notices for what a handler
returned or changed that is ignored."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import marshal
import os
import threading
import time
from typing import Any, Callable

from harness_sidecar.extensions.host.api import Handler
from harness_sidecar.extensions.host.exchanges import Abandoned, Exchange, Outcome
from harness_sidecar.extensions.host.output import out_of_memory
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.extensions.host.ui import Context
from harness_sidecar.extensions.host.jsondata import NotJsonData, to_json
from harness_sidecar.extensions import channel
from harness_sidecar.hooks.stages import AFTER, BEFORE, INPUT, OBSERVERS

_local = threading.local()  # .extension: the extension whose code this thread runs now


_HOST_PID = os.getpid()  # the host imports this module at start, before any code of an extension runs
_PLAIN = (type(None), str, dict, list, bool, int, float)  # values no handler awaits: skip the ABC check
_CHANGES_NOTICED = (BEFORE, INPUT)  # hooks whose event changed in place gets a notice (``running.Running._ignored``)


class Loop:
    """One event loop on its own thread for coroutine user code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="host-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, awaitable: Any) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(_guard(awaitable), self.loop)


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _guard(awaitable: Any) -> Any:
    # SystemExit raised in a coroutine must not stop the loop: it is the coroutine's outcome.
    try:
        return await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001
        return _Raised(exc)


class Running:
    """Where and how user code runs: calls of extension code judged by their deadline, the event-loop
    thread for coroutines, a handler's own copy of its event, and what it returned that is ignored."""

    def __init__(self, state: HostState) -> None:
        self.state = state
        self.out = state.out
        self._loop: Loop | None = None
        # a handler's ``ctx`` (``ui.UserRequests.context``, which needs this part's loop: handed up by ``Host``)
        self.context: Callable[..., Context] = _no_context

    # -- the loop thread, started when first needed

    @property
    def loop(self) -> Loop:
        if self._loop is None:
            self._loop = Loop()
        return self._loop

    def on_loop(self) -> bool:
        return self._loop is not None and threading.current_thread() is self._loop.thread

    def invoke(self, exchange: Exchange, fn: Callable[..., Any], args: tuple, ctx: Context | None = None) -> Outcome:
        """Call ``fn(*args[, ctx])`` (sync here, coroutines on the loop) and judge it by the deadline."""
        if ctx is not None:
            args = (*args, ctx)
        error = None
        try:
            value = fn(*args)
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                value = self._await(exchange, value)
        except Abandoned:
            raise
        except MemoryError:
            out_of_memory()
        except BaseException as exc:  # noqa: BLE001 - extension code may raise anything
            error = exc
        finally:
            if ctx is not None:
                ctx.ui._done = True
        if os.getpid() != _HOST_PID:
            # A child extension code forked (v4 §2: only the host answers) is back in host code: it ends
            # here, before it takes any of the host's locks, which another thread of the host may have
            # held at the fork (the child would then wait for ever instead of ending).
            os._exit(0)
        if exchange.aborted:
            raise Abandoned
        if time.monotonic() > exchange.deadline + exchange.shift:  # not in time
            return Outcome(timed_out=True)
        if error is not None:
            return Outcome(error=error)
        if value is None or type(value) is str:  # JSON data as it is: what ``to_json`` would return
            return Outcome(value)
        try:
            return Outcome(to_json(value))
        except NotJsonData as exc:
            return Outcome(error=exc)
        except RecursionError:
            return Outcome(error=NotJsonData("$", "nested too deeply"))

    def _await(self, exchange: Exchange, awaitable: Any) -> Any:
        future = self.loop.submit(awaitable)
        with exchange.lock:
            exchange.future = future
        try:
            while True:
                remaining = exchange.deadline + exchange.shift - time.monotonic()
                try:
                    value = future.result(timeout=max(0.005, remaining))
                    break
                except concurrent.futures.TimeoutError:
                    if exchange.ui_pending or time.monotonic() <= exchange.deadline + exchange.shift:
                        continue
                    future.cancel()  # the coroutine ran past its deadline
                    return None  # judged late by the caller
                except concurrent.futures.CancelledError:
                    if exchange.aborted:
                        raise Abandoned from None
                    raise
        finally:
            with exchange.lock:
                exchange.future = None
        if isinstance(value, _Raised):
            raise value.error
        return value


    def handler(self, exchange: Exchange, index: int, handler: Handler, event: dict[str, Any],
                 call: dict[str, Any] | None = None, copy: bool = True) -> Outcome:
        """Run one handler on its own copy of ``event`` (``copy=False``: nothing reads the event after it)."""
        ctx = self.context(exchange, index, handler.extension_id, call, handler.event) if handler.ctx else None
        _local.extension = handler.extension_id
        if copy:
            sent = marshal.dumps(event, 2)  # the copy's bytes: they also tell whether the handler changed it
            given = marshal.loads(sent)
        else:
            sent, given = b"", event
        try:
            outcome = self.invoke(exchange, handler.fn, (given,), ctx)
        finally:
            _local.extension = None
        if outcome.error is None and not outcome.timed_out and (outcome.value is not None or (
                handler.event in _CHANGES_NOTICED and not (sent and _unchanged(given, sent)))):
            self._ignored(handler, event, given, outcome.value, sent, exchange, index)
        return outcome

    def notice(self, extension_id: str, hook: str, kind: str, message: str, exchange: Exchange | None = None,
               step: int = -1) -> None:
        """A ``thread/diagnostic`` for the extension's author (``handler_return_ignored``, ``ui_after_handler``),
        sent on the exchange and step of the handler it is about (the sidecar labels it by those)."""
        params = {"threadId": self.state.thread_id, "kind": kind, "extensionId": extension_id, "message": message}
        if hook:
            params["hook"] = hook
        self.out.send(channel.NOTIFY, exchange.id if exchange is not None else 0,
                      {"method": "thread/diagnostic", "params": params, "step": step})

    def _ignored(self, handler: Handler, event: dict[str, Any], given: Any, value: Any, sent: bytes = b"",
                 exchange: Exchange | None = None, index: int = -1) -> None:
        """Nothing ignored silently: a value an observer returned, an ``event`` changed in place
        (``sent``: the marshalled bytes ``given`` was made from, when it is a copy)."""
        ext, hook = handler.extension_id, handler.event
        if hook in OBSERVERS and value is not None:
            right = ("to change a tool's result, register api.on('tool_result_transform', fn) and return "
                     "{'content': ...}" if hook == AFTER else "it returns nothing")
            self.notice(ext, hook, "handler_return_ignored",
                        f"the {hook} handler of extension '{ext}' returned a value, which is ignored: a {hook} "
                        f"handler only observes ({right})", exchange, index)
            return
        key, form = (("call", "return {'arguments': {...}} (the complete new arguments)") if hook == BEFORE else
                     ("text", "return {'text': ...}") if hook == INPUT else (None, ""))
        if key is None or type(given) is not dict:
            return
        if hook == BEFORE and type(value) is dict and "arguments" in value or \
                hook == INPUT and type(value) is dict and "text" in value:
            return
        if sent and _unchanged(given, sent):
            return
        try:
            changed = not _same_marshal(given.get(key), event.get(key)) and to_json(given.get(key)) != event.get(key)
        except (NotJsonData, RecursionError):
            changed = True
        if changed:
            what = "event['call']" if hook == BEFORE else "event['text']"
            self.notice(ext, hook, "handler_return_ignored",
                        f"the {hook} handler of extension '{ext}' changed {what} in place, which is ignored: "
                        f"{form}", exchange, index)


def _no_context(*args: Any) -> Context:
    raise RuntimeError("the host made no context for handlers")


def _same_marshal(a: Any, b: Any) -> bool:
    """Surely equal JSON data (the same marshalled bytes: a C-speed test); False when unsure.

    Format 2: from format 3 on, marshal flags an object referenced more than once, so a handler's
    copy (referenced once) never had the bytes of the event it was made from, and this test never
    said yes."""
    try:
        return marshal.dumps(a, 2) == marshal.dumps(b, 2)
    except ValueError:  # not marshallable: not plain JSON data
        return False


def _unchanged(given: Any, sent: bytes) -> bool:
    """Whether a handler's copy still marshals (format 2) to the bytes it was made from: then it surely
    did not change; False when unsure (not marshallable now: the handler put something in it)."""
    try:
        return marshal.dumps(given, 2) == sent
    except ValueError:
        return False


def _copy(value: Any) -> Any:
    """A deep copy of JSON data: each handler gets its own (marshal copies in C; format 2 marks no
    shared references, which makes it the quicker one)."""
    return marshal.loads(marshal.dumps(value, 2))
