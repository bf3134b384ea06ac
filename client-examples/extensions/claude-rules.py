"""claude-rules: put the project's rule files into the system prompt.

Shows: ``thread_start`` (runs once before ``thread/start`` answers; ``ctx.cwd`` is the user's
working directory from ``thread/start.cwd``) and the ``context`` event (its string becomes a
``# Extension: claude-rules`` section of ``context/build``, after the active skills).
Ported from Pi's ``examples/extensions/claude-rules.ts``, which scans ``<cwd>/.claude/rules/`` at
session start and lists the files in the system prompt for the model to read. Here the folder
is looked for in ``ctx.cwd`` and its parents up to the repository (the first folder with a
``.git``), because an editor's working directory is often a sub-folder; the rules' text is put
into the prompt itself — as much as fits in ``maxBytes``, the rest listed by path — and read
once, at thread start, as the sidecar reads ``AGENTS.md``.

Settings (``thread/start.extensionSettings["claude-rules"]``), all optional:
  dir       the rules folder, relative to the project (default ".claude/rules")
  maxBytes  how much rule text goes into the prompt (default 3000; the sidecar's
            limits.extensionContextBytes, 4000 by default, bounds the whole section)
"""

import os

RULES = []  # [(relative path, text)] found at thread start: this thread's
FOUND_IN = []
LOADED = []  # non-empty once load() ran in this host


def find_rules_dir(cwd, relative):
    """``<folder>/<relative>`` for ``cwd`` or the nearest parent that has it (stopping at a .git)."""
    folder = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(folder, relative)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            return None
        folder = parent


def markdown_files(directory):
    found = []
    for here, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(here, f) for f in files if f.endswith(".md") and not f.startswith(".")]
    return sorted(found, key=lambda path: os.path.relpath(path, directory))


def load(event, ctx):
    if LOADED:
        return
    LOADED.append(True)
    if ctx.cwd is None:
        return  # the editor did not say where the user works: no project, no rules
    relative = ctx.settings.get("dir", ".claude/rules")
    directory = find_rules_dir(ctx.cwd, relative)
    if directory is None:
        return
    for path in markdown_files(directory):
        with open(path, encoding="utf-8", errors="replace") as f:
            RULES.append((os.path.relpath(path, directory), f.read()))
    FOUND_IN.append(directory)
    if RULES:
        ctx.ui.notify(f"Found {len(RULES)} rule file(s) in {directory}")


def contribute(event, ctx):
    # A restarted host (after a crash) imports and activates the extension again, but thread_start
    # does not run again: load here if it has not run in this host.
    load(event, ctx)
    if not RULES:
        return None
    budget = ctx.settings.get("maxBytes", 3000)
    parts = [f"Project rules from {FOUND_IN[0]}:"]
    left_out = []
    for name, text in RULES:
        part = f"## {name}\n\n{text.strip()}"
        if len(part.encode("utf-8")) + 2 <= budget - sum(len(p.encode("utf-8")) + 2 for p in parts):
            parts.append(part)
        else:
            left_out.append(name)
    if left_out:
        parts.append("More rules, not included here (read them when a task touches their subject): "
                     + ", ".join(left_out))
    return "\n\n".join(parts) + "\n"


def activate(api):
    api.on("thread_start", load)
    api.on("context", contribute)
