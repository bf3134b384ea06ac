"""``ctx.state`` (protocol-v4 §5): an extension's JSON state for the session, kept in the host and told to the
sidecar, which saves it (``base.session_store``) and hands it back on resume, fork and a host restart.

Runs in the host process only; imports no sidecar module but the channel and ``jsondata``. The host
holds each extension's state as its compact JSON text (``HostState.states``): the sidecar hands each over
as a raw line after ``init`` (its ``stateLines``), kept as it came (no parse, no encode, however large,
until it is used);
``get()`` parses a fresh copy (the extension cannot change the kept state by mutating what it got) —
orjson, with the standard library reading what orjson would read otherwise (an integer past 64 bits, a
lone surrogate); ``set(value)`` copies the value by exact JSON types (``jsondata.to_json``), refuses
more than ``limits.extensionStateBytes`` with ``ValueError`` (the old state stays), keeps it and sends
``["state", exchange, {step, state}]``: the sidecar names the extension by the step of its plan, never
by what the frame says.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import orjson

from harness_sidecar.extensions import channel
from harness_sidecar.extensions.host.jsondata import to_json

if TYPE_CHECKING:  # at run time the host module is __main__, never imported
    from harness_sidecar.extensions.host.exchanges import Exchange
    from harness_sidecar.extensions.host.state import HostState

DEFAULT_STATE_BYTES = 262144


class ExtensionState:
    """``ctx.state``: ``get()`` → the saved JSON value (None when nothing was set); ``set(value)``."""

    __slots__ = ("_host", "_extension_id", "_exchange", "_step")

    def __init__(self, host: "HostState", extension_id: str, exchange: "Exchange | None", step: int) -> None:
        self._host = host
        self._extension_id = extension_id
        self._exchange = exchange
        self._step = step

    def get(self) -> Any:
        text = self._host.states.get(self._extension_id)
        return None if text is None else parsed(text)

    def set(self, value: Any) -> None:
        copy = to_json(value, "state")  # NotJsonData is a ValueError
        text = json.dumps(copy, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
        limit = self._host.state_bytes
        if size > limit:
            raise ValueError(f"ctx.state.set: the state is {size} bytes as JSON; the limit is {limit} "
                             f"(limits.extensionStateBytes): the previous state is kept")
        self._host.states[self._extension_id] = text
        exchange = self._exchange.id if self._exchange is not None else 0
        self._host.out.send(channel.STATE, exchange, {"step": self._step, "state": copy})


WALKED_VALUES = 10_000
_OVERFLOW = float(2 ** 63)


def parsed(text: bytes | str) -> Any:
    """The value of a kept state's text, every integer exact: orjson reads an integer past 64 bits as a
    float of at least 2**63, so a value holding such a float (or too many values to look at) is read
    again by the standard library — as is one orjson refuses."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    todo, budget = [value], WALKED_VALUES
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict or kind is list:
            budget -= len(item)
            if budget < 0:
                return json.loads(text)
            todo.extend(item.values() if kind is dict else item)
        elif kind is float and abs(item) >= _OVERFLOW:
            return json.loads(text)
    return value
