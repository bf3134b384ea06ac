"""Running one ``prompt`` or ``agent`` handler (protocol-v4 §3): asked of the editor's model.

The sidecar has no model; the editor may. When it declared ``initialize.capabilities.hookPrompt:
true``, a handler is one reverse request ``hook/prompt {threadId, prompt, model?, kind}`` (``kind``:
``prompt`` or ``agent``), answered ``{ok: bool, reason?}`` — Claude Code's prompt-hook answer:

- ``prompt`` is the declared prompt with ``$ARGUMENTS`` replaced by the hook input JSON (the JSON a
  command hook reads on stdin); without ``$ARGUMENTS`` the JSON is appended after a blank line, as
  Claude Code does;
- ``ok: true`` says nothing against (as a command's exit 0); ``ok: false`` blocks as
  ``decision: "block"`` with ``reason`` (a Stop hook keeps the agent working, a PreToolUse one denies);
- an error answer, a malformed one, no answer by the deadline (the handler's ``timeout``, else Claude
  Code's 30 s for ``prompt`` and 60 s for ``agent``): a failure, as a command hook's.

Without the capability nothing is asked: the handler is listed ``supported: false`` and, on an event
that can block, its run is a failure that blocks (``hook_failed``) even with ``commandHookFailure:
"open"`` — never a silent allow.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from harness_sidecar.hooks.command import Answer
from harness_sidecar.hooks.declared import Handler

Request = Callable[[str, dict[str, Any], float], Awaitable[Any]]
NO_CAPABILITY = "the editor did not declare capabilities.hookPrompt: no model can answer this {kind} hook"


def prompt_text(prompt: str, hook_input_json: str) -> str:
    """The prompt the model is asked: ``$ARGUMENTS`` is the hook input JSON, else it is appended."""
    if "$ARGUMENTS" in prompt:
        return prompt.replace("$ARGUMENTS", hook_input_json)
    return f"{prompt}\n\n{hook_input_json}"


def unanswerable(handler: Handler) -> Answer:
    """A model handler's run when the editor cannot answer ``hook/prompt``: a failure that fails closed."""
    answer = Answer(handler, failure=NO_CAPABILITY.format(kind=handler.type))
    answer.extra["fails_closed"] = True
    return answer


async def run_prompt(handler: Handler, hook_input_json: str, *, thread_id: str, request: Request | None,
                     timeout_s: float) -> Answer:
    """Ask the editor's model; its answer as a command's would be (``decision: "block"`` for ``ok: false``)."""
    if request is None:
        return unanswerable(handler)
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = Answer(handler)
    spec = handler.spec
    params: dict[str, Any] = {"threadId": thread_id, "prompt": prompt_text(spec.prompt, hook_input_json),
                              "kind": handler.type}
    if spec.model is not None:
        params["model"] = spec.model
    try:
        said = await request("hook/prompt", params, timeout_s)
    except TimeoutError:
        answer.failure = f"the editor's model did not answer hook/prompt within {timeout_s * 1000:.0f} ms"
        return answer
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - an error answer, the editor gone, the request too large
        answer.failure = f"hook/prompt failed: {exc}"
        return answer
    finally:
        answer.elapsed_s = loop.time() - started
    ok = said.get("ok") if isinstance(said, dict) else None
    reason = said.get("reason") if isinstance(said, dict) else None
    if type(ok) is not bool or (reason is not None and type(reason) is not str):
        answer.failure = "its hook/prompt answer is not {ok: bool, reason?: string}"
        return answer
    answer.exit_code = 0
    if not ok:
        answer.output = {"decision": "block", "reason": reason or f"the {handler.type} hook's model answered ok: false"}
    return answer
