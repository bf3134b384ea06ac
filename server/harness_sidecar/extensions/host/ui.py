"""The user, from handlers: ``ctx`` (``Context``) and ``ctx.ui`` (``Ui``), and the questions to the
editor with their answers (``ask``, ``resolve_ui``)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from typing import Any, Callable, Protocol

from harness_sidecar.extensions import channel
from harness_sidecar.extensions.host.answers import UiAnswer, chosen, confirmed, filled
from harness_sidecar.extensions.host.exchanges import Exchange
from harness_sidecar.extensions.host.jsondata import to_json
from harness_sidecar.extensions.host.session import Commands, Tools, messages, sample
from harness_sidecar.extensions.host.state import HostState

class RunsUserCode(Protocol):
    """What a question to the user needs of the part that runs user code (``running.Running``, which
    imports this module for ``Context``): its event loop, whether this thread is that loop's, notices."""

    @property
    def loop(self) -> Any: ...

    def on_loop(self) -> bool: ...

    def notice(self, extension_id: str, hook: str, kind: str, message: str, exchange: Exchange | None = None,
               step: int = -1) -> None: ...


class Ui:
    """``ctx.ui``: ask the user through the editor. Fail-closed: no answer means no.

    A ``ctx.ui`` lives as long as its handler: used after the handler ended (kept by the
    extension and called later), or after the sidecar stopped the handler at its deadline, it
    reaches nobody — questions are answered ``unavailable``, notices dropped — and the
    extension gets a ``thread/diagnostic`` kind ``ui_after_handler``.
    """

    __slots__ = ("_users", "_extension_id", "_exchange", "_step", "_call", "_done", "_hook", "available",
                 "last_outcome")

    def __init__(self, users: UserRequests, extension_id: str, exchange: Exchange | None, step: int,
                 call: dict[str, Any] | None, hook: str = "") -> None:
        self._users = users
        self._extension_id = extension_id
        self._exchange = exchange
        self._step = step
        self._call = call
        self._done = False
        self._hook = hook  # the event (or "command", "tool") whose handler this ctx is for
        self.available = any(v for k, v in users.state.ui.items() if k not in _NOT_QUESTIONS)
        # How the last question this ctx asked ended (``answers.OUTCOMES``); None before the first. The
        # answers themselves are the v2 values: a bool, a str, or None when no answer came (v4 §2).
        self.last_outcome: str | None = None

    def confirm(self, title: str, message: str, timeout_ms: int | None = None) -> Any:
        _strings(title=title, message=message)
        params: dict[str, Any] = {"title": title, "message": message}
        if self._call is not None:
            params.update(callId=self._call["id"], tool=self._call["name"], arguments=self._call["arguments"])
        _timeout(params, timeout_ms)
        return self._ask("confirm", params, confirmed, UiAnswer(False, "unavailable"))

    def select(self, title: str, options: list[Any], timeout_ms: int | None = None) -> Any:
        _strings(title=title)
        items = []
        for option in options:
            if type(option) is str:
                items.append({"value": option, "label": option})
            elif type(option) is dict and type(option.get("value")) is str and type(option.get("label")) is str:
                item = {"value": option["value"], "label": option["label"]}
                if type(option.get("description")) is str:
                    item["description"] = option["description"]
                items.append(item)
            else:
                raise TypeError("an option is a string or {'value': str, 'label': str, 'description'?: str}")
        values = {i["value"] for i in items}
        params = {"title": title, "options": items}
        _timeout(params, timeout_ms)
        return self._ask("select", params,
                         lambda answer, hint: chosen(answer, hint, lambda v: type(v) is str and v in values),
                         UiAnswer(None, "unavailable"))

    def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None) -> Any:
        _strings(title=title)
        params: dict[str, Any] = {"title": title}
        if placeholder is not None:
            _strings(placeholder=placeholder)
            params["placeholder"] = placeholder
        _timeout(params, timeout_ms)
        return self._ask("input", params, lambda answer, hint: chosen(answer, hint, lambda v: type(v) is str),
                         UiAnswer(None, "unavailable"))

    def elicit(self, message: str, requested_schema: dict[str, Any], timeout_ms: int | None = None) -> Any:
        """A form of several fields at once (``ui/elicit``, MCP's flat form; Pi's questionnaires): the
        filled ``{field: value}``, or ``None`` (declined, cancelled, no ``capabilities.ui.elicit``)."""
        _strings(message=message)
        if type(requested_schema) is not dict or requested_schema.get("type") != "object" or \
                type(requested_schema.get("properties")) is not dict or not requested_schema["properties"]:
            raise ValueError("requested_schema must be {'type': 'object', 'properties': {...}} with a field")
        schema = to_json(requested_schema, "requested_schema")
        params: dict[str, Any] = {"message": message, "requestedSchema": schema}
        _timeout(params, timeout_ms)
        properties = schema["properties"]  # type: ignore[index]
        return self._ask("elicit", params, lambda answer, hint: filled(answer, hint, properties),
                         UiAnswer(None, "unavailable"))

    def notify(self, message: str, level: str = "info") -> Any:
        _strings(message=message)
        if level not in ("info", "warning", "error"):
            raise ValueError("level must be 'info', 'warning' or 'error'")
        if not self._ended("notify"):
            self._users.out.send(channel.NOTIFY, self._exchange_id(), {"method": "ui/notify", "step": self._step, "params": {
                "threadId": self._users.state.thread_id, "extensionId": self._extension_id, "level": level,
                "message": self._users.state.bounded(message)}})
        return _Ready(None) if self._users.running.on_loop() else None  # an async handler may await it

    def set_status(self, key: str, text: str | None) -> Any:
        _strings(key=key)
        if text is not None:
            _strings(text=text)
        if not self._ended("set_status"):
            self._users.out.send(channel.NOTIFY, self._exchange_id(), {"method": "ui/status", "step": self._step, "params": {
                "threadId": self._users.state.thread_id, "extensionId": self._extension_id, "key": key,
                "text": None if text is None else self._users.state.bounded(text)}})
        return _Ready(None) if self._users.running.on_loop() else None

    def send_message(self, text: str) -> Any:
        """Ask the editor to send ``text`` as a message (``chat/send``; the editor decides).

        True when it was sent; False when the editor did not declare ``capabilities.ui.sendMessage``
        or the handler has ended.
        """
        _strings(text=text)
        return self._send("send_message", "sendMessage", "chat/send", {"text": self._users.state.bounded(text)})

    def set_editor_text(self, text: str, new_thread: bool = False) -> Any:
        """Ask the editor to put ``text`` in its input box for the user to edit and send (``chat/draft``;
        Pi's ``setEditorText``); ``new_thread=True``: in a new conversation (Pi's ``newSession`` first).

        True when it was sent; False without the editor's ``capabilities.ui.draft`` or after the handler.
        """
        _strings(text=text)
        if type(new_thread) is not bool:
            raise TypeError("new_thread must be True or False")
        return self._send("set_editor_text", "draft", "chat/draft",
                          {"text": self._users.state.bounded(text), "newThread": new_thread})

    def compact(self, instructions: str | None = None) -> Any:
        """Ask the editor to compact the conversation now (``chat/compact``; Pi's ``ctx.compact``), with
        ``instructions`` for its summary. True when sent; False without ``capabilities.ui.compact``."""
        params: dict[str, Any] = {}
        if instructions is not None:
            _strings(instructions=instructions)
            params["instructions"] = self._users.state.bounded(instructions)
        return self._send("compact", "compact", "chat/compact", params)

    def progress(self, text: str) -> Any:
        """From a tool's ``execute``: tell the editor how the call is going (``tools/progress``; Pi's
        ``onUpdate``), labelled by the sidecar with the call. True when sent; False outside a tool's
        execute or without ``capabilities.ui.progress``."""
        _strings(text=text)
        if self._call is None or self._hook:  # a tool's execute has a call and no hook
            return _Ready(False) if self._users.running.on_loop() else False
        return self._send("progress", "progress", "tools/progress", {"text": self._users.state.bounded(text)})

    def set_model(self, model: str | None = None, thinking_level: str | None = None) -> Any:
        """Ask the editor to switch the model (its own name for it, e.g. ``provider/id``) and/or the
        thinking level (``chat/model``; Pi's ``setModel``, ``setThinkingLevel``). True when sent; False
        without ``capabilities.ui.model``. The editor reports the switch with ``model_select``."""
        if model is None and thinking_level is None:
            raise ValueError("set_model needs a model or a thinking_level")
        params: dict[str, Any] = {}
        if model is not None:
            _strings(model=model)
            params["model"] = model
        if thinking_level is not None:
            _strings(thinking_level=thinking_level)
            params["thinkingLevel"] = thinking_level
        return self._send("set_model", "model", "chat/model", params)

    def _send(self, what: str, capability: str, method: str, params: dict[str, Any]) -> Any:
        """A request to the editor that it carries out as it decides: sent only under its capability."""
        sent = False
        if not self._ended(what) and self._users.state.ui.get(capability):
            self._users.out.send(channel.NOTIFY, self._exchange_id(), {"method": method, "step": self._step, "params": {
                "threadId": self._users.state.thread_id, "extensionId": self._extension_id, **params}})
            sent = True
        return _Ready(sent) if self._users.running.on_loop() else sent

    def _exchange_id(self) -> int:
        """The exchange a notice is sent on: the sidecar labels it with that exchange's thread and the
        extension whose step it is in (never with what the frame says)."""
        return self._exchange.id if self._exchange is not None else 0

    def _ended(self, what: str) -> bool:
        """Whether this ctx's handler has ended (or was stopped at its deadline): then a diagnostic."""
        exchange = self._exchange
        stopped = exchange is not None and not self._done and (exchange.aborted or (
            exchange.step == self._step and not exchange.ui_pending
            and time.monotonic() > exchange.deadline + exchange.shift + channel.MARGIN_S))
        if not (self._done or stopped):
            return False
        how = "was stopped at its deadline" if stopped else "had ended"
        where = f"{self._hook} handler" if self._hook else "handler"
        self._users.running.notice(self._extension_id, self._hook, "ui_after_handler",
                          f"ctx.ui.{what} of extension '{self._extension_id}' was used after its {where} {how}: "
                          f"refused and not shown. Use ctx.ui only while the handler runs (await it in an async "
                          f"handler); a longer handler can ask for its own deadline with timeout_ms=",
                          self._exchange, self._step)
        return True

    def _ask(self, what: str, params: dict[str, Any], parse: Callable[[Any, Any], Any], refused: Any) -> Any:
        users = self._users
        if self._ended(what) or not users.state.ui.get(what):
            return self._plain(_Ready(refused) if users.running.on_loop() else refused)
        params = {"threadId": users.state.thread_id, "extensionId": self._extension_id, **params}
        return self._plain(users.ask(self._exchange, self._step, f"ui/{what}", params, parse, refused))

    def _plain(self, answer: Any) -> Any:
        """The v2 value of an answer (``last_outcome`` says how it ended); awaitable from an async handler."""
        if isinstance(answer, (_Ready, _Pending)):
            return _Plain(self, answer)
        self.last_outcome = answer.outcome
        return answer.value


# capabilities.ui keys that are not questions (ctx.ui.available says nothing of them)
_NOT_QUESTIONS = ("sendMessage", "draft", "compact", "model", "progress")


def _timeout(params: dict[str, Any], timeout_ms: Any) -> None:
    """A question's own time (Pi's ``{timeout}``): ``timeoutMs``, which the sidecar keeps (at most
    ``limits.uiTimeoutMs``); when it passes, the question ends unanswered (``last_outcome`` ``timeout``)."""
    if timeout_ms is None:
        return
    if type(timeout_ms) is not int or timeout_ms <= 0:
        raise ValueError(f"timeout_ms must be a positive int (milliseconds), not {timeout_ms!r}")
    params["timeoutMs"] = timeout_ms


def _strings(**values: Any) -> None:
    for name, value in values.items():
        if type(value) is not str:
            raise TypeError(f"{name} must be a str")


class _Ready:
    """An answer known at once, for an async handler that awaits it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # noqa: B901 - makes this a generator

    def __bool__(self) -> bool:
        raise TypeError("await ctx.ui.* in an async handler")


class _Plain:
    """An answer an async handler awaits: its v2 value, with the ctx's ``last_outcome`` set."""

    __slots__ = ("ui", "answer")

    def __init__(self, ui: Ui, answer: Any) -> None:
        self.ui = ui
        self.answer = answer

    def __await__(self) -> Any:
        answer = yield from self.answer.__await__()
        return self.ui._plain(answer)

    def __bool__(self) -> bool:
        raise TypeError("await ctx.ui.* in an async handler")


class _Pending:
    """A question to the editor asked from an async handler: ``await`` it."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future) -> None:
        self.future = future

    def __await__(self) -> Any:
        return self.future.__await__()

    def __bool__(self) -> bool:
        raise TypeError("await ctx.ui.* in an async handler")


class Context:
    """``ctx``: where the handler runs and how to reach the user."""

    __slots__ = ("thread_id", "cwd", "roots", "settings", "ui", "state", "tools", "commands")

    def __init__(self, state: HostState, extension_id: str, ui: Ui, extension_state: Any = None) -> None:
        self.thread_id = state.thread_id
        self.cwd = state.cwd
        self.roots = list(state.roots)
        settings = state.settings.get(extension_id, {})
        self.settings = to_json(settings) if settings else {}
        self.ui = ui
        self.state = extension_state  # session_state.ExtensionState: ctx.state
        self.tools = Tools(ui)  # v4 §5: ctx.tools.list(), ctx.tools.set_active(names)
        self.commands = Commands(ui)  # ctx.commands.list(): Pi's getCommands

    def messages(self, limit: int | None = None) -> Any:
        """The conversation (``capabilities.conversation``): ``extensions.host.session``."""
        return messages(self.ui, limit)

    def sample(self, messages: Any, system_prompt: str | None = None, max_tokens: int = 1024) -> Any:
        """The editor's model's completion (``capabilities.sampling``): ``extensions.host.session``."""
        return sample(self.ui, messages, system_prompt, max_tokens)


class UserRequests:
    """``ctx`` for a handler, and ``ui/*`` requests with their answers."""

    def __init__(self, state: HostState, running: RunsUserCode) -> None:
        self.state = state
        self.out = state.out
        self.running = running
        self.ui_ids = itertools.count(1)
        self.ui_waiters: dict[int, tuple[Exchange | None, int, Any, Callable[[dict], Any], Any]] = {}
        self.ui_lock = threading.Lock()
        # the reading thread hands the channel on before it waits for an answer (``serving.Serving.promote``:
        # the part that reads the channel dispatches answers here, so it is handed up by ``Host``)
        self.promote: Callable[[], None] = lambda: None

    def context(self, exchange: Exchange, step: int, handler_id: str, call: dict[str, Any] | None,
                hook: str = "") -> Context:
        from harness_sidecar.extensions.host.session_state import ExtensionState

        return Context(self.state, handler_id, Ui(self, handler_id, exchange, step, call, hook),
                       ExtensionState(self.state, handler_id, exchange, step))

    def ask(self, exchange: Exchange | None, step: int, method: str, params: dict[str, Any],
            parse: Callable[[Any, Any], Any], refused: Any) -> Any:
        uid = next(self.ui_ids)
        on_loop = self.running.on_loop()
        if on_loop:
            waiter: Any = self.running.loop.loop.create_future()
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
            self.running.loop.loop.call_soon_threadsafe(_settle, waiter, value)


def _settle(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)
