"""Threads: the sidecar's methods, independent of the transport that carries them.

A thread owns its catalog snapshot, its trusted extensions, its tools and hooks and its
activated skills; nothing is shared between threads. ``Sidecar.methods`` maps each wire
method to a coroutine taking the params object, so the JSONL endpoint and the LSP mode
serve the very same implementation.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from harness_sidecar import commands as C
from harness_sidecar.errors import DomainError, InvalidParams, PeerError
from harness_sidecar.extensions.hooks import (
    CONTEXT,
    INPUT,
    THREAD_CLOSE,
    THREAD_START,
    HookFault,
)
from harness_sidecar.limits import Limits
from harness_sidecar.resources.activation import (
    ActivatedSkill,
    activate,
    check_skill_name,
)
from harness_sidecar.resources.catalog import Catalog, Diagnostic, build_catalog
from harness_sidecar.resources.context import (
    build_system_prompt,
    extension_sections,
    left_out_of_listing,
)
from harness_sidecar.resources.search import (
    FIND_SKILLS_DESCRIPTION,
    FIND_SKILLS_SCHEMA,
    find_skills,
)
from harness_sidecar.resources.templates import render
from harness_sidecar.results import ToolCall, ToolResult
from harness_sidecar.tools import Pipeline, Tool, ToolRegistry
from harness_sidecar.wire import params as P

logger = logging.getLogger(__name__)

LOAD_SKILL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The skill's name, as listed in the catalog."}},
    "required": ["name"],
    "additionalProperties": False,
}


class Peer(Protocol):
    """What a transport offers the methods: notifications and reverse requests to the editor."""

    client_capabilities: dict[str, Any]  # initialize.capabilities, as the editor sent them

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any: ...


@dataclass
class Command:
    name: str
    description: str
    extension_id: str
    input_schema: dict[str, Any] | None
    validator: Any = None  # the compiled input_schema

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.input_schema is not None:
            out["inputSchema"] = self.input_schema
        out["origin"] = {"kind": "extension", "id": self.extension_id}
        return out


@dataclass
class Thread:
    id: str
    start: P.ThreadStartParams
    catalog: Catalog
    limits: Limits
    registry: ToolRegistry
    extensions: list[Any] = field(default_factory=list)  # ExtensionSource, in catalog order
    activated: dict[str, ActivatedSkill] = field(default_factory=dict)
    host: Any = None  # extensions.supervisor.ExtensionHost, when the thread trusts an extension that loaded
    commands: dict[str, Command] = field(default_factory=dict)
    pipeline: Any = None  # tools.Pipeline: the one path of the thread's tool calls

    def handlers(self, event: str) -> list[str]:
        return self.registry.handlers.get(event, []) if self.host is not None else []


class Sidecar:
    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.threads: dict[str, Thread] = {}
        self._ids = itertools.count(1)
        self._starting: dict[str, asyncio.Future] = {}
        self._spares: Any = None
        self.max_result_bytes = 16 * 1024 * 1024
        self.methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "thread/start": self.thread_start,
            "thread/close": self.thread_close,
            "skills/activate": self.skills_activate,
            "templates/render": self.templates_render,
            "context/build": self.context_build,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "commands/list": self.commands_list,
            "commands/run": self.commands_run,
            "input/submit": self.input_submit,
        }

    def oversize(self, method: str, result: Any, size: int) -> Any:
        """What to answer instead of a result over ``--max-result-bytes``: a tool call's is a paired error."""
        if method == "tools/call" and isinstance(result, dict) and isinstance(result.get("result"), dict):
            inner = result["result"]
            call = ToolCall(inner.get("toolCallId", ""), inner.get("toolName", ""), {})
            return {"result": ToolResult.error(
                call, f"the tool's result is {size} bytes; the limit is {self.max_result_bytes} "
                      f"(--max-result-bytes)", kind="too_large", size=size, limit=self.max_result_bytes).to_wire()}
        return None

    async def thread(self, params: dict[str, Any]) -> Thread:
        """The open thread named by ``params.threadId``.

        A request pipelined behind the ``thread/start`` that creates its thread waits for
        that start to finish, so a session piped by hand behaves as it reads.
        """
        thread_id = P.thread_id(params)
        starting = self._starting.get(thread_id)
        if starting is not None:
            await asyncio.shield(starting)
        thread = self.threads.get(thread_id)
        if thread is None:
            if len(thread_id) > 200:  # never echo a huge id back (twice) to the editor
                raise DomainError("thread_not_found", f"no open thread '{thread_id[:200]}…' "
                                                      f"({len(thread_id)} characters)")
            raise DomainError("thread_not_found", f"no open thread '{thread_id}'", threadId=thread_id)
        return thread

    # -- threads -------------------------------------------------------------------------

    async def thread_start(self, params: dict[str, Any]) -> dict[str, Any]:
        start = P.parse_thread_start(params)
        thread_id = f"thread-{next(self._ids)}"
        starting = asyncio.get_running_loop().create_future()
        self._starting[thread_id] = starting
        try:
            return await self._start(thread_id, start)
        finally:
            del self._starting[thread_id]
            starting.set_result(None)

    async def _start(self, thread_id: str, start: P.ThreadStartParams) -> dict[str, Any]:
        limits = start.limits
        registry = ToolRegistry(hook_timeout_s=limits.hook_timeout_ms / 1000)
        holder: dict[str, Thread] = {}
        registry.tools["load_skill"] = Tool(
            "load_skill", "Activate a skill by name: its instructions and files become part of the context.",
            LOAD_SKILL_SCHEMA, "builtin", run=self._load_skill_runner(holder))
        for dynamic in start.dynamic_tools:
            registry.tools[dynamic.name] = Tool(dynamic.name, dynamic.description, dynamic.input_schema, "dynamic",
                                                run=self._dynamic_runner(thread_id, limits),
                                                validator=dynamic.compiled)
        from harness_sidecar.extensions import (
            discovery,  # extension machinery only when a thread starts
        )

        def discover() -> tuple[Catalog, dict[str, Any]]:
            catalog = build_catalog(start.roots, limits)
            return catalog, discovery.discover(catalog.roots, start.extensions, limits, catalog.diagnostics)

        # Reading thousands of files is done off the event loop: other requests keep being served.
        catalog, found = await asyncio.get_running_loop().run_in_executor(None, discover)
        if left_out_of_listing(catalog, limits.catalog_bytes) and "find_skills" not in registry.tools:
            # the listing leaves skills out: the model can search them, with a tool claimed right after load_skill
            find = Tool("find_skills", FIND_SKILLS_DESCRIPTION, FIND_SKILLS_SCHEMA, "builtin",
                        run=self._find_skills_runner(holder))
            registry.tools = {"load_skill": registry.tools.pop("load_skill"), "find_skills": find, **registry.tools}
        trusted = {t.id for t in start.trusted_extensions}
        for ext_id in start.extension_settings:
            if ext_id not in trusted or ext_id not in found:
                why = "is not trusted" if ext_id in found else "is not found in any root or thread/start.extensions"
                catalog.diagnostics.append(Diagnostic(
                    "settings_ignored", f"extensionSettings for '{ext_id}' are ignored: the extension {why}",
                    extra={"name": ext_id}))
        thread = Thread(thread_id, start, catalog, limits, registry, list(found.values()))
        holder["thread"] = thread
        if start.trusted_extensions:
            await self._load_extensions(thread, found)
        thread.pipeline = Pipeline(thread_id, registry, thread.host, self._reporter(thread_id), self._validate)
        if thread.handlers(THREAD_START):
            await self._lifecycle(thread, THREAD_START, {"threadId": thread_id, "cwd": start.cwd,
                                                         "roots": list(start.roots)})
        self.threads[thread_id] = thread
        wire_catalog = catalog.to_wire()
        wire_catalog["extensions"] = [e.to_wire() for e in thread.extensions]
        return {"threadId": thread_id, "catalog": wire_catalog, "tools": registry.to_wire(),
                "diagnostics": [d.to_wire() for d in catalog.diagnostics]}

    def _reporter(self, thread_id: str) -> Callable[[HookFault], None]:
        def report(fault: HookFault) -> None:
            self.peer.notify("thread/diagnostic", fault.to_wire(thread_id))
        return report

    async def _lifecycle(self, thread: Thread, event: str, payload: dict[str, Any]) -> None:
        """``thread_start``/``thread_close`` handlers: faults are diagnostics, nothing else changes."""
        from harness_sidecar.extensions.handlers import run_event
        from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

        try:
            await thread.host.ensure()
            await run_event(thread.host, thread.handlers(event), event, payload, thread.registry.hook_timeout_s,
                            self._reporter(thread.id))
        except HostUnavailable:
            pass
        except HostLied as exc:
            self._host_lied(thread, exc)

    def _host_lied(self, thread: Thread, exc: Exception) -> None:
        logger.error("the extension host of %s broke the channel's rules: %s; killing it", thread.id, exc)
        if thread.host is not None and thread.host.process is not None:
            thread.host.process.kill()

    def spares(self) -> Any:
        if self._spares is None:
            from harness_sidecar.extensions.supervisor import Spares

            self._spares = Spares()
        return self._spares

    def warm(self) -> None:
        """Start a spare extension host now, so that the first thread trusting an extension need not wait."""
        self.spares().warm()

    async def _load_extensions(self, thread: Thread, found: dict[str, Any]) -> None:
        """Start the thread's host, load the trusted extensions into it, commit what can be committed."""
        from harness_sidecar import inputschema
        from harness_sidecar.extensions.loading import load_trusted
        from harness_sidecar.extensions.supervisor import ExtensionHost

        start, limits, registry = thread.start, thread.limits, thread.registry
        trusted = {t.id for t in start.trusted_extensions}
        ui = self.peer.client_capabilities.get("ui")
        init = {"threadId": thread.id, "cwd": start.cwd, "roots": list(start.roots),
                "ui": {k: True for k in P.UI_KEYS if isinstance(ui, dict) and ui.get(k) is True},
                "settings": {k: v for k, v in start.extension_settings.items() if k in trusted},
                "memoryMb": limits.host_memory_mb, "maxResultBytes": self.max_result_bytes}
        host = ExtensionHost(thread.id, self.spares(), init, limits.host_grace_ms / 1000,
                             on_diagnostic=lambda params: self.peer.notify("thread/diagnostic", params),
                             ask=self._ask, notify=self._ui_notify, ui_timeout_s=limits.ui_timeout_ms / 1000)

        def claimed(name: str) -> str | None:
            tool = registry.tools.get(name)
            if tool is None:
                return None
            return tool.origin_kind + (f" '{tool.origin_id}'" if tool.origin_id else "")

        compiled: dict[int, Any] = {}

        def check_schema(schema: dict[str, Any]) -> str | None:
            try:
                compiled[id(schema)] = inputschema.compile(schema)
            except inputschema.InvalidSchema as exc:
                return str(exc)
            return None

        registrations = await load_trusted(found, start.trusted_extensions, host, claimed, limits,
                                           thread.catalog.diagnostics, check_schema)
        if not registrations.loaded:
            await host.close()
            return
        timeout_s = limits.tool_timeout_ms / 1000
        for spec in registrations.tools:
            registry.tools[spec.name] = Tool(spec.name, spec.description, spec.input_schema, "extension",
                                             spec.extension_id, timeout_s=timeout_s,
                                             validator=compiled.get(id(spec.input_schema)))
        for spec in registrations.commands:
            thread.commands[spec.name] = Command(spec.name, spec.description, spec.extension_id, spec.input_schema,
                                                 compiled.get(id(spec.input_schema)))
        registry.handlers = registrations.handlers
        host.set_schemas({t.name: t.input_schema for t in registry.tools.values() if t.origin_kind != "extension"})
        thread.host = host

    async def _ask(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """A ``ui/*`` request to the editor; raises when it cannot be asked or does not answer."""
        ui = self.peer.client_capabilities.get("ui")
        if not isinstance(ui, dict) or ui.get(method.split("/", 1)[1]) is not True:
            raise PeerError(f"the editor did not declare capabilities.ui.{method.split('/', 1)[1]}")
        return await self.peer.request(method, params, timeout_s)

    def _ui_notify(self, method: str, params: dict[str, Any]) -> None:
        ui = self.peer.client_capabilities.get("ui")
        key = "notify" if method == "ui/notify" else "status"
        if isinstance(ui, dict) and ui.get(key) is True:
            self.peer.notify(method, params)
        else:
            text = params.get("message") if method == "ui/notify" else f"{params.get('key')}: {params.get('text')}"
            logger.warning("[%s %s] %s", params.get("threadId"), params.get("extensionId"), text)

    async def thread_close(self, params: dict[str, Any]) -> None:
        thread = await self.thread(params)
        del self.threads[thread.id]
        await self._end(thread, "close")
        return None

    async def _end(self, thread: Thread, reason: str) -> None:
        if thread.host is None:
            return
        if thread.handlers(THREAD_CLOSE):
            await self._lifecycle(thread, THREAD_CLOSE, {"threadId": thread.id, "reason": reason})
        await thread.host.close()

    async def close_all(self, reason: str) -> None:
        """``shutdown`` and EOF: every thread ends (its ``thread_close`` handlers run), and with it its host."""
        ending = list(self.threads.values())
        self.threads.clear()
        if ending:
            await asyncio.gather(*(self._end(thread, reason) for thread in ending))
        if self._spares is not None:
            self._spares.close()

    # -- skills, templates, context ----------------------------------------------------------

    async def skills_activate(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        name = P.require(params, "name", str)
        resources = P.require(params, "resources", list, optional=True, default=[])
        for i, request in enumerate(resources):
            if not isinstance(request, str):
                raise InvalidParams(f"'resources[{i}]' must be a string", f"resources[{i}]")
        skill = activate(thread.catalog, name, resources, thread.limits)
        thread.activated[skill.name] = skill
        return {"skill": skill.to_wire()}

    async def templates_render(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        name = P.require(params, "name", str)
        arguments = P.require(params, "arguments", dict, optional=True, default={})
        return {"message": render(thread.catalog, name, arguments, thread.limits)}

    async def context_build(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        prompt = build_system_prompt(thread.catalog, thread.activated, thread.limits.catalog_bytes)
        if thread.handlers(CONTEXT):
            from harness_sidecar.extensions.handlers import run_event
            from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

            payload = {"threadId": thread.id, "activeSkills": sorted(thread.activated)}
            try:
                await thread.host.ensure()
                outcome = await run_event(thread.host, thread.handlers(CONTEXT), CONTEXT, payload,
                                          thread.registry.hook_timeout_s, self._reporter(thread.id))
            except HostUnavailable:
                outcome = None
            except HostLied as exc:
                self._host_lied(thread, exc)
                outcome = None
            if outcome is not None and outcome.sections:
                text = extension_sections(outcome.sections, thread.limits.extension_context_bytes)
                prompt += ("\n" if prompt else "") + text
        return {"systemPrompt": prompt}

    # -- tools -------------------------------------------------------------------------------

    async def tools_list(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"tools": (await self.thread(params)).registry.to_wire()}

    async def tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        request = P.parse_tools_call(params)
        return {"result": (await thread.pipeline.call(request.call)).to_wire()}

    @staticmethod
    def _validate(tool: Any, arguments: dict[str, Any]) -> tuple[str, str] | None:
        """``(message, json path)`` when ``arguments`` do not match the tool's (or command's) inputSchema."""
        if tool.validator is None:
            return None
        return tool.validator.first_error(arguments)

    # -- commands and input ---------------------------------------------------------------------

    async def commands_list(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        return {"commands": [c.to_wire() for c in thread.commands.values()]}

    async def commands_run(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        request = P.parse_commands_run(params)
        return await self._run_command(thread, request.name, request.arguments)

    async def _run_command(self, thread: Thread, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from harness_sidecar.extensions.handlers import run_command
        from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

        command = thread.commands.get(name)
        if command is None:
            raise DomainError("command_not_found", f"no command named '{name}' in this thread", name=name)
        problem = self._validate(command, arguments)
        if problem is not None:
            raise DomainError("invalid_arguments", f"the arguments of command '{name}' do not match its "
                                                   f"inputSchema: {problem[0]} (at {problem[1]})",
                              name=name, path=problem[1])
        error = None
        try:
            await thread.host.ensure()
            return await run_command(thread.host, command.extension_id, name, arguments,
                                     thread.limits.command_timeout_ms / 1000)
        except HostUnavailable as exc:
            error = f"the thread's extensions cannot run: {exc}"
        except HostLied as exc:
            self._host_lied(thread, exc)
            error = "the extension host answered with a malformed report"
        return {"content": [{"type": "text", "text": error}], "details": {"kind": "crash",
                "extensionId": command.extension_id}, "isError": True}

    async def input_submit(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        request = P.parse_input_submit(params)
        text = request.text
        if thread.handlers(INPUT):
            from harness_sidecar.extensions.handlers import run_event
            from harness_sidecar.extensions.supervisor import HostLied, HostUnavailable

            try:
                await thread.host.ensure()
                outcome = await run_event(thread.host, thread.handlers(INPUT), INPUT,
                                          {"threadId": thread.id, "text": text}, thread.registry.hook_timeout_s,
                                          self._reporter(thread.id))
            except HostUnavailable as exc:
                raise DomainError("input_blocked", f"the thread's input handlers cannot run: {exc}",
                                  extensionId="host") from None
            except HostLied as exc:
                self._host_lied(thread, exc)
                raise DomainError("input_blocked", "the extension host answered with a malformed report",
                                  extensionId="host") from None
            if outcome.blocked is not None:
                raise DomainError("input_blocked", f"the input was stopped: {outcome.blocked['message']}",
                                  extensionId=outcome.blocked["extensionId"])
            if outcome.handled is not None:
                by = {"kind": "extension", "id": outcome.handled["extensionId"]}
                answer = {"action": "handled", "by": by}
                if "reason" in outcome.handled:
                    answer["reason"] = outcome.handled["reason"]
                return answer
            text = outcome.text if outcome.text is not None else text
        slash = C.parse_slash(text)
        if slash is not None:
            name, rest = slash
            if name in thread.catalog.templates:
                message = render(thread.catalog, name, C.parse_arguments(rest), thread.limits)
                return {"action": "send", "message": message}
            command = thread.commands.get(name)
            if command is not None:
                result = await self._run_command(thread, name, C.parse_arguments(rest))
                return {"action": "handled", "by": {"kind": "command", "id": name,
                                                    "extensionId": command.extension_id}, "result": result}
        return {"action": "send", "message": {"role": "user", "content": text}}

    def _load_skill_runner(self, holder: dict[str, Thread]) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        async def run(call: ToolCall) -> ToolResult:
            thread = holder["thread"]
            extra = sorted(set(call.arguments) - {"name"})
            if extra or "name" not in call.arguments:
                why = f"unexpected field(s) {', '.join(extra)}" if extra else "'name' is required"
                return ToolResult.error(call, f"load_skill takes exactly {{name}}: {why}", kind="invalid_arguments")
            try:
                check_skill_name(call.arguments["name"])
                skill = activate(thread.catalog, call.arguments["name"], [], thread.limits)
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind, **exc.data)
            thread.activated[skill.name] = skill
            return ToolResult.text(call, skill.load_skill_text(), skill=skill.name, source=skill.source,
                                   directory=skill.directory)
        return run

    def _find_skills_runner(self, holder: dict[str, Thread]) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        async def run(call: ToolCall) -> ToolResult:
            catalog = holder["thread"].catalog
            try:
                text, details = find_skills(((s.name, s.description) for s in catalog.skills.values()),
                                            call.arguments)
            except DomainError as exc:
                return ToolResult.error(call, exc.message, kind=exc.kind)
            return ToolResult.text(call, text, **details)
        return run

    def _dynamic_runner(self, thread_id: str, limits: Limits) -> Callable[[ToolCall], Awaitable[ToolResult]]:
        timeout_s = limits.dynamic_tool_timeout_ms / 1000

        async def run(call: ToolCall) -> ToolResult:
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


def dynamic_result(call: ToolCall, answer: Any) -> ToolResult:
    """Turn the editor's ``{contentItems, success}`` answer into a tool result."""
    items = answer.get("contentItems") if isinstance(answer, dict) else None
    success = answer.get("success") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not isinstance(success, bool) or not all(
            isinstance(i, dict) and i.get("type") in ("inputText", "text") and isinstance(i.get("text"), str)
            for i in items):
        return ToolResult.error(call, "the editor's answer to item/tool/call is malformed: expected "
                                      "{contentItems: [{type: 'inputText', text}], success: bool}",
                                kind="malformed_answer")
    content = [{"type": "text", "text": i["text"]} for i in items]
    return ToolResult(call.id, call.name, content, {}, not success)
