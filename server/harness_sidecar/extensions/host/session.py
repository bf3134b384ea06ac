"""What a handler asks beyond the user (protocol-v4 §5): ``ctx.messages(limit=None)``, the conversation,
asked of the editor (``session/messages``, only when it declared ``capabilities.conversation``;
otherwise it raises and nothing is sent), and ``ctx.tools`` (``list()``, ``set_active(names)``), the
thread's tools, answered by the sidecar. Both go through the relay the ``ui/*`` questions take."""

from __future__ import annotations

from typing import Any, Callable

from harness_sidecar.base.conversation import CAPABILITY, METHOD, last, parse_messages
from harness_sidecar.extensions import channel


class ConversationUnavailable(RuntimeError):
    """``ctx.messages`` could not get the conversation (no capability, no answer, a malformed one)."""


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def _value(answer: Any) -> Any:
    if isinstance(answer, _Failed):
        raise answer.error
    return answer


class _Awaited:
    """An answer an async handler awaits."""

    __slots__ = ("pending",)

    def __init__(self, pending: Any) -> None:
        self.pending = pending

    def __await__(self) -> Any:
        answer = yield from self.pending.__await__()
        return _value(answer)


def _ask(ui: Any, method: str, params: dict[str, Any], parse: Callable[[Any, Any], Any], refused: Exception) -> Any:
    answer = ui._users.ask(ui._exchange, ui._step, method, params, parse, _Failed(refused))
    if hasattr(answer, "__await__"):
        return _Awaited(answer)
    return _value(answer)


def messages(ui: Any, limit: int | None = None) -> Any:
    """The conversation, oldest first (the last ``limit`` messages); awaitable in an async handler."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ValueError("limit must be None or a non-negative int")
    state = ui._users.state
    if not state.conversation:
        raise ConversationUnavailable(
            f"ctx.messages needs the editor's {CAPABILITY}: it did not declare it at initialize, so nothing "
            f"was asked")
    params: dict[str, Any] = {"threadId": state.thread_id}
    if limit is not None:
        params["limit"] = limit

    def parse(answer: Any, hint: Any) -> Any:
        if answer is None:
            return _Failed(ConversationUnavailable(f"the editor did not answer {METHOD} ({hint or 'no answer'})"))
        try:
            return last(parse_messages(answer), limit)
        except ValueError as exc:
            return _Failed(ConversationUnavailable(str(exc)))

    return _ask(ui, METHOD, params, parse, ConversationUnavailable(f"{METHOD} was refused"))


class Tools:
    """``ctx.tools``: the thread's tools (``list()``: ``[{name, description, origin, active}]``) and which
    of them the model may use (``set_active(names)``: builtins stay active; returns the active names)."""

    __slots__ = ("_ui",)

    def __init__(self, ui: Any) -> None:
        self._ui = ui

    def list(self) -> Any:
        return self._sidecar(channel.TOOLS_LIST, {}, "tools")

    def set_active(self, names: Any) -> Any:
        if isinstance(names, (str, bytes)) or not all(type(n) is str for n in names):
            raise TypeError("set_active takes a list of tool names (str)")
        return self._sidecar(channel.TOOLS_SET_ACTIVE, {"names": list(names)}, "active")

    def _sidecar(self, method: str, params: dict[str, Any], key: str) -> Any:
        def parse(answer: Any, hint: Any) -> Any:
            if answer is None:
                return _Failed(RuntimeError(f"the sidecar did not answer ctx.tools ({hint or 'no answer'})"))
            if type(answer.get("error")) is str:
                return _Failed(ValueError(answer["error"]))
            return answer[key]

        return _ask(self._ui, method, {"threadId": self._ui._users.state.thread_id, **params}, parse,
                    RuntimeError("ctx.tools was refused"))
