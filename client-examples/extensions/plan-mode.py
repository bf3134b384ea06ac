"""plan-mode: a read-only mode toggled with ``/plan`` — the model sees only read-only tools, shell
commands are checked against an allowlist, a numbered ``Plan:`` becomes steps the user can execute
and whose progress (``[DONE:n]``) is tracked; the mode survives a host restart, resume and fork.

Shows: ``ctx.tools.list()`` / ``ctx.tools.set_active(names)`` (what ``tools/list`` gives the model),
a ``tool_call`` before hook that blocks, a ``context`` section while the mode is on, Pi's event names
as aliases (``agent_end`` → ``stop``, ``session_start`` → ``thread_start``) with ``turn_end``,
``ctx.ui.select`` / ``ctx.ui.input`` / ``ctx.ui.send_message``, and ``ctx.state`` rebuilt from in
``thread_start`` (``reason`` ``resume`` / ``fork``).

Ported from Pi's ``examples/extensions/plan-mode/`` (``index.ts`` and ``utils.ts``; MIT, © Mario
Zechner, https://github.com/badlogic/pi-mono). Class: **nearly**. The same behaviour, with these
changes:

- Pi's tool names are fixed (``read, bash, grep, find, ls, questionnaire`` in plan mode, ``read,
  bash, edit, write`` after it). Here the tools are the editor's: plan mode keeps those named by the
  ``tools`` setting (Pi's names and common editor names by default) that the thread has, and leaving
  it gives back the tools that were active before it, not a fixed list.
- Pi blocks only unsafe ``bash`` in its ``tool_call`` hook, because ``setActiveTools`` hides the
  rest. A tool that appears later in a sidecar thread (an MCP server's) is active, so the hook also
  blocks any non-builtin tool outside the plan tools while the mode is on.
- Pi injects a hidden ``[PLAN MODE ACTIVE]`` message in ``before_agent_start`` and filters it out of
  the context afterwards; here the text is a ``context`` section of the system prompt, present only
  while the mode (or an execution) is on — nothing to filter.
- Pi's plan list is a widget and a chat message; here it is ``ctx.ui.notify`` and the status item
  (``⏸ plan``, ``📋 done/total``). Pi's ``/todos`` is ``/plan-todos`` (``todos`` is the todo port's
  command, and a command name is registered once per thread). ``Ctrl+Alt+P`` is the editor's.
- Pi reads the assistant's messages itself; here the editor reports them: ``turn_end`` and
  ``stop`` (Pi's ``agent_end``) with ``lastAssistantMessage`` (loop/event).
- Pi rebuilds from its session entries (``plan-mode`` custom entries and, on resume, ``[DONE:n]`` in
  later messages); here the whole state is ``ctx.state``, saved at every change, so nothing is rescanned.

Settings: ``tools`` (list of names allowed in plan mode; default below), ``plan`` (``true``: start in
plan mode, Pi's ``--plan`` flag).
"""

import re

PLAN_TOOLS = ["read", "bash", "grep", "find", "ls", "questionnaire",  # Pi's
              "read_file", "list_files", "list_directory", "search_files", "run_command", "shell"]
SHELL_TOOLS = {"bash", "run_command", "shell"}

DESTRUCTIVE = [re.compile(p, re.I) for p in (
    r"\brm\b", r"\brmdir\b", r"\bmv\b", r"\bcp\b", r"\bmkdir\b", r"\btouch\b", r"\bchmod\b", r"\bchown\b",
    r"\bchgrp\b", r"\bln\b", r"\btee\b", r"\btruncate\b", r"\bdd\b", r"\bshred\b", r"(^|[^<])>(?!>)", r">>",
    r"\bnpm\s+(install|uninstall|update|ci|link|publish)", r"\byarn\s+(add|remove|install|publish)",
    r"\bpnpm\s+(add|remove|install|publish)", r"\bpip\s+(install|uninstall)",
    r"\bapt(-get)?\s+(install|remove|purge|update|upgrade)", r"\bbrew\s+(install|uninstall|upgrade)",
    r"\bgit\s+(add|commit|push|pull|merge|rebase|reset|checkout|branch\s+-[dD]|stash|cherry-pick|revert|tag|init|clone)",
    r"\bsudo\b", r"\bsu\b", r"\bkill\b", r"\bpkill\b", r"\bkillall\b", r"\breboot\b", r"\bshutdown\b",
    r"\bsystemctl\s+(start|stop|restart|enable|disable)", r"\bservice\s+\S+\s+(start|stop|restart)",
    r"\b(vim?|nano|emacs|code|subl)\b")]
SAFE = [re.compile(r"^\s*" + p) for p in (
    r"cat\b", r"head\b", r"tail\b", r"less\b", r"more\b", r"grep\b", r"find\b", r"ls\b", r"pwd\b", r"echo\b",
    r"printf\b", r"wc\b", r"sort\b", r"uniq\b", r"diff\b", r"file\b", r"stat\b", r"du\b", r"df\b", r"tree\b",
    r"which\b", r"whereis\b", r"type\b", r"env\b", r"printenv\b", r"uname\b", r"whoami\b", r"id\b", r"date\b",
    r"cal\b", r"uptime\b", r"ps\b", r"top\b", r"htop\b", r"free\b", r"jq\b", r"awk\b", r"rg\b", r"fd\b",
    r"bat\b", r"exa\b")] + [re.compile(r"^\s*" + p, re.I) for p in (
    r"git\s+(status|log|diff|show|branch|remote|config\s+--get)", r"git\s+ls-",
    r"npm\s+(list|ls|view|info|search|outdated|audit)", r"yarn\s+(list|info|why|audit)", r"node\s+--version",
    r"python\s+--version", r"curl\s", r"wget\s+-O\s*-", r"sed\s+-n")]


def is_safe_command(command):
    return not any(p.search(command) for p in DESTRUCTIVE) and any(p.search(command) for p in SAFE)


def clean_step_text(text):
    text = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    text = re.sub(r"^(Use|Run|Execute|Create|Write|Read|Check|Verify|Update|Modify|Add|Remove|Delete|Install)"
                  r"\s+(the\s+)?", "", text, flags=re.I)
    text = re.sub(r"\s+", " ", text).strip()
    if text:
        text = text[0].upper() + text[1:]
    return text[:47] + "..." if len(text) > 50 else text


def extract_todo_items(message):
    """The numbered steps under a ``Plan:`` header, as Pi's ``extractTodoItems``."""
    header = re.search(r"\*{0,2}Plan:\*{0,2}\s*\n", message, re.I)
    if not header:
        return []
    items = []
    for match in re.finditer(r"^\s*(\d+)[.)]\s+\*{0,2}([^*\n]+)", message[header.end():], re.M):
        text = re.sub(r"\*{1,2}$", "", match.group(2).strip()).strip()
        if len(text) > 5 and not text.startswith(("`", "/", "-")):
            cleaned = clean_step_text(text)
            if len(cleaned) > 3:
                items.append({"step": len(items) + 1, "text": cleaned, "completed": False})
    return items


def mark_completed_steps(text, items):
    steps = [int(m.group(1)) for m in re.finditer(r"\[DONE:(\d+)\]", text, re.I)]
    for item in items:
        if item["step"] in steps:
            item["completed"] = True
    return len(steps)


# -- state: everything is in ctx.state, so a restarted host, a resume and a fork have it -------------


def load(ctx):
    state = ctx.state.get() or {}
    return {"enabled": state.get("enabled", False), "executing": state.get("executing", False),
            "todos": state.get("todos", []), "normal": state.get("normal")}


def plan_tools(ctx, tools=None):
    """The plan tools this thread has (builtins stay active anyway)."""
    wanted = ctx.settings.get("tools", PLAN_TOOLS)
    return [t["name"] for t in (tools or ctx.tools.list()) if t["origin"] != "builtin" and t["name"] in wanted]


def update_status(state, ctx):
    if state["executing"] and state["todos"]:
        done = sum(t["completed"] for t in state["todos"])
        ctx.ui.set_status("plan-mode", f"📋 {done}/{len(state['todos'])}")
    elif state["enabled"]:
        ctx.ui.set_status("plan-mode", "⏸ plan")
    else:
        ctx.ui.set_status("plan-mode", None)


def enter(state, ctx):
    tools = ctx.tools.list()
    state["normal"] = [t["name"] for t in tools if t["active"] and t["origin"] != "builtin"]
    allowed = plan_tools(ctx, tools)
    ctx.tools.set_active(allowed)
    state.update(enabled=True, executing=False, todos=[])
    return allowed


def leave(state, ctx, executing=False):
    names = {t["name"] for t in ctx.tools.list()}
    normal = state["normal"] if state["normal"] is not None else sorted(names)
    ctx.tools.set_active([n for n in normal if n in names])  # a tool that went away is left out
    state.update(enabled=False, executing=executing, normal=None)
    if not executing:
        state["todos"] = []


def toggle(arguments, ctx):
    state = load(ctx)
    if state["enabled"]:
        leave(state, ctx)
        message = "Plan mode disabled. Full access restored."
    else:
        message = f"Plan mode enabled. Tools: {', '.join(enter(state, ctx))}"
    ctx.state.set(state)
    ctx.ui.notify(message)
    update_status(state, ctx)
    return message


def show_todos(arguments, ctx):
    todos = load(ctx)["todos"]
    if not todos:
        message = "No todos. Create a plan first with /plan"
    else:
        message = "Plan Progress:\n" + "\n".join(
            f"{i + 1}. {'✓' if t['completed'] else '○'} {t['text']}" for i, t in enumerate(todos))
    ctx.ui.notify(message)
    return message


def guard(event, ctx):
    """Pi's ``tool_call`` hook: in plan mode only allowlisted shell commands, and only the plan tools."""
    state = load(ctx)
    if not state["enabled"]:
        return None
    call = event["call"]
    if call["name"] in SHELL_TOOLS:
        command = call["arguments"].get("command")
        if isinstance(command, str) and is_safe_command(command):
            return None
        return {"block": True, "reason": "Plan mode: command blocked (not allowlisted). Use /plan to disable plan "
                                         f"mode first.\nCommand: {command}"}
    tools = {t["name"]: t for t in ctx.tools.list()}
    tool = tools.get(call["name"])
    if tool is None or tool["origin"] == "builtin" or call["name"] in plan_tools(ctx, list(tools.values())):
        return None
    return {"block": True, "reason": f"Plan mode: {call['name']} is not a read-only tool. Use /plan to disable plan "
                                     "mode first."}


def context(event, ctx):
    state = load(ctx)
    if state["enabled"]:
        return (f"[PLAN MODE ACTIVE]\nYou are in plan mode - a read-only exploration mode for safe code analysis.\n\n"
                f"Restrictions:\n- You can only use: {', '.join(plan_tools(ctx)) or 'no tools'}\n"
                "- You CANNOT modify files (file modifications are disabled)\n"
                "- Shell commands are restricted to an allowlist of read-only commands\n\n"
                'Create a detailed numbered plan under a "Plan:" header:\n\n'
                "Plan:\n1. First step description\n2. Second step description\n...\n\n"
                "Do NOT attempt to make changes - just describe what you would do.")
    remaining = [t for t in state["todos"] if not t["completed"]]
    if state["executing"] and remaining:
        steps = "\n".join(f"{t['step']}. {t['text']}" for t in remaining)
        return (f"[EXECUTING PLAN - Full tool access enabled]\n\nRemaining steps:\n{steps}\n\n"
                "Execute each step in order.\nAfter completing a step, include a [DONE:n] tag in your response.")
    return None


def turn_end(event, ctx):
    state = load(ctx)
    if state["executing"] and state["todos"] and mark_completed_steps(event.get("lastAssistantMessage") or "",
                                                                      state["todos"]):
        ctx.state.set(state)
        update_status(state, ctx)


def agent_end(event, ctx):
    """Pi's ``agent_end`` (here ``stop``): finish an execution, or offer to execute a fresh plan."""
    state = load(ctx)
    last = event.get("lastAssistantMessage") or ""
    if state["executing"] and state["todos"]:
        mark_completed_steps(last, state["todos"])
        if all(t["completed"] for t in state["todos"]):
            done = "\n".join(f"~~{t['text']}~~" for t in state["todos"])
            ctx.ui.notify(f"**Plan Complete!** ✓\n\n{done}")
            state.update(executing=False, todos=[])  # the tools were given back when the execution began
        ctx.state.set(state)
        update_status(state, ctx)
        return None
    if not state["enabled"] or not ctx.ui.available:
        return None
    extracted = extract_todo_items(last)
    if extracted:
        state["todos"] = extracted
        ctx.state.set(state)
    todos = state["todos"]
    if todos:
        steps = "\n".join(f"{i + 1}. ☐ {t['text']}" for i, t in enumerate(todos))
        ctx.ui.notify(f"**Plan Steps ({len(todos)}):**\n\n{steps}")
    choice = ctx.ui.select("Plan mode - what next?", [
        "Execute the plan (track progress)" if todos else "Execute the plan", "Stay in plan mode", "Refine the plan"])
    if choice and choice.startswith("Execute"):
        leave(state, ctx, executing=bool(todos))
        ctx.state.set(state)
        update_status(state, ctx)
        ctx.ui.send_message(f"Execute the plan. Start with: {todos[0]['text']}" if todos
                            else "Execute the plan you just created.")
    elif choice == "Refine the plan":
        refinement = ctx.ui.input("Refine the plan:")
        if refinement and refinement.strip():
            ctx.ui.send_message(refinement.strip())
    return None


def session_start(event, ctx):
    """Pi's ``session_start``: the ``plan`` setting, or the state a resumed or forked thread got back."""
    state = load(ctx)
    if event["reason"] == "startup" and ctx.settings.get("plan") is True and not state["enabled"]:
        enter(state, ctx)
        ctx.state.set(state)
    elif state["enabled"]:
        ctx.tools.set_active(plan_tools(ctx))  # a new thread starts with every tool active
    update_status(state, ctx)


def activate(api):
    api.register_command("plan", "Toggle plan mode (read-only exploration).", toggle)
    api.register_command("plan-todos", "Show the current plan's steps.", show_todos)
    api.on("tool_call", guard)
    api.on("context", context)
    api.on("turn_end", turn_end)
    api.on("agent_end", agent_end)
    api.on("session_start", session_start)
