"""The sidecar's side of a thread's extension host: ``ExtensionHost`` loads the thread's extensions into a
host process (``process.HostProcess``; ``process.Spares`` keeps one started ahead), runs exchanges (tool
calls, events, commands: ``steps.Exchanges``, with every step stamped and its deadline kept by the
sidecar's clock, a host whose step still runs ``hostGraceMs`` after its deadline ended, in-flight
exchanges answered when a host dies), relays what the host asks and tells the user, labelled as its
own, and restarts a host on the next need — at most 3 exits in 5 minutes.
Nothing here imports or runs extension code.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import logging
import signal
import time
from typing import Any, Callable

from harness_sidecar.extensions import channel
from harness_sidecar.extensions.sidecar.process import HostProcess, Spares
from harness_sidecar.extensions.sidecar.steps import Exchanges, HostUnavailable, Pending, StepPlan, Stopped

logger = logging.getLogger(__name__)

MAX_EXITS = 3
EXIT_WINDOW_S = 300.0
# What a host may relay to the editor (labelled by the sidecar), and the diagnostics its own code reports.
RELAYED = frozenset(("ui/notify", "ui/status", "chat/send", "thread/diagnostic"))
HOST_DIAGNOSTICS = frozenset(("handler_return_ignored", "ui_after_handler"))
# What a host may ask the editor, from inside a handler (v4: the conversation, ctx.messages).
ASKED = frozenset(("ui/confirm", "ui/select", "ui/input", "session/messages",
                   channel.TOOLS_LIST, channel.TOOLS_SET_ACTIVE))  # the last two: the sidecar answers (ctx.tools)
Ask = Callable[[str, dict[str, Any], float], Any]  # (method, params, timeout_s) → awaitable answer


class ExtensionHost:
    """A thread's extension host: its process started and restarted, its extensions loaded, its exchanges
    (``steps.Exchanges``), and the questions and notifications it relays, labelled as its own."""

    def __init__(self, thread_id: str, spares: Spares, init: dict[str, Any], grace_s: float,
                 on_diagnostic: Callable[[dict[str, Any]], None], ask: Ask,
                 notify: Callable[[str, dict[str, Any]], None], ui_timeout_s: float) -> None:
        self.thread_id = thread_id
        self.spares = spares
        self.init = init
        self.grace_s = grace_s
        self.on_diagnostic = on_diagnostic
        self.ask = ask
        self.notify = notify
        self.ui_timeout_s = ui_timeout_s
        self.process: HostProcess | None = None
        self.exits: collections.deque[float] = collections.deque()
        self.failed = False
        self.failure = ""  # why the host was given up
        self.closed = False
        self.loop = asyncio.get_running_loop()  # made in thread/start, on the loop; looked up once
        self._ui_tasks: dict[int, asyncio.Task] = {}
        self.loads: list[dict[str, Any]] = []  # the committed extensions' load bodies, for a restart
        self.reports: dict[str, Any] = {}  # what each registered when first loaded (a restart must match)
        self.committed: list[str] = []
        self.schemas: dict[str, Any] = {}
        self._starting: asyncio.Future | None = None
        self.loading = False
        self.exchanges = Exchanges(thread_id, grace_s, lambda: self.process, self._ui, self._relay,
                                   lambda uid: self._answer_ui(uid, None, None, None, "unavailable"), self._end_ui,
                                   self._state)
        self.on_state: Callable[[str, Any], None] | None = None  # ctx.state.set of an extension (protocol-v4 §5)

    # -- the process

    async def _attach(self) -> HostProcess:
        process = await self.spares.take()
        process.adopt(self.thread_id)
        process.label = f"extension host of {self.thread_id}"
        # No answer may be longer than --max-result-bytes: a longer frame is refused before it is parsed.
        process.frame_limit(self.init.get("maxResultBytes", channel.MAX_FRAME_BYTES))
        process.owner = self.thread_id
        process.on_frame = self.exchanges.frame
        process.on_exit = self._exit
        process.send(channel.INIT, 0, self.init)
        self.process = process
        return process

    @property
    def running(self) -> bool:
        """A live host process with the committed extensions: no need to ``ensure()``."""
        return self.process is not None and not self.process.exited and not self.failed and not self.closed

    async def ensure(self) -> None:
        """A running host with the committed extensions; restart one that died. Raises ``HostUnavailable``.

        A restart imports the same bytes and runs ``activate`` again; each extension's ``ctx.state`` comes back
        (``init.states``, kept up to date by ``_state``). If an
        extension then fails, or registers other tools, hooks or commands than it did at
        thread/start, the thread's policy can no longer be what the editor trusted: the host is
        given up (every call blocked), as after 3 exits.
        """
        if self.failed:
            raise HostUnavailable("the extension host exited 3 times within 5 minutes, or its extensions "
                                  "could not be loaded again")
        if self.closed:
            raise HostUnavailable("the thread is closing")
        if self.process is not None and not self.process.exited:
            return
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return await self.ensure()
        self._starting = self.loop.create_future()
        try:
            try:
                await self._attach()
            except (ConnectionError, OSError) as exc:
                self._count_exit()
                raise HostUnavailable(f"the extension host could not be started: {exc}") from None
            for body in self.loads:  # a restart: the same bytes, activate again, ctx.state handed back
                report = await self.load(body, restart=True)
                if not isinstance(report, dict) or _registered(report) != self.reports.get(body["id"]):
                    self._give_up(f"extension '{body['id']}' did not register the same tools, hooks and commands "
                                  f"when its host was started again")
                    raise HostUnavailable(f"extension '{body['id']}' could not be loaded again")
            self.commit(self.committed)
            self.on_diagnostic({"threadId": self.thread_id, "kind": "host_restarted",
                                "message": "the extension host was started again; each extension's ctx.state is "
                                           "handed back, what else it kept in memory starts empty"})
        finally:
            starting, self._starting = self._starting, None
            starting.set_result(None)

    def _give_up(self, why: str) -> None:
        self.failed = True
        self.failure = why
        process, self.process = self.process, None
        if process is not None:
            process.on_exit = None
            process.kill()
        self.on_diagnostic({"threadId": self.thread_id, "kind": "host_restarted",
                            "message": f"{why}: the thread's extensions are failed and every tool call of the "
                                       f"thread is blocked"})

    def _count_exit(self) -> bool:
        """Count an exit of the thread's host; True when that makes 3 within 5 minutes (the host is given up)."""
        now = time.monotonic()
        self.exits.append(now)
        while self.exits and now - self.exits[0] > EXIT_WINDOW_S:
            self.exits.popleft()
        if len(self.exits) >= MAX_EXITS:
            self.failed = True
            self.failure = "the extension host exited 3 times within 5 minutes"
        return self.failed

    async def start(self) -> None:
        await self._attach()

    def _exit(self, process: HostProcess) -> None:
        if process is not self.process:
            return
        self.process = None
        code = process.returncode
        diagnostic: dict[str, Any] = {"threadId": self.thread_id, "kind": "host_exit"}
        if code is not None and code < 0:
            diagnostic["signal"] = -code
            how = f"was killed by signal {-code}"
            if -code == signal.SIGKILL and getattr(process, "unresponsive", False):
                how += " (it did not answer: a step was still running hostGraceMs after its deadline)"
        else:
            diagnostic["exitCode"] = code
            how = f"exited with status {code}"
            if code == 3:
                how += " (out of memory: limits.hostMemoryMb)"
        self.exchanges.overrun.clear()
        self.exchanges.read_board(process)  # the step each exchange was in when the host died
        for ident in list(self.exchanges.pending):
            self.exchanges.stop(ident, "crash")
        if self.closed or self.loading:
            return
        if self._count_exit():
            how += "; it exited 3 times within 5 minutes and is not restarted: every tool call of this thread " \
                   "is blocked"
        diagnostic["message"] = f"the extension host {how}"
        self.on_diagnostic(diagnostic)

    # -- exchanges (``steps.Exchanges``)

    def exchange(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Pending:
        """Send one exchange; its future resolves to the host's report or to a ``Stopped``."""
        return self.exchanges.exchange(tag, body, plan, first)

    async def run(self, tag: str, body: dict[str, Any], plan: list[StepPlan], first: int) -> Any:
        return await self.exchanges.run(tag, body, plan, first)

    def cancel(self, pending: Pending) -> None:
        """``$/cancelRequest`` of an exchange's request: the host stops it; nobody is answered for it."""
        self.exchanges.cancel(pending)

    def close_calls(self) -> None:
        """``thread/close``: calls whose core has not begun are dropped (``Exchanges.close_calls``)."""
        self.exchanges.close_calls()

    # -- loading

    async def load(self, body: dict[str, Any], restart: bool = False) -> Any:
        """Import one extension and run ``activate``: the host's report, or a ``Stopped``.

        A host that had to be killed or died while loading is replaced by a fresh one into
        which the extensions loaded so far are loaded again; that is the extension's failure,
        not a crash of the thread's host (no ``host_exit``, not counted).
        """
        plan = [StepPlan("load", body["id"], body["timeout"])]
        self.loading = True
        try:
            result = await self.run(channel.LOAD, dict(body), plan, 0)
        finally:
            self.loading = False
        if isinstance(result, Stopped):
            process, self.process = self.process, None
            if process is not None:
                process.on_exit = None
                process.kill()
            if not restart:
                await self._attach()
                for again in self.loads:
                    await self.load(again, restart=True)
        elif isinstance(result, dict) and result.get("ok") and not restart:
            self.loads.append(body)
            self.reports[body["id"]] = _registered(result)
        return result

    def commit(self, ids: list[str]) -> None:
        self.committed = list(ids)
        self.loads = [b for b in self.loads if b["id"] in ids]
        if self.process is not None:
            self.process.send(channel.COMMIT, 0, {"ids": ids})
            if self.schemas:
                self.process.send(channel.SCHEMAS, 0, {"tools": self.schemas})

    def set_schemas(self, schemas: dict[str, Any]) -> None:
        """The inputSchemas of tools the host does not own, for re-validating rewritten arguments."""
        self.schemas = schemas
        if self.process is not None:
            self.process.send(channel.SCHEMAS, 0, {"tools": schemas})

    # -- what the host relays, and asks the user

    def _relay(self, ident: int, body: Any) -> None:
        """A notification the host relays to the editor. What a host says is its own (v4 §2): it goes out
        with this thread's id and the ``extensionId`` of the handler that made it, whatever the frame said;
        one that no handler of this thread made (a frame outside every exchange, a method the host may not
        relay, a diagnostic kind extensions do not report) is dropped."""
        if type(body) is not dict or type(body.get("params")) is not dict:
            return
        method, params = body.get("method"), body["params"]
        if method not in RELAYED or (method == "thread/diagnostic" and params.get("kind") not in HOST_DIAGNOSTICS):
            logger.warning("%s: the extension host relayed %r, which no handler may send; dropped", self.thread_id,
                           method if type(method) is str else type(method).__name__)
            return
        in_flight = ident in self.exchanges.pending
        if not in_flight and method != "thread/diagnostic":  # ctx.ui after its handler: the host refuses it too
            logger.info("%s: a %s outside any handler of the thread; dropped", self.thread_id, method)
            return
        author = self.exchanges.author(ident, body.get("step"))
        if author is None:
            logger.warning("%s: a %s the host relayed names no handler of the thread; dropped", self.thread_id,
                           method)
            return
        params = {**params, "threadId": self.thread_id, "extensionId": author.extension_id}
        if method == "thread/diagnostic":  # the event of the handler it is about: its step's
            params.pop("hook", None)
            if author.kind not in ("core", "load"):
                params["hook"] = author.kind
        self.notify(method, params)

    def _ui(self, uid: int, body: Any) -> None:
        if type(body) is not dict or type(body.get("params")) is not dict or \
                body.get("method") not in ASKED:
            self._answer_ui(uid, None, None, None)
            return
        self.exchanges.read_board(drain=False)  # the step that asks may be announced on the board only
        pending = self.exchanges.pending.get(body.get("exchange"))  # type: ignore[arg-type]
        author = self.exchanges.author(body.get("exchange"), body.get("step")) if pending is not None else None
        if author is None:  # asked outside every handler of the thread (or by none): nobody is asked
            self._answer_ui(uid, None, None, None, "unavailable")
            return
        step = body.get("step")
        # What a host says is its own (v4 §2): the thread's id and the asking handler's extension
        body = {**body, "params": {**body["params"], "threadId": self.thread_id, "extensionId": author.extension_id}}
        if body["method"] == "session/messages":  # {threadId, limit?}: the conversation is the thread's
            limit = body["params"].get("limit")
            body["params"] = {"threadId": self.thread_id, **({"limit": limit} if type(limit) is int and limit >= 0
                                                                else {})}
        if pending is not None:
            if pending.step == step:
                if not pending.paused:
                    pending.paused_at = time.monotonic()
                pending.paused += 1
            pending.ui.add(uid)
        task = asyncio.ensure_future(self._forward_ui(uid, body["method"], body["params"], pending, step))
        self._ui_tasks[uid] = task
        task.add_done_callback(lambda t: self._ui_tasks.pop(uid, None))

    async def _forward_ui(self, uid: int, method: str, params: dict[str, Any], pending: Pending | None,
                          step: Any) -> None:
        answer = None
        outcome = None  # why no answer came, for ctx.ui's outcome: timeout | cancelled | unavailable
        try:
            answer = await self.ask(method, params, self.ui_timeout_s)
        except asyncio.CancelledError:
            answer, outcome = None, "cancelled"
        except Exception as exc:  # noqa: BLE001 - no capability, an error answer, a timeout, EOF: no
            outcome = "timeout" if isinstance(exc, TimeoutError) else "unavailable"
            logger.info("%s for %s: %s", method, self.thread_id, exc)
        shift = None
        if pending is not None:
            pending.ui.discard(uid)
            if pending.step == step and pending.paused:
                pending.paused -= 1
                if not pending.paused:
                    pending.shift += time.monotonic() - pending.paused_at
                    if pending.ident in self.exchanges.pending:
                        self.exchanges.arm(pending.limit())
                shift = pending.shift
        self._answer_ui(uid, answer, step, shift, outcome)

    def _answer_ui(self, uid: int, answer: Any, step: Any, shift: Any, outcome: str | None = None) -> None:
        if self.process is not None:
            body = {"value": answer, "step": step, "shift": shift}
            if outcome is not None:
                body["outcome"] = outcome
            self.process.send(channel.UI_ANSWER, uid, body)

    def _end_ui(self, pending: Pending) -> None:
        if not pending.ui:
            return
        for uid in list(pending.ui):
            task = self._ui_tasks.get(uid)
            if task is not None:
                task.cancel()  # the editor's request is cancelled; the host gets a fail-closed answer

    def _state(self, ident: int, body: Any) -> None:
        """``ctx.state.set`` (protocol-v4 §5): kept for the extension of the step that set it (``author``), so
        that a restarted host gets it back (``init.states``), and told to ``on_state`` (saving it). A state
        larger than ``init.stateBytes`` (the host refuses those itself) or of no handler is dropped."""
        if type(body) is not dict or "state" not in body:
            return
        author = self.exchanges.author(ident, body.get("step"))
        if author is None:
            logger.warning("%s: a ctx.state.set the host sent names no handler of the thread; dropped",
                           self.thread_id)
            return
        value = body["state"]
        limit = self.init.get("stateBytes", 262144)
        import json

        if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) > limit:
            logger.warning("%s: extension '%s' sent a state over %d bytes; dropped", self.thread_id,
                           author.extension_id, limit)
            return
        self.init.setdefault("states", {})[author.extension_id] = value
        if self.on_state is not None:
            self.on_state(author.extension_id, value)

    # -- the end

    async def close(self) -> None:
        self.closed = True
        self.exchanges.read_board()  # the steps the exchanges answered for now were in
        for ident in list(self.exchanges.pending):
            self.exchanges.stop(ident, "crash")
        process, self.process = self.process, None
        if process is not None:
            done = asyncio.get_running_loop().create_future()
            process.on_exit = lambda p: done.done() or done.set_result(None)
            process.close()
            if not process.exited:
                await done


def _registered(report: Any) -> Any:
    """What a load report says an extension registered (None when it failed)."""
    if type(report) is not dict or report.get("ok") is not True:
        return None
    return (report.get("tools"), report.get("hooks"), report.get("commands"))


def load_body(ext_id: str, code: bytes, code_path: str, directory: str | None, files: dict[str, bytes] | None,
              timeout_s: float) -> dict[str, Any]:
    body: dict[str, Any] = {"id": ext_id, "code": base64.b64encode(code).decode("ascii"), "codePath": code_path,
                            "timeout": timeout_s}
    if directory is not None:
        body["directory"] = directory
        body["files"] = {k: base64.b64encode(v).decode("ascii") for k, v in (files or {}).items()}
    return body
