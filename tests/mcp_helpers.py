"""Shared by the MCP tests: the test servers' commands, process checks, waiting."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def everything_over_http(mode: str) -> Iterator[int]:
    """@modelcontextprotocol/server-everything (npm, MIT, github.com/modelcontextprotocol/servers) started in
    ``mode`` (``streamableHttp`` or ``sse``) on a free 127.0.0.1 port; yields the port once it listens, kills it after.
    Not installed: a failure under CI (.ci/run installs it), a skip elsewhere."""
    import shutil
    import socket
    import subprocess
    import threading

    import pytest

    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        if os.environ.get("CI"):
            pytest.fail("server-everything is not installed; .ci/run should have run npm ci")
        pytest.skip("server-everything is not installed (cd tests/mcp_servers/everything && npm ci)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([node, str(EVERYTHING), mode], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # "... listening on port N"
            if "listening" in line.lower() or "running" in line.lower():
                break
        else:
            pytest.fail("server-everything did not start")
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        yield port
    finally:
        proc.kill()
        proc.wait()
