"""The editor as the threads' parts see it: notifications, ``ui/*`` and ``chat/send`` for extensions and
command hooks (asked only when the editor declared ``capabilities.ui.<key>`` at initialize), and the
largest answer it takes.

Owns nothing of a thread; every part of ``Sidecar`` that tells or asks the editor something goes
through an ``Editor``.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from harness_sidecar.base.errors import PeerError

# The lines it logs on stderr name harness_sidecar.threads.sidecar, whichever piece of Sidecar logs them.
logger = logging.getLogger("harness_sidecar.threads.sidecar")


class Peer(Protocol):
    """What a transport offers the methods: notifications and reverse requests to the editor."""

    client_capabilities: dict[str, Any]  # initialize.capabilities, as the editor sent them

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any: ...


class Editor:
    """What the sidecar's threads tell and ask the editor, and what their extensions and hooks ask the user."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.max_result_bytes = 16 * 1024 * 1024  # --max-result-bytes (the endpoint sets it)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.peer.notify(method, params)

    def diagnostic(self, params: dict[str, Any]) -> None:
        """A ``thread/diagnostic``."""
        self.peer.notify("thread/diagnostic", params)

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        return await self.peer.request(method, params, timeout_s)

    def capable(self, key: str) -> bool:
        """Whether the editor declared ``capabilities.ui.<key>`` at initialize: only ``true`` declares it."""
        ui = self.peer.client_capabilities.get("ui")
        return isinstance(ui, dict) and ui.get(key) is True

    def declared(self, key: str) -> bool:
        """Whether the editor declared ``capabilities.<key>: true`` at initialize (``sampling``, ``hookPrompt``,
        ``conversation``): only ``true`` declares it."""
        return self.peer.client_capabilities.get(key) is True

    @property
    def conversation(self) -> bool:
        """Whether the editor declared ``capabilities.conversation: true`` (it answers ``session/messages``)."""
        return self.declared("conversation")

    @property
    def sampling(self) -> bool:
        """Whether the editor declared ``capabilities.sampling: true`` (it answers ``model/sample``)."""
        return self.declared("sampling")

    async def ask(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """A ``ui/*`` (or ``session/messages``, ``model/sample``) request to the editor; raises when it cannot
        be asked or does not answer."""
        if method == "session/messages":
            if not self.conversation:
                raise PeerError("the editor did not declare capabilities.conversation")
            return await self.peer.request(method, params, timeout_s)
        if method == "model/sample":
            if not self.sampling:
                raise PeerError("the editor did not declare capabilities.sampling")
            return await self.peer.request(method, params, timeout_s)
        key = method.split("/", 1)[1]
        if not self.capable(key):
            raise PeerError(f"the editor did not declare capabilities.ui.{key}")
        return await self.peer.request(method, params, timeout_s)

    async def open_url(self, thread_id: str, url: str, reason: str) -> bool | None:
        """``ui/openUrl`` (protocol-v4 §4, a remote MCP server's sign-in): the editor's ``opened``; None
        when it declared no ``capabilities.ui.openUrl`` or did not answer (the caller then gives the URL
        in ``mcp_auth_required``)."""
        if not self.capable("openUrl"):
            return None
        try:
            answer = await self.ask("ui/openUrl", {"threadId": thread_id, "url": url, "reason": reason}, 60.0)
        except Exception:  # noqa: BLE001 - no answer: the sign-in URL is still given as a diagnostic
            return None
        return isinstance(answer, dict) and answer.get("opened") is True

    def ui_notify(self, method: str, params: dict[str, Any]) -> None:
        if method == "chat/send":  # the host sends it only when the editor declared ui.sendMessage
            if self.capable("sendMessage") and type(params.get("text")) is str:
                self.peer.notify(method, params)
            return
        if method == "chat/draft":  # ctx.ui.set_editor_text: only under ui.draft
            if self.capable("draft") and type(params.get("text")) is str and type(params.get("newThread")) is bool:
                self.peer.notify(method, {k: params[k] for k in ("threadId", "extensionId", "text", "newThread")})
            return
        if method == "chat/compact":  # ctx.ui.compact: only under ui.compact
            if self.capable("compact") and type(params.get("instructions", "")) is str:
                self.peer.notify(method, {k: params[k] for k in ("threadId", "extensionId", "instructions")
                                          if k in params})
            return
        if method == "tools/progress":  # ctx.ui.progress: only under ui.progress
            if self.capable("progress"):
                self.peer.notify(method, params)
            return
        if method == "chat/model":  # ctx.ui.set_model: only under ui.model
            keys = [k for k in ("model", "thinkingLevel") if type(params.get(k)) is str]
            if self.capable("model") and keys:
                self.peer.notify(method, {k: params[k] for k in ("threadId", "extensionId", *keys)})
            return
        if method == "thread/diagnostic":  # an extension author's diagnostic the host noticed
            if params.get("kind") in ("handler_return_ignored", "ui_after_handler"):
                self.peer.notify(method, params)
            return
        if self.capable("notify" if method == "ui/notify" else "status"):
            self.peer.notify(method, params)
        else:
            text = params.get("message") if method == "ui/notify" else f"{params.get('key')}: {params.get('text')}"
            logger.warning("[%s %s] %s", params.get("threadId"), params.get("extensionId"), text)
