"""Shared by the MCP tests: the test servers' commands, process checks, waiting."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
SDK_SERVER = REPO / "tests" / "mcp_servers" / "sdk_server.py"
OWNER = REPO / "tests" / "mcp_servers" / "owner.py"
EVERYTHING = (REPO / "tests" / "mcp_servers" / "everything" / "node_modules" / "@modelcontextprotocol"
              / "server-everything" / "dist" / "index.js")


def sdk_server(*flags: str) -> list[str]:
    return [sys.executable, str(SDK_SERVER), *flags]


def alive(pid: int) -> bool:
    """Running (a zombie is not: it has exited and only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate: Callable[[], object], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def read_events(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def started_pids(path: Path) -> list[int]:
    return [int(line.split()[1]) for line in read_events(path) if line.startswith("start ")]


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def pids_with_env(key: str, value: str) -> list[int]:
    """Processes whose environment holds ``key=value`` (a test's mark on the servers it started)."""
    needle = f"{key}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
