"""What extension code sees: the ``api`` handed to ``activate`` and the ``ctx`` handed to handlers.

Runs in the host process only. ``api`` offers registration, staged while ``activate`` runs
and committed by the sidecar all at once (or not at all); nothing else of the host is
reachable from it. ``ctx`` is made afresh for every handler call.
"""

from __future__ import annotations

import inspect
import logging
import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.hooks.python import ALIASES, EVENTS
from harness_sidecar.extensions.host.bus import Events, Listener
from harness_sidecar.extensions.host.jsondata import to_json

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class RegistrationClosed(RuntimeError):
    pass


def wants_ctx(fn: Callable[..., Any], base: int) -> bool:
    """Whether ``fn`` takes a ``ctx`` after its ``base`` positional parameters."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) > base


@dataclass
class Handler:
    extension_id: str
    event: str
    fn: Callable[..., Any]
    ctx: bool  # called with ctx as its last argument
    timeout_ms: int | None = None  # its own deadline (api.on(..., timeout_ms=)); None: limits.hookTimeoutMs

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


@dataclass
class ToolSpec:
    extension_id: str
    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Callable[..., Any]
    ctx: bool

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass
class CommandSpec:
    extension_id: str
    name: str
    description: str
    input_schema: dict[str, Any] | None
    handler: Callable[..., Any]
    ctx: bool
    raw_arguments: bool = False  # receives the rest of the slash line as {"text": ...}
    timeout_ms: int | None = None  # its own deadline; None: limits.commandTimeoutMs

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            out["inputSchema"] = self.input_schema
        if self.raw_arguments:
            out["rawArguments"] = True
        if self.timeout_ms is not None:
            out["timeoutMs"] = self.timeout_ms
        return out


@dataclass
class Staging:
    extension_id: str
    tools: list[ToolSpec] = field(default_factory=list)
    commands: list[CommandSpec] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)  # Pi's event names api.on was given, each once, in order
    listeners: list[Listener] = field(default_factory=list)  # api.events.on (bus.py), committed with the rest
    open: bool = True
    max_tools: int | None = None  # limits.maxTools: registering more fails at once (the sidecar checks too)

    def check_open(self) -> None:
        if not self.open:
            raise RegistrationClosed("registration is only possible while activate(api) runs")

    def report(self) -> dict[str, Any]:
        return {"tools": [t.to_wire() for t in self.tools], "hooks": [h.event for h in self.handlers],
                "hookTimeouts": [h.timeout_ms for h in self.handlers],
                "commands": [c.to_wire() for c in self.commands], "aliases": list(self.aliases)}


def _schema(value: Any, what: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise TypeError(f"{what} must be a dict (a JSON Schema object)")
    return to_json(value, what)  # type: ignore[return-value]  # NaN, non-JSON values: ValueError


def _timeout_ms(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value <= 0:
        raise ValueError(f"timeout_ms must be a positive int (milliseconds), not {value!r}")
    return value


# The text command's schema: what a command registered with raw_arguments=True receives.
RAW_ARGUMENTS_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                        "additionalProperties": False}


def make_api(extension_id: str, max_tools: int | None = None,
             listeners: dict[str, list[Listener]] | None = None) -> tuple[Any, Staging]:
    """The ``api`` handed to ``activate``: registration, and ``events`` (the thread's bus: ``listeners``,
    the host's committed listeners by name)."""
    staging = Staging(extension_id, max_tools=max_tools)
    ext_logger = logging.getLogger(f"harness_sidecar.extension.{extension_id}")

    def register_tool(name: str, description: str, input_schema: dict[str, Any],
                      execute: Callable[..., Any]) -> None:
        staging.check_open()
        if type(name) is not str or not TOOL_NAME.fullmatch(name):
            raise ValueError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if type(description) is not str:
            raise TypeError("description must be a str")
        schema = _schema(input_schema, "input_schema")
        if not callable(execute):
            raise TypeError("execute must be callable")
        if staging.max_tools is not None and len(staging.tools) >= staging.max_tools:
            raise ValueError(f"more than limits.maxTools ({staging.max_tools}) tools: {name!r} was not registered")
        staging.tools.append(ToolSpec(extension_id, name, description, schema, execute, wants_ctx(execute, 2)))

    def register_command(name: str, description: str, handler: Callable[..., Any],
                         input_schema: dict[str, Any] | None = None, raw_arguments: bool = False,
                         timeout_ms: int | None = None) -> None:
        staging.check_open()
        if type(name) is not str or not TOOL_NAME.fullmatch(name):
            raise ValueError(f"command name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if type(description) is not str:
            raise TypeError("description must be a str")
        if not callable(handler):
            raise TypeError("handler must be callable")
        if type(raw_arguments) is not bool:
            raise TypeError("raw_arguments must be True or False")
        if raw_arguments and input_schema is not None:
            raise ValueError("a command with raw_arguments=True receives {'text': str}: give it no input_schema")
        schema = dict(RAW_ARGUMENTS_SCHEMA) if raw_arguments else \
            None if input_schema is None else _schema(input_schema, "input_schema")
        staging.commands.append(CommandSpec(extension_id, name, description, schema, handler, wants_ctx(handler, 1),
                                            raw_arguments, _timeout_ms(timeout_ms)))

    def on(event: str, fn: Callable[..., Any], timeout_ms: int | None = None) -> None:
        staging.check_open()
        if type(event) is str and event in ALIASES and event not in EVENTS:
            if event not in staging.aliases:
                staging.aliases.append(event)
            event = ALIASES[event]  # Pi's name: the handler is the target event's, with its semantics
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; use one of {', '.join(EVENTS)} "
                             f"(or Pi's {', '.join(ALIASES)})")
        if not callable(fn):
            raise TypeError("a handler must be callable")
        staging.handlers.append(Handler(extension_id, event, fn, wants_ctx(fn, 1), _timeout_ms(timeout_ms)))

    events = Events(extension_id, staging.listeners, {} if listeners is None else listeners, staging.check_open,
                    lambda fn: wants_ctx(fn, 1))
    api = types.SimpleNamespace(id=extension_id, logger=ext_logger, register_tool=register_tool,
                                register_command=register_command, on=on, events=events)
    return api, staging
