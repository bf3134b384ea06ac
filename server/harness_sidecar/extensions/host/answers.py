"""How ``ctx.ui.confirm/select/input`` questions end, inside the host (``UiAnswer``: value and outcome).

Extension code never sees a ``UiAnswer`` (v4 §2: v2 extension code keeps working): ``ctx.ui``
returns its ``value`` — a ``bool`` for confirm, a ``str`` or ``None`` (no answer came) for
select/input — and keeps its ``outcome`` in ``ctx.ui.last_outcome``: ``"answered"`` (the user
answered: yes, an option, a text), ``"declined"`` (the user said no to a confirm), ``"cancelled"``
(the user dismissed the question, or the call it was for was cancelled or stopped), ``"timeout"``
(no answer within ``limits.uiTimeoutMs``), ``"unavailable"`` (the editor cannot ask: no
capability, an error answer, a malformed one, or the handler had already ended).
Runs in the host process.
"""

from __future__ import annotations

from typing import Any

OUTCOMES = ("answered", "declined", "timeout", "cancelled", "unavailable")


class UiAnswer:
    __slots__ = ("value", "outcome")

    def __init__(self, value: Any, outcome: str) -> None:
        self.value = value
        self.outcome = outcome

    def __getitem__(self, key: str) -> Any:
        if key == "outcome":
            return self.outcome
        if key == "value":
            return self.value
        raise KeyError(key)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, UiAnswer):
            return self.value == other.value and self.outcome == other.outcome
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"UiAnswer({self.value!r}, outcome={self.outcome!r})"

    def __getattr__(self, name: str) -> Any:  # str methods of a text answer: choice.startswith("Yes")
        value = object.__getattribute__(self, "value")
        if type(value) is str:
            return getattr(value, name)
        raise AttributeError(name)

    def __add__(self, other: Any) -> Any:
        return self.value + other

    def __radd__(self, other: Any) -> Any:
        return other + self.value


def confirmed(answer: Any, hint: str | None) -> UiAnswer:
    """A ``ui/confirm`` answer (``None``: none came; ``hint`` says why)."""
    if type(answer) is dict and answer.get("confirmed") is True:
        return UiAnswer(True, "answered")
    if type(answer) is dict and answer.get("confirmed") is False:
        return UiAnswer(False, "declined")
    return UiAnswer(False, hint or ("unavailable" if answer is not None else "cancelled"))


def filled(answer: Any, hint: str | None, properties: dict[str, Any]) -> UiAnswer:
    """A ``ui/elicit`` answer to an extension's form: the ``content`` of an ``accept`` whose every value is a
    string, number, boolean or list of strings for a field of the form; ``decline`` → ``declined``,
    ``cancel`` → ``cancelled``; anything else is no answer."""
    if type(answer) is dict and answer.get("action") == "accept" and type(answer.get("content")) is dict:
        content = answer["content"]
        if all(key in properties and (type(value) in (str, int, float, bool) or (
                type(value) is list and all(type(v) is str for v in value))) for key, value in content.items()):
            return UiAnswer(content, "answered")
        return UiAnswer(None, "unavailable")
    if type(answer) is dict and answer.get("action") in ("decline", "cancel"):
        return UiAnswer(None, "declined" if answer["action"] == "decline" else "cancelled")
    return UiAnswer(None, hint or ("unavailable" if answer is not None else "cancelled"))


def chosen(answer: Any, hint: str | None, valid: Any) -> UiAnswer:
    """A ``ui/select``/``ui/input`` answer: ``valid(value)`` says whether the value can be taken."""
    if type(answer) is dict and "value" in answer:
        value = answer["value"]
        if value is None:
            return UiAnswer(None, "cancelled")
        if valid(value):
            return UiAnswer(value, "answered")
        return UiAnswer(None, "unavailable")
    return UiAnswer(None, hint or ("unavailable" if answer is not None else "cancelled"))
