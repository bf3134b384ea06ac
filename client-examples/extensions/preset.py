"""preset: named presets — the tools the model sees and instructions for the system prompt —
chosen with ``/preset``; the current preset is kept in ``ctx.state`` across resume, fork and a host
restart.

Shows: settings as configuration (``presets``), ``ctx.tools.set_active``, a ``context`` section,
``ctx.ui.select`` with descriptions, ``ctx.ui.set_status``, and ``ctx.state`` applied again in
``thread_start`` (Pi's ``session_start``).

Ported from Pi's ``examples/extensions/preset.ts`` (MIT, © Mario Zechner,
https://github.com/badlogic/pi-mono). Class: **nearly** — a preset's ``provider``/``model`` and
``thinkingLevel`` go to the editor with ``ctx.ui.set_model`` (``chat/model``, under
``capabilities.ui.model``), which switches as it decides (Pi switches itself, and warns when the model
is not found: here an editor that does not take switches gets the warning). Otherwise:

- Pi merges ``~/.pi/agent/presets.json`` and ``<cwd>/.pi/presets.json``; here the presets are the
  ``presets`` setting (``thread/start.extensionSettings.preset.presets``), the editor's to merge.
- ``/preset <name>`` applies one, ``/preset`` asks (``ctx.ui.select``: each preset with its
  description, the active one marked, and ``(none)``). Pi's ``Ctrl+Shift+U`` cycle is ``/preset
  next`` (key bindings are the editor's). Pi's ``--preset`` flag is the ``preset`` setting.
- ``(none)`` gives back the tools that were active before the first preset, not Pi's fixed
  ``read, bash, edit, write``.
- Pi appends the instructions to the system prompt in ``before_agent_start``; here they are a
  ``context`` section.
- Pi saves the name at each ``turn_start`` and, on restore, only takes the instructions back (its tools
  persist in its own settings); a resumed sidecar thread starts with every tool active, so here the
  preset's tools are applied again too.

Settings: ``presets`` (``{name: {tools?: [str], instructions?: str, provider?, model?,
thinkingLevel?}}``), ``preset`` (a name to start with).
"""


def presets(ctx):
    value = ctx.settings.get("presets", {})
    return value if isinstance(value, dict) else {}


def describe(preset):
    parts = []
    if preset.get("provider") and preset.get("model"):
        parts.append(f"{preset['provider']}/{preset['model']}")
    if preset.get("thinkingLevel"):
        parts.append(f"thinking:{preset['thinkingLevel']}")
    if preset.get("tools"):
        parts.append(f"tools:{','.join(preset['tools'])}")
    if preset.get("instructions"):
        text = preset["instructions"]
        parts.append(f'"{text[:27]}..."' if len(text) > 30 else f'"{text}"')
    return " | ".join(parts)


def current(ctx):
    """``{name, before}``: the active preset's name (``None`` when none) and the tools active before it."""
    state = ctx.state.get() or {}
    return {"name": state.get("name"), "before": state.get("before")}


def apply_tools(name, preset, ctx, warn=True):
    wanted = preset.get("tools") or []
    if not wanted:
        return
    names = {t["name"] for t in ctx.tools.list()}
    unknown = [t for t in wanted if t not in names]
    if unknown and warn:
        ctx.ui.notify(f'Preset "{name}": Unknown tools: {", ".join(unknown)}', "warning")
    valid = [t for t in wanted if t in names]
    if valid:
        ctx.tools.set_active(valid)


def apply(name, ctx):
    preset = presets(ctx)[name]
    state = current(ctx)
    if state["before"] is None:
        state["before"] = [t["name"] for t in ctx.tools.list() if t["active"] and t["origin"] != "builtin"]
    model = f"{preset['provider']}/{preset['model']}" if preset.get("provider") and preset.get("model") else None
    level = preset.get("thinkingLevel") if isinstance(preset.get("thinkingLevel"), str) else None
    if (model or level) and not ctx.ui.set_model(model, level):
        ctx.ui.notify(f'Preset "{name}": the editor does not switch models ({model or "thinking:" + level})',
                      "warning")
    apply_tools(name, preset, ctx)
    state["name"] = name
    ctx.state.set(state)
    ctx.ui.notify(f'Preset "{name}" activated')
    ctx.ui.set_status("preset", f"preset:{name}")
    return {"content": f'Preset "{name}" activated', "details": {"preset": {"name": name, **preset}}}


def clear(ctx):
    state = current(ctx)
    if state["before"] is not None:
        names = {t["name"] for t in ctx.tools.list()}
        ctx.tools.set_active([n for n in state["before"] if n in names])
    ctx.state.set({"name": None, "before": None})
    ctx.ui.notify("Preset cleared, defaults restored")
    ctx.ui.set_status("preset", None)
    return {"content": "Preset cleared, defaults restored", "details": {"preset": None}}


def command(arguments, ctx):
    name = arguments.get("text", "").strip()
    defined = presets(ctx)
    if not defined and name != "(none)":
        ctx.ui.notify("No presets defined. Add them to the preset extension's `presets` setting", "warning")
        return {"content": "No presets defined", "isError": True}
    active = current(ctx)["name"]
    if name == "next":  # Pi's Ctrl+Shift+U: (none) → the presets in name order → (none)
        cycle = ["(none)", *sorted(defined)]
        name = cycle[(cycle.index(active or "(none)") + 1) % len(cycle)]
    elif not name:
        options = [{"value": n, "label": f"{n} (active)" if n == active else n, "description": describe(p)}
                   for n, p in defined.items()]
        options.append({"value": "(none)", "label": "(none)", "description": "Clear active preset, restore defaults"})
        name = ctx.ui.select("Select Preset", options)
        if name is None:
            return {"content": "No preset chosen", "details": {"preset": active}}
    if name == "(none)":
        return clear(ctx)
    if name not in defined:
        available = ", ".join(defined) or "(none defined)"
        ctx.ui.notify(f'Unknown preset "{name}". Available: {available}', "error")
        return {"content": f'Unknown preset "{name}". Available: {available}', "isError": True}
    return apply(name, ctx)


def context(event, ctx):
    name = current(ctx)["name"]
    preset = presets(ctx).get(name) if name else None
    return preset.get("instructions") if preset else None


def session_start(event, ctx):
    """The ``preset`` setting at startup (Pi's ``--preset``); the saved preset on resume and fork."""
    name, defined = current(ctx)["name"], presets(ctx)
    flag = ctx.settings.get("preset")
    if event["reason"] == "startup" and isinstance(flag, str) and flag:
        if flag in defined:
            apply(flag, ctx)
        else:
            ctx.ui.notify(f'Unknown preset "{flag}". Available: {", ".join(defined) or "(none defined)"}', "warning")
        return
    if name in defined:
        apply_tools(name, defined[name], ctx, warn=False)
        ctx.ui.set_status("preset", f"preset:{name}")


def activate(api):
    api.register_command("preset", "Switch preset configuration (/preset <name>, /preset next).", command,
                         raw_arguments=True)
    api.on("context", context)
    api.on("session_start", session_start)
