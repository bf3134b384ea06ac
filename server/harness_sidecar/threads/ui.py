"""``ui/*`` and ``chat/send`` to the editor, for extensions and command hooks: asked only when the
editor declared ``capabilities.ui.<key>`` at initialize.
"""

from __future__ import annotations

import logging
from typing import Any

from harness_sidecar.base.errors import PeerError

# The lines it logs on stderr name harness_sidecar.threads.sidecar, whichever piece of Sidecar logs them.
logger = logging.getLogger("harness_sidecar.threads.sidecar")


class EditorUi:
    """What the thread's extensions and hooks ask or tell the user, through the editor."""

    def _ui(self, key: str) -> bool:
        """Whether the editor declared ``capabilities.ui.<key>`` at initialize: only ``true`` declares it."""
        ui = self.peer.client_capabilities.get("ui")
        return isinstance(ui, dict) and ui.get(key) is True

    async def _ask(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """A ``ui/*`` request to the editor; raises when it cannot be asked or does not answer."""
        key = method.split("/", 1)[1]
        if not self._ui(key):
            raise PeerError(f"the editor did not declare capabilities.ui.{key}")
        return await self.peer.request(method, params, timeout_s)

    def _ui_notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "chat/send":  # the host sends it only when the editor declared ui.sendMessage
            if self._ui("sendMessage") and type(params.get("text")) is str:
                self.peer.notify(method, params)
            return
        if method == "thread/diagnostic":  # an extension author's diagnostic the host noticed
            if params.get("kind") in ("handler_return_ignored", "ui_after_handler"):
                self.peer.notify(method, params)
            return
        if self._ui("notify" if method == "ui/notify" else "status"):
            self.peer.notify(method, params)
        else:
            text = params.get("message") if method == "ui/notify" else f"{params.get('key')}: {params.get('text')}"
            logger.warning("[%s %s] %s", params.get("threadId"), params.get("extensionId"), text)
