"""Handler types beyond ``command`` as declared (protocol-v4 §3 "Handler types beyond command").

Claude Code's hooks reference (2.1.x, "Hook handler fields") defines five handler types; this module
owns what the four that are not ``command`` declare, read once when a hooks file is read:

- ``http``: ``url`` (http:// or https://), ``headers`` (values may hold ``$VAR``/``${VAR}``, expanded
  at run time only from ``allowedEnvVars``), ``allowedEnvVars``;
- ``mcp_tool``: ``server`` (one of the thread's MCP servers, by its name), ``tool`` (without the
  ``mcp__<server>__`` prefix), ``input`` (an object; its strings take ``${path}`` of the hook input);
- ``prompt`` and ``agent``: ``prompt`` (``$ARGUMENTS`` is the hook input JSON), ``model``.

Which events take which types is Claude Code's table ("Prompt-based hooks"): ``prompt``/``agent``
only on the events that decide (``MODEL_EVENTS``); ``http`` on every event but ``SessionStart`` and
``Setup``; ``mcp_tool`` on every event. A type on an event that does not take it is listed
``supported: false`` (``hook_type_unsupported``), as Claude Code never runs it there.

Running them is ``hooks.http``, ``hooks.mcp_tool`` and ``hooks.prompt``; ``hooks.boundaries`` picks by type.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

HTTP, MCP_TOOL, PROMPT, AGENT = "http", "mcp_tool", "prompt", "agent"
TYPES = (HTTP, MCP_TOOL, PROMPT, AGENT)
MODEL_TYPES = (PROMPT, AGENT)  # asked of the editor's model (hook/prompt, capabilities.hookPrompt)
MODEL_EVENTS = frozenset({"PermissionRequest", "PostToolBatch", "PostToolUse", "PostToolUseFailure", "PreToolUse",
                          "Stop", "SubagentStop", "TaskCompleted", "TaskCreated", "UserPromptExpansion",
                          "UserPromptSubmit"})
NO_HTTP_EVENTS = frozenset({"SessionStart", "Setup"})
# Claude Code's default deadlines for the model types (seconds); http and mcp_tool take the command default
DEFAULT_TIMEOUT_S = {PROMPT: 30.0, AGENT: 60.0}
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class HttpSpec:
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env_vars: tuple[str, ...] = ()

    def listed(self) -> tuple[tuple[str, Any], ...]:
        # header values are not listed: one may be a literal token
        return (("url", self.url),)


@dataclass(frozen=True)
class McpToolSpec:
    server: str
    tool: str
    input_json: str = "{}"  # the declared ``input`` as JSON text (frozen: handlers are compared and hashed)

    def listed(self) -> tuple[tuple[str, Any], ...]:
        return (("server", self.server), ("tool", self.tool))

    @property
    def input(self) -> dict[str, Any]:
        return json.loads(self.input_json)


@dataclass(frozen=True)
class PromptSpec:
    prompt: str
    model: str | None = None

    def listed(self) -> tuple[tuple[str, Any], ...]:
        return (("prompt", self.prompt),) + ((("model", self.model),) if self.model is not None else ())


Spec = HttpSpec | McpToolSpec | PromptSpec


def read(kind: str, item: dict[str, Any], event: str) -> tuple[Spec | None, str | None, str | None]:
    """What handler ``item`` of type ``kind`` (one of ``TYPES``) declares for ``event``: ``(spec, invalid,
    unsupported)`` — ``invalid`` says why it is malformed (``hook_invalid``: it is left out), ``unsupported``
    why it does not run on this event (listed ``supported: false``, as Claude Code never runs it there)."""
    if kind == HTTP:
        url, headers, allowed = item.get("url"), item.get("headers"), item.get("allowedEnvVars")
        if type(url) is not str or not url.lower().startswith(("http://", "https://")):
            return None, "'url' must be an http:// or https:// URL", None
        if headers is not None and (type(headers) is not dict
                                    or not all(type(v) is str for v in headers.values())):
            return None, "'headers' must be an object of strings", None
        if allowed is not None and (type(allowed) is not list or not all(type(a) is str for a in allowed)):
            return None, "'allowedEnvVars' must be a list of environment variable names", None
        for name, value in (headers or {}).items():
            if not name or any(c in name for c in "\r\n:") or "\r" in value or "\n" in value:
                return None, f"header {name!r} is not a valid HTTP header (a name without ':', no line breaks)", None
        spec: Spec = HttpSpec(url, tuple((headers or {}).items()), tuple(allowed or ()))
        why = f"Claude Code runs no http hook on {event}" if event in NO_HTTP_EVENTS else None
        return spec, None, why
    if kind == MCP_TOOL:
        server, tool, given = item.get("server"), item.get("tool"), item.get("input", {})
        if type(server) is not str or not server:
            return None, "'server' must name one of the thread's MCP servers", None
        if type(tool) is not str or not tool:
            return None, "'tool' must name a tool of that server", None
        if type(given) is not dict:
            return None, "'input' must be an object (the tool's arguments)", None
        return McpToolSpec(server, tool, json.dumps(given, ensure_ascii=False, sort_keys=True)), None, None
    prompt, model = item.get("prompt"), item.get("model")
    if type(prompt) is not str or not prompt.strip():
        return None, "'prompt' must be a non-empty string", None
    if model is not None and type(model) is not str:
        return None, "'model' must be a string", None
    why = (f"Claude Code runs {kind} hooks only on {', '.join(sorted(MODEL_EVENTS))}"
           if event not in MODEL_EVENTS else None)
    return PromptSpec(prompt, model), None, why
