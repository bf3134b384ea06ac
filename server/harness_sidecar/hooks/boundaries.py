"""A thread's command hooks at the thread's boundaries (protocol-v3 §5 "Events → the sidecar's boundaries").

``ThreadHooks`` holds what the thread's sources declare (listed in the catalog, trusted or not)
and runs the trusted handlers an event reaches — in parallel, identical handlers once — turning
their answers into verdicts and one ``decision.Decision``:

- ``tool_calls`` (``hooks.tool_call.ToolCallHooks``): ``around_tool``, PreToolUse before every
  ``tools/call`` (its decision acts as one before hook that runs before the extensions' before hooks),
  PostToolUse after the core and the transforms;
- ``prompt``: UserPromptSubmit at ``input/submit``; ``prompt_expansion``: UserPromptExpansion at a command
  template's expansion there;
- ``tool_calls.around_tool`` also runs PostToolUseFailure after a core that failed (protocol-v4 §3);
- ``instructions_loaded``: InstructionsLoaded at ``thread/start``, once per instructions file;
- ``config_change``: ConfigChange at ``thread/refresh``, before a changed hooks file applies;
- ``session_start`` / ``session_end``: SessionStart (matcher value ``startup``) at ``thread/start``,
  SessionEnd at ``thread/close`` within ``limits.sessionEndBudgetMs``;
- ``run_event_hooks(event, payload, hooks)``: the loop's events (``loop/event``, protocol-v3 §4) →
  a list of ``decision.Verdict`` the caller merges with the extensions' verdicts by ``decision.merge``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable

from harness_sidecar.hooks import dispatch, handler_types
from harness_sidecar.hooks import command
from harness_sidecar.hooks.declared import BLOCKING_EVENTS, Declared, Handler
from harness_sidecar.hooks.decision import Decision, Verdict, merge, verdict_of
from harness_sidecar.hooks.rules import TOOL_EVENTS as IF_EVENTS
from harness_sidecar.hooks.tool_call import ToolCallHooks
from harness_sidecar.hooks.vocabulary import Vocabulary
from harness_sidecar.base.diagnostics import Diagnostic

logger = logging.getLogger(__name__)

# loop/event name → (hook event, the payload field its matcher is matched against, stdin fields from the payload)
LOOP_EVENTS: dict[str, tuple[str, str | None, dict[str, str]]] = {
    "stop": ("Stop", None, {"stop_hook_active": "stopHookActive", "last_assistant_message": "lastAssistantMessage"}),
    "subagent_start": ("SubagentStart", "agentType", {"agent_type": "agentType"}),
    "subagent_stop": ("SubagentStop", "agentType", {"agent_type": "agentType", "stop_hook_active": "stopHookActive",
                                                    "last_assistant_message": "lastAssistantMessage"}),
    "compact_before": ("PreCompact", "trigger", {"trigger": "trigger"}),
    "compact_after": ("PostCompact", "trigger", {"trigger": "trigger"}),
    "notification": ("Notification", "type", {"message": "message", "notification_type": "type"}),
    "permission_request": ("PermissionRequest", "toolName", {"tool_name": "toolName", "tool_input": "toolInput"}),
    # protocol-v4 §3: the rest of Claude Code's events, fired by the editor (stdin fields as its hooks reference)
    "elicitation": ("Elicitation", "serverName", {"mcp_server_name": "serverName", "message": "message",
                                                  "mode": "mode", "url": "url", "elicitation_id": "elicitationId",
                                                  "requested_schema": "requestedSchema"}),
    "elicitation_result": ("ElicitationResult", "serverName", {"mcp_server_name": "serverName", "action": "action",
                                                               "content": "content", "mode": "mode",
                                                               "elicitation_id": "elicitationId"}),
    "task_created": ("TaskCreated", None, {"task_id": "taskId", "task_subject": "taskSubject",
                                           "task_description": "taskDescription", "teammate_name": "teammateName"}),
    "task_completed": ("TaskCompleted", None, {"task_id": "taskId", "task_subject": "taskSubject",
                                               "task_description": "taskDescription",
                                               "teammate_name": "teammateName"}),
    "cwd_changed": ("CwdChanged", None, {"old_cwd": "oldCwd", "new_cwd": "newCwd"}),
    "file_changed": ("FileChanged", "fileName", {"file_path": "filePath", "event": "change"}),
    "post_tool_batch": ("PostToolBatch", None, {"tool_calls": "toolCalls"}),
    "stop_failure": ("StopFailure", "error", {"error": "error", "error_details": "errorDetails",
                                              "last_assistant_message": "lastAssistantMessage"}),
    "teammate_idle": ("TeammateIdle", None, {"teammate_name": "teammateName"}),
    "worktree_create": ("WorktreeCreate", None, {"name": "name"}),
    "worktree_remove": ("WorktreeRemove", None, {"worktree_path": "worktreePath"}),
    "permission_denied": ("PermissionDenied", "toolName", {"tool_name": "toolName", "tool_input": "toolInput",
                                                           "reason": "reason"}),
    "setup": ("Setup", "trigger", {"trigger": "trigger"}),
}


@dataclass
class ThreadHooks:
    thread_id: str
    cwd: str
    declared: list[Declared]
    timeout_ms: int
    max_timeout_ms: int
    fail_open: bool
    session_end_budget_ms: int
    notify: Callable[[dict[str, Any]], None]  # a thread/diagnostic
    ask: Callable[[str, dict[str, Any], float], Awaitable[Any]] | None = None  # Sidecar._ask
    ui_timeout_s: float = 120.0
    reported_untrusted: set[str] = field(default_factory=set)
    max_result_bytes: int = 16 * 1024 * 1024  # --max-result-bytes: what hooks add is cut to fit it (hooks.fit)
    # Sidecar._ui_notify: a hook's systemMessage reaches the user as ui/notify level "warning" (protocol-v4 §3)
    ui_notify: Callable[[str, dict[str, Any]], None] | None = None
    # protocol-v4 §3, handler types beyond command: the thread's mcp.McpServers (mcp_tool handlers), and the
    # editor's hook/prompt (peer.request) when it declared capabilities.hookPrompt (prompt and agent handlers)
    mcp: Any = None
    hook_prompt: Callable[[str, dict[str, Any], float], Awaitable[Any]] | None = None
    # the tool vocabulary hooks were written for (protocol-v4 §3): our tool → the name and fields they see
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    ran_once: set[tuple[str, str, int]] = field(default_factory=set)  # ``once`` handlers that ran (Handler.ident)
    background: set[asyncio.Task] = field(default_factory=set)  # ``async`` handlers running (ended at close)
    # tools/call's PreToolUse, PostToolUse, PostToolUseFailure and the calls still deciding (hooks.tool_call)
    tool_calls: ToolCallHooks = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.tool_calls = ToolCallHooks(self.thread_id, self.vocabulary, self.matching, self.run, self.notify,
                                        self.ask, self.ui_timeout_s, self.max_result_bytes)

    # -- what is declared --------------------------------------------------------------------------

    def handlers(self) -> list[Handler]:
        """Every declared handler, supported or not (``catalog.hooks``)."""
        return [h for d in self.declared for h in d.handlers]

    def runs_any(self) -> bool:
        """Whether any handler can run here: trusted and of a supported type."""
        return any(h.supported and h.source.trusted for h in self.handlers())

    def to_wire(self) -> list[dict[str, Any]]:
        return [dispatch.listed(h, self.hook_prompt is not None) for h in self.handlers()]

    def unanswered(self) -> list[Diagnostic]:
        """``hook_type_unsupported`` for each prompt/agent handler no model can answer (``dispatch.unanswered``)."""
        return dispatch.unanswered(self.handlers()) if self.hook_prompt is None else []

    def diagnostics(self, roots_only: bool = False) -> list[Diagnostic]:
        """What is wrong with the declarations (``roots_only``: the roots' ``hooks.json`` alone — a plugin's
        are reported where the plugin is read, ``resources.plugins``)."""
        return [x for d in self.declared if not roots_only or d.source.source.startswith("root:")
                for x in d.diagnostics]

    def root_files(self) -> set[str]:
        """The roots' ``hooks.json`` files among the sources."""
        return {d.source.path for d in self.declared if d.source.source.startswith("root:")}

    def fingerprint(self) -> dict[str, Any]:
        """What a change of is a ``catalog/changed``: each source's file digest and listed handlers."""
        return {d.source.path: (d.source.sha256, d.source.trusted, json.dumps([h.to_wire() for h in d.handlers]))
                for d in self.declared}

    def close_calls(self) -> None:
        """``thread/close``: PreToolUse hooks still deciding are stopped (their process groups killed) and
        their calls answered blocked ``closed`` — a call whose core has not begun never runs."""
        self.tool_calls.closing = True
        for task in list(self.tool_calls.deciding) + list(self.background):
            task.cancel()

    def report_untrusted(self) -> None:
        """One ``hook_untrusted`` diagnostic per untrusted source that declares handlers, per thread."""
        for d in self.declared:
            source = d.source
            runnable = [h for h in d.handlers if h.supported]
            if source.trusted or not runnable or source.source in self.reported_untrusted:
                continue
            self.reported_untrusted.add(source.source)
            self.notify({"threadId": self.thread_id, "kind": "hook_untrusted", "source": source.source,
                         "path": source.path, "sha256": source.sha256 or "",
                         "message": f"{len(runnable)} command hook(s) of {source.source} do not run: "
                                    f"{source.why_untrusted or 'the editor does not trust this source'}; "
                                    f"{_how_to_trust(source.source)}"})

    def matching(self, event: str, value: str | None, tool_input: dict[str, Any] | None = None) -> list[Handler]:
        """The trusted handlers of ``event`` whose matcher takes ``value`` (None: matchers are not used),
        in declaration order, identical ones once. A handler's ``if`` (protocol-v4 §3) is decided against
        ``value`` and ``tool_input`` on a tool event (``tool_input`` None: not decided, as for ``tool_calls.wants_tool``);
        on any other event a handler with ``if`` never runs. A ``once`` handler that ran is left out."""
        out: dict[Any, Handler] = {}
        # a prompt/agent handler no model can answer runs only where it blocks (fails closed); elsewhere it would
        # only repeat, at every event, the hook_type_unsupported that thread/start said once
        skip_model = self.hook_prompt is None and event not in BLOCKING_EVENTS
        for d in self.declared:
            if not d.source.trusted:
                continue
            for h in d.handlers:
                if h.event == event and h.supported and not h.dormant and (value is None or h.matcher.matches(value)) \
                        and h.key not in out and not (skip_model and h.type in handler_types.MODEL_TYPES) \
                        and (not h.once or h.ident not in self.ran_once) \
                        and (h.condition is None or self._if_holds(h, event, value, tool_input)):
                    out[h.key] = h
        return list(out.values())

    def _if_holds(self, handler: Handler, event: str, value: str | None, tool_input: dict[str, Any] | None) -> bool:
        if event not in IF_EVENTS:
            return False
        return tool_input is None or handler.condition.matches(value or "", tool_input, self.cwd)

    # -- running ------------------------------------------------------------------------------------

    def _timeout_s(self, handler: Handler) -> float:
        own = handler.timeout_s if handler.timeout_s is not None else handler_types.DEFAULT_TIMEOUT_S.get(handler.type)
        ms = own * 1000 if own is not None else self.timeout_ms
        return min(ms, self.max_timeout_ms) / 1000

    async def run(self, event: str, handlers: list[Handler], fields: dict[str, Any],
                  budget_s: float | None = None, detached: bool = False) -> list[Verdict]:
        """Run ``handlers`` of ``event`` in parallel; their verdicts in declaration order.

        A failure that does not block is a ``hook_failed`` diagnostic. ``async`` handlers start in the
        background and give no verdict (``detached``: such a run — nothing it says blocks or decides; its
        ``systemMessage`` still reaches the user). ``statusMessage``: a ``ui/status`` while it runs.
        """
        if not handlers:
            return []
        for h in handlers:  # before any await: a second call cannot take a once handler too
            if h.once:
                self.ran_once.add(h.ident)
        if any(h.run_async for h in handlers):
            for h in handlers:
                if h.run_async:
                    self._detach(event, h, fields)
            handlers = [h for h in handlers if not h.run_async]
            if not handlers:
                return []
        statuses = [h for h in handlers if h.status_message]
        if statuses:
            self._status(statuses, True)
            try:
                return await self._run(event, handlers, fields, budget_s, detached)
            finally:
                self._status(statuses, False)
        return await self._run(event, handlers, fields, budget_s, detached)

    def _detach(self, event: str, handler: Handler, fields: dict[str, Any]) -> None:
        """An ``async`` handler: started now, answered by nobody; the thread's close ends it."""
        task = asyncio.ensure_future(self.run(event, [replace(handler, run_async=False)], fields, detached=True))
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def _status(self, handlers: list[Handler], on: bool) -> None:
        """``ui/status`` for each running handler's ``statusMessage``; ``text: null`` once it ended."""
        if self.ui_notify is None:
            return
        for h in handlers:
            self.ui_notify("ui/status", {"threadId": self.thread_id, "extensionId": h.source.source,
                                         "key": f"hook:{h.event}:{h.order}", "text": h.status_message if on else None})

    async def _run(self, event: str, handlers: list[Handler], fields: dict[str, Any], budget_s: float | None,
                   detached: bool) -> list[Verdict]:
        def payload() -> bytes:
            return command.stdin_payload(event, self.thread_id, self.cwd, fields)

        # one handler: its stdin is made once the request to start it is on its way (off the hook's clock)
        stdin = payload if len(handlers) == 1 else payload()
        checks = {id(h): pin_check(h) if not h.source.pin.large else await asyncio.to_thread(pin_check, h)
                  for h in handlers if h.source.pin is not None}
        refused = {key: why for key, (why, _) in checks.items() if why is not None}
        runs = [_refused(h, refused[id(h)]) if id(h) in refused else
                dispatch.start(self, h, stdin, min(self._timeout_s(h), budget_s) if budget_s is not None
                               else self._timeout_s(h)) for h in handlers]
        # one handler (the common case) runs in this task: a gather would add a task and two loop turns
        answers = [await runs[0]] if len(runs) == 1 else await asyncio.gather(*runs)
        verdicts = []
        can_block = event in BLOCKING_EVENTS and not detached
        for answer in answers:
            key = id(answer.handler)
            if key in checks and key not in refused:  # its tree changed while it ran: its answer is not taken
                pin = answer.handler.source.pin
                why = pin.end_check(checks[key][1]) if not pin.large else \
                    await asyncio.to_thread(pin.end_check, checks[key][1])
                if why is not None:
                    refused[key] = f"hash_mismatch: {why}"
                    answer = command.Answer(answer.handler, failure=refused[key])
            verdict, failed = verdict_of(answer, can_block=can_block, fail_open=self.fail_open)
            if (key in refused or answer.extra.get("fails_closed")) and can_block:
                # a broken pin, a prompt hook no model can answer: they block even with commandHookFailure "open"
                verdict.failure = f"hook failed: {failed}"
            field_name = answer.extra.get("field")  # an answer with an undefined value: said even when it blocks
            if failed is not None and (verdict.failure is None or field_name is not None):
                said = {"threadId": self.thread_id, "kind": "hook_failed", "source": verdict.source,
                        "event": event, "command": answer.handler.label, "message": failed}
                if answer.handler.type != "command":
                    said["type"] = answer.handler.type
                if field_name is not None:
                    said["field"] = field_name
                self.notify(said)
            verdicts.append(verdict)
            if verdict.system_message and self.ui_notify is not None:
                self.ui_notify("ui/notify", {"threadId": self.thread_id, "extensionId": verdict.source,
                                             "level": "warning", "message": verdict.system_message})
        return verdicts

    # -- input/submit, thread start and close --------------------------------------------------------

    async def prompt(self, text: str) -> Decision:
        verdicts = await self.run("UserPromptSubmit", self.matching("UserPromptSubmit", None), {"prompt": text})
        return merge(verdicts)

    async def prompt_expansion(self, name: str, arguments: str, text: str, origin: str) -> Decision:
        """UserPromptExpansion at a command template's expansion (``input/submit`` ``/name args``; protocol-v4
        §3): matcher value the command's name; a block stops the input, context joins the answer."""
        verdicts = await self.run("UserPromptExpansion", self.matching("UserPromptExpansion", name), {
            "expansion_type": "slash_command", "command_name": name, "command_args": arguments,
            "command_source": origin, "prompt": text})
        return merge(verdicts)

    def changed_files(self, fresh: ThreadHooks | None) -> list[str]:
        """The roots' hooks files whose declaration differs in ``fresh`` (a rescan's), in path order."""
        before, after = self.fingerprint(), fresh.fingerprint() if fresh is not None else {}
        roots = self.root_files() | (fresh.root_files() if fresh is not None else set())
        return sorted(p for p in before.keys() | after.keys() if p in roots and before.get(p) != after.get(p))

    async def config_change(self, paths: list[str]) -> Decision:
        """ConfigChange at ``thread/refresh`` (protocol-v4 §3), before a changed hooks file takes effect: the
        thread's current hooks decide, once per changed file (matcher value ``local_settings`` for a
        ``settings.local.json``, else ``project_settings``); a block keeps the change from applying."""
        verdicts: list[Verdict] = []
        for path in paths:
            source = "local_settings" if os.path.basename(path) == "settings.local.json" else "project_settings"
            handlers = self.matching("ConfigChange", source)
            if handlers:
                verdicts += await self.run("ConfigChange", handlers, {"source": source, "file_path": path})
        return merge(verdicts)

    async def session_start(self) -> list[tuple[str, str]]:
        """SessionStart at ``thread/start``: its context as (source, text) pairs, in declaration order — for
        ``thread/start.hookContext`` and, for the thread's life, ``context/build``'s system prompt."""
        verdicts = await self.run("SessionStart", self.matching("SessionStart", "startup"), {"source": "startup"})
        return [(v.source, text) for v in verdicts for text in v.context]

    async def instructions_loaded(self, files: list[str]) -> None:
        """InstructionsLoaded at ``thread/start`` (protocol-v4 §3): once per instructions file the catalog
        loaded (``AGENTS.md``/``CLAUDE.md``), matcher value ``session_start``; an observer (it decides nothing)."""
        handlers = self.matching("InstructionsLoaded", "session_start")
        if not handlers or not files:
            return
        await asyncio.gather(*(self.run("InstructionsLoaded", handlers, {
            "file_path": path, "memory_type": "Project", "load_reason": "session_start"}) for path in files))

    async def session_end(self, reason: str) -> None:
        handlers = self.matching("SessionEnd", reason)
        if handlers:
            await self.run("SessionEnd", handlers, {"reason": reason}, budget_s=self.session_end_budget_ms / 1000)


def pin_check(handler: Handler) -> tuple[str | None, Any]:
    """Whether a pinned ``handler`` may start (protocol-v4 §1): why not (``hash_mismatch: …``, its
    plugin's tree no longer matches the pin) or ``None``, and what the check saw, for the check of its
    answer (``TreePin.end_check``: nothing under the tree changed while it ran).

    Made here, just before the start, by ``resources.pins.TreePin`` (an ``lstat`` per entry of the
    tree; a file is read again only when its identity changed)."""
    why, seen = handler.source.pin.start_check()
    return (None if why is None else f"hash_mismatch: not started, {why}"), seen


async def _refused(handler: Handler, why: str) -> command.Answer:
    return command.Answer(handler, failure=why)


def _how_to_trust(source: str) -> str:
    if source.startswith("plugin:"):
        return f"trust its hooks with thread/start.trustedPlugins [{{name: \"{source[7:]}\", sha256?}}]"
    return "trust it with thread/start.trustedHooks [{path, sha256}]"


async def run_event_hooks(event_name: str, payload: dict[str, Any], hooks: ThreadHooks | None) -> list[Verdict]:
    """The command hooks' verdicts on a ``loop/event`` (protocol-v3 §4), in declaration order: the
    caller merges them, then the extensions' verdicts, by ``decision.merge`` and answers with
    ``loop.result`` (a block on ``permission_request`` is ``"deny"``). ``turn_start`` and ``turn_end``
    have no command-hook event: no verdicts."""
    mapped = LOOP_EVENTS.get(event_name)
    if hooks is None or mapped is None:
        return []
    event, matched_by, fields = mapped
    value = None
    if matched_by == "fileName":  # FileChanged matches the changed file's name
        value = os.path.basename(payload.get("filePath", ""))
    elif matched_by is not None:
        raw = payload.get(matched_by)
        value = raw if isinstance(raw, str) else ""
    stdin = {key: payload[wire] for key, wire in fields.items() if wire in payload}
    if event == "PermissionRequest":
        stdin.setdefault("tool_use_id", None)
    tool_input = None
    if event in ("PermissionRequest", "PermissionDenied"):  # a thread's tool is seen as hookAs says
        ours = payload.get("toolName", "")
        value = stdin["tool_name"] = hooks.vocabulary.hook_name(ours)
        tool_input = stdin["tool_input"] = hooks.vocabulary.hook_input(ours, payload.get("toolInput") or {})
    verdicts = await hooks.run(event, hooks.matching(event, value, tool_input), stdin)
    for verdict in verdicts:
        verdict.updated_input = None  # nothing to rewrite on a loop event
    return verdicts


def thread_cwd(cwd: str | None) -> str:
    return cwd or os.getcwd()
