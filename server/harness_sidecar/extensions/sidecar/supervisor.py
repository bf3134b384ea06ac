"""The sidecar's side of a thread's extension host: ``ExtensionHost`` loads the thread's extensions into a
host process (``process.HostProcess``; ``process.Spares`` keeps one started ahead), runs exchanges (tool
calls, events, commands: ``steps.Exchanges``, with every step stamped and its deadline kept by the
sidecar's clock, a host whose step still runs ``hostGraceMs`` after its deadline ended, in-flight
exchanges answered when a host dies), has what the host asks and tells the user relayed, labelled as
its own (``relay.HostRelay``), and restarts a host on the next need — at most 3 exits in 5 minutes.
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
from harness_sidecar.extensions.sidecar.relay import ASKED, HOST_DIAGNOSTICS, RELAYED, Ask, HostRelay  # noqa: F401
from harness_sidecar.extensions.sidecar.steps import Exchanges, HostUnavailable, Pending, StepPlan, Stopped

logger = logging.getLogger(__name__)

MAX_EXITS = 3
EXIT_WINDOW_S = 300.0


class ExtensionHost:
    """A thread's extension host: its process started and restarted, its extensions loaded, its exchanges
    (``steps.Exchanges``); the questions and notifications it relays, labelled as its own, are
    ``relay.HostRelay``'s (``self.relay``)."""

    def __init__(self, thread_id: str, spares: Spares, init: dict[str, Any], grace_s: float,
                 on_diagnostic: Callable[[dict[str, Any]], None], ask: Ask,
                 notify: Callable[[str, dict[str, Any]], None], ui_timeout_s: float) -> None:
        self.thread_id = thread_id
        self.spares = spares
        self.init = init
        self.grace_s = grace_s
        self.on_diagnostic = on_diagnostic
        self.process: HostProcess | None = None
        self.exits: collections.deque[float] = collections.deque()
        self.failed = False
        self.failure = ""  # why the host was given up
        self.closed = False
        self.loop = asyncio.get_running_loop()  # made in thread/start, on the loop; looked up once
        self.loads: list[dict[str, Any]] = []  # the committed extensions' load bodies, for a restart
        self.reports: dict[str, Any] = {}  # what each registered when first loaded (a restart must match)
        self.committed: list[str] = []
        self.schemas: dict[str, Any] = {}
        self._starting: asyncio.Future | None = None
        self.loading = False
        # what the host says and asks, labelled as its own (``relay.HostRelay``); it reads the exchanges
        self.relay = relay = HostRelay(thread_id, init, ask, notify, ui_timeout_s, lambda: self.process)
        self.exchanges = Exchanges(thread_id, grace_s, lambda: self.process, relay.ui, relay.relay,
                                   relay.refuse_ui, relay.end_ui, relay.state)
        relay.exchanges = self.exchanges

    @property
    def on_state(self) -> Callable[[str, bytes], None] | None:
        """``ctx.state.set`` of an extension (protocol-v4 §5), told on: ``relay.HostRelay.on_state``."""
        return self.relay.on_state

    @on_state.setter
    def on_state(self, on_state: Callable[[str, bytes], None] | None) -> None:
        self.relay.on_state = on_state

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
        init, states = _init_and_state_lines(self.init)
        process.send(channel.INIT, 0, init)
        process.send_lines(states)
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


def _init_and_state_lines(init: dict[str, Any]) -> tuple[dict[str, Any], list[bytes]]:
    """``init`` as sent, and the lines after it: each state (kept as its compact JSON text) goes as a line
    of its own, raw (``channel``: ``stateLines``), which the host keeps as it is and parses at
    ``ctx.state.get()`` — never decoded as part of a frame, nor parsed and encoded again."""
    sent = {k: v for k, v in init.items() if k != "states"}
    texts = init.get("states") or {}
    sent["stateLines"] = list(texts)
    return sent, list(texts.values())


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
