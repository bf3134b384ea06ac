"""A handler's type decides how it runs and how a thread lists it (protocol-v4 §3 "Handler types beyond
command"): ``command`` → ``hooks.command`` (a process), ``http`` → ``hooks.http`` (a POST),
``mcp_tool`` → ``hooks.mcp_tool`` (a call to one of the thread's MCP servers), ``prompt``/``agent`` →
``hooks.prompt`` (``hook/prompt`` to the editor's model). Every runner answers a ``command.Answer``
that ``decision.verdict_of`` reads the same way, so ``boundaries.ThreadHooks.run`` is one for all.

A prompt/agent handler depends on the editor: without ``capabilities.hookPrompt`` a thread lists it
``supported: false`` (``listed``) and says so once (``unanswered``).
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

from harness_sidecar.hooks import command, handler_types
from harness_sidecar.hooks.declared import BLOCKING_EVENTS, Handler
from harness_sidecar.base.diagnostics import Diagnostic


def start(hooks: Any, handler: Handler, stdin: bytes | Callable[[], bytes], timeout_s: float) -> Awaitable[command.Answer]:
    """One handler's run for ``hooks`` (a ``boundaries.ThreadHooks``), by its type."""
    kind = handler.type
    if kind == "command":
        return command.run_handler(handler, stdin, thread_id=hooks.thread_id, cwd=hooks.cwd, timeout_s=timeout_s)
    body = stdin() if callable(stdin) else stdin
    if kind == handler_types.HTTP:
        from harness_sidecar.hooks.http import run_http

        return run_http(handler, body, timeout_s)
    if kind == handler_types.MCP_TOOL:
        from harness_sidecar.hooks.mcp_tool import run_mcp_tool

        return run_mcp_tool(handler, json.loads(body), hooks.mcp, timeout_s)
    from harness_sidecar.hooks.prompt import run_prompt

    return run_prompt(handler, body.decode("utf-8"), thread_id=hooks.thread_id, request=hooks.hook_prompt,
                      timeout_s=timeout_s)


def listed(handler: Handler, can_prompt: bool) -> dict[str, Any]:
    """A handler as ``catalog.hooks`` lists it: a prompt/agent one is ``supported: false`` when the editor
    cannot answer ``hook/prompt``."""
    out = handler.to_wire()
    if handler.type in handler_types.MODEL_TYPES and not can_prompt and handler.supported:
        out["supported"] = False
    return out


def unanswered(handlers: list[Handler]) -> list[Diagnostic]:
    """One ``hook_type_unsupported`` per prompt/agent handler when the editor cannot answer (no
    ``capabilities.hookPrompt``): it is listed ``supported: false`` and blocks its event if that can block."""
    return [Diagnostic("hook_type_unsupported", f"a {h.type} hook of {h.event}: the editor did not declare "
                       "capabilities.hookPrompt, so no model can answer it; listed (supported: false), never asked"
                       + (", and it blocks what it decides (hook_failed)" if h.event in BLOCKING_EVENTS else ""),
                       path=h.source.path, extra={"source": h.source.source, "event": h.event, "type": h.type})
            for h in handlers if h.type in handler_types.MODEL_TYPES and h.supported and not h.dormant]
