"""What the model may use (protocol-v4 §5): the thread's *active* tools (an extension's
``ctx.tools.set_active``), the *deferred* ones (``limits.deferToolsOver``) and the builtin
``tool_search`` that finds a deferred tool's spec.

``tools/list`` lists the active tools — builtins always — and, past the first ``deferToolsOver``
non-builtin ones (in ``tools/list`` order), only ``{name, deferred: true}``. A deferred tool can be
called as any other; an inactive one is refused (``tool_inactive``) until it is active again. The
host asks through its relay (``host/tools.list``, ``host/tools.setActive``: channel-only methods,
never on the wire), answered here from the thread's registry.
"""

from __future__ import annotations

from typing import Any, Callable

from harness_sidecar.base import inputschema
from harness_sidecar.base.results import ToolCall, ToolResult
from harness_sidecar.extensions import channel
from harness_sidecar.resources.find_skills import check_query
from harness_sidecar.threads.thread import Thread
from harness_sidecar.tools.builtin import BuiltinArguments
from harness_sidecar.tools.registry import Tool

LIST, SET_ACTIVE = channel.TOOLS_LIST, channel.TOOLS_SET_ACTIVE
HOST_METHODS = (LIST, SET_ACTIVE)

TOOL_SEARCH = "tool_search"
TOOL_SEARCH_DESCRIPTION = ("Find tools that are listed only by name (deferred): their full descriptions and "
                           "input schemas, best match first. Then call the one you need by its name.")
TOOL_SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What the tool should do, or its name."}},
    "required": ["query"],
    "additionalProperties": False,
}
MAX_FOUND = 5


def _check_query(arguments: dict[str, Any]) -> str:
    return check_query(arguments["query"])  # the schema made it a string


TOOL_SEARCH_ARGUMENTS = BuiltinArguments(inputschema.compile(TOOL_SEARCH_SCHEMA), _check_query, "query")


def inactive_of(thread: Thread) -> set[str]:
    """The thread's tools an extension set inactive."""
    return thread.inactive_tools


def active(thread: Thread) -> list[Tool]:
    inactive = inactive_of(thread)
    return [t for t in thread.registry.tools.values() if t.origin_kind == "builtin" or t.name not in inactive]


def deferred(thread: Thread) -> list[Tool]:
    """The active non-builtin tools past the first ``limits.deferToolsOver`` (none when it is 0)."""
    over = thread.limits.defer_tools_over
    if not over:
        return []
    return [t for t in active(thread) if t.origin_kind != "builtin"][over:]


def listing(thread: Thread) -> list[dict[str, Any]]:
    """``tools/list``'s tools: the active ones, a deferred one as ``{name, deferred: true}``."""
    later = {t.name for t in deferred(thread)}
    return [{"name": t.name, "deferred": True} if t.name in later else t.to_wire() for t in active(thread)]


def refused(thread: Thread, call: ToolCall) -> ToolResult | None:
    """A call of a tool an extension set inactive: ``tool_inactive``."""
    if call.name in inactive_of(thread) and call.name in thread.registry.tools:
        return ToolResult.error(call, f"tool '{call.name}' is not active in this thread (an extension set the "
                                      f"active tools): list the tools again", kind="tool_inactive")
    return None


def tool_search_tool(run: Callable[..., Any]) -> Tool:
    return Tool(TOOL_SEARCH, TOOL_SEARCH_DESCRIPTION, TOOL_SEARCH_SCHEMA, "builtin", run=run,
                validator=TOOL_SEARCH_ARGUMENTS)


def search(thread: Thread, call: ToolCall) -> ToolResult:
    """``tool_search {query}``: the deferred tools that match, ranked as ``find_skills`` ranks skills."""
    from harness_sidecar.resources.search import rank  # at the first call (or idle)

    tools = {t.name: t for t in deferred(thread)}
    found = [name for name, _ in rank(((t.name, t.description) for t in tools.values()), call.arguments["query"])]
    specs = [tools[name].to_wire() for name in found[:MAX_FOUND]]
    if not specs:
        text = f"No deferred tool matches {call.arguments['query'].strip()!r}. Try other words, or a tool's name."
    else:
        text = "".join(f"{s['name']}: {s['description']}\n  inputSchema: {_json(s['inputSchema'])}\n" for s in specs)
    return ToolResult.text(call, text, tools=specs, total=len(found))


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def answer_host(thread: Thread, method: str, params: dict[str, Any], notify: Callable[[str, dict], None]) -> dict:
    """The host's ``ctx.tools`` questions, answered from the thread (an error as ``{error}``, never raised)."""
    if method == LIST:
        inactive = inactive_of(thread)
        return {"tools": [{"name": t.name, "description": t.description, "origin": t.origin_kind,
                           "active": t.origin_kind == "builtin" or t.name not in inactive}
                          for t in thread.registry.tools.values()]}
    names = params.get("names")
    if type(names) is not list or not all(type(n) is str for n in names):
        return {"error": "set_active takes a list of tool names"}
    unknown = [n for n in names if n not in thread.registry.tools]
    if unknown:
        return {"error": f"no tool named {', '.join(repr(n) for n in unknown)} in this thread"}
    wanted = set(names)
    before = inactive_of(thread)
    after = {t.name for t in thread.registry.tools.values() if t.origin_kind != "builtin" and t.name not in wanted}
    left, back = sorted(after - before), sorted(before - after)
    thread.inactive_tools = after
    if left or back:
        thread.revision += 1
        for name in left + back:
            thread.tool_changed_at[name] = thread.revision
        entries = lambda names: [{"kind": "tool", "name": n} for n in names]  # noqa: E731
        notify("catalog/changed", {"threadId": thread.id, "revision": thread.revision, "added": entries(back),
                                   "removed": entries(left), "changed": [],
                                   "diagnostics": [d.to_wire() for d in thread.catalog.diagnostics]})
    return {"active": [t.name for t in active(thread)]}
