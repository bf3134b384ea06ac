"""permission-gate: ask the user before a dangerous shell command runs.

Shows: a before hook (``tool_call``) that asks the editor with ``ctx.ui.confirm`` and blocks
unless the user says yes — fail-closed: no UI, a closed dialog, an error or a timeout all block.
Ported from Pi's ``examples/extensions/permission-gate.ts`` (which asks with a Yes/No select and
blocks "when there is no UI"); here the question is a ``ui/confirm`` request the editor shows as
a modal, naming the extension, the tool and its arguments.

Settings (``thread/start.extensionSettings["permission-gate"]``), all optional:
  tools     names of the tools that run shell commands  (default ["bash", "run_command", "shell"])
  argument  the argument that holds the command          (default "command")
  patterns  extra regular expressions that count as dangerous (default [])
"""

import re

# Pi's patterns, with `rm` flags in any order (-rf, -fr, -Rf, -r) also caught.
DANGEROUS = [
    (r"\brm\s+(-[A-Za-z]*[rR][A-Za-z]*|--recursive)\b", "recursive delete"),
    (r"\bsudo\b", "sudo"),
    (r"\b(chmod|chown)\b.*\b777\b", "world-writable permissions"),
]


def dangerous(command, extra):
    """The reason ``command`` is dangerous, or None."""
    for pattern, why in DANGEROUS + [(p, f"matches {p!r}") for p in extra]:
        if re.search(pattern, command):
            return why
    return None


def gate(event, ctx):
    settings = ctx.settings
    call = event["call"]
    if call["name"] not in settings.get("tools", ["bash", "run_command", "shell"]):
        return None
    command = call["arguments"].get(settings.get("argument", "command"))
    if not isinstance(command, str):
        return None
    why = dangerous(command, settings.get("patterns", []))
    if why is None:
        return None
    if not ctx.ui.available:
        return {"block": True, "reason": f"dangerous command blocked ({why}; no UI to confirm it)"}
    # Waits for the user; the hook's deadline (hookTimeoutMs) is not charged for that time.
    if ctx.ui.confirm("Dangerous command", f"{command}\n\nThis looks like {why}. Allow it?"):
        return None
    # No, Escape, an error answer or no answer within uiTimeoutMs: confirm() is False.
    return {"block": True, "reason": f"the user did not allow it ({why})"}


def activate(api):
    api.on("tool_call", gate)
