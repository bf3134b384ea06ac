"""confirm-destructive: ask the user before a new session, a switch or a fork drops the current one.

Shows: the cancellable session events (``session_before_switch``, ``session_before_fork``, sent by the
editor with ``loop/event``) answered ``{"cancel": True}`` unless the user says yes — fail-closed: no, a
dismissed question, an error or no answer within ``uiTimeoutMs`` all cancel — and ``ctx.messages()``
(``capabilities.conversation``) to tell whether the session holds any work.
Ported from Pi's ``examples/extensions/confirm-destructive.ts`` (github:badlogic/pi-mono,
packages/coding-agent; MIT licence, © Mario Zechner). Class: **nearly** — the same questions, answers
and notices; what differs is the editor's: it reports the switch or fork (``loop/event``) and cancels
it when the answer says ``blocked``.
What changed and why:
- ``reason: "new"`` asks "Clear session?" as Pi does; ``reason: "resume"`` asks "Switch session?" only
  when the conversation has a user message, as Pi does from its session entries. Here the
  conversation is the editor's (``ctx.messages()``): an editor that did not declare
  ``capabilities.conversation``, or did not answer, cannot say there is no work, so the user is asked.
- Pi's fork question names the entry forked from (``event.entryId``); ``session_before_fork`` carries
  no entry here, so the question is "Fork this session?" with Pi's two options.
- Pi allows everything when there is no UI at all (``!ctx.hasUI``); so does this port
  (``not ctx.ui.available``). An editor with a UI that cannot ``confirm``/``select`` gets "no" — it
  could not have said yes.

Settings: none.
"""

FORK_YES = "Yes, create fork"
FORK_NO = "No, stay in current session"


def has_user_messages(ctx):
    """True when the conversation holds a user message, or when the editor cannot say."""
    try:
        return any(message["role"] == "user" for message in ctx.messages())
    except RuntimeError:  # ConversationUnavailable: no capability, no answer, a malformed one
        return True


def before_switch(event, ctx):
    if not ctx.ui.available:
        return None
    if event["reason"] == "new":
        if ctx.ui.confirm("Clear session?", "This will delete all messages in the current session."):
            return None
        ctx.ui.notify("Clear cancelled", "info")
        return {"cancel": True, "reason": "the user did not confirm clearing the session"}
    if not has_user_messages(ctx):
        return None
    if ctx.ui.confirm("Switch session?", "You have messages in the current session. Switch anyway?"):
        return None
    ctx.ui.notify("Switch cancelled", "info")
    return {"cancel": True, "reason": "the user did not confirm switching the session"}


def before_fork(event, ctx):
    if not ctx.ui.available:
        return None
    if ctx.ui.select("Fork this session?", [FORK_YES, FORK_NO]) == FORK_YES:
        return None
    ctx.ui.notify("Fork cancelled", "info")
    return {"cancel": True, "reason": "the user did not confirm the fork"}


def activate(api):
    api.on("session_before_switch", before_switch)
    api.on("session_before_fork", before_fork)
