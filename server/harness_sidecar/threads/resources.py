"""``skills/activate``, ``templates/render`` and ``context/build``: the catalog's data, served.

Given the open threads, the ``Editor`` (for the diagnostics of what did not fit) and the extension
hosts (whose ``context`` handlers add sections to the prompt).
"""

from __future__ import annotations

import logging
from typing import Any

from harness_sidecar.threads import typed_input as C
from harness_sidecar.hooks.python import CONTEXT
from harness_sidecar.resources.activation import activate, check_skill_name
from harness_sidecar.resources import command_templates
from harness_sidecar.resources.context import build_system_prompt, extension_sections, hook_context_sections
from harness_sidecar.resources.templates import render
from harness_sidecar.threads.editor import Editor
from harness_sidecar.threads.extensions import ExtensionHosts
from harness_sidecar.threads import sessions
from harness_sidecar.threads.open_threads import OpenThreads
from harness_sidecar.wire import params as P

logger = logging.getLogger("harness_sidecar.threads.sidecar")


class ResourceMethods:
    """Skills, templates and the system prompt of a thread (extensions may add sections to it)."""

    def __init__(self, open_threads: OpenThreads, editor: Editor, hosts: ExtensionHosts) -> None:
        self.open = open_threads
        self.editor = editor
        self.hosts = hosts

    async def skills_activate(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        request = P.parse_skills_activate(params)
        skill = activate(thread.catalog, request.name, request.resources, thread.limits, path=request.path)
        sessions.record_activation(thread, skill, "activate")
        return {"skill": skill.to_wire()}

    async def skills_deactivate(self, params: dict[str, Any]) -> dict[str, Any]:
        """The skill leaves the thread's context/build (protocol-v4 §5); ``skill_not_active`` when it is not."""
        thread = await self.open.get(params)
        request = P.parse_skills_deactivate(params)
        sessions.deactivate(thread, check_skill_name(request.name))
        return {"activeSkills": sessions.active_skills(thread)}

    async def templates_render(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        request = P.parse_templates_render(params)
        command = thread.catalog.plugins.command_templates.get(request.name)
        if command is not None:  # a command template: $ARGUMENTS, $1…$9, $NAME from text
            message, diagnostics = command_templates.render(command, request.text or "", thread.limits)
            out: dict[str, Any] = {"message": message}
            if diagnostics:
                out["diagnostics"] = [d.to_wire() for d in diagnostics]
            return out
        arguments = request.arguments
        if request.text is not None and request.name in thread.catalog.templates:
            arguments = {**C.parse_arguments(request.text), **arguments}
        return {"message": render(thread.catalog, request.name, arguments, thread.limits)}

    async def context_build(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.open.get(params)
        revision, activated = thread.revision, dict(thread.activated)  # the view this turn is built from
        prompt = build_system_prompt(thread.catalog, activated, thread.limits.catalog_bytes)
        extension_text = ""
        if thread.handlers(CONTEXT):
            from harness_sidecar.extensions.sidecar.handlers import run_event
            from harness_sidecar.extensions.sidecar.steps import HostLied, HostUnavailable

            payload = {"threadId": thread.id, "activeSkills": sorted(thread.activated)}
            if self.editor.conversation:  # v4 §5: the last limits.contextMessages messages of the conversation
                payload["messages"] = await self._last_messages(thread.id, thread.limits)
            try:
                await thread.host.ensure()
                outcome = await run_event(thread.host, thread.handlers(CONTEXT), CONTEXT, payload,
                                          thread.registry.hook_timeout_s, self.hosts.reporter(thread.id),
                                          thread.timeouts(CONTEXT))
            except HostUnavailable:
                outcome = None
            except HostLied as exc:
                self.hosts.host_lied(thread, exc)
                outcome = None
            if outcome is not None and outcome.sections:
                extension_text = extension_sections(outcome.sections, thread.limits.extension_context_bytes)
        if thread.session_context:  # what SessionStart hooks said, for the thread's life, cut to fit (hooks.fit)
            from harness_sidecar.hooks import fit

            def joined(context: list[tuple[str, str]]) -> str:
                return "\n".join(p for p in (prompt, hook_context_sections(context), extension_text) if p)

            texts = [text for _, text in thread.session_context]
            fitted = fit.fit_and_say(texts, None, self.editor.max_result_bytes, lambda: fit.json_size({"systemPrompt": joined(
                [(source, "x") for source, _ in thread.session_context])}), self.editor.diagnostic, thread.id, "context/build")
            prompt = joined([(source, text) for (source, _), text in zip(thread.session_context, fitted.texts)]
                            if not fitted.dropped else [])
        elif extension_text:
            prompt += ("\n" if prompt else "") + extension_text
        # protocol-v4 §5: the prompt names the revision it was built from; tools/list of that revision belongs to it
        return {"systemPrompt": prompt, "revision": revision,
                "activeSkills": [activated[n].active_to_wire() for n in sorted(activated)], "toolsRevision": revision}

    async def _last_messages(self, thread_id: str, limits: Any) -> list[dict[str, Any]]:
        """The editor's last ``limits.contextMessages`` messages (``session/messages``); none when it cannot
        say (an error, no answer within ``uiTimeoutMs``, a malformed answer: logged on stderr)."""
        from harness_sidecar.base.conversation import METHOD, last, parse_messages

        if not limits.context_messages:
            return []
        try:
            answer = await self.editor.ask(METHOD, {"threadId": thread_id, "limit": limits.context_messages},
                                           limits.ui_timeout_ms / 1000)
            return last(parse_messages(answer), limits.context_messages)
        except Exception as exc:  # noqa: BLE001 - the prompt is built without them
            logger.info("%s for the context event of %s: %s", METHOD, thread_id, exc)
            return []
