"""``tools/list`` and ``tools/call``, and the tools whose core runs in the sidecar: ``load_skill``,
``find_skills``, the editor's (``item/tool/call``) and the MCP servers'.

Given the open threads, the ``Editor`` (the editor's tools are asked of it) and the extension hosts
(whose faults a pipeline reports); the call itself goes through ``tools.pipeline``.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from harness_sidecar.base import content as content_blocks
from harness_sidecar.base.errors import DomainError, PeerError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.activation import activate, check_skill_name
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Catalog
from harness_sidecar.resources.find_skills import FIND_SKILLS_DESCRIPTION, FIND_SKILLS_SCHEMA
from harness_sidecar.base.results import ToolCall, ToolResult
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.extensions import ExtensionHosts
from harness_sidecar.threads import sessions
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.threads import model_tools
from harness_sidecar.threads.thread import Thread
from harness_sidecar.tools.builtin import FIND_SKILLS_ARGUMENTS, LOAD_SKILL_ARGUMENTS, LOAD_SKILL_DESCRIPTION, \
    LOAD_SKILL_SCHEMA
from harness_sidecar.tools.registry import Tool, ToolRegistry, arguments_problem, claimant, foreign_schemas
from harness_sidecar.wire import params as P


def _listing(thread: Thread) -> dict[str, Any]:
    """The ``tools/list`` answer: the tools the model may use now, and the revision they belong to."""
    return {"tools": model_tools.listing(thread), "revision": thread.revision}


class ToolMethods:
    """A thread's tools: listed, called through its pipeline, and the runners of the builtin, editor and MCP ones."""

    def __init__(self, open_threads: OpenThreads, editor: Editor, hosts: ExtensionHosts) -> None:
        self.open = open_threads
        self.editor = editor
        self.hosts = hosts

    async def tools_list(self, params: dict[str, Any]) -> dict[str, Any]:
        return _listing(await self.open.get(params))

    def tools_list_now(self, params: dict[str, Any], respond: Callable[[Any, BaseException | None], None]) \
            -> Callable[[], None] | None:
        """``tools/list`` of an open thread answered at once, in the turn that reads it (no task, no loop turn
        behind whatever else is ready: issue 32 item 4); None while its thread starts or when there is none
        (then ``tools_list`` serves it, waiting for the start or answering ``thread_not_found``)."""
        thread = self.open.get_open(params.get("threadId"))
        if thread is None:
            return None
        respond(_listing(thread), None)
        return _nothing

    async def tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        request = P.parse_tools_call(params)
        stale = self.stale(thread, request) or model_tools.refused(thread, request.call)
        if stale is not None:
            return {"result": stale.to_wire()}
        return {"result": (await self.pipeline(thread).call(request.call)).to_wire()}

    def tools_call_now(self, params: dict[str, Any], respond: Callable[[Any, BaseException | None], None]) \
            -> Callable[[], None] | None:
        """``tools/call`` begun at once, without a task of its own, when nothing before its host has to wait
        or refuse it (``Pipeline.call_now``): ``respond(result, error)`` answers it. Returns its canceller,
        or None: then ``tools_call`` serves it from the start."""
        thread_id = params.get("threadId")
        thread = self.open.get_open(thread_id)
        call = params.get("call")
        name = call.get("name") if type(call) is dict else None
        tool = thread.registry.tools.get(name) if thread is not None and type(name) is str else None
        if tool is None or tool.run is not None or name in thread.inactive_tools:  # only an (active) extension's
            return None  # tool begins here: the rest are parsed once
        try:
            request = P.parse_tools_call(params)
        except Exception:  # noqa: BLE001 - tools_call parses them again and answers what is wrong
            return None
        if self.stale(thread, request) is not None:
            return None
        return self.pipeline(thread).call_now(request.call, lambda result, error: respond(
            None if result is None else {"result": result.to_wire()}, error))

    @staticmethod
    def stale(thread: Thread, request: P.ToolsCallParams) -> ToolResult | None:
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

    def builtin_registry(self, thread_id: str, start: P.ThreadStartParams) -> ToolRegistry:
        """A new thread's registry: ``load_skill`` and the editor's tools (thread/start.dynamicTools)."""
        limits = start.limits
        registry = ToolRegistry(hook_timeout_s=limits.hook_timeout_ms / 1000)
        registry.tools["load_skill"] = Tool("load_skill", LOAD_SKILL_DESCRIPTION, LOAD_SKILL_SCHEMA, "builtin",
                                            run=self._load_skill_runner(thread_id), validator=LOAD_SKILL_ARGUMENTS)
        for dynamic in start.dynamic_tools:
            registry.tools[dynamic.name] = Tool(dynamic.name, dynamic.description, dynamic.input_schema, "dynamic",
                                                run=self._dynamic_runner(thread_id, limits, dynamic.namespace),
                                                validator=dynamic.compiled, source={"kind": "editor"})
        if limits.defer_tools_over:  # v4 §5: the tools past the first N are found with tool_search
            registry.tools[model_tools.TOOL_SEARCH] = model_tools.tool_search_tool(self._tool_search_runner(thread_id))
        return registry

    def pipeline(self, thread: Thread) -> Any:
        """The thread's ``tools.Pipeline``: thread/start leaves it to the first tools/call (a revision makes it
        anew), so the first answer does not import it (issue #32)."""
        if thread.pipeline is None:
            thread.pipeline = self.new_pipeline(thread)
        return thread.pipeline

    def new_pipeline(self, thread: Thread) -> Any:
        """The pipeline of the thread's current revision (its registry, host and catalog as they are now)."""
        from harness_sidecar.tools.pipeline import Pipeline

        return Pipeline(thread.id, thread.registry, thread.host, self.hosts.reporter(thread.id), arguments_problem,
                        thread.catalog, command_hooks=thread.hooks, calls=thread.calls)

    def with_find_skills(self, tools: dict[str, Tool], thread_id: str) -> dict[str, Tool]:
        """``tools`` with ``find_skills`` claimed right after ``load_skill`` (the listing leaves skills out)."""
        find = Tool("find_skills", FIND_SKILLS_DESCRIPTION, FIND_SKILLS_SCHEMA, "builtin",
                    run=self._find_skills_runner(), validator=FIND_SKILLS_ARGUMENTS)
        rest = {k: v for k, v in tools.items() if k not in ("load_skill", "find_skills")}
        return {"load_skill": tools["load_skill"], "find_skills": find, **rest}

    def _load_skill_runner(self, thread_id: str) -> Callable[[ToolCall, Catalog], Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            thread = self.open.threads.get(thread_id)
            if thread is None:
                return ToolResult.error(call, "the thread was closed", kind="thread_not_found")
            extra = sorted(set(call.arguments) - {"name", "path"})
            if extra or "name" not in call.arguments:
                why = f"unexpected field(s) {', '.join(extra)}" if extra else "'name' is required"
                return ToolResult.error(call, f"load_skill takes {{name, path?}}: {why}", kind="invalid_arguments")
            try:
                check_skill_name(call.arguments["name"])
                skill = activate(catalog, call.arguments["name"], [], thread.limits, path=call.arguments.get("path"))
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind, **exc.data)
            sessions.record_activation(thread, skill, "load_skill")
            return ToolResult.text(call, skill.load_skill_text(), skill=skill.name, path=skill.source,
                                   source=skill.origin, directory=skill.directory, dotEntries=list(skill.dot_entries))
        return run

    def _find_skills_runner(self) -> Callable[[ToolCall, Catalog], Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            from harness_sidecar.resources.search import find_skills, index_of  # at the first call (or idle)

            try:
                text, details = find_skills(index_of(catalog), call.arguments)
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind)
            return ToolResult.text(call, text, **details)
        return run

    def _tool_search_runner(self, thread_id: str) -> Callable[[ToolCall, Catalog], Awaitable[ToolResult]]:
        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            thread = self.open.threads.get(thread_id)
            if thread is None:
                return ToolResult.error(call, "the thread was closed", kind="thread_not_found")
            return model_tools.search(thread, call)
        return run

    def _dynamic_runner(self, thread_id: str, limits: Limits,
                        namespace: str | None = None) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        timeout_s = limits.dynamic_tool_timeout_ms / 1000

        async def run(call: ToolCall, catalog: Catalog) -> ToolResult:
            request = {"threadId": thread_id, "callId": call.id, "tool": call.name, "arguments": call.arguments}
            if namespace is not None:  # a Codex namespace's tool: tool is <namespace>__<its name>
                request["namespace"] = namespace
            try:
                answer = await self.editor.request("item/tool/call", request, timeout_s)
            except TimeoutError:
                return ToolResult.error(call, f"the editor did not answer item/tool/call within "
                                              f"{limits.dynamic_tool_timeout_ms} ms", kind="timeout")
            except PeerError as exc:
                return ToolResult.error(call, f"the editor failed the tool call: {exc}", kind="editor_error")
            return dynamic_result(call, answer)
        return run

    # -- MCP servers --------------------------------------------------------------------------------

    async def start_mcp(self, thread_id: str, configs: list[Any], client: Any = None) -> Any:
        """The thread's MCP servers (the editor's and trusted plugins'), started; ``McpServers``. ``client``:
        what they are offered (``threads.mcp.mcp_client``: roots, elicitation, sampling)."""
        from harness_sidecar.mcp import McpServers
        from harness_sidecar.threads.mcp import lists_changed

        return await McpServers.start(thread_id, configs,
                                      notify=self.editor.diagnostic,
                                      on_tools_changed=lambda: self._mcp_tools_changed(thread_id),
                                      open_url=lambda url, reason: self.editor.open_url(thread_id, url, reason),
                                      client=client,
                                      on_extras_changed=lambda before, after: lists_changed(
                                          self.open, self.editor, thread_id, before, after))

    def mcp_tools(self, thread: Thread, claimed: dict[str, Tool], diagnostics: list[Diagnostic]) -> dict[str, Tool]:
        """The thread's MCP tools, after the extensions' (§6): a claimed name or an invalid schema is left out."""
        from harness_sidecar.base import inputschema

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
            thread = self.open.threads.get(thread_id)
            if thread is None or thread.mcp is None:
                return ToolResult.error(call, "the thread was closed", kind="mcp_unavailable")
            result = await thread.mcp.call(server, tool, call.arguments, thread.limits.mcp_tool_timeout_ms / 1000)
            return ToolResult(call.id, call.name, result.content, result.details, result.is_error)
        return run

    async def _mcp_tools_changed(self, thread_id: str) -> None:
        """A server's tool list changed: its tools as a new revision, and ``catalog/changed`` for them."""
        thread = self.open.threads.get(thread_id)
        if thread is None or thread.closed or thread.mcp is None:
            return
        async with thread.rescanning:
            others = {k: v for k, v in thread.registry.tools.items() if v.origin_kind != "mcp"}
            diagnostics = [d for d in thread.catalog.diagnostics if d.kind != "mcp_tool_skipped"]
            diagnostics += [Diagnostic.from_wire(d) for d in thread.mcp.skipped()]
            fresh = self.mcp_tools(thread, others, diagnostics)
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
            thread.pipeline = self.new_pipeline(thread)
            if thread.host is not None:
                thread.host.set_schemas(foreign_schemas(thread.registry))
            entries = lambda names: [{"kind": "tool", "name": n} for n in names]  # noqa: E731
            self.editor.notify("catalog/changed", {
                "threadId": thread.id, "revision": thread.revision, "added": entries(added),
                "removed": entries(removed), "changed": entries(changed),
                "diagnostics": [d.to_wire() for d in diagnostics]})


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


def _nothing() -> None:
    """The canceller of a request answered already."""
