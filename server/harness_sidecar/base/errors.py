"""JSON-RPC errors: one class per code, plus the domain errors clients branch on.

Every error the sidecar answers carries ``error.data.kind`` so that a client can
branch on a stable string instead of parsing a message.
"""

from __future__ import annotations

import errno as _errno
from typing import Any

# The system said no (no fds, no memory, no processes): the request fails, the sidecar goes on.
RESOURCE_ERRNOS = frozenset({_errno.EMFILE, _errno.ENFILE, _errno.EAGAIN, _errno.ENOMEM})


class RpcError(Exception):
    """An error that becomes a JSON-RPC ``error`` object."""

    code: int = -32603
    default_kind: str = "internal_error"

    def __init__(self, message: str, kind: str | None = None, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind or self.default_kind
        self.data = {k: v for k, v in data.items() if v is not None}

    def to_error(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "data": {"kind": self.kind, **self.data}}


class ParseError(RpcError):
    code = -32700
    default_kind = "parse_error"


class InvalidRequest(RpcError):
    code = -32600
    default_kind = "invalid_request"


class MethodNotFound(RpcError):
    code = -32601
    default_kind = "method_not_found"


class InvalidParams(RpcError):
    """Params of the wrong shape; ``data.field`` names the offending field."""

    code = -32602
    default_kind = "invalid_params"

    def __init__(self, message: str, field: str | None = None, **data: Any) -> None:
        super().__init__(message, "invalid_params", field=field, **data)


class TooDeep(RpcError):
    """JSON nested deeper than 512 levels (``jsondepth``): invalid params, with a kind of its own."""

    code = -32602
    default_kind = "too_deep"


class InternalError(RpcError):
    code = -32603
    default_kind = "internal_error"


class ServerNotInitialized(RpcError):
    code = -32002
    default_kind = "not_initialized"


class RequestCancelled(RpcError):
    code = -32800
    default_kind = "cancelled"


# Domain errors: a code in -32000..-32099 per kind, so logs stay readable, but
# clients are meant to branch on ``data.kind``.
DOMAIN_CODES: dict[str, int] = {
    "thread_not_found": -32001,
    "skill_not_found": -32010,
    "skill_not_active": -32019,
    "invalid_arguments": -32011,
    "path_escape": -32012,
    "name_mismatch": -32013,
    "invalid_frontmatter": -32014,
    "not_utf8": -32015,
    "resource_not_found": -32016,
    "too_large": -32017,
    "broken_link": -32018,
    "template_not_found": -32020,
    "missing_argument": -32021,
    "command_not_found": -32030,
    "input_blocked": -32031,
    "extension_failed": -32032,
    "mcp_unavailable": -32040,
    "overloaded": -32050,
    "resources_exhausted": -32070,
    "too_many_threads": -32071,
}


class DomainError(RpcError):
    """A failure of the request's subject (a skill, a template, a thread), not of its shape."""

    def __init__(self, kind: str, message: str, **data: Any) -> None:
        super().__init__(message, kind, **data)
        self.code = DOMAIN_CODES.get(kind, -32000)


def object_params(params: Any) -> dict[str, Any]:
    """A request's ``params`` as a method takes them: absent or ``null`` is ``{}``, anything but an
    object is invalid params."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParams("'params' must be an object", "params")
    return params


def as_rpc_error(method: str, exc: Exception) -> RpcError:
    """What a request whose method raised ``exc`` is answered with: its own ``RpcError``, else an
    internal error naming the exception (a bug: the caller logs its traceback)."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS):
        return DomainError("resources_exhausted", f"'{method}' could not get what it needs from the system: "
                           f"{type(exc).__name__}: {exc}", errno=getattr(exc, "errno", None))
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):  # pthread_create: EAGAIN
        return DomainError("resources_exhausted", f"'{method}' could not get a thread from the system: {exc}",
                           errno=_errno.EAGAIN)
    return InternalError(f"'{method}' failed: {type(exc).__name__}: {exc}")



# error.data.kind for the codes pygls answers with on its own (LSP mode): the kind of the sidecar's error
# class with that code, and LSP's ContentModified (which the sidecar never raises itself).
KIND_OF_CODE = {cls.code: cls.default_kind for cls in (ParseError, InvalidRequest, MethodNotFound, InvalidParams,
                                                       InternalError, ServerNotInitialized, RequestCancelled)}
KIND_OF_CODE[-32801] = "content_modified"

class PeerError(Exception):
    """The editor answered a reverse request with an error, or cannot answer any more."""
