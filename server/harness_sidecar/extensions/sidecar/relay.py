"""What a thread's extension host says and asks, as the sidecar passes it on: ``HostRelay`` owns the
notifications a host relays to the editor (``ui/notify``, ``ui/status``, ``chat/send``, its diagnostics),
the questions it asks the user from inside a handler (``ui/*``, ``session/messages``, ``host/tools.*``:
each labelled with the thread and the asking handler's extension, its step's deadline paused while asked)
and its ``ctx.state.set`` (protocol-v4 §5). It reads the exchanges in flight (``steps.Exchanges``) to
know which handler speaks and re-arms their watchdog after a question; it may not start, stop or
replace the host process (``supervisor.ExtensionHost`` does), only send it answers.
Nothing here imports or runs extension code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from harness_sidecar.base import jsonio
from harness_sidecar.extensions import channel
from harness_sidecar.extensions.sidecar.steps import Exchanges, Pending

logger = logging.getLogger("harness_sidecar.extensions.sidecar.supervisor")

# What a host may relay to the editor (labelled by the sidecar), and the diagnostics its own code reports.
RELAYED = frozenset(("ui/notify", "ui/status", "chat/send", "chat/draft", "chat/compact", "chat/model",
                      "tools/progress", "thread/diagnostic"))
HOST_DIAGNOSTICS = frozenset(("handler_return_ignored", "ui_after_handler"))
# What a host may ask the editor, from inside a handler (v4: the conversation, ctx.messages).
ASKED = frozenset(("ui/confirm", "ui/select", "ui/input", "ui/elicit", "session/messages", "model/sample",
                   channel.TOOLS_LIST, channel.TOOLS_SET_ACTIVE,  # the sidecar answers these (ctx.tools,
                   channel.COMMANDS_LIST))                        # ctx.commands)
Ask = Callable[[str, dict[str, Any], float], Any]  # (method, params, timeout_s) → awaitable answer


class HostRelay:
    """A thread host's notifications, questions and ``ctx.state.set``, passed on labelled as its own.

    Given exactly what it uses: the thread's id, its ``init`` (``stateBytes``; ``states`` kept up to date
    for a restart), ``ask``/``notify`` towards the editor, the UI timeout and ``process_of`` (the current
    ``HostProcess`` or None, to send answers). ``exchanges`` is set by the host right after both are made
    (each names the other's callbacks)."""

    def __init__(self, thread_id: str, init: dict[str, Any], ask: Ask, notify: Callable[[str, dict[str, Any]], None],
                 ui_timeout_s: float, process_of: Callable[[], Any]) -> None:
        self.thread_id = thread_id
        self.init = init
        self.ask = ask
        self.notify = notify
        self.ui_timeout_s = ui_timeout_s
        self.process_of = process_of
        self.exchanges: Exchanges = None  # type: ignore[assignment]  # set by ExtensionHost.__init__
        self.ui_tasks: dict[int, asyncio.Task] = {}
        # ctx.state.set of an extension (protocol-v4 §5): its id and the state's compact JSON text
        self.on_state: Callable[[str, bytes], None] | None = None

    def relay(self, ident: int, body: Any) -> None:
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
        if method == "tools/progress":  # a tool's own execute only, labelled with the call the sidecar sent
            call_id = self.exchanges.pending[ident].call_id
            if author.kind != "core" or call_id is None or type(params.get("text")) is not str:
                logger.warning("%s: a tools/progress outside a tool's execute; dropped", self.thread_id)
                return
            params = {"threadId": self.thread_id, "extensionId": author.extension_id, "callId": call_id,
                      "text": params["text"]}
        if method == "thread/diagnostic":  # the event of the handler it is about: its step's
            params.pop("hook", None)
            if author.kind not in ("core", "load"):
                params["hook"] = author.kind
        self.notify(method, params)

    def ui(self, uid: int, body: Any) -> None:
        """A question the host asks the user (or the sidecar, ``host/tools.*``) from inside a handler."""
        if type(body) is not dict or type(body.get("params")) is not dict or \
                body.get("method") not in ASKED:
            self.answer_ui(uid, None, None, None)
            return
        self.exchanges.read_board(drain=False)  # the step that asks may be announced on the board only
        pending = self.exchanges.pending.get(body.get("exchange"))  # type: ignore[arg-type]
        author = self.exchanges.author(body.get("exchange"), body.get("step")) if pending is not None else None
        if author is None:  # asked outside every handler of the thread (or by none): nobody is asked
            self.answer_ui(uid, None, None, None, "unavailable")
            return
        step = body.get("step")
        # What a host says is its own (v4 §2): the thread's id and the asking handler's extension
        body = {**body, "params": {**body["params"], "threadId": self.thread_id, "extensionId": author.extension_id}}
        if body["method"] == "session/messages":  # {threadId, limit?}: the conversation is the thread's
            limit = body["params"].get("limit")
            body["params"] = {"threadId": self.thread_id, **({"limit": limit} if type(limit) is int and limit >= 0
                                                                else {})}
        if body["method"] == "ui/elicit":  # an extension's form: never in an MCP server's name
            params = body["params"]
            body["params"] = {k: params[k] for k in ("threadId", "extensionId", "message", "requestedSchema",
                                                      "timeoutMs") if k in params}
        if body["method"] == "model/sample":  # MCP's CreateMessageRequest params: only those ctx.sample makes
            params = body["params"]
            body["params"] = {k: params[k] for k in ("threadId", "extensionId", "messages", "maxTokens",
                                                      "systemPrompt") if k in params}
        if pending is not None:
            if pending.step == step:
                if not pending.paused:
                    pending.paused_at = time.monotonic()
                pending.paused += 1
            pending.ui.add(uid)
        task = asyncio.ensure_future(self._forward_ui(uid, body["method"], body["params"], pending, step))
        self.ui_tasks[uid] = task
        task.add_done_callback(lambda t: self.ui_tasks.pop(uid, None))

    async def _forward_ui(self, uid: int, method: str, params: dict[str, Any], pending: Pending | None,
                          step: Any) -> None:
        answer = None
        outcome = None  # why no answer came, for ctx.ui's outcome: timeout | cancelled | unavailable
        timeout_s = self.ui_timeout_s
        own = params.get("timeoutMs")  # a question's own time (ctx.ui.*(timeout_ms=)), never past uiTimeoutMs
        if type(own) is int and own > 0:
            timeout_s = min(timeout_s, own / 1000)
            if own / 1000 > self.ui_timeout_s:
                params = {**params, "timeoutMs": int(self.ui_timeout_s * 1000)}
        try:
            answer = await self.ask(method, params, timeout_s)
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
        self.answer_ui(uid, answer, step, shift, outcome)

    def answer_ui(self, uid: int, answer: Any, step: Any, shift: Any, outcome: str | None = None) -> None:
        process = self.process_of()
        if process is not None:
            body = {"value": answer, "step": step, "shift": shift}
            if outcome is not None:
                body["outcome"] = outcome
            process.send(channel.UI_ANSWER, uid, body)

    def refuse_ui(self, uid: int) -> None:
        """A question too long to ask: answered as no UI (fail closed)."""
        self.answer_ui(uid, None, None, None, "unavailable")

    def end_ui(self, pending: Pending) -> None:
        """An exchange ended: its questions still open are cancelled."""
        if not pending.ui:
            return
        for uid in list(pending.ui):
            task = self.ui_tasks.get(uid)
            if task is not None:
                task.cancel()  # the editor's request is cancelled; the host gets a fail-closed answer

    def state(self, ident: int, body: Any) -> None:
        """``ctx.state.set`` (protocol-v4 §5): kept for the extension of the step that set it (``author``), so
        that a restarted host gets it back (``init.states``), and told to ``on_state`` (saving it), as its
        compact JSON text, encoded once here. A state larger than ``init.stateBytes`` (the host refuses
        those itself) or of no handler is dropped."""
        if type(body) is not dict or "state" not in body:
            return
        author = self.exchanges.author(ident, body.get("step"))
        if author is None:
            logger.warning("%s: a ctx.state.set the host sent names no handler of the thread; dropped",
                           self.thread_id)
            return
        text = jsonio.dumps(body["state"])  # a decoded frame: JSON data, nested at most 512 levels
        limit = self.init.get("stateBytes", 262144)
        if len(text) > limit:
            logger.warning("%s: extension '%s' sent a state over %d bytes; dropped", self.thread_id,
                           author.extension_id, limit)
            return
        self.init.setdefault("states", {})[author.extension_id] = text
        if self.on_state is not None:
            self.on_state(author.extension_id, text)
