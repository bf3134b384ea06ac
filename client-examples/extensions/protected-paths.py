"""protected-paths: refuse writes to protected files and folders, and tell the user.

Shows: a before hook that blocks by policy alone (no question), resolving the path against
``ctx.cwd``, and ``ctx.ui.notify`` to tell the user why (a ``ui/notify`` warning in the editor;
on stderr when the editor shows no notifications).
Ported from Pi's ``examples/extensions/protected-paths.ts``. Pi tests ``path.includes(p)``; here
a path is resolved first (``src/../.git/config``, a link into ``.git``), folders are matched by
path component and files by name pattern, so ``.environment.ts`` is not caught by ``.env``.

Settings (``thread/start.extensionSettings["protected-paths"]``), all optional:
  tools     the tools that write files, each with the argument holding the path
            (default {"write": "path", "edit": "path", "write_file": "path", "edit_file": "path"})
  paths     what is protected: "name/" is a folder anywhere in the path, anything else a file-name
            pattern (fnmatch) (default [".env", ".env.*", ".git/", "node_modules/"])
"""

import fnmatch
import os

TOOLS = {"write": "path", "edit": "path", "write_file": "path", "edit_file": "path"}
PROTECTED = [".env", ".env.*", ".git/", "node_modules/"]


def protected_by(path, protected):
    """The entry of ``protected`` that covers the absolute ``path``, or None."""
    parts = path.strip(os.sep).split(os.sep)
    for entry in protected:
        if entry.endswith("/"):
            if entry.rstrip("/") in parts[:-1] or parts[-1] == entry.rstrip("/"):
                return entry
        elif fnmatch.fnmatchcase(parts[-1], entry):
            return entry
    return None


def guard(event, ctx):
    call = event["call"]
    argument = ctx.settings.get("tools", TOOLS).get(call["name"])
    path = call["arguments"].get(argument) if argument else None
    if not isinstance(path, str) or not path:
        return None
    base = ctx.cwd or (ctx.roots[0] if ctx.roots else os.sep)
    lexical = os.path.normpath(os.path.join(base, path))
    protected = ctx.settings.get("paths", PROTECTED)
    # The path as written (after ..), and where it really leads (a link into .git/ is still .git/).
    entry = protected_by(lexical, protected) or protected_by(os.path.realpath(lexical), protected)
    if entry is None:
        return None
    ctx.ui.notify(f"Blocked a write to the protected path {path} ({entry})", level="warning")
    return {"block": True, "reason": f"path {path!r} is protected ({entry})"}


def activate(api):
    api.on("tool_call", guard)
