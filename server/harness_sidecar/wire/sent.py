"""The requests the sidecar sends the editor (``ui/*``, ``item/tool/call``, …), each waiting for its answer
in a table of its own (``served`` has the editor's): never one over ``--max-result-bytes``, cancelled with
``$/cancelRequest`` when nobody waits any more, failed when the editor is gone.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from harness_sidecar.base.errors import PeerError

logger = logging.getLogger("harness_sidecar.wire.endpoint")


class SentRequests:
    """Requests to the editor by id, and their answers."""

    def __init__(self, writer: Any, max_result_bytes: int, gone: Callable[[], bool]) -> None:
        self.writer = writer  # transport.Writer
        self.max_result_bytes = max_result_bytes
        self.gone = gone  # the editor closed stdin, the sidecar is exiting, or stdout broke
        self.table: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        if self.gone():
            raise PeerError("the editor is gone")
        request_id = next(self._ids)
        data = self.writer.encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        if len(data) > self.max_result_bytes:  # never sent: the asker gets what a refusal gives it
            logger.warning("did not send %s: %d bytes, over --max-result-bytes (%d)", method, len(data),
                           self.max_result_bytes)
            raise PeerError(f"the {method} request would be {len(data)} bytes, over --max-result-bytes "
                            f"({self.max_result_bytes}); it was not sent")
        future = asyncio.get_running_loop().create_future()
        self.table[request_id] = future
        try:
            self.writer.write_encoded(data)
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            self._cancel(request_id)
            raise TimeoutError(f"no answer to {method} within {timeout_s:g} s") from None
        except asyncio.CancelledError:
            self._cancel(request_id)  # the editor may stop asking the user: nobody waits any more
            raise
        finally:
            self.table.pop(request_id, None)

    def _cancel(self, request_id: int) -> None:
        if not self.gone():
            self.writer.write_encoded(self.writer.encode({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                                          "params": {"id": request_id}}))

    def on_response(self, request_id: Any, message: dict[str, Any]) -> None:
        future = self.table.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            logger.info("ignoring a response to unknown or expired request %r", request_id)
            return
        if "error" in message:
            error = message["error"]
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(PeerError(str(text or error)))
        else:
            future.set_result(message.get("result"))

    def fail_all(self, reason: str) -> None:
        for future in self.table.values():
            if not future.done():
                future.set_exception(PeerError(reason))
