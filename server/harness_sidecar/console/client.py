"""A small synchronous client that spawns the sidecar: used by ``demo``, the tests and ``bench``.

It frames messages (JSONL or Content-Length), correlates response ids, answers the
sidecar's reverse requests through a callback and records every message it sees.
``RECORDER``, when set (the tests set it), receives every frame sent and received.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable

Message = dict[str, Any]


def sidecar_command() -> list[str]:
    return [sys.executable, "-P", "-m", "harness_sidecar"]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a user's machine: no PYTHONUNBUFFERED, so a missing flush shows."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # server/
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


class SidecarClosed(Exception):
    pass


class Malformed(dict):
    """A message (or a reverse request's answer) sent on purpose although it breaks the protocol.

    Sent like any other; a traffic recorder records it as deliberate instead of validating it.
    """


# Called with each new SidecarProcess; returns None or an object with ``sent(data: bytes,
# deliberate: bool)`` and ``received(frame: bytes)`` (tests/traffic.py checks what it records).
RECORDER: Callable[["SidecarProcess"], Any] | None = None


class SidecarProcess:
    def __init__(self, command: list[str] | None = None, *, env: dict[str, str] | None = None,
                 cwd: str | None = None, framing: str = "jsonl",
                 on_request: Callable[[Message], Any] | None = None,
                 on_message: Callable[[str, Message], None] | None = None,
                 stderr: Any = subprocess.PIPE) -> None:
        self.command = command or sidecar_command()
        self.framing = framing
        self.on_request = on_request
        self.on_message = on_message
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=env or child_env(), cwd=cwd, bufsize=0)
        self.recorder = RECORDER(self) if RECORDER is not None else None
        self.incoming: queue.Queue = queue.Queue()
        self.notifications: list[Message] = []
        self.stderr_lines: list[bytes] = []
        self._stderr_done = threading.Event()
        self._ids = itertools.count(1)
        self._stash: dict[Any, Message] = {}
        threading.Thread(target=self._read_stdout, daemon=True).start()
        if self.proc.stderr is not None:
            threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- wire ------------------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        # Buffered: a raw pipe's readline reads a byte per system call (15 s for a 15 MB line).
        # What arrives is handed on as soon as a line is complete, so nothing waits in the buffer.
        stream = io.BufferedReader(self.proc.stdout, buffer_size=1 << 16)  # type: ignore[arg-type]
        try:
            if self.framing == "jsonl":
                for line in stream:
                    if self.recorder is not None:
                        self.recorder.received(line)
                    self.incoming.put(("raw", line))
            else:
                while True:
                    headers = b""
                    while not headers.endswith(b"\r\n\r\n"):
                        byte = stream.read(1)
                        if not byte:
                            raise EOFError
                        headers += byte
                    length = int(headers.split(b":", 1)[1].split(b"\r\n", 1)[0])
                    body = b""
                    while len(body) < length:
                        chunk = stream.read(length - len(body))
                        if not chunk:
                            raise EOFError
                        body += chunk
                    if self.recorder is not None:
                        self.recorder.received(body)
                    self.incoming.put(("raw", body))
        except (EOFError, ValueError, OSError):
            pass
        self.incoming.put(("eof", None))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line)
        self._stderr_done.set()

    def _stderr_tail(self, lines: int = 20) -> str:
        if not self.stderr_lines:
            return ""
        tail = b"".join(self.stderr_lines[-lines:]).decode("utf-8", "replace").rstrip()
        return f"; the last lines of the sidecar's stderr:\n{tail}"

    def death_report(self, lines: int = 40) -> str:
        """How the sidecar ended and the tail of its stderr: what a failure message needs to name the cause.

        Waits a moment for the process to be reaped and its stderr read to the end, so a crash's
        traceback is in the report rather than still in the pipe.
        """
        try:
            code: int | None = self.proc.wait(2.0)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_done.wait(2.0)
        status = "still running" if code is None else (f"killed by signal {-code}" if code < 0 else f"exit status {code}")
        if self.proc.stderr is None:
            return f" ({status}; its stderr was not captured)"
        tail = b"".join(self.stderr_lines[-lines:]).decode("utf-8", "replace").rstrip()
        return f" ({status}); the last lines of its stderr:\n{tail or '(nothing)'}"

    def send_raw(self, data: bytes, deliberate: bool = False) -> None:
        assert self.proc.stdin is not None
        if self.recorder is not None:
            self.recorder.sent(data, deliberate)
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def encode(self, message: Message) -> bytes:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        if self.framing == "jsonl":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send(self, message: Message) -> None:
        if self.on_message:
            self.on_message("->", message)
        self.send_raw(self.encode(message), deliberate=isinstance(message, Malformed))

    def next_message(self, timeout: float = 30.0) -> Message:
        kind, raw = self.incoming.get(timeout=timeout)
        if kind == "eof":
            self.incoming.put((kind, raw))
            raise SidecarClosed(f"the sidecar closed stdout{self.death_report()}")
        message = json.loads(raw)
        if self.on_message:
            self.on_message("<-", message)
        return message

    # -- requests ----------------------------------------------------------------------------------

    def request_async(self, method: str, params: Message | None = None) -> int:
        request_id = next(self._ids)
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def notify(self, method: str, params: Message | None = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def wait_for(self, request_id: Any, timeout: float = 30.0) -> Message:
        """Wait for the response to ``request_id``, answering reverse requests meanwhile."""
        deadline = time.monotonic() + timeout
        while request_id not in self._stash:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response to {request_id!r} in {timeout} s{self._stderr_tail()}")
            try:
                message = self.next_message(remaining)
            except queue.Empty:
                raise TimeoutError(f"no response to {request_id!r} in {timeout} s{self._stderr_tail()}") from None
            self._dispatch(message)
        return self._stash.pop(request_id)

    def _dispatch(self, message: Message) -> None:
        if "method" in message and "id" in message:
            self._answer_reverse(message)
        elif "method" in message:
            self.notifications.append(message)
        else:
            self._stash[message.get("id")] = message

    def _answer_reverse(self, message: Message) -> None:
        if self.on_request is None:
            reply: Message = {"jsonrpc": "2.0", "id": message["id"],
                              "error": {"code": -32601, "message": "this client serves no requests"}}
        else:
            outcome = self.on_request(message)
            if outcome is None:
                return  # stay silent (tests of the sidecar's timeout)
            reply = {"jsonrpc": "2.0", "id": message["id"], **outcome}
            if isinstance(outcome, Malformed):
                reply = Malformed(reply)
        self.send(reply)

    def request(self, method: str, params: Message | None = None, timeout: float = 30.0) -> Message:
        """Send a request and return the whole response message (``result`` or ``error``)."""
        return self.wait_for(self.request_async(method, params), timeout)

    def call(self, method: str, params: Message | None = None, timeout: float = 30.0) -> Any:
        """Send a request and return its ``result``; raise ``RuntimeError`` on an error response."""
        response = self.request(method, params, timeout)
        if "error" in response:
            raise RuntimeError(f"{method} failed: {response['error']}")
        return response["result"]

    def initialize(self) -> Message:
        return self.call("initialize", {"clientInfo": {"name": "harness-sidecar-client"}, "protocolVersion": "4"})

    # -- end -----------------------------------------------------------------------------------------

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def close(self, timeout: float = 10.0) -> int:
        try:
            self.close_stdin()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def drain(self, timeout: float = 10.0) -> list[Message]:
        """Every message until the sidecar closes stdout."""
        out = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                out.append(self.next_message(max(0.01, deadline - time.monotonic())))
            except SidecarClosed:
                return out

    def __enter__(self) -> "SidecarProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
