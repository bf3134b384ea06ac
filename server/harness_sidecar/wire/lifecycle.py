"""The session's start: what ``initialize`` answers, and answering it before the event loop exists.

Spawn-to-``initialize`` is what a user feels every time an editor window opens. The
answer needs nothing but ``json``: the first frame is read by the reader thread, and if
it is a well-formed ``initialize`` request it is answered at once; ``asyncio``, the
endpoint and the methods are imported afterwards, while the editor reads the answer.
Anything else (a bad first line, another method, EOF) takes the ordinary path, so every
error is still answered by the endpoint.
"""

from __future__ import annotations

import json
import threading

from harness_sidecar import (
    PROTOCOL_VERSION,
    SERVER_NAME,
    SUPPORTED_PROTOCOL_VERSIONS,
    __version__,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The methods served by harness_sidecar.threads.sidecar.Sidecar (a test keeps the two in step).
SERVED_METHODS = ("commands/list", "commands/run", "context/build", "input/submit", "skills/activate",
                  "skills/deactivate", "templates/render", "thread/close", "thread/fork", "thread/refresh",
                  "thread/start", "tools/call", "tools/list", "loop/event", "mcp/resource/read", "mcp/prompt/get")


def initialize_result(framing: str) -> dict[str, Any]:
    return {
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {
            "framing": framing,
            "methods": sorted([*SERVED_METHODS, "shutdown"]),
            "notifications": ["catalog/changed", "chat/compact", "chat/draft", "chat/model", "chat/send",
                              "thread/diagnostic", "tools/progress", "ui/notify", "ui/status"],
            "clientRequests": ["hook/prompt", "item/tool/call", "model/sample", "session/messages", "ui/confirm",
                               "ui/elicit", "ui/input", "ui/openUrl", "ui/select"],
            "cancellation": True,
        },
        "containment": containment(),
    }


def containment() -> dict[str, Any]:
    """What the kernel offered to fence the processes the sidecar starts (protocol.md, Containment)."""
    from harness_sidecar.containment import landlock, private

    return {"landlockAbi": landlock.abi(), "nonDumpable": private.is_private(), "scopedSignals": landlock.scoped()}


def clean_initialize(frame: bytes) -> tuple[Any, dict[str, Any]] | None:
    """``(id, params)`` of ``frame`` if it is a well-formed ``initialize`` request, else ``None``."""
    try:
        message = json.loads(frame)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    if message.get("jsonrpc", "2.0") != "2.0" or not isinstance(message.get("params", {}), (dict, type(None))):
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    params = message.get("params") or {}
    if params.get("protocolVersion") not in (None, *SUPPORTED_PROTOCOL_VERSIONS):
        return None  # let the endpoint log the mismatch
    return request_id, params


class Relay:
    """Where the reader thread's batches go: held until the event loop is connected."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: list[list[Any]] = []
        self._target: Any = None

    def __call__(self, batch: list[Any]) -> None:
        with self._cond:
            if self._target is not None:
                self._target(batch)
            else:
                self._pending.append(batch)
                self._cond.notify_all()

    def first_batch(self) -> list[Any]:
        """Wait for, and take, the first batch the reader delivers."""
        with self._cond:
            while not self._pending:
                self._cond.wait()
            return self._pending.pop(0)

    def connect(self, target: Any, first: list[Any]) -> None:
        """Send ``first`` (what is left of the first batch) and everything held to ``target``."""
        with self._cond:
            if first:
                target(first)
            for batch in self._pending:
                target(batch)
            self._pending.clear()
            self._target = target
