"""dirty-repo-guard: refuse a new session, a switch or a fork while the git repository has uncommitted changes.

Shows: the cancellable session events (``session_before_switch``, ``session_before_fork``) deciding on
what a process says — an extension runs programs itself, in its own host, with the sidecar user's
rights (protocol.md § Extension host: they inherit ``/dev/null`` as stdin) — and ``ctx.ui.select``
letting the user go on anyway.
Ported from Pi's ``examples/extensions/dirty-repo-guard.ts`` (github:badlogic/pi-mono,
packages/coding-agent; MIT licence, © Mario Zechner). Class: **nearly** — the same check, question,
notice and refusals; the editor reports the switch or fork (``loop/event``) and cancels it when the
answer says ``blocked``.
What changed and why:
- Pi's ``pi.exec("git", ["status", "--porcelain"])`` runs in Pi's working directory; here ``git`` runs
  with ``subprocess`` in ``ctx.cwd`` (``thread/start.cwd``, the user's directory). Without a ``cwd``
  there is no repository to look at, and — as Pi does outside a repository (git exits non-zero) — the
  action goes ahead. So does it when git is missing or does not answer within ``gitTimeoutMs``.
- ``GIT_OPTIONAL_LOCKS=0``: the check never takes the index lock a running ``git commit`` of the user
  needs (``git status`` may otherwise refresh the index).
- Without any UI (``not ctx.ui.available``) the action is cancelled, as Pi's non-interactive mode does;
  an editor whose UI cannot ``select``, or a question not answered, is "no" too (fail-closed).

Settings (``thread/start.extensionSettings["dirty-repo-guard"]``), all optional:
  gitTimeoutMs  how long ``git status`` may take (default 3000; the handler's deadline is 5000)
"""

import os
import subprocess

PROCEED = "Yes, proceed anyway"
COMMIT_FIRST = "No, let me commit first"


def changed_files(cwd, timeout_s):
    """The lines of ``git status --porcelain`` in ``cwd``, or None when git cannot tell (no repository)."""
    if cwd is None:
        return None
    try:
        done = subprocess.run(["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout_s, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [line for line in done.stdout.strip().split("\n") if line]


def check_dirty_repo(ctx, action):
    files = changed_files(ctx.cwd, ctx.settings.get("gitTimeoutMs", 3000) / 1000)
    if not files:
        return None
    if not ctx.ui.available:
        return {"cancel": True, "reason": f"{len(files)} uncommitted file(s) and no UI to ask"}
    choice = ctx.ui.select(f"You have {len(files)} uncommitted file(s). {action} anyway?", [PROCEED, COMMIT_FIRST])
    if choice == PROCEED:
        return None
    ctx.ui.notify("Commit your changes first", "warning")
    return {"cancel": True, "reason": f"{len(files)} uncommitted file(s): commit them first"}


def before_switch(event, ctx):
    return check_dirty_repo(ctx, "new session" if event["reason"] == "new" else "switch session")


def before_fork(event, ctx):
    return check_dirty_repo(ctx, "fork")


def activate(api):
    api.on("session_before_switch", before_switch)
    api.on("session_before_fork", before_fork)
