"""What a handler asks beyond the user (protocol-v4 §5): ``ctx.messages(limit=None)``, the conversation,
asked of the editor (``session/messages``, only when it declared ``capabilities.conversation``;
otherwise it raises and nothing is sent), ``ctx.sample(messages, ...)``, a completion of the editor's
model (``model/sample``, only under ``capabilities.sampling``), ``ctx.tools`` (``list()``,
``set_active(names)``), the thread's tools, and ``ctx.commands.list()``, answered by the sidecar. All go through the relay the
``ui/*`` questions take."""

from __future__ import annotations

from typing import Any, Callable

from harness_sidecar.base.conversation import CAPABILITY, METHOD, last, parse_messages
from harness_sidecar.extensions import channel


class ConversationUnavailable(RuntimeError):
    """``ctx.messages`` could not get the conversation (no capability, no answer, a malformed one)."""


class SamplingUnavailable(RuntimeError):
    """``ctx.sample`` got no completion (no capability, an error answer, none in time, no text in it)."""


SAMPLE_METHOD, SAMPLE_CAPABILITY = "model/sample", "capabilities.sampling"
SAMPLE_ROLES = ("user", "assistant")


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


def sample(ui: Any, messages: Any, system_prompt: str | None = None, max_tokens: int = 1024) -> Any:
    """The editor's model's answer (its text) to ``messages`` — a str (one user message) or a list of
    ``{role: "user" | "assistant", text}`` — asked with ``model/sample``; awaitable in an async handler."""
    if type(messages) is str:
        messages = [{"role": "user", "text": messages}]
    if type(messages) is not list or not messages or not all(
            type(m) is dict and m.get("role") in SAMPLE_ROLES and type(m.get("text")) is str for m in messages):
        raise ValueError("messages is a str or a non-empty list of {'role': 'user' | 'assistant', 'text': str}")
    if system_prompt is not None and type(system_prompt) is not str:
        raise TypeError("system_prompt must be a str")
    if type(max_tokens) is not int or max_tokens <= 0:
        raise ValueError("max_tokens must be a positive int")
    state = ui._users.state
    if not state.sampling:
        raise SamplingUnavailable(
            f"ctx.sample needs the editor's {SAMPLE_CAPABILITY}: it did not declare it at initialize, so nothing "
            f"was asked")
    params: dict[str, Any] = {"threadId": state.thread_id, "maxTokens": max_tokens, "messages": [
        {"role": m["role"], "content": {"type": "text", "text": state.bounded(m["text"])}} for m in messages]}
    if system_prompt is not None:
        params["systemPrompt"] = state.bounded(system_prompt)

    def parse(answer: Any, hint: Any) -> Any:
        if answer is None:
            return _Failed(SamplingUnavailable(f"the editor did not answer {SAMPLE_METHOD} ({hint or 'no answer'})"))
        content = answer.get("content")
        blocks = content if type(content) is list else [content]
        texts = [b["text"] for b in blocks if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str]
        if not texts:
            return _Failed(SamplingUnavailable(f"the editor's {SAMPLE_METHOD} answer has no text content"))
        return "\n".join(texts)

    return _ask(ui, SAMPLE_METHOD, params, parse, SamplingUnavailable(f"{SAMPLE_METHOD} was refused"))


class Commands:
    """``ctx.commands`` (Pi's ``pi.getCommands()``): ``list()`` → ``[{name, description, source, extensionId? |
    path?}]``, the thread's extension commands, templates and skills, answered by the sidecar."""

    __slots__ = ("_ui",)

    def __init__(self, ui: Any) -> None:
        self._ui = ui

    def list(self) -> Any:
        return _ask_sidecar(self._ui, channel.COMMANDS_LIST, {}, "commands", "ctx.commands")


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
        return _ask_sidecar(self._ui, method, params, key, "ctx.tools")


def _ask_sidecar(ui: Any, method: str, params: dict[str, Any], key: str, what: str) -> Any:
    """A question the sidecar answers itself (``ctx.tools``, ``ctx.commands``): ``answer[key]``, or its error."""
    def parse(answer: Any, hint: Any) -> Any:
        if answer is None:
            return _Failed(RuntimeError(f"the sidecar did not answer {what} ({hint or 'no answer'})"))
        if type(answer.get("error")) is str:
            return _Failed(ValueError(answer["error"]))
        return answer[key]

    return _ask(ui, method, {"threadId": ui._users.state.thread_id, **params}, parse, RuntimeError(f"{what} was refused"))
