"""An extension's command: a ``command`` frame, run and its result made."""

from __future__ import annotations

from typing import Any

from harness_sidecar.extensions.host.calls import _error_body
from harness_sidecar.extensions.host.exchanges import Exchange
from harness_sidecar.extensions.host.running import Running, _copy, _local
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.extensions.host.ui import UserRequests
from harness_sidecar.hooks.python import interpret_output
from harness_sidecar.base.results import describe_exception


class Commands:
    """``command`` frames: an extension's command, run as the user asked."""

    def __init__(self, state: HostState, running: Running, users: UserRequests) -> None:
        self.running = running
        self.users = users
        self.commands = state.commands

    def run_command(self, exchange: Exchange, body: dict[str, Any]) -> None:
        command = self.commands.get(body["name"])
        exchange.begin(0, body["timeout"])
        if command is None:
            exchange.finish({"result": _error_body(f"no command named '{body['name']}' in this host",
                                                         kind="command_not_found")})
            return
        ctx = self.users.context(exchange, 0, command.extension_id, None, "command") if command.ctx else None
        _local.extension = command.extension_id
        try:
            outcome = self.running.invoke(exchange, command.handler, (_copy(body["arguments"]),), ctx)
        finally:
            _local.extension = None
        name, ext = command.name, command.extension_id
        if outcome.timed_out:
            result = _error_body(f"command '{name}' did not finish within {body['timeout'] * 1000:.0f} ms",
                                 kind="timeout", extensionId=ext)
        elif outcome.error is not None:
            result = _error_body(f"command '{name}' failed: {describe_exception(outcome.error)}", kind="command_error",
                                 extensionId=ext, errorType=type(outcome.error).__name__)
        elif outcome.value is None:  # a command that returns nothing succeeded, with nothing to say
            result = {"content": [], "details": {}, "isError": False}
        else:
            try:
                result = interpret_output(outcome.value).to_wire()
            except TypeError as exc:
                result = _error_body(f"command '{name}' returned an unusable value: {exc}", kind="command_error",
                                     extensionId=ext)
        exchange.finish({"result": result})
