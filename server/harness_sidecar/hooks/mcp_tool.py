"""Running one ``mcp_tool`` handler (protocol-v4 §3): a tool of one of the thread's MCP servers, called
with the declared ``input``, its result text read as a command's stdout.

- ``server`` is a thread's MCP server by the name the thread runs it under (``mcpServers[i].name``; a
  plugin's own hooks may name the plugin's server as its ``.mcp.json`` does, ``plugin_<plugin>_<server>``
  being tried after the name itself). The call goes straight to the server (``mcp.McpServers.call``),
  not through ``tools/call``: no hook sees it, no hook can recurse through it; ``tools.deny`` holds.
- ``input``: every string value takes ``${path}`` of the hook input (``${tool_input.file_path}``,
  ``${cwd}``, ``${session_id}``, ``${tool_name}``, ``${prompt}``, …); a string that is one placeholder
  and names a value that is not a string becomes that value (``"${tool_input.limit}"`` stays a number);
  a path the input lacks is ``""``.
- The result's text items joined by newlines are the hook's stdout (``command.read_output``: a text
  starting ``{`` is the JSON answer, read strictly; other text is plain output). A result with
  ``isError``, an unknown server or tool, a server that is not running, the deadline: a failure
  (``hook_failed``, blocking on the events that can block, as a command hook's failure).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from harness_sidecar.hooks.command import Answer, read_output
from harness_sidecar.hooks.declared import Handler

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*)\}")
_MISSING = object()


def lookup(data: Any, path: str) -> Any:
    """The value at dotted ``path`` of ``data`` (object keys, list indexes), or ``_MISSING``."""
    for part in path.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def substitute(value: Any, data: dict[str, Any]) -> Any:
    """``value`` (the declared input) with ``${path}`` of ``data`` (the hook input) in its strings."""
    if isinstance(value, dict):
        return {k: substitute(v, data) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, data) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    whole = _PLACEHOLDER.fullmatch(value)
    if whole is not None:
        found = lookup(data, whole.group(1))
        if found is not _MISSING and not isinstance(found, str) and found is not None:
            return found

    def one(match: re.Match[str]) -> str:
        found = lookup(data, match.group(1))
        if found is _MISSING or found is None:
            return ""
        return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

    return _PLACEHOLDER.sub(one, value)


def server_names(handler: Handler) -> list[str]:
    """The names ``handler.spec.server`` may be run under: as written, then (a plugin's hook) its plugin's."""
    names = [handler.spec.server]
    source = handler.source.source
    if source.startswith("plugin:"):
        from harness_sidecar.base.names import plugin_mcp_server_name

        names.append(plugin_mcp_server_name(source[len("plugin:"):], handler.spec.server))
    return names


async def run_mcp_tool(handler: Handler, hook_input: dict[str, Any], servers: Any, timeout_s: float) -> Answer:
    """Call the handler's tool with its input (``hook_input`` substituted); its ``Answer`` by ``timeout_s``."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = Answer(handler)
    spec = handler.spec
    running = servers.status() if servers is not None else {}
    name = next((n for n in server_names(handler) if n in running), None)
    if name is None:
        answer.failure = (f"the thread has no MCP server {spec.server!r}"
                          + (f" (it has {', '.join(sorted(running))})" if running else ""))
        return answer
    arguments = substitute(spec.input, hook_input)
    result = await servers.call(name, spec.tool, arguments, timeout_s)
    answer.elapsed_s = loop.time() - started
    text = "\n".join(item.get("text", "") for item in result.content
                     if isinstance(item, dict) and item.get("type") == "text")
    if result.is_error:
        kind = result.details.get("kind") if isinstance(result.details, dict) else None
        answer.failure = (f"MCP tool {name}/{spec.tool} answered an error" + (f" ({kind})" if kind else "")
                          + (f": {text[:2000]}" if text else ""))
        return answer
    answer.exit_code = 0
    answer.stdout = text
    return read_output(answer, "its result text")
