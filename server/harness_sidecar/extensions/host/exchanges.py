"""A request of the sidecar on its way through its steps (``Exchange``), a step's ``Outcome``, and
``Abandoned``: the exchange runs no further step."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from dataclasses import dataclass
from typing import Any

from harness_sidecar.extensions import board as board_cells
from harness_sidecar.extensions import channel
from harness_sidecar.extensions.board import INDEX_BITS, MAX_INDEX
from harness_sidecar.extensions.channel import MARGIN_S
from harness_sidecar.base.results import describe_exception
from harness_sidecar.extensions.host.state import HostState


class Abandoned(Exception):
    """The exchange was aborted by the sidecar, or it may have given up: run no further step."""


class Exchange:
    """One request of the sidecar (a call, an event, a command) on its way through its steps."""

    __slots__ = ("id", "host", "lock", "step", "deadline", "timeout", "shift", "aborted", "ui_pending",
                 "future", "waiters", "cell", "answered")

    def __init__(self, host: HostState, ident: int, deadline: float) -> None:
        self.id = ident
        self.host = host
        self.lock = threading.Lock()
        self.step = -1
        self.deadline = deadline  # of the current step; the first one's is the sidecar's
        self.timeout = 0.0  # of the current step, for messages
        self.shift = 0.0  # user time (ui requests) granted to the current step
        self.aborted = False
        self.ui_pending = 0
        self.future: concurrent.futures.Future | None = None
        self.waiters: set[int] = set()
        self.cell = -1  # this exchange's cell of the step board (-1: none yet, or none was free)
        self.answered = False  # a call whose first observer's frame (the sidecar's answer) went out

    def begin(self, index: int, timeout: float, carry: Any = None, faults: list | None = None,
              prompt: bool = False) -> None:
        """Start step ``index``; raise ``Abandoned`` if the sidecar gave up or may have.

        Every step is announced to the sidecar at once, before its code runs: the sidecar stamps it
        by its own clock when it reads it and, should this process freeze or die inside it, blames this
        step and answers by its stage and deadline. ``carry``: the result so far, when it changed since
        the sidecar last had it; ``faults``: faults of the steps before, not yet reported — both
        travel with a frame, so that the sidecar keeps them even if this step never ends. A step
        with neither is written on the step board (``board``) unless ``prompt`` (the sidecar acts on
        it at once: the first observer, with which it answers the call).
        """
        # The first step's deadline is the sidecar's bound for a call that has not begun (a call queued
        # here behind another is not charged for the wait); its shift is 0: no ui request came yet.
        now = time.monotonic()
        with self.lock:
            if self.aborted:
                raise Abandoned
            host = self.host
            out = host.out
            cell = self.cell
            if carry is not None or faults or prompt or index > MAX_INDEX:
                cell = -1
            elif cell < 0 and host.board is not None:
                cell = self.cell = host.board.take()
                if cell >= 0 and out.ended and host.board.cells[cell] >> INDEX_BITS in out.ended:
                    out.flush()  # the cell tells an outcome still waiting here: that goes first
            if cell >= 0:
                if out.must:  # what waited (a pipelined call's done) goes before foreign code runs
                    out.flush()
                host.board.cells[cell] = (self.id << INDEX_BITS) | index  # type: ignore[union-attr]
            elif carry is None and not faults:
                out.send_bytes(b'["step",%d,[%d]]\n' % (self.id, index))
            else:
                out.send_bytes(channel.encode(channel.STEP, self.id, [index, carry, faults or []]))
            limit = self.deadline + self.shift + MARGIN_S
            self.step = index
            self.deadline = now + timeout
            self.timeout = timeout
            self.shift = 0.0
        if time.monotonic() > limit:  # the sidecar may have answered for it: never begin it
            raise Abandoned

    def end(self, ended: bool = False) -> None:
        """The exchange is over: its board cell is free again — zeroed, or (``ended``) saying that the
        exchange ended with a plain outcome until the cell is taken again."""
        if self.cell >= 0:
            board = self.host.board
            assert board is not None
            if ended:
                board.cells[self.cell] = (self.id << board_cells.INDEX_BITS) | board_cells.ENDED
            board.give(self.cell, keep=ended)
            self.cell = -1

    def finish(self, report: dict[str, Any] | None, urgent: bool = False) -> None:
        """The exchange's outcome, written before any foreign code runs (``Output``): code of another
        thread of this process (a handler the reading passed on from, a coroutine) may freeze or end
        it any moment, and the outcome — a result, perhaps — must be the sidecar's by then.
        ``None``: a call's plain outcome, ``{"faults": [], "carried": true}`` (``calls``)."""
        plain = report is None
        if plain:
            data = channel.PLAIN_DONE % self.id  # the common outcome, written without an encoder
        else:
            data = channel.encode(channel.DONE, self.id, report)
        if len(data) > self.host.max_result_bytes:
            data = channel.encode(channel.DONE, self.id, {"tooLarge": len(data)})
        with self.lock:
            if self.aborted:
                data, plain = b'["ended",%d,null]\n' % self.id, False
            # A plain outcome (answered already, no faults) that waits is told by the exchange's board cell
            # too, so that it may wait past the next step announced there.
            plain = plain and self.answered and self.cell >= 0
            if self.host.out.send_bytes(data, urgent, self.id if plain else 0) and plain:
                self.end(ended=True)

    def abort(self, unless_at: int | None = None) -> None:
        """Run no further step. With ``unless_at``: only if step ``unless_at`` (a call's core) has not
        begun — a core that has begun runs to its end (``thread/close`` keeps outcomes)."""
        with self.lock:
            if unless_at is not None and self.step >= unless_at:
                return
            self.aborted = True
            future = self.future
            waiters = list(self.waiters)
        if future is not None:
            future.cancel()
        for uid in waiters:
            self.host.resolve_ui(uid, None, None, None)


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False

    def failure(self, what: str, ext: str, exchange: "Exchange", verb: str = "answer") -> tuple[str, str] | None:
        """``(kind, message)`` of a handler that timed out or raised (``what`` of ``ext``: "tool_call hook of 'x'")."""
        if self.timed_out:
            return "timeout", f"{what} of '{ext}' did not {verb} within {_ms(exchange)}"
        if self.error is not None:
            return "throw", f"{what} of '{ext}' raised {describe_exception(self.error)}"
        return None


def _ms(exchange: Exchange) -> str:
    return f"{exchange.timeout * 1000:.0f} ms"
