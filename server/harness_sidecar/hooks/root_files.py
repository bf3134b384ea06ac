"""Where a root keeps command hooks (``ROOT_FILES``) and whether it has any: a ``stat`` per file, without
reading them. Kept apart from ``hooks.declared`` (which reads them into ``Declared``/``Handler``) so that a
thread whose roots have no hooks file never imports it (issue #32: a plain first thread/start).
"""

from __future__ import annotations

import os

FILE_NAME = "hooks.json"

# A root's hooks sources, in this order (protocol-v4 §3 "Where people keep hooks"): its own ``hooks.json``;
# Claude Code's settings files (the root is a ``.claude`` folder: its ``settings.json`` and
# ``settings.local.json``; a project root: the same under its ``.claude/``); Codex's ``config.toml``
# ``[hooks]`` tables (the root is a ``.codex`` folder, or a project root's ``.codex/``) and its
# ``.codex/hooks.json``. Each is a source of its own (``root:<path of the file>``) with its own
# ``trustedHooks`` entry.
HOOKS_FILE, SETTINGS_FILE, CONFIG_TOML = "hooks", "settings", "toml"
ROOT_FILES: tuple[tuple[str, str], ...] = (
    (FILE_NAME, HOOKS_FILE),
    ("settings.json", SETTINGS_FILE), ("settings.local.json", SETTINGS_FILE), ("config.toml", CONFIG_TOML),
    (os.path.join(".claude", "settings.json"), SETTINGS_FILE),
    (os.path.join(".claude", "settings.local.json"), SETTINGS_FILE),
    (os.path.join(".codex", FILE_NAME), HOOKS_FILE), (os.path.join(".codex", "config.toml"), CONFIG_TOML),
)


def root_files(root: str) -> list[str]:
    """The hooks source files ``root`` has, in ``ROOT_FILES`` order."""
    return [path for path in (os.path.join(root, rel) for rel, _ in ROOT_FILES) if os.path.isfile(path)]


def has_sources(roots: list[str]) -> bool:
    """Whether any root has a hooks source file (cheap: ``stat`` only)."""
    return any(root_files(root) for root in roots)
