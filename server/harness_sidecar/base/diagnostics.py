"""A diagnostic: what a scan, a grant, a hook declaration or a thread has to say about a resource or a
file (``kind``, ``message``, where, and its own fields), and its wire form. Every layer reports with it.
"""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.records import Record


class Diagnostic(Record):
    __slots__ = ("kind", "message", "path", "hint", "line", "column", "extra")

    def __init__(self, kind: str, message: str, path: str | None = None, hint: str | None = None,
                 line: int | None = None, column: int | None = None, extra: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.message = message
        self.path = path
        self.hint = hint
        self.line = line
        self.column = column
        self.extra: dict[str, Any] = {} if extra is None else extra

    @property
    def is_info(self) -> bool:
        """Information only (a root not made yet): no problem, nothing left out."""
        return self.extra.get("severity") == "info"

    @property
    def is_warning(self) -> bool:
        """A warning: the resource is still served (a diagnostic without it left something out)."""
        return self.extra.get("severity") == "warning"

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.path is not None:
            out["path"] = self.path
        out["message"] = self.message
        for key in ("hint", "line", "column"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out

    @classmethod  # ``problem``: a resources.frontmatter.Problem (kind, message, hint, line, column)
    def from_problem(cls, problem: Any, path: str, **extra: Any) -> "Diagnostic":
        return cls(problem.kind, problem.message, path, problem.hint, problem.line, problem.column, extra)

    @classmethod
    def from_error(cls, error: DomainError, path: str, **extra: Any) -> "Diagnostic":
        return cls(error.kind, error.message, path, extra=extra)

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> "Diagnostic":
        """A diagnostic another module made as wire data (the MCP servers'): every key but ``kind`` and
        ``message`` is kept as it is, in its order, so ``to_wire()`` gives the same object back."""
        return cls(wire["kind"], wire["message"], extra={k: v for k, v in wire.items() if k not in ("kind", "message")})

    @classmethod
    def unreadable(cls, error: OSError, path: str) -> "Diagnostic":
        """A file the system would not let us read (permissions, I/O error): left out, not fatal."""
        return cls("unreadable", f"{path} cannot be read: {error.strerror or error}", path)
