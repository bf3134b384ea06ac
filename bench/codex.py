"""Codex's app-server as a same-run baseline: spawn → its first ``skills/list`` answered.

Codex (npm ``@openai/codex``) serves JSON-RPC over stdio, JSONL, without the ``"jsonrpc"``
member: ``initialize {clientInfo}`` → answer, the ``initialized`` notification, then
``skills/list {cwds: [dir]}``. It reads repository skills from ``<dir>/.agents/skills``, so the
tree measured is a workspace whose ``.agents`` directory is the sidecar's root: the same files.

The binary is ``$HARNESS_BENCH_CODEX``, else ``codex`` on ``PATH``, else the native binary of the
``@openai/codex`` package ``bench.corpus_peers`` installed; when none is there the bench says so and
leaves the comparison out. Codex runs with its own ``CODEX_HOME`` in the
bench's temporary directory, warmed by one run first (its first start creates its state
databases, which a user's machine has long done).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from bench.common import close_process


def installed_peer() -> str | None:
    """Codex as ``bench.corpus_peers`` installs it (``npm install @openai/codex@0.171.0`` under its
    peers folder): the native binary the npm package ships, so that the figure is Codex's own work
    and not node's start-up in its launcher script (the launcher when no binary is found)."""
    from bench.corpus_peers.fetch import peers_dir

    modules = peers_dir() / "node_modules"
    for binary in sorted(modules.glob("@openai/codex-*/vendor/*/bin/codex")):
        if os.access(binary, os.X_OK):
            return str(binary)
    launcher = modules / ".bin" / "codex"
    return str(launcher) if launcher.exists() else None


def find_codex() -> tuple[str | None, str]:
    """``(path, version)`` of the Codex binary: ``$HARNESS_BENCH_CODEX``, ``codex`` on ``PATH``, or the
    one ``bench.corpus_peers`` installed; else ``(None, why not)``."""
    path = os.environ.get("HARNESS_BENCH_CODEX") or shutil.which("codex") or installed_peer()
    if not path:
        return None, ("no Codex binary (set HARNESS_BENCH_CODEX, put codex on PATH: npm i -g @openai/codex@0.171.0, "
                      "or python -m bench.corpus_peers.compare --install-peers)")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} does not run: {exc}"
    return path, (out.stdout.strip() or out.stderr.strip() or "unknown version")


class CodexAppServer:
    """Codex's app-server over stdio, as every bench starts it (this one, ``bench.corpus_peers``' comparison and
    speed): its own ``CODEX_HOME``, no ``CODEX_*``/``OPENAI_*`` of ours, a request of its own declined. With
    ``client``, the handshake (``initialize {clientInfo}``, ``initialized``) is made at once."""

    def __init__(self, binary: str, workspace: Path, home: Path, client: str | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
        home.mkdir(parents=True, exist_ok=True)  # Codex refuses a CODEX_HOME that does not exist
        env.update(CODEX_HOME=str(home), RUST_LOG="error")
        self.proc = subprocess.Popen([binary, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=str(workspace))
        self.next_id = 1
        if client is not None:
            self.handshake(client)

    def handshake(self, client: str) -> None:
        self.call("initialize", {"clientInfo": {"name": client, "version": "0"}})
        self.send({"method": "initialized"})

    def send(self, message: dict) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        """The whole answer (``result`` or ``error``) to ``method``."""
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params})
        assert self.proc.stdout
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"codex app-server closed stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a request of its own: declined
                self.send({"id": message["id"], "error": {"code": -32601, "message": "not supported"}})

    def call(self, method: str, params: dict) -> dict:
        """The ``result`` of ``method``; an error answer raises."""
        message = self.request(method, params)
        if "error" in message:
            raise RuntimeError(f"codex {method}: {message['error']}")
        return message["result"]

    def close(self, grace: float = 10.0) -> None:
        close_process(self.proc, grace)


def first_skills_list(binary: str, workspace: Path, home: Path) -> tuple[float, int]:
    """Milliseconds from spawn to the first ``skills/list`` answered, and how many skills it listed."""
    started = time.perf_counter()
    codex = CodexAppServer(binary, workspace, home)
    try:
        codex.handshake("harness-sidecar-bench")
        result = codex.call("skills/list", {"cwds": [str(workspace)]})
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        codex.close()
    listed = sum(len(entry.get("skills", [])) for entry in result.get("data", []))
    return elapsed, listed
