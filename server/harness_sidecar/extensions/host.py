"""The extension host: a process of its own that runs one thread's trusted extensions.

Started by the sidecar (``python -m harness_sidecar.extensions.host FD PARENT_PID``) with
stdin on ``/dev/null``, stdout and stderr on pipes the sidecar reads, and the channel on
``FD``. It imports exactly the bytes the sidecar sends, runs ``activate``, reports what
was staged, and then runs handlers, tools and commands when asked. Whatever extension
code does here — hold the GIL, exit, exhaust memory, patch modules — stays in this
process: the sidecar keeps every deadline by its own clock and restarts a host that dies.

Threads, leader/follower: the thread that reads the channel (the leader) runs each job it
reads itself — no hand-over to another thread on the way of a call. A job that runs longer
than ``PROMOTE_S`` (a slow hook, one waiting for the user) makes a monitor thread start a new
leader, so pings, aborts and answers keep being read; the old one finishes its job and ends.
Coroutines run on one event-loop thread. A step's outcome counts only if it ended by its
deadline (``channel`` explains the rule both sides keep).
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import gc
import inspect
import itertools
import logging
import marshal
import os
import socket
import sys
import threading
import time
from typing import Any, Callable

from harness_sidecar.extensions import board as board_cells
from harness_sidecar.extensions import channel
from harness_sidecar.extensions.api import CommandSpec, Handler, ToolSpec, make_api
from harness_sidecar.hooks.python import (
    AFTER,
    BEFORE,
    CONTEXT,
    INPUT,
    OBSERVERS,
    TRANSFORM,
    Allow,
    interpret_before,
    interpret_output,
    interpret_patch,
    output_to_wire,
)
from harness_sidecar.extensions.jsondata import NotJsonData, to_json
from harness_sidecar import loop
from harness_sidecar.hooks.decision import Verdict
from harness_sidecar.loop import EVENTS as LOOP_EVENTS
from harness_sidecar.results import describe_exception
from harness_sidecar.extensions.hosting.calls import (
    CallState,
    _blocked_body,
    _error_body,
    _news,
    _withheld_body,
    with_metadata,
)
from harness_sidecar.extensions.hosting.exchanges import Abandoned, Exchange, Outcome
from harness_sidecar.extensions.hosting.loading import Extension, import_extension
from harness_sidecar.extensions.hosting.output import Output, install, out_of_memory
from harness_sidecar.extensions.hosting.running import (
    _CHANGES_NOTICED,
    _PLAIN,
    Loop,
    _Raised,
    _copy,
    _local,
    _same_marshal,
    _unchanged,
)
from harness_sidecar.extensions.hosting.ui import Context, Ui, _Pending, _Ready, _settle

log = logging.getLogger("harness_sidecar.host")
PROMOTE_S = 0.02  # a job running longer than this hands the channel to a new reading thread


# -- the host ----------------------------------------------------------------------------------------------


class Host:
    def __init__(self, sock: socket.socket, board: board_cells.HostBoard | None = None) -> None:
        self.sock = sock
        self.board = board  # the step board the sidecar shares, when it passed one
        self.out = install(Output(sock))
        self.inbox: collections.deque = collections.deque()  # frames read, not yet dispatched
        self.splitter = channel.LineSplitter()
        self.read_buffer = bytearray(1 << 20)  # one reading thread at a time
        self.read_view = memoryview(self.read_buffer)
        self.lead_lock = threading.Lock()
        self.leader: threading.Thread | None = None
        self.busy: tuple[threading.Thread, float] | None = None  # the leader running a job, since when
        self.watching = threading.Event()  # set while the monitor should look at running jobs
        self._loop: Loop | None = None
        self.thread_id = ""
        self.cwd: str | None = None
        self.roots: list[str] = []
        self.ui: dict[str, bool] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        self.max_result_bytes = 16 * 1024 * 1024
        self.max_tools: int | None = None  # limits.maxTools (per extension)
        self.loaded: dict[str, Extension] = {}
        self.handlers: dict[str, list[Handler]] = collections.defaultdict(list)
        self.tools: dict[str, ToolSpec] = {}
        self.plans: dict[str, list[tuple[str, Any]]] = {}  # tool name → its call plan (``call_plan``)
        self.commands: dict[str, CommandSpec] = {}
        self.schemas: dict[str, Any] = {}  # tool name → inputSchema (to check rewritten arguments)
        self.compiled: dict[str, Any] = {}  # tool name → its compiled inputSchema, made when first needed
        self.exchanges: dict[int, Exchange] = {}
        self.ui_ids = itertools.count(1)
        self.ui_waiters: dict[int, tuple[Exchange | None, int, Any, Callable[[dict], Any], Any]] = {}
        self.ui_lock = threading.Lock()

    # -- the loop thread, started when first needed

    @property
    def loop(self) -> Loop:
        if self._loop is None:
            self._loop = Loop()
        return self._loop

    def bounded(self, text: str) -> str:
        """A notification's text, cut to --max-result-bytes characters: the frame stays small enough for the
        sidecar to read (it cuts the line further, with its mark, to fit a line of --max-result-bytes)."""
        return text if len(text) <= self.max_result_bytes else text[:self.max_result_bytes]

    def on_loop(self) -> bool:
        return self._loop is not None and threading.current_thread() is self._loop.thread

    # -- reading the channel

    def serve(self) -> None:
        """Read and run until the channel ends (then the process exits)."""
        self.out.send(channel.READY, 0, {"pid": os.getpid()})
        threading.Thread(target=self._monitor, name="host-monitor", daemon=True).start()
        self.leader = self.out.reader = threading.current_thread()
        self._lead()
        with self.out.lock:
            self.out.parked += 1
        threading.Event().wait()  # demoted while a job ran: the new leader ends the process

    def _lead(self) -> None:
        me = threading.current_thread()
        while self.leader is me:
            if not self.inbox:
                self.out.flush()  # nothing more to do for now: what waited goes out
                if not self._read():
                    self.out.flush()
                    os._exit(0)
                continue
            tag, ident, body = self.inbox.popleft()
            if tag == channel.CLOSE:
                self.out.flush()
                os._exit(0)
            self.dispatch(tag, ident, body)

    def _read(self) -> bool:
        """Read frames into the inbox; False at the end of the channel."""
        while True:
            try:
                size = self.sock.recv_into(self.read_buffer)  # recv(1 MiB) would map and unmap a new one each time
            except InterruptedError:
                continue
            except OSError:
                return False
            data = self.read_view[:size].tobytes()
            if not data:
                return False
            for line in self.splitter.feed(data):
                if isinstance(line, channel.TooLong):
                    log.error("the sidecar sent an over-long frame; exiting")
                    return False
                self.inbox.append(channel.decode(line))
            return True

    def _monitor(self) -> None:
        while True:
            self.watching.wait()  # no job running: sleep without waking
            time.sleep(PROMOTE_S)
            with self.lead_lock:
                busy = self.busy
                if busy is None:
                    self.watching.clear()
                    if self.busy is not None:  # a job began meanwhile and saw it still set: watch it
                        self.watching.set()
                elif time.monotonic() - busy[1] >= PROMOTE_S and busy[0] is self.leader:
                    self._promote_locked()

    def promote(self) -> None:
        """The reading thread is about to wait (for the user): another thread reads meanwhile."""
        with self.lead_lock:
            if threading.current_thread() is self.leader:
                self._promote_locked()

    def _promote_locked(self) -> None:
        old, busy = self.leader, self.busy
        thread = threading.Thread(target=self._lead, name="host-reader", daemon=True)
        with self.out.lock:  # from now on the old leader's frames go out at once
            self.leader = self.out.reader = thread  # the old leader sees it once its job ends, and stops reading
            self.out._flush_locked()
        self.busy = None  # before the new leader can start a job of its own
        try:
            thread.start()
        except RuntimeError as exc:  # can't start new thread: the old leader reads again after its job
            with self.out.lock:
                self.leader = self.out.reader = old
            self.busy = busy  # its job is still watched
            log.warning("cannot start another reading thread: %s", exc)

    def dispatch(self, tag: str, ident: int, body: Any) -> None:
        if tag == channel.CALL:
            self._start(ident, body, self.run_call)
        elif tag == channel.PING:
            self.out.send(channel.PONG, ident, None)
        elif tag == channel.EVENT:
            self._start(ident, body, self.run_event)
        elif tag == channel.COMMAND:
            self._start(ident, body, self.run_command)
        elif tag == channel.ABORT:
            exchange = self.exchanges.get(ident)
            if exchange is not None:
                unless_at = body.get("unlessAt") if type(body) is dict else None
                exchange.abort(unless_at if type(unless_at) is int else None)
        elif tag == channel.UI_ANSWER:
            self.resolve_ui(ident, body.get("value"), body.get("step"), body.get("shift"), body.get("outcome"))
        elif tag == channel.LOAD:
            self._start(ident, body, self.load)
        elif tag == channel.COMMIT:
            self.commit(body["ids"])
        elif tag == channel.SCHEMAS:
            self.schemas.update(body["tools"])
            for name in body["tools"]:
                self.compiled.pop(name, None)
        elif tag == channel.INIT:
            self.init(body)
        else:
            log.error("unknown frame %r", tag)

    def _start(self, ident: int, body: dict[str, Any], run: Callable[[Exchange, dict[str, Any]], None]) -> None:
        """Run exchange ``ident`` (``run(exchange, body)``) on this, the reading thread; the monitor hands
        the reading on if it runs long."""
        exchange = Exchange(self, ident, body["deadline"])
        self.exchanges[ident] = exchange
        me = threading.current_thread()
        # Set without lead_lock (one store): it is cleared, and a job promoted, only under it, and the
        # monitor looks again after it stopped watching. Cleared under it: a job that ends and one that
        # the monitor hands the reading on from never cross.
        self.busy = (me, time.monotonic())
        if not self.watching.is_set():
            self.watching.set()
        try:
            try:
                run(exchange, body)
            except Abandoned:
                # The code of the step that ran has returned: the sidecar stops counting it as
                # overrunning (a step that never returns ends the host at deadline + hostGraceMs).
                self.out.send_bytes(b'["ended",%d,null]\n' % exchange.id)
            finally:
                self.exchanges.pop(exchange.id, None)
                if exchange.cell >= 0:  # still has its board cell (a plain outcome that waits gave it up)
                    exchange.end()
        except MemoryError:
            out_of_memory()
        except BaseException:  # noqa: BLE001 - a bug of the host's own must not end the reading
            log.exception("host job failed")
        finally:
            with self.lead_lock:
                if self.busy is not None and self.busy[0] is me:
                    self.busy = None

    def finish(self, exchange: Exchange, report: dict[str, Any] | None, urgent: bool = False) -> None:
        """The exchange's outcome, written before any foreign code runs (``Output``): code of another
        thread of this process (a handler the reading passed on from, a coroutine) may freeze or end
        it any moment, and the outcome — a result, perhaps — must be the sidecar's by then.
        ``None``: a call's plain outcome, ``{"faults": [], "carried": true}`` (``_report``)."""
        plain = report is None
        if plain:
            data = channel.PLAIN_DONE % exchange.id  # the common outcome, written without an encoder
        else:
            data = channel.encode(channel.DONE, exchange.id, report)
        if len(data) > self.max_result_bytes:
            data = channel.encode(channel.DONE, exchange.id, {"tooLarge": len(data)})
        with exchange.lock:
            if exchange.aborted:
                data, plain = b'["ended",%d,null]\n' % exchange.id, False
            # A plain outcome (answered already, no faults) that waits is told by the exchange's board cell
            # too, so that it may wait past the next step announced there.
            plain = plain and exchange.answered and exchange.cell >= 0
            if self.out.send_bytes(data, urgent, exchange.id if plain else 0) and plain:
                exchange.end(ended=True)

    # -- init, load, commit

    def init(self, body: dict[str, Any]) -> None:
        self.thread_id = body["threadId"]
        self.cwd = body.get("cwd")
        self.roots = body.get("roots", [])
        self.ui = body.get("ui", {})
        self.settings = body.get("settings", {})
        self.max_result_bytes = body.get("maxResultBytes", self.max_result_bytes)
        self.max_tools = body.get("maxTools")
        memory_mb = body.get("memoryMb")
        if memory_mb:
            import resource

            limit = memory_mb * 1024 * 1024
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))

    def load(self, exchange: Exchange, body: dict[str, Any]) -> None:
        ext_id = body["id"]
        api, staging = make_api(ext_id, self.max_tools)
        _local.extension = ext_id
        try:
            exchange.begin(0, body["timeout"])
            code = base64.b64decode(body["code"])
            files = {k: base64.b64decode(v) for k, v in body.get("files", {}).items()}
            module = import_extension(ext_id, code, body["codePath"], body.get("directory"), files)
            activate = getattr(module, "activate", None)
            if not callable(activate):
                raise TypeError(f"{body['codePath']} defines no activate(api) function")
            outcome = self.invoke(exchange, activate, (api,))
        except MemoryError:
            out_of_memory()
        except Abandoned:
            staging.open = False
            exchange.end()
            return
        except BaseException as exc:  # noqa: BLE001 - the import itself failed
            outcome = Outcome(error=exc)
        finally:
            _local.extension = None
        staging.open = False
        if outcome.timed_out:
            report: dict[str, Any] = {"ok": False, "timedOut": True}
        elif outcome.error is not None:
            report = {"ok": False, "error": describe_exception(outcome.error)}
        else:
            self.loaded[ext_id] = Extension(ext_id, staging)
            report = {"ok": True, **staging.report()}
        self.finish(exchange, report, urgent=True)
        self.exchanges.pop(exchange.id, None)
        exchange.end()

    def commit(self, ids: list[str]) -> None:
        """The extensions the sidecar committed, in load order: only their registrations exist."""
        self.handlers.clear()
        self.tools.clear()
        self.plans.clear()
        self.commands.clear()
        for ext_id in ids:
            if ext_id not in self.loaded:  # the sidecar gives a host like that up; never serve half a policy
                continue
            staging = self.loaded[ext_id].staging
            for handler in staging.handlers:
                self.handlers[handler.event].append(handler)
            for tool in staging.tools:
                self.tools[tool.name] = tool
            for command in staging.commands:
                self.commands[command.name] = command
        for ext_id in set(self.loaded) - set(ids):
            del self.loaded[ext_id]
        for tool in self.tools.values():
            self.schemas[tool.name] = tool.input_schema

    # -- running user code

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
        if exchange.aborted:
            raise Abandoned
        if exchange.aborted or time.monotonic() > exchange.deadline + exchange.shift:  # not in time
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

    def context(self, exchange: Exchange, step: int, handler_id: str, call: dict[str, Any] | None,
                hook: str = "") -> Context:
        return Context(self, handler_id, Ui(self, handler_id, exchange, step, call, hook))

    def _handler(self, exchange: Exchange, index: int, handler: Handler, event: dict[str, Any],
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
            self._ignored(handler, event, given, outcome.value, sent)
        return outcome

    def notice(self, extension_id: str, hook: str, kind: str, message: str) -> None:
        """A ``thread/diagnostic`` for the extension's author (``handler_return_ignored``, ``ui_after_handler``)."""
        params = {"threadId": self.thread_id, "kind": kind, "extensionId": extension_id, "message": message}
        if hook:
            params["hook"] = hook
        self.out.send(channel.NOTIFY, 0, {"method": "thread/diagnostic", "params": params})

    def _ignored(self, handler: Handler, event: dict[str, Any], given: Any, value: Any, sent: bytes = b"") -> None:
        """Nothing ignored silently: a value an observer returned, an ``event`` changed in place
        (``sent``: the marshalled bytes ``given`` was made from, when it is a copy)."""
        ext, hook = handler.extension_id, handler.event
        if hook in OBSERVERS and value is not None:
            right = ("to change a tool's result, register api.on('tool_result_transform', fn) and return "
                     "{'content': ...}" if hook == AFTER else "it returns nothing")
            self.notice(ext, hook, "handler_return_ignored",
                        f"the {hook} handler of extension '{ext}' returned a value, which is ignored: a {hook} "
                        f"handler only observes ({right})")
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
                        f"{form}")

    # -- the user: ui requests

    def ask(self, exchange: Exchange | None, step: int, method: str, params: dict[str, Any],
            parse: Callable[[Any, Any], Any], refused: Any) -> Any:
        uid = next(self.ui_ids)
        on_loop = self.on_loop()
        if on_loop:
            waiter: Any = self.loop.loop.create_future()
        else:
            waiter = threading.Event()
            waiter.value = refused  # type: ignore[attr-defined]
        with self.ui_lock:
            self.ui_waiters[uid] = (exchange, step, waiter, parse, refused)
        if exchange is not None:
            with exchange.lock:
                if exchange.aborted:
                    self.ui_waiters.pop(uid, None)
                    refused = parse(None, "cancelled")
                    return _Ready(refused) if on_loop else refused
                exchange.ui_pending += 1
                exchange.waiters.add(uid)
        self.out.send(channel.UI, uid, {"exchange": exchange.id if exchange else 0, "step": step,
                                        "method": method, "params": params})
        if on_loop:
            return _Pending(waiter)
        self.promote()  # the answer comes on the channel: someone else must read it
        waiter.wait()
        return waiter.value  # type: ignore[attr-defined]

    def resolve_ui(self, uid: int, answer: Any, step: Any, shift: Any, hint: Any = None) -> None:
        """The editor's ``answer`` (``None``: none came; ``hint``: the sidecar's word why — ``timeout``,
        ``cancelled``, ``unavailable``; the host's own abort: ``cancelled``)."""
        with self.ui_lock:
            entry = self.ui_waiters.pop(uid, None)
        if entry is None:
            return
        exchange, asked_step, waiter, parse, refused = entry
        try:
            value = parse(answer if type(answer) is dict else None,
                          hint if hint in ("timeout", "cancelled", "unavailable") else None)
        except Exception:  # noqa: BLE001
            value = refused
        if exchange is not None:
            with exchange.lock:
                exchange.ui_pending -= 1
                exchange.waiters.discard(uid)
                if step == asked_step == exchange.step and type(shift) in (int, float):
                    exchange.shift = float(shift)
        if isinstance(waiter, threading.Event):
            waiter.value = value  # type: ignore[attr-defined]
            waiter.set()
        else:
            self.loop.loop.call_soon_threadsafe(_settle, waiter, value)

    # -- tool calls

    def call_plan(self, tool: str) -> list[tuple[str, Any]]:
        """The steps of a call of ``tool``: before hooks, the core, transforms, observers (the sidecar's too);
        made once per tool until the next ``commit`` (nothing else changes them)."""
        plan = self.plans.get(tool)
        if plan is None:
            plan = [(BEFORE, h) for h in self.handlers[BEFORE]]
            plan.append(("core", self.tools.get(tool)))
            plan += [(TRANSFORM, h) for h in self.handlers[TRANSFORM]]
            plan += [(AFTER, h) for h in self.handlers[AFTER]]
            self.plans[tool] = plan
        return plan

    def run_call(self, exchange: Exchange, body: dict[str, Any]) -> None:
        """Run steps ``from``..``to`` of a call. Each step is announced before it runs (``begin``);
        the first step after the core carries the core's result, so the sidecar has it before any
        transform or observer runs, and answers the call when the observers start."""
        call = body["call"]
        # The frame's own call and list (decoded for this exchange alone): state.call is replaced, never
        # changed in place; rewritten_by is appended to.
        state = CallState(body["threadId"], call, body.get("result"), body.get("rewrittenBy") or [])
        state.known = state.result
        hook_timeout, tool_timeout = body["hookTimeout"], body["toolTimeout"]
        steps = body.get("stepTimeouts")  # each handler's own deadline, when one has its own (api.on timeout_ms)
        plan = self.call_plan(call["name"])
        end = min(body["to"], len(plan))
        index = body["from"]
        while index < end:
            kind, target = plan[index]
            if kind == BEFORE:
                exchange.begin(index, steps[index] if steps else hook_timeout,
                               faults=state.take_faults() if state.faults else None)
                if not self._before(exchange, index, target, state):
                    break
            elif kind == "core":
                exchange.begin(index, tool_timeout, faults=state.take_faults() if state.faults else None)
                self._core(exchange, index, target, state, tool_timeout)
            elif kind == TRANSFORM:
                exchange.begin(index, steps[index] if steps else hook_timeout, carry=_news(state),
                               faults=state.take_faults() if state.faults else None)
                if not self._transform(exchange, index, target, state):
                    # withheld: the rest of the transforms do not run; observers see the withheld result
                    index += 1
                    while index < end and plan[index][0] == TRANSFORM:
                        index += 1
                    continue
            else:
                self._observe(exchange, index, end, plan, state, hook_timeout, steps)
                break
            index += 1
        else:
            if (state.rewritten_by or state.transformed_by) and state.result is not None and \
                    "withheld" not in state.result["details"]:
                state.result = with_metadata(state.result, state.rewritten_by, state.transformed_by)
        self.finish(exchange, self._report(state))

    def _report(self, state: CallState) -> dict[str, Any] | None:
        """The call's outcome; ``None`` for the plain one: no faults, the sidecar has the result, the
        arguments as they came."""
        if not state.faults and state.result is not None and state.result is state.known and not state.rewritten_by:
            return None
        report: dict[str, Any] = {"faults": state.faults}
        if state.result is not None and state.result is state.known:
            report["carried"] = True  # the sidecar has this result already: not sent twice
        elif state.result is not None:
            report["result"] = state.result
        if state.rewritten_by:
            report["arguments"] = state.call["arguments"]
            report["rewrittenBy"] = state.rewritten_by
        return report

    def _fault(self, state: CallState, handler: Handler, kind: str, message: str) -> None:
        state.faults.append({"extensionId": handler.extension_id, "hook": handler.event, "kind": kind,
                             "message": message})

    def _before(self, exchange: Exchange, index: int, handler: Handler, state: CallState) -> bool:
        """Run one before hook; False when the call is blocked (``state.result`` says how)."""
        outcome = self._handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call},
                                state.call)
        ext = handler.extension_id
        if outcome.error is not None or outcome.timed_out:
            kind, reason = outcome.failure("tool_call hook", ext, exchange)  # type: ignore[misc]
        elif outcome.value is None:  # allows, as is: what interpret_before says of None, without an Allow()
            return True
        else:
            try:
                decision = interpret_before(outcome.value)
            except TypeError as exc:
                kind, reason = "throw", f"tool_call hook of '{ext}' failed: {exc}"
            else:
                if isinstance(decision, Allow):
                    if decision.arguments is None:
                        return True
                    problem = self._check_arguments(state.call["name"], decision.arguments)
                    if problem is None:
                        state.call = {**state.call, "arguments": decision.arguments}
                        state.rewritten_by.append(ext)
                        return True
                    kind, reason = "throw", (f"tool_call hook of '{ext}' rewrote the arguments of "
                                             f"'{state.call['name']}' into ones its inputSchema refuses: {problem}")
                else:
                    state.result = _blocked_body(ext, "deny", decision.reason, state.rewritten_by)
                    return False
        self._fault(state, handler, kind, reason)
        state.result = _blocked_body(ext, kind, reason, state.rewritten_by)
        return False

    def _check_arguments(self, tool: str, arguments: dict[str, Any]) -> str | None:
        compiled = self.compiled.get(tool)
        if compiled is None:
            schema = self.schemas.get(tool)
            if schema is None:
                return "the tool's inputSchema is unknown to the host"
            from harness_sidecar import inputschema

            try:
                compiled = self.compiled[tool] = inputschema.compile(schema)
            except inputschema.InvalidSchema as exc:
                return f"its inputSchema is not valid: {exc}"
        error = compiled.first_error(arguments)
        return None if error is None else f"{error[0]} (at {error[1]})"

    def _core(self, exchange: Exchange, index: int, tool: ToolSpec | None, state: CallState,
              timeout: float) -> None:
        name = state.call["name"]
        if tool is None:  # the sidecar plans a host core only for the host's own tools
            state.result = _error_body(f"no tool named '{name}' in this thread's host", kind="tool_not_found")
            return
        ctx = self.context(exchange, index, tool.extension_id, state.call) if tool.ctx else None
        _local.extension = tool.extension_id
        try:
            outcome = self.invoke(exchange, tool.execute, (state.call["id"], _copy(state.call["arguments"])), ctx)
        finally:
            _local.extension = None
        ext = tool.extension_id
        if outcome.timed_out:
            state.result = _error_body(f"tool '{name}' did not finish within {timeout * 1000:.0f} ms", kind="timeout",
                                       extensionId=ext)
        elif outcome.error is not None:
            state.result = _error_body(f"tool '{name}' failed: {describe_exception(outcome.error)}",
                                       kind="tool_error", extensionId=ext, errorType=type(outcome.error).__name__)
        else:
            try:
                state.result = output_to_wire(outcome.value)
            except TypeError as exc:
                state.result = _error_body(f"tool '{name}' returned an unusable value: {exc}", kind="tool_error",
                                           extensionId=ext)

    def _transform(self, exchange: Exchange, index: int, handler: Handler, state: CallState) -> bool:
        """Run one transform; False when it failed and the result is withheld."""
        assert state.result is not None
        outcome = self._handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call,
                                                           "result": state.result}, state.call)
        ext = handler.extension_id
        failure = outcome.failure("tool_result_transform", ext, exchange)
        if failure is not None:
            kind, reason = failure
        else:
            try:
                patch = interpret_patch(outcome.value)
            except TypeError as exc:
                kind, reason = "throw", f"tool_result_transform of '{ext}' failed: {exc}"
            else:
                if patch is not None:
                    state.result = {**state.result, **patch}
                    state.transformed_by.append(ext)
                return True
        self._fault(state, handler, kind, reason)
        state.result = _withheld_body(ext, kind, reason, state.rewritten_by)
        return False

    def _observe(self, exchange: Exchange, start: int, end: int, plan: list[tuple[str, Any]], state: CallState,
                 timeout: float, steps: list[float] | None = None) -> None:
        """The observers: the first one's frame carries the final result (the sidecar answers the
        call with it at once); nothing they do changes it."""
        if (state.rewritten_by or state.transformed_by) and state.result is not None and \
                "withheld" not in state.result["details"]:
            state.result = with_metadata(state.result, state.rewritten_by, state.transformed_by)
        for index in range(start, end):
            handler = plan[index][1]
            exchange.begin(index, steps[index] if steps else timeout, carry=_news(state) if index == start else None,
                           faults=state.take_faults() if state.faults else None, prompt=index == start)
            exchange.answered = True
            # The last observer may have the call and result themselves: the sidecar has the result (it
            # answered with it), no handler runs after it, and the outcome reports only faults.
            outcome = self._handler(exchange, index, handler, {"threadId": state.thread_id, "call": state.call,
                                                               "result": state.result}, state.call,
                                    copy=index < end - 1 or state.result is not state.known)
            if outcome.error is not None or outcome.timed_out:
                self._fault(state, handler, *outcome.failure("tool_result hook", handler.extension_id, exchange,
                                                             "finish"))  # type: ignore[misc]

    # -- lifecycle, context and input handlers

    def run_event(self, exchange: Exchange, body: dict[str, Any]) -> None:
        """Lifecycle, context, input and loop-event handlers, in load order, each under its own
        deadline (``body["timeouts"]``); each step's frame carries the result so far (sections, the
        text, or the loop verdicts), so the sidecar keeps it if a later handler hangs."""
        event = body["event"]
        payload = body["payload"]
        handlers = self.handlers[event]
        timeouts = body.get("timeouts")  # each handler's deadline (seconds), in handler order
        faults: list[dict[str, Any]] = []
        sections: list[dict[str, str]] = []
        verdicts: list[dict[str, Any]] = []
        report: dict[str, Any] = {"faults": faults}
        is_loop = event in LOOP_EVENTS
        what = f"{event} handler"
        for index in range(body["from"], min(body["to"], len(handlers))):
            handler = handlers[index]
            timeout = timeouts[index] if timeouts is not None and index < len(timeouts) else body["hookTimeout"]
            carry = {"sections": sections} if event == CONTEXT else {"text": payload["text"]} if event == INPUT \
                else {"verdicts": verdicts} if is_loop else None
            exchange.begin(index, timeout, carry=carry, faults=faults[:] if faults else None)
            faults.clear()
            outcome = self._handler(exchange, index, handler, payload)
            ext = handler.extension_id
            failure = outcome.failure(what, ext, exchange, "finish")
            if is_loop:
                if failure is None:
                    try:
                        verdicts.append(loop.interpret(event, f"extension:{ext}", outcome.value).to_wire())
                    except TypeError as exc:
                        failure = "throw", f"{event} handler of '{ext}' failed: {exc}"
                if failure is not None and event in loop.FAIL_CLOSED:  # a handler that cannot answer blocks
                    verdicts.append(Verdict(f"extension:{ext}", failure=failure[1]).to_wire())
            if failure is None and event == CONTEXT:
                if type(outcome.value) is str:
                    if outcome.value.strip():
                        sections.append({"extensionId": ext, "text": outcome.value})
                elif outcome.value is not None:
                    failure = "throw", f"context handler of '{ext}' must return None or a str"
            elif failure is None and event == INPUT:
                value = outcome.value
                if value is None:
                    pass
                elif type(value) is dict and set(value) == {"text"} and type(value["text"]) is str:
                    payload = {**payload, "text": value["text"]}
                elif (type(value) is dict and value.get("handled") is True and set(value) <= {"handled", "reason"}
                      and type(value.get("reason", "")) is str):
                    report["handled"] = {"extensionId": ext, **({"reason": value["reason"]} if "reason" in value
                                                                else {})}
                    break
                else:
                    failure = "throw", (f"input handler of '{ext}' must return None, {{'text': str}} or "
                                        f"{{'handled': True, 'reason'?: str}}")
            if failure is not None:
                kind, problem = failure
                faults.append({"extensionId": ext, "hook": event, "kind": kind, "message": problem})
                if event == INPUT:  # input handlers are policy: a fault stops the input
                    report["blocked"] = {"extensionId": ext, "kind": kind, "message": problem}
                    break
        if event == CONTEXT:
            report["sections"] = sections
        if event == INPUT:
            report["text"] = payload["text"]
        if is_loop:
            report["verdicts"] = verdicts
        self.finish(exchange, report)

    # -- commands

    def run_command(self, exchange: Exchange, body: dict[str, Any]) -> None:
        command = self.commands.get(body["name"])
        exchange.begin(0, body["timeout"])
        if command is None:
            self.finish(exchange, {"result": _error_body(f"no command named '{body['name']}' in this host",
                                                         kind="command_not_found")})
            return
        ctx = self.context(exchange, 0, command.extension_id, None, "command") if command.ctx else None
        _local.extension = command.extension_id
        try:
            outcome = self.invoke(exchange, command.handler, (_copy(body["arguments"]),), ctx)
        finally:
            _local.extension = None
        name, ext = command.name, command.extension_id
        if outcome.timed_out:
            result = _error_body(f"command '{name}' did not finish within {body['timeout'] * 1000:.0f} ms",
                                 kind="timeout", extensionId=ext)
        elif outcome.error is not None:
            result = _error_body(f"command '{name}' failed: {describe_exception(outcome.error)}", kind="command_error",
                                 extensionId=ext, errorType=type(outcome.error).__name__)
        elif outcome.value is None:  # a command that returns nothing succeeded, with nothing to say
            result = {"content": [], "details": {}, "isError": False}
        else:
            try:
                result = interpret_output(outcome.value).to_wire()
            except TypeError as exc:
                result = _error_body(f"command '{name}' returned an unusable value: {exc}", kind="command_error",
                                     extensionId=ext)
        self.finish(exchange, {"result": result})


# -- process set-up ----------------------------------------------------------------------------------------


class _PrefixedStream:
    """``sys.stdout``/``sys.stderr`` of the host: lines say which extension wrote them."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.at_line_start = True
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError("write() argument must be str")
        ext = getattr(_local, "extension", None)
        data = text
        if ext:
            prefix = f"[{ext}] "
            lines = data.split("\n")
            data = "\n".join((prefix + line if (i or self.at_line_start) and line else line)
                             for i, line in enumerate(lines))
        with self.lock:
            if text:
                self.at_line_start = text.endswith("\n")
            try:
                os.write(self.fd, data.encode("utf-8", "replace"))
            except OSError:
                pass
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.fd


def die_with_parent(parent: int) -> None:
    """Linux: the kernel kills us when the sidecar dies (also by SIGKILL)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        except (OSError, AttributeError):
            log.warning("cannot ask to die with the sidecar; relying on EOF of the channel")
    if os.getppid() != parent:  # the sidecar died before we asked
        os._exit(0)


def main(argv: list[str]) -> None:
    fd, parent = int(argv[0]), int(argv[1])
    from harness_sidecar.containment.private import make_private

    make_private()  # before any extension code: other processes cannot open our fds or memory
    die_with_parent(parent)
    sys.dont_write_bytecode = True  # extension code runs from bytes; nothing it imports leaves a .pyc behind
    from harness_sidecar.containment.lifetimes import enter_own_group

    enter_own_group()  # its thread's cgroup (v3 §1 lifetimes), before it is ready for any extension
    from harness_sidecar import jsonio

    jsonio.standard_library_only(jsonio.SMALL_BYTES)  # under hostMemoryMb, MemoryError rather than orjson's SIGSEGV
    sys.stdout = _PrefixedStream(1)  # type: ignore[assignment]
    sys.stderr = _PrefixedStream(2)  # type: ignore[assignment]
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(levelname)s: %(message)s")
    sock = socket.socket(fileno=fd)
    host = Host(sock, board_cells.attach(argv))
    gc.freeze()  # the host's own start-up objects: never scanned by the collector
    gc.set_threshold(20_000, 20, 20)
    try:
        host.serve()
    except channel.FrameError as exc:
        log.error("the channel broke: %s", exc)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
