"""A thread's tool calls in flight (``Calls``): what ``thread/close`` waits for. Kept apart from the pipeline
(``tools.pipeline``, ``tools.observers``) that counts them, so a thread is made without importing it: the
pipeline is made at the thread's first ``tools/call`` (issue #32).
"""

from __future__ import annotations

import asyncio

from harness_sidecar.base.records import Record


class Calls(Record):
    """A thread's tool calls in flight (observers after the answer included): ``thread/close`` lets
    those whose core has begun finish, and answers the others blocked ``closed``. (Written out, not a
    dataclass: every thread has one; same repr and equality, issue #32.)"""

    __slots__ = ("count", "closing", "_idle", "_observers")

    def __init__(self, count: int = 0, closing: bool = False, _idle: asyncio.Future | None = None,
                 _observers: set | None = None) -> None:
        self.count = count
        self.closing = closing
        self._idle = _idle
        self._observers = set() if _observers is None else _observers  # tasks running observers after the answer

    def enter(self) -> None:
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if not self.count and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    async def drained(self) -> None:
        while self.count:
            self._idle = asyncio.get_running_loop().create_future()
            await self._idle
