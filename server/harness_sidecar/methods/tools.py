"""``tools/list`` and ``tools/call``, and the tools whose core runs in the sidecar: ``load_skill``,
``find_skills``, the editor's (``item/tool/call``) and the MCP servers'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from harness_sidecar import content as content_blocks
from harness_sidecar import inputschema

from harness_sidecar.errors import DomainError, PeerError
from harness_sidecar.limits import Limits
from harness_sidecar.resources.activation import activate, check_skill_name
from harness_sidecar.resources.catalog import Catalog, Diagnostic
from harness_sidecar.resources.search import (
    FIND_SKILLS_DESCRIPTION,
    FIND_SKILLS_SCHEMA,
    check_arguments,
    find_skills,
)
from harness_sidecar.resources.search import index_of as search_index_of
from harness_sidecar.results import ToolCall, ToolResult
from harness_sidecar.tools import Pipeline, Tool, ToolRegistry
from harness_sidecar.wire import params as P

if TYPE_CHECKING:
    from harness_sidecar.methods.thread import Thread


LOAD_SKILL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The skill's name, as listed in the catalog."}},
    "required": ["name"],
    "additionalProperties": False,
}


@dataclass
class BuiltinArguments:
    """A builtin's whole check of its arguments — its inputSchema, then what the schema cannot say (a skill
    name's form, a query's length) — made where every tool's arguments are checked: before any hook sees
    the call (v4 §2). ``first_error`` is a compiled schema's."""

    schema: Any  # inputschema.CompiledSchema
    check: Callable[[dict[str, Any]], Any]  # raises DomainError
    field: str  # the argument the check is about

    def first_error(self, arguments: Any) -> tuple[str, str] | None:
        error = self.schema.first_error(arguments)
        if error is not None:
            return error
        try:
            self.check(arguments)
        except DomainError as exc:
            return exc.message, f"$.{self.field}"
        return None


LOAD_SKILL_ARGUMENTS = BuiltinArguments(inputschema.compile(LOAD_SKILL_SCHEMA),
                                        lambda arguments: check_skill_name(arguments["name"]), "name")
FIND_SKILLS_ARGUMENTS = BuiltinArguments(inputschema.compile(FIND_SKILLS_SCHEMA), check_arguments, "query")


class ToolMethods:
    """A thread's tools: listed, called through its pipeline, and the runners of the builtin, editor and MCP ones."""

    async def tools_list(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        return {"tools": thread.registry.to_wire(), "revision": thread.revision}

    async def tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        request = P.parse_tools_call(params)
        stale = self._stale(thread, request)
        if stale is not None:
            return {"result": stale.to_wire()}
        return {"result": (await thread.pipeline.call(request.call)).to_wire()}

    def tools_call_now(self, params: dict[str, Any], respond: Callable[[Any, BaseException | None], None]) \
            -> Callable[[], None] | None:
        """``tools/call`` begun at once, without a task of its own, when nothing before its host has to wait
        or refuse it (``Pipeline.call_now``): ``respond(result, error)`` answers it. Returns its canceller,
        or None: then ``tools_call`` serves it from the start."""
        thread_id = params.get("threadId")
        thread = self.threads.get(thread_id) if type(thread_id) is str and thread_id not in self._starting else None
        call = params.get("call")
        name = call.get("name") if type(call) is dict else None
        tool = thread.registry.tools.get(name) if thread is not None and type(name) is str else None
        if tool is None or tool.run is not None:  # only an extension's tool begins here: the rest are parsed once
            return None
        try:
            request = P.parse_tools_call(params)
        except Exception:  # noqa: BLE001 - tools_call parses them again and answers what is wrong
            return None
        if self._stale(thread, request) is not None:
            return None
        return thread.pipeline.call_now(request.call, lambda result, error: respond(
            None if result is None else {"result": result.to_wire()}, error))

    @staticmethod
    def _stale(thread: Thread, request: P.ToolsCallParams) -> ToolResult | None:
        """A call made against a revision older than its tool's last change: ``stale_tool``."""
        call = request.call
        changed = thread.tool_changed_at.get(call.name)
        if request.revision is None or changed is None or changed <= request.revision:
            return None
        gone = call.name not in thread.registry.tools
        return ToolResult.error(
            call, f"tool '{call.name}' was {'removed' if gone else 'changed'} in revision {changed}, after the "
                  f"revision {request.revision} this call was made against: list the tools again",
            kind="stale_tool", revision=thread.revision, changedIn=changed)

    @staticmethod
    def _validate(tool: Any, arguments: dict[str, Any]) -> tuple[str, str] | None:
        """``(message, json path)`` when ``arguments`` do not match the tool's (or command's) inputSchema."""
        if tool.validator is None:
            return None
        return tool.validator.first_error(arguments)

    def _new_pipeline(self, thread: Thread) -> Pipeline:
        """The pipeline of the thread's current revision (its registry, host and catalog as they are now)."""
        return Pipeline(thread.id, thread.registry, thread.host, self._reporter(thread.id), self._validate,
                        thread.catalog, command_hooks=thread.hooks, calls=thread.calls)

    def _with_find_skills(self, tools: dict[str, Tool], thread_id: str) -> dict[str, Tool]:
        """``tools`` with ``find_skills`` claimed right after ``load_skill`` (the listing leaves skills out)."""
        find = Tool("find_skills", FIND_SKILLS_DESCRIPTION, FIND_SKILLS_SCHEMA, "builtin",
                    run=self._find_skills_runner(), validator=FIND_SKILLS_ARGUMENTS)
        rest = {k: v for k, v in tools.items() if k not in ("load_skill", "find_skills")}
        return {"load_skill": tools["load_skill"], "find_skills": find, **rest}

    @staticmethod
    def _foreign_schemas(registry: ToolRegistry) -> dict[str, Any]:
        """The inputSchemas of the tools whose core runs outside the host (rewritten arguments are checked there)."""
        return {t.name: t.input_schema for t in registry.tools.values() if t.origin_kind != "extension"}

    def _load_skill_runner(self, thread_id: str) -> Callable[[ToolCall, Catalog], Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            thread = self.threads.get(thread_id)
            if thread is None:
                return ToolResult.error(call, "the thread was closed", kind="thread_not_found")
            extra = sorted(set(call.arguments) - {"name"})
            if extra or "name" not in call.arguments:
                why = f"unexpected field(s) {', '.join(extra)}" if extra else "'name' is required"
                return ToolResult.error(call, f"load_skill takes exactly {{name}}: {why}", kind="invalid_arguments")
            try:
                check_skill_name(call.arguments["name"])
                skill = activate(catalog, call.arguments["name"], [], thread.limits)
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind, **exc.data)
            thread.activated[skill.name] = skill
            return ToolResult.text(call, skill.load_skill_text(), skill=skill.name, path=skill.source,
                                   source=skill.origin, directory=skill.directory, dotEntries=list(skill.dot_entries))
        return run

    def _find_skills_runner(self) -> Callable[[ToolCall, Catalog], Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            try:
                text, details = find_skills(search_index_of(catalog), call.arguments)
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind)
            return ToolResult.text(call, text, **details)
        return run

    def _dynamic_runner(self, thread_id: str, limits: Limits) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        timeout_s = limits.dynamic_tool_timeout_ms / 1000

        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            request = {"threadId": thread_id, "callId": call.id, "tool": call.name, "arguments": call.arguments}
            try:
                answer = await self.peer.request("item/tool/call", request, timeout_s)
            except TimeoutError:
                return ToolResult.error(call, f"the editor did not answer item/tool/call within "
                                              f"{limits.dynamic_tool_timeout_ms} ms", kind="timeout")
            except PeerError as exc:
                return ToolResult.error(call, f"the editor failed the tool call: {exc}", kind="editor_error")
            return dynamic_result(call, answer)
        return run

    # -- MCP servers --------------------------------------------------------------------------------

    async def _start_mcp(self, thread_id: str, configs: list[Any], client: Any = None) -> Any:
        """The thread's MCP servers (the editor's and trusted plugins'), started; ``McpServers``. ``client``:
        what they are offered (``methods.mcp``: roots, elicitation, sampling)."""
        from harness_sidecar.mcp import McpServers

        return await McpServers.start(thread_id, configs,
                                      notify=lambda params: self.peer.notify("thread/diagnostic", params),
                                      on_tools_changed=lambda: self._mcp_tools_changed(thread_id), client=client,
                                      on_extras_changed=lambda before, after: self._mcp_lists_changed(
                                          thread_id, before, after))

    def _mcp_tools(self, thread: Thread, claimed: dict[str, Tool], diagnostics: list[Diagnostic]) -> dict[str, Tool]:
        """The thread's MCP tools, after the extensions' (§6): a claimed name or an invalid schema is left out."""
        from harness_sidecar import inputschema

        tools: dict[str, Tool] = {}
        for spec in thread.mcp.tools():
            owner = claimed.get(spec.full_name) or tools.get(spec.full_name)
            problem = None
            if owner is not None:
                problem = f"its name is already claimed by {claimant(owner)}"
            else:
                try:
                    validator = inputschema.compile(spec.input_schema)
                except inputschema.InvalidSchema as exc:
                    problem = f"its inputSchema is not valid JSON Schema: {exc}"
            if problem is not None:
                diagnostics.append(Diagnostic("mcp_tool_skipped", f"tool {spec.tool!r} of MCP server "
                                              f"'{spec.server}' is left out: {problem}",
                                              extra={"name": spec.full_name, "server": spec.server,
                                                     "tool": spec.tool}))
                continue
            tools[spec.full_name] = Tool(spec.full_name, spec.description, spec.input_schema, "mcp", spec.server,
                                         run=self._mcp_runner(thread.id, spec.server, spec.tool),
                                         validator=validator,
                                         source=thread.catalog.plugins.mcp_source(spec.server))
        return tools

    def _mcp_runner(self, thread_id: str, server: str, tool: str) -> Callable[[ToolCall, Catalog],
                                                                              Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            thread = self.threads.get(thread_id)
            if thread is None or thread.mcp is None:
                return ToolResult.error(call, "the thread was closed", kind="mcp_unavailable")
            result = await thread.mcp.call(server, tool, call.arguments, thread.limits.mcp_tool_timeout_ms / 1000)
            return ToolResult(call.id, call.name, result.content, result.details, result.is_error)
        return run

    async def _mcp_tools_changed(self, thread_id: str) -> None:
        """A server's tool list changed: its tools as a new revision, and ``catalog/changed`` for them."""
        thread = self.threads.get(thread_id)
        if thread is None or thread.closed or thread.mcp is None:
            return
        async with thread.rescanning:
            others = {k: v for k, v in thread.registry.tools.items() if v.origin_kind != "mcp"}
            diagnostics = [d for d in thread.catalog.diagnostics if d.kind != "mcp_tool_skipped"]
            diagnostics += [Diagnostic.from_wire(d) for d in thread.mcp.skipped()]
            fresh = self._mcp_tools(thread, others, diagnostics)
            before = {k: v.spec() for k, v in thread.registry.tools.items() if v.origin_kind == "mcp"}
            after = {k: v.spec() for k, v in fresh.items()}
            added = sorted(after.keys() - before.keys())
            removed = sorted(before.keys() - after.keys())
            changed = sorted(k for k in after.keys() & before.keys() if after[k] != before[k])
            if not (added or removed or changed):
                return
            thread.revision += 1
            for name in added + removed + changed:
                thread.tool_changed_at[name] = thread.revision
            thread.catalog.diagnostics[:] = diagnostics
            thread.registry = ToolRegistry({**others, **fresh}, thread.registry.handlers,
                                           thread.registry.hook_timeout_s, thread.registry.step_timeouts)
            thread.pipeline = self._new_pipeline(thread)
            if thread.host is not None:
                thread.host.set_schemas(self._foreign_schemas(thread.registry))
            entries = lambda names: [{"kind": "tool", "name": n} for n in names]  # noqa: E731
            self.peer.notify("catalog/changed", {
                "threadId": thread.id, "revision": thread.revision, "added": entries(added),
                "removed": entries(removed), "changed": entries(changed),
                "diagnostics": [d.to_wire() for d in diagnostics]})


def claimant(tool: Tool) -> str:
    """Who holds a tool's name, as a message says it: ``builtin``, ``extension 'review'``, ``mcp 'fs'``."""
    return tool.origin_kind + (f" '{tool.origin_id}'" if tool.origin_id else "")


def dynamic_result(call: ToolCall, answer: Any) -> ToolResult:
    """Turn the editor's ``{contentItems, success}`` answer into a tool result.

    An item is ``inputText``/``text`` (text), ``inputImage {imageUrl}`` with a ``data:`` URL (an image),
    or any of MCP's content blocks (image, audio, resource_link, resource: v4 §4), kept as it is."""
    items = answer.get("contentItems") if isinstance(answer, dict) else None
    success = answer.get("success") if isinstance(answer, dict) else None
    content = [_editor_item(i) for i in items] if isinstance(items, list) else [None]
    if not isinstance(success, bool) or any(c is None for c in content):
        return ToolResult.error(call, "the editor's answer to item/tool/call is malformed: expected "
                                      "{contentItems: [{type: 'inputText', text} | {type: 'inputImage', imageUrl: "
                                      f"'data:…'}} | {content_blocks.SHAPES}], success: bool}}",
                                kind="malformed_answer")
    return ToolResult(call.id, call.name, content, {}, not success)


def _editor_item(item: Any) -> dict[str, Any] | None:
    """One item of an ``item/tool/call`` answer as a content block, or None when it is none."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind in ("inputText", "text"):
        return {"type": "text", "text": item["text"]} if isinstance(item.get("text"), str) else None
    if kind == "inputImage":  # Codex's shape: a data: URL is the image itself
        url = item.get("imageUrl")
        if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
            return None
        mime, data = url[5:].split(";base64,", 1)
        return {"type": "image", "data": data, "mimeType": mime or "application/octet-stream"}
    return item if content_blocks.problem(item) is None else None
