"""``ctx.state`` (protocol-v4 §5): an extension's JSON state for the session, kept in the host and told to the
sidecar, which saves it (``base.session_store``) and hands it back on resume, fork and a host restart.

Runs in the host process only; imports no sidecar module but the channel and ``jsondata``. The host
holds each extension's state as its compact JSON text (``HostState.states``): ``get()`` parses a fresh copy
(the extension cannot change the kept state by mutating what it got), ``set(value)`` copies the value
by exact JSON types (``jsondata.to_json``), refuses more than ``limits.extensionStateBytes`` with
``ValueError`` (the old state stays), keeps it and sends ``["state", exchange, {step, state}]``: the
sidecar names the extension by the step of its plan, never by what the frame says.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

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
        return None if text is None else json.loads(text)

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
