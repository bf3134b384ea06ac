"""tools: ``/tools`` enables and disables the tools the model sees; the choice is kept in
``ctx.state`` and comes back on resume, fork and a host restart.

Shows: ``ctx.tools.list()`` / ``ctx.tools.set_active(names)``, a command that asks the user again and
again (``ctx.ui.select`` until dismissed) or takes its words (``/tools disable write``), and
``ctx.state`` applied again in ``thread_start`` (Pi's ``session_start``, whose ``reason`` here says
``resume`` or ``fork``).

Ported from Pi's ``examples/extensions/tools.ts`` (MIT, © Mario Zechner,
https://github.com/badlogic/pi-mono). Class: **nearly**. Pi opens a settings list (each tool
enabled/disabled, applied at once, Escape closes); here ``/tools`` asks ``ctx.ui.select`` with one
option per tool (``read: enabled``), toggles the chosen one at once, and asks again until the user
dismisses the question — how it is shown is the editor's. Without a UI (or to script it) the command
takes words: ``/tools`` with ``list``, ``enable <name>...``, ``disable <name>...``. Pi appends a
``tools-config`` entry to the session at every change and restores the last one on the branch; here
the enabled list is ``ctx.state`` (forked with the thread, saved under its ``sessionId``). As in Pi,
saved names that are no longer tools are left out on restore, and with nothing saved the command
starts from the tools active now. Builtin tools (``load_skill``…) are always active in the sidecar,
so they are not offered.

Settings: none.
"""


def own_tools(ctx):
    return [t for t in ctx.tools.list() if t["origin"] != "builtin"]


def enabled_now(ctx, tools):
    saved = (ctx.state.get() or {}).get("enabledTools")
    if saved is None:
        return [t["name"] for t in tools if t["active"]]
    names = {t["name"] for t in tools}
    return [n for n in saved if n in names]


def apply(enabled, ctx):
    ctx.tools.set_active(enabled)
    ctx.state.set({"enabledTools": enabled})


def describe(tools, enabled):
    return "\n".join(f"{t['name']}: {'enabled' if t['name'] in enabled else 'disabled'}" for t in tools)


def command(arguments, ctx):
    tools = own_tools(ctx)
    enabled = enabled_now(ctx, tools)
    words = arguments.get("text", "").split()
    if words and words[0] in ("enable", "disable"):
        names = {t["name"] for t in tools}
        unknown = [w for w in words[1:] if w not in names]
        if unknown or len(words) == 1:
            return {"content": f"Unknown tools: {', '.join(unknown)}" if unknown else f"/tools {words[0]} <name>...",
                    "isError": True}
        if words[0] == "enable":
            enabled += [w for w in words[1:] if w not in enabled]
        else:
            enabled = [n for n in enabled if n not in words[1:]]
        apply(enabled, ctx)
    elif words and words != ["list"]:
        return {"content": "/tools [list | enable <name>... | disable <name>...]", "isError": True}
    elif not words:
        while True:  # Pi's settings list: each choice applies at once, until the user closes it
            options = [{"value": t["name"], "label": f"{t['name']}: {'enabled' if t['name'] in enabled else 'disabled'}",
                        "description": t["description"]} for t in tools]
            chosen = ctx.ui.select("Tool Configuration", options) if tools else None
            if chosen is None:
                break
            enabled = [n for n in enabled if n != chosen] if chosen in enabled else enabled + [chosen]
            apply(enabled, ctx)
    return {"content": describe(tools, enabled), "details": {"enabledTools": enabled}}


def session_start(event, ctx):
    """Pi's ``restoreFromBranch``: a resumed or forked thread starts with every tool active; apply the choice."""
    saved = (ctx.state.get() or {}).get("enabledTools")
    if saved is not None:
        ctx.tools.set_active(enabled_now(ctx, own_tools(ctx)))


def activate(api):
    api.register_command("tools", "Enable/disable tools.", command, raw_arguments=True)
    api.on("session_start", session_start)
