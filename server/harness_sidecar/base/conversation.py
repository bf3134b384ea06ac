"""The conversation as the editor shares it (protocol-v4 §5): a ``session/messages`` answer checked.

Both sides use it: the host for ``ctx.messages()``, the sidecar for the ``context`` event's
``messages``. A message is ``{role, text, toolCalls?, toolResults?}``, oldest first.
"""

from __future__ import annotations

from typing import Any

METHOD = "session/messages"
CAPABILITY = "capabilities.conversation"


def parse_messages(answer: Any) -> list[dict[str, Any]]:
    """The messages of a ``session/messages`` answer; ``ValueError`` saying what is wrong otherwise."""
    if type(answer) is not dict or type(answer.get("messages")) is not list:
        raise ValueError("the editor's session/messages answer is not {messages: [...]}")
    out: list[dict[str, Any]] = []
    for index, message in enumerate(answer["messages"]):
        if type(message) is not dict or type(message.get("role")) is not str or type(message.get("text")) is not str:
            raise ValueError(f"message {index} of the editor's answer is not {{role: str, text: str, ...}}")
        item: dict[str, Any] = {"role": message["role"], "text": message["text"]}
        for key in ("toolCalls", "toolResults"):
            value = message.get(key)
            if value is None:
                continue
            if type(value) is not list or not all(type(v) is dict for v in value):
                raise ValueError(f"message {index}'s {key} is not a list of objects")
            item[key] = value
        out.append(item)
    return out


def last(messages: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The last ``limit`` messages (all when ``None``): an editor that sent more is cut, oldest first kept."""
    if limit is None or len(messages) <= limit:
        return messages
    return messages[len(messages) - limit:] if limit else []
