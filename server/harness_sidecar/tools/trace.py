"""A tool call's steps as ``--log-level debug`` shows them: one stderr line a step, with how long it took
by the sidecar's clock (protocol-v4 §5, Observable). Nothing is made, measured or written unless the
debug level is on (``trace`` returns None), so a call at ``info`` runs exactly as before.
"""

from __future__ import annotations

import logging
import time
from typing import Any

logger = logging.getLogger("harness_sidecar.tools.pipeline")


class CallTrace:
    """The steps of one ``tools/call`` so far."""

    __slots__ = ("where", "began", "last")

    def __init__(self, thread_id: str, call: Any) -> None:
        self.where = f"{thread_id}: tools/call {call.id} ({call.name})"
        self.began = self.last = time.perf_counter()

    def step(self, what: str) -> None:
        now = time.perf_counter()
        logger.debug("%s: %s %.3f ms", self.where, what, (now - self.last) * 1000)
        self.last = now

    def end(self, result: Any) -> Any:
        kind = result.details.get("kind") if result.is_error and isinstance(result.details, dict) else None
        logger.debug("%s: answered%s, %.3f ms in all", self.where,
                     f" isError ({kind})" if kind else " isError" if result.is_error else "",
                     (time.perf_counter() - self.began) * 1000)
        return result


def tracing() -> bool:
    return logger.isEnabledFor(logging.DEBUG)


def trace(thread_id: str, call: Any) -> CallTrace | None:
    return CallTrace(thread_id, call) if logger.isEnabledFor(logging.DEBUG) else None


def steps_of(plan: Any, start: int, end: int) -> str:
    """``plan[start:end]`` as a line says it: ``tool_call:guard, core:notes``."""
    return ", ".join(f"{s.kind}:{s.extension_id}" if getattr(s, "extension_id", None) else s.kind
                     for s in plan[start:end])
