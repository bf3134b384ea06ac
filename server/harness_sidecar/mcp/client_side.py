"""What the sidecar offers a thread's MCP servers as their client (protocol-v4 §4): ``roots/list``,
``elicitation/create`` and ``sampling/createMessage``, and the client capabilities that say so.

``ClientSide`` is transport-independent: a server's session (stdio here, HTTP or SSE elsewhere) hands
each request the server sends to ``serve(server, method, params)`` and answers with what it returns,
or with the ``RpcError`` it raises. Roots are the thread's roots as ``file://`` URIs. Elicitation and
sampling go to the editor through ``elicit(server, params)`` and ``sample(server, params)``, given
only when the editor declared ``capabilities.ui.elicit`` / ``capabilities.sampling``; the answers the
editor gives are checked here (``elicit_result``, ``sample_result``) before a server sees them. One
question and one sampling per server at a time: a server that asks again while the editor has not
answered is declined (or refused) at once, so a server cannot flood the user with forms.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .messages import METHOD_NOT_FOUND
from .session import RpcError

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
DECLINE = {"action": "decline"}

Relay = Callable[[str, dict[str, Any]], Awaitable[Any]]  # (server, the request's params) → the editor's answer


@dataclass
class ClientSide:
    """The client side of one thread's MCP sessions."""

    roots: list[str]  # the thread's roots, absolute paths
    elicit: Relay | None = None  # ui/elicit to the editor (capabilities.ui.elicit)
    sample: Relay | None = None  # model/sample to the editor (capabilities.sampling)
    _asking: set[tuple[str, str]] = field(default_factory=set)  # (server, method) in flight to the editor

    def capabilities(self) -> dict[str, Any]:
        """``initialize.capabilities`` for the servers: roots always, the others as the editor allows."""
        offered: dict[str, Any] = {"roots": {}}
        if self.elicit is not None:
            offered["elicitation"] = {}  # form mode (an empty object is form only, as 2025-11-25 reads it)
        if self.sample is not None:
            offered["sampling"] = {}
        return offered

    def roots_result(self) -> dict[str, Any]:
        return {"roots": [{"uri": Path(root).absolute().as_uri(), "name": Path(root).name or root}
                          for root in self.roots]}

    async def serve(self, server: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer to a request ``server`` sent; raises ``RpcError`` for one refused."""
        if method == "roots/list":
            return self.roots_result()
        if method == "elicitation/create":
            return await self._elicit(server, params)
        if method == "sampling/createMessage":
            if self.sample is None:
                raise RpcError(METHOD_NOT_FOUND, "sampling is not offered: the editor did not declare "
                                                 "capabilities.sampling")
            check_sample_params(params)
            if (server, method) in self._asking:
                raise RpcError(INTERNAL_ERROR, "a sampling request of this server is already waiting for the editor")
            self._asking.add((server, method))
            try:
                return sample_result(await self.sample(server, params))
            finally:
                self._asking.discard((server, method))
        raise RpcError(METHOD_NOT_FOUND, f"the client does not offer {method}")

    async def _elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        mode = params.get("mode", "form")
        if type(params.get("message")) is not str:
            raise RpcError(INVALID_PARAMS, "elicitation/create needs a string message")
        if mode != "form":  # url mode is not offered
            return dict(DECLINE)
        schema = params.get("requestedSchema")
        if type(schema) is not dict or schema.get("type") != "object" or \
                type(schema.get("properties", {})) is not dict:
            raise RpcError(INVALID_PARAMS, "elicitation/create needs a requestedSchema of type object")
        if self.elicit is None or (server, "elicit") in self._asking:  # no capability, or a form already open
            return dict(DECLINE)
        self._asking.add((server, "elicit"))
        try:
            answer = await self.elicit(server, params)
        except Exception:  # noqa: BLE001 - no answer (an error, a timeout, the editor is gone) is a decline
            return dict(DECLINE)
        finally:
            self._asking.discard((server, "elicit"))
        return elicit_result(answer)


def _primitive(value: Any) -> bool:
    return type(value) in (str, int, float, bool) or (type(value) is list and all(type(v) is str for v in value))


def elicit_result(answer: Any) -> dict[str, Any]:
    """The editor's ``ui/elicit`` answer as MCP's ``ElicitResult``; anything malformed is a decline."""
    if type(answer) is not dict or answer.get("action") not in ("accept", "decline", "cancel"):
        return dict(DECLINE)
    if answer["action"] != "accept":
        return {"action": answer["action"]}
    content = answer.get("content", {})
    if type(content) is not dict or not all(type(k) is str and _primitive(v) for k, v in content.items()):
        return dict(DECLINE)
    return {"action": "accept", "content": content}


def check_sample_params(params: dict[str, Any]) -> None:
    """A ``CreateMessageRequest``'s params as far as the editor needs them: messages and maxTokens."""
    messages = params.get("messages")
    if type(messages) is not list or not all(type(m) is dict and type(m.get("role")) is str for m in messages):
        raise RpcError(INVALID_PARAMS, "sampling/createMessage needs messages: [{role, content}]")
    if type(params.get("maxTokens")) is not int:
        raise RpcError(INVALID_PARAMS, "sampling/createMessage needs an integer maxTokens")


def sample_result(answer: Any) -> dict[str, Any]:
    """The editor's ``model/sample`` answer, checked as MCP's ``CreateMessageResult``."""
    content = answer.get("content") if type(answer) is dict else None
    blocks = content if type(content) is list else [content]
    if type(answer) is not dict or answer.get("role") not in ("user", "assistant") or \
            type(answer.get("model")) is not str or not blocks or \
            not all(type(b) is dict and type(b.get("type")) is str for b in blocks):
        raise RpcError(INTERNAL_ERROR, "the editor's answer to model/sample is not a CreateMessageResult "
                                       "{role, content, model, stopReason?}")
    return answer
