"""Generated workspaces: N skills with bodies of a given size, and an extension with two hooks."""

from __future__ import annotations

import os
from pathlib import Path

HOOKED_EXTENSION = '''
def echo(call_id, arguments):
    return arguments.get("text", "")

def before(event):
    if "SECRET" in event["call"]["arguments"].get("text", ""):
        return {"block": True, "reason": "secret"}
    return None

def after(event):
    pass

def activate(api):
    api.register_tool(name="echo", description="Echo text.", input_schema={"type": "object"}, execute=echo)
    api.on("tool_call", before)
    api.on("tool_result", after)
'''


def make_skills(root: Path, count: int, body_bytes: int) -> Path:
    body = ("lorem ipsum dolor sit amet " * (body_bytes // 27 + 1))[:body_bytes]
    skills = root / "skills"
    skills.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"skill-{i:05d}"
        directory = skills / name
        directory.mkdir()
        (directory / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Use when benchmark task {i} needs doing; not otherwise.\n---\n{body}\n")
    os.sync()  # no write-back of the fresh tree may run during the measurement
    return root


def make_extension_root(root: Path, ext_id: str = "hooked", code: str = HOOKED_EXTENSION) -> Path:
    """A root whose ``extensions/<ext_id>.py`` is ``code`` (by default the 'hooked' extension)."""
    (root / "extensions").mkdir(parents=True, exist_ok=True)
    (root / "extensions" / f"{ext_id}.py").write_text(code)
    return root


def tree_bytes(root: Path) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files)


def evict(root: Path) -> int:
    """Drop the file data of every file under ``root`` from the page cache (``POSIX_FADV_DONTNEED``; the
    directories and inodes stay cached): a cold read of the tree without ``drop_caches``, which needs
    more than root in a container and would empty every other process's cache too. Returns the files."""
    count = 0
    for directory, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            count += 1
    return count
