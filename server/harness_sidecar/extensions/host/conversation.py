"""``ctx.messages(limit=None)``: the conversation, asked of the editor through the sidecar
(``session/messages``, relayed as the ``ui/*`` questions are). Only when the editor declared
``capabilities.conversation``; otherwise it raises and nothing is sent."""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.conversation import CAPABILITY, METHOD, last, parse_messages


class ConversationUnavailable(RuntimeError):
    """``ctx.messages`` could not get the conversation (no capability, no answer, a malformed one)."""


class _Failed:
    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _value(answer: Any) -> list[dict[str, Any]]:
    if isinstance(answer, _Failed):
        raise ConversationUnavailable(answer.why)
    return answer


class _Awaited:
    """The messages an async handler awaits."""

    __slots__ = ("pending",)

    def __init__(self, pending: Any) -> None:
        self.pending = pending

    def __await__(self) -> Any:
        answer = yield from self.pending.__await__()
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
            return _Failed(f"the editor did not answer {METHOD} ({hint or 'no answer'})")
        try:
            return last(parse_messages(answer), limit)
        except ValueError as exc:
            return _Failed(str(exc))

    answer = ui._users.ask(ui._exchange, ui._step, METHOD, params, parse, _Failed(f"{METHOD} was refused"))
    if hasattr(answer, "__await__"):
        return _Awaited(answer)
    return _value(answer)
