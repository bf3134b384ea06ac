"""Running user code: the event-loop thread for coroutines (``Loop``), the thread-local that says whose
code a thread runs, and the copies and comparisons of JSON data that give each handler its own event."""

from __future__ import annotations

import asyncio
import concurrent.futures
import marshal
import threading
from typing import Any

from harness_sidecar.hooks.python import BEFORE, INPUT

_local = threading.local()  # .extension: the extension whose code this thread runs now


_PLAIN = (type(None), str, dict, list, bool, int, float)  # values no handler awaits: skip the ABC check
_CHANGES_NOTICED = (BEFORE, INPUT)  # hooks whose event changed in place gets a notice (``Host._ignored``)


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
