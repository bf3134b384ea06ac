"""A thread host's exchanges, from the sidecar's side: each request (a tool call, an event, a command, a
load) on its way through its steps, every step stamped and its deadline kept by the sidecar's clock,
an exchange answered for when its host freezes or dies (``Stopped``), a call answered when its
observers start (``Answered``), and which handler a frame a host relays was made by (``author``).

``Exchanges`` is given the thread's current host process (``process_of``: it changes when a host is
restarted) and what to do with the frames that are not its own (questions to the user, notifications to
relay: ``supervisor.ExtensionHost``'s). Nothing here imports or runs extension code.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.extensions import board, channel
from harness_sidecar.hooks.python import AFTER, HookFault

logger = logging.getLogger("harness_sidecar.extensions.sidecar.supervisor")

WATCH_S = 0.01  # how often in-flight steps are checked against their deadlines
ENDED_KEPT = 256  # ended exchanges whose steps' extensions are remembered (a ctx used after its handler)


def _loop_time(loop: asyncio.AbstractEventLoop, monotonic_at: float) -> float:
    """A ``time.monotonic()`` instant on the event loop's clock (the same clock on Linux)."""
    return monotonic_at - time.monotonic() + loop.time()


@dataclass
class StepPlan:
    """What the sidecar knows of a step, to judge it and to answer for it."""

    kind: str  # tool_call | core | tool_result_transform | tool_result | <event name> | command | load
    extension_id: str | None
    timeout: float


@dataclass
class Stopped:
    """An exchange the sidecar answered for: the step it was in, and how it ended."""

    step: int
    how: str  # timeout | crash | too_large | closed
    carry: Any = None  # the last result the host reported (a call's result before its observers)
    faults: list[Any] = field(default_factory=list)  # faults the host reported before it stopped
    started: bool = True  # False: the host never began the exchange (it was busy, frozen or died before)


class Rest:
    """The end of an answered call's exchange (its observers): an ``asyncio.Future``'s ``done``,
    ``set_result`` and ``add_done_callback``, with the callbacks run at once when it resolves (on
    the event loop, as the host's frames are read) — no future and no loop turn more per call."""

    __slots__ = ("_value", "_done", "_callbacks")

    def __init__(self) -> None:
        self._value: Any = None
        self._done = False
        self._callbacks: list[Callable[["Rest"], None]] = []

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return None

    def result(self) -> Any:
        return self._value

    def set_result(self, value: Any) -> None:
        if self._done:
            return
        self._value, self._done = value, True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            self._run(callback)

    def add_done_callback(self, callback: Callable[["Rest"], None]) -> None:
        if self._done:
            self._run(callback)
        else:
            self._callbacks.append(callback)

    def _run(self, callback: Callable[["Rest"], None]) -> None:
        try:
            callback(self)
        except Exception:  # noqa: BLE001 - as the event loop would: logged, the reading goes on
            logger.exception("a callback of an answered call's end failed")


@dataclass
class Answered:
    """A call answered before its exchange ended: the observers started with this final result.

    ``rest`` resolves to the exchange's end (the host's report, or a ``Stopped``): the
    observers' faults, reported after the answer; nothing in it changes the answer.
    """

    result: Any
    faults: list[Any]
    rest: Rest


class Pending:
    """An exchange in flight: the step the host last announced and its deadline (by the sidecar's clock)."""

    __slots__ = ("ident", "tag", "plan", "first", "future", "step", "deadline", "shift", "paused", "paused_at",
                 "carry", "faults", "ui", "_core", "closing", "started", "call_id")

    def __init__(self, ident: int, tag: str, plan: list[StepPlan], first: int, future: "asyncio.Future | Rest",
                 deadline: float) -> None:
        self.ident = ident
        self.tag = tag
        self.plan = plan
        self.first = first
        self.future = future
        self.step = first
        self.deadline = deadline
        self.shift = 0.0  # user time granted to the current step
        self.paused = 0  # ui requests of the current step waiting for the user
        self.paused_at = 0.0
        self.carry: Any = None
        self.faults: list[Any] = []
        self.ui: set[int] = set()
        self._core: int | None = -1  # a call's core index in the plan (-1: not looked up yet)
        self.closing = False  # thread/close asked the host to drop this call unless its core began
        self.started = False  # the host announced the first step (until then the deadline runs from the send)
        self.call_id: Any = None  # a call's id, as the sidecar sent it (what tools/progress is labelled with)

    @property
    def core(self) -> int | None:
        """A call's core index in the plan (None: not a call, or none), looked up when first needed."""
        if self._core == -1:
            self._core = None
            if self.tag == channel.CALL:
                for index, step in enumerate(self.plan):
                    if step.kind == "core":
                        self._core = index
                        break
        return self._core

    def limit(self) -> float:
        """When the sidecar answers for the current step, unless the host reports first."""
        return self.deadline + self.shift + channel.MARGIN_S


class HostLied(Exception):
    """The host's report does not have the shape the channel defines: the host is killed."""


class HostUnavailable(Exception):
    """The thread's host cannot run (3 exits in 5 minutes, or it would not start)."""




class Exchanges:
    """The exchanges in flight with a thread's host, and the watchdog that keeps their deadlines."""

    def __init__(self, thread_id: str, grace_s: float, process_of: Callable[[], Any],
                 on_ui: Callable[[int, Any], None], on_relay: Callable[[int, Any], None],
                 refuse_ui: Callable[[int], None], end_ui: Callable[[Pending], None],
                 on_state: Callable[[int, Any], None]) -> None:
        self.thread_id = thread_id
        self.grace_s = grace_s
        self.process_of = process_of  # the thread's current HostProcess, or None
        self.on_ui = on_ui  # a question the host asks the user
        self.on_relay = on_relay  # a notification the host relays to the editor
        self.refuse_ui = refuse_ui  # a question too long to ask: answered as no UI (fail closed)
        self.end_ui = end_ui  # an exchange ended: its questions still open are cancelled
        self.on_state = on_state  # a handler's ctx.state.set (protocol-v4 §5)
        self.loop = asyncio.get_running_loop()  # made in thread/start, on the loop; looked up once
        self.pending: dict[int, Pending] = {}
        self._ids = itertools.count(1)
        self._watchdog: asyncio.TimerHandle | None = None
        self._watch_at = 0.0
        self._board_timer: asyncio.TimerHandle | None = None  # reads the step board while exchanges are in flight
        self.closing = False  # thread/close: calls whose core has not begun are answered blocked "closed"
        self.overrun: dict[int, float] = {}  # exchange answered for, whose step still runs → when its host is ended
        self.ended: dict[int, tuple[list[StepPlan], int]] = {}  # the last exchanges that ended: plan, last step

    def exchange(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Pending:
        """Send one exchange; its future resolves to the host's report or to a ``Stopped``."""
        process = self.process_of()
        assert process is not None
        ident = next(self._ids)
        deadline = time.monotonic() + plan[first].timeout
        body["deadline"] = deadline
        pending = Pending(ident, tag, plan, first, self.loop.create_future(), deadline)
        pending.carry = body.get("result")
        if tag == channel.CALL and type(body.get("call")) is dict:
            pending.call_id = body["call"].get("id")
        self.pending[ident] = pending
        process.send(tag, ident, body)
        if self._board_timer is None and process.board is not None:
            self._board_timer = self.loop.call_later(WATCH_S, self._poll_board)
        if self.closing and pending.core is not None and first < pending.core:  # sent while thread/close runs
            pending.closing = True
            process.send(channel.ABORT, ident, {"unlessAt": pending.core})
        self.arm(pending.limit())
        return pending
    def arm(self, at: float) -> None:
        """Make sure the watchdog looks at the exchanges by ``at`` (it sleeps until the earliest limit)."""
        if self._watchdog is not None:
            if at >= self._watch_at:
                return
            self._watchdog.cancel()
        self._watch_at = at
        self._watchdog = self.loop.call_at(_loop_time(self.loop, at), self._watch)
    async def run(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Any:
        pending = self.exchange(tag, body, plan, first)
        try:
            return await pending.future
        except asyncio.CancelledError:
            self.cancel(pending)
            raise
    def cancel(self, pending: Pending) -> None:
        """``$/cancelRequest`` of an exchange's request: the host stops it; nobody is answered for it."""
        self.stop(pending.ident, None)
    def begin(self, pending: Pending, index: Any) -> bool:
        """Step ``index`` of ``pending`` begins now, by the sidecar's clock, as the host announced (a frame or
        the board). Steps only move forward, within the plan: a host cannot restart a deadline."""
        if type(index) is not int or not (pending.step < index < len(pending.plan) or
                                          (not pending.started and index == pending.step)):
            return False
        pending.started = True
        pending.step = index
        pending.deadline = time.monotonic() + pending.plan[index].timeout
        pending.shift = 0.0
        pending.paused = 0
        self.arm(pending.limit())
        return True
    def read_board(self, process: Any = None, drain: bool | None = True) -> None:
        """The steps the host announced on the board and the sidecar has not seen yet begin now. What the
        host wrote on the channel before them is read first (a frame carrying a result precedes the
        board's next step): all of it, or (``drain`` None: the periodic look) a turn's share — and if
        more is left (a host flooding its channel), the board waits for the next look, so that no
        look reads more than a turn may. ``drain`` False: called while a frame is handled, whose
        predecessors have been."""
        process = process or self.process_of()
        if process is None or process.board is None or not self.pending:
            return
        seen = board.announced(process.board)
        if not seen:
            return
        if drain:
            process.drain()
        elif drain is None and not process.catch_up():
            return
        for ident, index in seen:
            pending = self.pending.get(ident)
            if pending is None:
                continue
            if index == board.ENDED:  # ended plainly; its done frame waits in the host (frozen or dead now)
                if pending.tag == channel.CALL and pending.carry is not None:  # else not true: ignored
                    self.frame(channel.DONE, ident, {"faults": [], "carried": True})
            elif index != pending.step or not pending.started:
                self.begin(pending, index)
    def _poll_board(self) -> None:
        self._board_timer = None
        if not self.pending or self.process_of() is None or self.process_of().board is None:
            return
        self.read_board(drain=None)
        if self.pending:
            self._board_timer = self.loop.call_later(WATCH_S, self._poll_board)
    def frame(self, tag: str, ident: int, body: Any) -> None:
        if tag == channel.STEP:
            pending = self.pending.get(ident)
            if pending is None or type(body) is not list or not body:
                return
            index = body[0]
            # The step starts when the sidecar reads its frame, by the sidecar's clock — unless the board
            # said so first: a frame handled while others of one read wait (read_board(drain=False)) can
            # see the board announce this step, or a later one, before this frame's line is handled. The
            # result and faults it carries are still this exchange's: kept, or its end has no result.
            if not self.begin(pending, index) and not (
                    pending.started and type(index) is int and 0 <= index <= pending.step):
                return
            step = pending.plan[index]
            if len(body) >= 3:
                if body[1] is not None:
                    pending.carry = body[1]
                if type(body[2]) is list:
                    pending.faults += body[2]
            if step.kind == AFTER and pending.tag == channel.CALL and pending.plan[index - 1].kind != AFTER \
                    and pending.carry is not None and not pending.future.done():
                # The observers start: the call is answered now, with the result they watch.
                rest = Rest()
                answered = Answered(pending.carry, pending.faults, rest)
                pending.faults = []
                pending.future.set_result(answered)
                pending.future = rest
        elif tag == channel.DONE:
            self.overrun.pop(ident, None)
            pending = self.pending.pop(ident, None)
            if pending is not None:
                self._ended(pending, True)
            if pending is not None and not pending.future.done():
                if pending.faults and type(body) is dict and type(body.get("faults")) is list:
                    body["faults"] = pending.faults + body["faults"]
                if type(body) is dict and body.get("carried") is True and pending.carry is not None:
                    body["result"] = pending.carry  # sent once, in a step frame
                pending.future.set_result(body)
                self.end_ui(pending)
        elif tag == channel.ENDED:
            self.overrun.pop(ident, None)
            pending = self.pending.get(ident)
            if pending is not None and pending.closing:
                self.stop(ident, "closed")  # thread/close: its core never began
        elif tag == channel.UI:
            self.on_ui(ident, body)
        elif tag == channel.NOTIFY:
            self.on_relay(ident, body)
        elif tag == channel.STATE:
            self.on_state(ident, body)
        elif tag == "tooLarge":  # a frame refused unparsed (longer than any answer may be): body is its tag
            if body == channel.UI:  # a question too long to ask: not asked, answered as no UI (fail closed)
                self.refuse_ui(ident)
            elif body in (channel.STEP, channel.DONE, channel.LOADED):
                if ident in self.pending:
                    self.stop(ident, "too_large")
            else:
                logger.warning("%s sent a %s frame longer than --max-result-bytes allows; dropped", self.thread_id,
                               body)
    def author(self, ident: Any, step: Any) -> StepPlan | None:
        """The step whose handler made what the host relays on exchange ``ident`` in step ``step``: that
        step of the sidecar's plan, whose extension and event name it (never what the frame states). The
        step is one the exchange has begun, or it begins now (a frame written in a step is announced by
        it, as by a ``step`` frame: the board may not show it yet); for an exchange that has ended (a
        ``ctx`` used after its handler), one that began before it ended. None: no handler's step."""
        if type(ident) is not int or ident <= 0 or type(step) is not int or step < 0:
            return None
        pending = self.pending.get(ident)
        if pending is not None:
            if step > pending.step or not pending.started:
                self.read_board(drain=False)  # the step may be announced on the board only
                if ident not in self.pending:
                    return self.author(ident, step)
                if (step > pending.step or not pending.started) and not self.begin(pending, step):
                    return None
            found = pending.plan[step] if step >= pending.first else None
        else:
            ended = self.ended.get(ident)
            found = ended[0][step] if ended is not None and step <= ended[1] else None
        return found if found is not None and found.extension_id is not None else None
    def _ended(self, pending: Pending, reported: bool = False) -> None:
        """Remember which extension each step of an ended exchange was (``_author``), for the last few:
        up to the step it was stopped in, or (``reported``: the host reported its end) any of its steps."""
        self.ended[pending.ident] = (pending.plan, len(pending.plan) - 1 if reported else pending.step)
        if len(self.ended) > ENDED_KEPT:
            del self.ended[next(iter(self.ended))]
    def stop(self, ident: int, how: str | None) -> None:
        """Answer for an exchange: tell the host to stop it, resolve it as ``Stopped``."""
        pending = self.pending.pop(ident, None)
        if pending is None:
            return
        self._ended(pending)
        if self.process_of() is not None and how not in ("crash", "closed"):
            self.process_of().send(channel.ABORT, ident, None)
            # The step may still run: if it has not ended hostGraceMs after its deadline, its host is.
            self.overrun[ident] = max(pending.limit(), time.monotonic()) + self.grace_s
            self.arm(self.overrun[ident])
        self.end_ui(pending)
        if how is not None and not pending.future.done():
            pending.future.set_result(Stopped(pending.step, how, pending.carry, pending.faults, pending.started))
    def _watch(self) -> None:
        self._watchdog = None
        if not self.pending and not self.overrun:
            return
        now = time.monotonic()
        late = [p for p in self.pending.values() if not p.paused and now > p.limit()]
        if (late or self.overrun) and self.process_of() is not None:
            self.read_board()  # a step it announced there begins now (then its deadline is not passed)
            self.process_of().drain()  # what the host wrote before the deadline counts
            now = time.monotonic()
            late = [p for p in late if p.ident in self.pending and not p.paused and now > p.limit()]
        for pending in late:
            self.stop(pending.ident, "timeout")
        if self.overrun and now > min(self.overrun.values()):
            self._end_overrun()
        waiting = [p.limit() for p in self.pending.values() if not p.paused] + list(self.overrun.values())
        if waiting:
            self.arm(max(min(waiting), now + WATCH_S))
        elif self.pending:
            self.arm(now + 1.0)  # all waiting for the user: look again later
    def _end_overrun(self) -> None:
        """A step still ran hostGraceMs after its deadline: its host is ended (restarted on the next need),
        whether or not it still answers — a loop that never returns would burn the CPU for ever."""
        self.overrun.clear()
        process = self.process_of()
        if process is not None:
            logger.warning("%s still ran a step %.0f ms after its deadline; killing it", process.label,
                           self.grace_s * 1000)
            process.unresponsive = True  # type: ignore[attr-defined]
            process.kill()
    def close_calls(self) -> None:
        """``thread/close``: every call whose core has not begun is dropped — the host confirms with
        ``ended`` (then it is answered blocked ``closed``) or announces the core, which then runs to its
        end within its deadline; calls past their core run on."""
        self.closing = True
        process = self.process_of()
        self.read_board()  # calls whose core began (announced on the board) run on
        for pending in list(self.pending.values()):
            if pending.tag != channel.CALL or pending.core is None or pending.step >= pending.core or pending.closing:
                continue
            pending.closing = True
            if process is not None:
                process.send(channel.ABORT, pending.ident, {"unlessAt": pending.core})


def faults_of(faults: Any, plan: list[StepPlan]) -> list[HookFault]:
    """The faults a host reports, each named by the step it was in: the extension and the event are that
    step's in the sidecar's plan, whatever the frame said (v4 §2: what a host says is its own). Raises
    ``HostLied`` for a malformed fault or one of a step that is not a handler's."""
    if type(faults) is not list:
        raise HostLied("malformed 'faults'")
    out = []
    for f in faults:
        step = f.get("step") if type(f) is dict else None
        if (type(step) is not int or not 0 <= step < len(plan) or plan[step].extension_id is None
                or plan[step].kind in ("core", "load", "command") or f.get("kind") not in ("throw", "timeout")
                or type(f.get("message")) is not str):
            raise HostLied("malformed fault")
        out.append(HookFault(plan[step].extension_id, plan[step].kind, f["kind"], f["message"]))
    return out
