"""auto-commit-on-exit: when the thread ends, commit the work, the message taken from the last assistant message.

Shows: ``thread_close`` (Pi's ``session_shutdown``) running a program (``git``, with ``subprocess`` in
``ctx.cwd``) with its own deadline (``api.on(..., timeout_ms=...)``), the conversation
(``ctx.messages()``, ``capabilities.conversation``) and, for an editor that does not share it, the
loop events it reports (``turn_end``, ``stop``: ``lastAssistantMessage``) kept in ``ctx.state`` so that
a restarted host or a resumed session still knows the last message.
Ported from Pi's ``examples/extensions/auto-commit-on-exit.ts`` (github:badlogic/pi-mono,
packages/coding-agent; MIT licence, © Mario Zechner). Class: **nearly** — on exit, uncommitted changes
are staged (``git add -A``) and committed as ``<prefix> <first line of the last assistant message, 50
characters, "..." past them>`` ("Work in progress" without one), and the user is told; where the
last message comes from is the editor's to say.
What changed and why:
- Pi reads the last assistant message from its session entries. Here the conversation is the
  editor's: ``ctx.messages()`` when the editor declared ``capabilities.conversation`` and answers at
  ``thread/close``; else the last ``lastAssistantMessage`` the editor reported with ``loop/event``
  (``turn_end``/``stop``) — at EOF the editor is gone, so only that one is there.
- Pi's prefix is ``[pi]``; the agent here is the editor's, so the prefix is a setting.
- ``git`` runs in ``ctx.cwd`` (Pi's working directory); without a ``cwd``, outside a repository, or
  without changes nothing happens, as in Pi. The handler's deadline is 30 s (``hookTimeoutMs`` is
  5 s), for a large ``git add``; ``thread/close`` waits for it. A commit that fails (no identity,
  a hook that refuses) is told as a warning; Pi says nothing then.

Settings (``thread/start.extensionSettings["auto-commit-on-exit"]``), all optional:
  prefix  what the commit message starts with (default "[agent]")
"""

import subprocess


def git(cwd, *args):
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None


def remember(event, ctx):
    """The editor's loop events: keep the last assistant message it reported."""
    text = event.get("lastAssistantMessage")
    if isinstance(text, str) and text.strip():
        # its first line is all the message needs: kept small, a set can never pass extensionStateBytes
        # (a raise here would block the editor's stop: stop fails closed)
        ctx.state.set({"lastAssistantMessage": text.split("\n")[0][:1000]})


def last_assistant_text(ctx):
    try:
        for message in reversed(ctx.messages()):
            if message["role"] == "assistant":
                return message["text"]
    except RuntimeError:  # ConversationUnavailable: no capability, no answer (EOF), a malformed one
        pass
    return (ctx.state.get() or {}).get("lastAssistantMessage", "")


def commit_message(prefix, text):
    first = text.split("\n")[0] or "Work in progress"
    return f"{prefix} {first[:50]}{'...' if len(first) > 50 else ''}"


def on_close(event, ctx):
    if ctx.cwd is None:
        return
    status = git(ctx.cwd, "status", "--porcelain")
    if status is None or status.returncode != 0 or not status.stdout.strip():
        return  # not a repository, or nothing to commit
    message = commit_message(ctx.settings.get("prefix", "[agent]"), last_assistant_text(ctx))
    git(ctx.cwd, "add", "-A")
    done = git(ctx.cwd, "commit", "-m", message)
    if done is not None and done.returncode == 0:
        ctx.ui.notify(f"Auto-committed: {message}", "info")
    else:
        ctx.ui.notify(f"Auto-commit failed: {(done.stderr or done.stdout).strip() if done else 'git did not run'}",
                      "warning")


def activate(api):
    api.on("turn_end", remember)
    api.on("stop", remember)
    api.on("thread_close", on_close, timeout_ms=30000)
