"""The session's end: ``shutdown``, ``exit`` and stdin's EOF, and the exit code ``Endpoint.serve`` returns.

``SessionEnd`` owns the end's state (``shutting_down``, ``exiting``, ``eof``, ``exit_code``) and the three
ways a session ends: after ``shutdown`` (the requests in flight and the queued ones finish, then the
threads close), at ``exit`` (without ``shutdown`` everything served is cancelled), and at EOF (once
nothing is in flight or queued, the threads close and the process exits 0). It is given the served and
sent requests' tables and a callable closing the service; it never writes to the editor itself (a
cancelled request is answered by ``ServedRequests``) and never touches the reader or the writer.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

from harness_sidecar.wire.sent import SentRequests
from harness_sidecar.wire.served import ServedRequests, _Begun


class SessionEnd:
    """How the session ends (see the module's docstring); ``Endpoint`` reads its flags on every message."""

    def __init__(self, served: ServedRequests, sent: SentRequests,
                 close_service: Callable[[str], Awaitable[None]]) -> None:
        self.served = served
        self.sent = sent
        self.close_service = close_service
        self.shutting_down = False
        self.eof = False
        self.exiting = False
        self.exit_code: asyncio.Future[int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._finishing = False

    def start(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[int]:
        """The session serves under ``loop``: the future of its exit code."""
        self._loop = loop
        self.exit_code = loop.create_future()
        return self.exit_code

    async def shutdown(self, params: dict) -> None:
        """The ``shutdown`` request's handler: it answers once everything asked before it is answered."""
        while True:  # the requests in flight, and the queued ones as they start
            others = [self._waitable(t) for t in self.served.table.values() if t is not asyncio.current_task()]
            if not others:
                break
            await asyncio.wait(others)
        await self.close_service("shutdown")
        return None

    def exit(self, code: int) -> None:
        """``exit``: after ``shutdown``, finish what was asked before it; without, cancel everything."""
        assert self.exit_code is not None
        self.exiting = True
        self.sent.fail_all("the editor sent 'exit'")
        for entry in list(self.served.queued.values()):
            self.served.cancel_queued(entry, "by exit before it started")
        pending = [self._waitable(t) for t in self.served.table.values()]
        if not self.shutting_down:
            for (_, request_id), task in list(self.served.table.items()):
                self.served.cancel(task, request_id)
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

    def on_eof(self) -> None:
        self.eof = True
        self.sent.fail_all("the editor closed stdin")
        self.maybe_finish()

    def maybe_finish(self) -> None:
        if self.eof and not self.served.table and not self.served.queued and self.exit_code is not None \
                and not self.exit_code.done() \
                and not self._finishing:
            self._finishing = True
            asyncio.ensure_future(self._finish_eof())

    async def _finish_eof(self) -> None:
        await self.close_service("eof")
        if self.exit_code is not None and not self.exit_code.done():
            self.exit_code.set_result(0)
