"""Running extension code without trusting it to behave: off the event loop, with a deadline.

Synchronous functions run on worker threads, so ``time.sleep(20)`` in a hook neither
freezes the sidecar nor outlives its timeout from the caller's point of view; a thread
that is stuck is simply abandoned and a fresh one serves the next call. Coroutines run
on the loop and are cancelled at their deadline. Anything raised, ``SystemExit``
included, comes back as a value.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

logger = logging.getLogger(__name__)


class WorkerPool:
    """Threads that are reused while idle and added whenever all are busy (or stuck)."""

    def __init__(self, idle_seconds: float = 30.0) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._idle_seconds = idle_seconds
        self._started = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # reserve a waiting worker for this job
        self._jobs.put((future, fn, args))
        if spawn:
            self._started += 1
            threading.Thread(target=self._work, name=f"harness-worker-{self._started}", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                future, fn, args = self._jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:
                        self._idle -= 1
                        return
                continue  # every idle worker is reserved: a job is on its way
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - extension code may raise anything
                    future.set_exception(exc)
            del future, fn, args
            with self._lock:
                self._idle += 1


POOL = WorkerPool()


@dataclass
class Outcome:
    """What became of one call of extension code."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return "timed out"
        if self.error is not None:
            return describe_exception(self.error)
        return "ok"


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Raised:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _guard(awaitable: Any) -> Any:
    # SystemExit and KeyboardInterrupt escaping a task would stop the event loop itself;
    # catch them inside the coroutine chain, before the task sees them.
    try:
        return await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001
        return _Raised(exc)


async def _await_with_deadline(awaitable: Any, deadline: float) -> Outcome:
    loop = asyncio.get_running_loop()
    task = loop.create_task(_guard(awaitable))
    remaining = max(0.0, deadline - loop.time())
    done, _ = await asyncio.wait({task}, timeout=remaining)
    if not done:
        task.cancel()  # not awaited: a coroutine that swallows cancellation must not hold us
        task.add_done_callback(_consume)
        return Outcome(timed_out=True)
    value = task.result()
    if isinstance(value, _Raised):
        return Outcome(error=value.error)
    return Outcome(value=value)


def _consume(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()


async def call(fn: Callable[..., Any], args: tuple, timeout_s: float) -> Outcome:
    """Call ``fn(*args)``; sync on a worker thread, async on the loop; bounded by ``timeout_s``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    if inspect.iscoroutinefunction(fn):
        try:
            awaitable = fn(*args)
        except BaseException as exc:  # noqa: BLE001
            return Outcome(error=exc)
        return await _await_with_deadline(awaitable, deadline)
    future = asyncio.wrap_future(POOL.submit(fn, *args), loop=loop)
    try:
        done, _ = await asyncio.wait({future}, timeout=max(0.0, deadline - loop.time()))
    except asyncio.CancelledError:
        future.add_done_callback(_consume_future)
        raise
    if not done:
        future.add_done_callback(_consume_future)
        return Outcome(timed_out=True)
    error = future.exception()
    if error is not None:
        return Outcome(error=error)
    value = future.result()
    if inspect.isawaitable(value):
        return await _await_with_deadline(value, deadline)
    return Outcome(value=value)


def _consume_future(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()
