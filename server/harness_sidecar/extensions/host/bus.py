"""``api.events``: a bus between the extensions of one thread (Pi's ``pi.events``), owned here.

A thread's extensions share its host process, so the bus never leaves it: nothing goes over the
channel and the sidecar is not asked. ``api.events.on(name, fn)`` registers a listener while
``activate`` runs, staged and committed with the extension's other registrations (an extension that
failed to load never hears anything); ``api.events.emit(name, data, ctx=None)`` calls every committed
listener of ``name`` at once, in load order, in the emitter's thread, with ``data`` as given and the
``ctx`` the emitter passed (a listener that takes one: ``fn(data, ctx)``). What a listener says through
that ``ctx`` is said within the emitting handler, so the sidecar labels it with the emitter's extension.
A listener that raises is logged to stderr and the others still run; ``emit`` returns how many were
called. A coroutine listener is refused at ``on`` (the emitter does not wait for it).
"""

from __future__ import annotations

import inspect
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable

EVENT_NAME = re.compile(r"[^\s]{1,128}")
log = logging.getLogger("harness_sidecar.host.bus")


@dataclass
class Listener:
    extension_id: str
    name: str
    fn: Callable[..., Any]
    ctx: bool  # called as fn(data, ctx)


def _check_name(name: Any) -> str:
    if type(name) is not str or not EVENT_NAME.fullmatch(name):
        raise ValueError(f"an event name is 1-128 characters without spaces, not {name!r}")
    return name


class Events:
    """``api.events`` of one extension: ``on`` stages into ``staged``; ``emit`` reads ``committed``, the
    host's listeners by name (``HostState.listeners``, rebuilt at each commit)."""

    __slots__ = ("_extension_id", "_staged", "_committed", "_is_open", "_wants_ctx")

    def __init__(self, extension_id: str, staged: list[Listener], committed: dict[str, list[Listener]],
                 is_open: Callable[[], None], wants_ctx: Callable[[Callable[..., Any]], bool]) -> None:
        self._extension_id = extension_id
        self._staged = staged
        self._committed = committed
        self._is_open = is_open  # raises RegistrationClosed after activate
        self._wants_ctx = wants_ctx  # whether a listener takes a ctx after data (``api.wants_ctx``)

    def on(self, name: str, fn: Callable[..., Any]) -> None:
        self._is_open()
        _check_name(name)
        if not callable(fn):
            raise TypeError("a listener must be callable")
        if inspect.iscoroutinefunction(fn):
            raise TypeError("a listener must be a plain function: emit does not wait for a coroutine")
        self._staged.append(Listener(self._extension_id, name, fn, self._wants_ctx(fn)))

    def emit(self, name: str, data: Any = None, ctx: Any = None) -> int:
        _check_name(name)
        called = 0
        for listener in list(self._committed.get(name, ())):
            called += 1
            try:
                listener.fn(data, ctx) if listener.ctx else listener.fn(data)
            except Exception as exc:  # noqa: BLE001 - one listener's fault is not the emitter's
                log.warning("listener of %r in extension '%s' raised %s: %s", name, listener.extension_id,
                            type(exc).__name__, exc)
        return called
