"""Running one ``http`` handler (protocol-v4 §3): the hook input POSTed to its url, the response read
as a command's stdout.

- ``POST <url>``, the body the JSON a command hook reads on stdin, ``Content-Type: application/json``,
  plus the declared ``headers``. In a header value ``$VAR`` and ``${VAR}`` are the sidecar's
  environment variable only when ``VAR`` is in the handler's ``allowedEnvVars``; any other reference
  becomes ``""`` (Claude Code's rule): nothing else of the environment leaves the machine.
- The request goes to the declared url alone: no proxy, redirects are not followed (a 3xx is a failure).
- A 2xx answers: an empty body says nothing (allow), a body starting ``{`` is read by the command
  reader (``command.read_output``: the same fields, read strictly), any other body is a failure.
- A failure — a non-2xx status, a connection that fails, the deadline, a body over 1 MiB, a bad body —
  is the ``Answer``'s ``failure``: ``hook_failed``, blocking on the events that can block as a command
  hook's failure does (``limits.commandHookFailure``; Claude Code lets these pass, the sidecar fails closed).

The request runs in a worker thread (``http.client``); at the deadline, or when nobody waits any more,
its socket is shut down so the thread ends with it. ``run_http`` never raises (cancellation aside).
"""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import socket
import urllib.parse
from typing import Any

from harness_sidecar.hooks.command import MAX_STDOUT, Answer, read_output
from harness_sidecar.hooks.declared import Handler

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def expand(value: str, allowed: tuple[str, ...], environ: Any = None) -> str:
    """A header value with ``$VAR``/``${VAR}`` of ``allowed`` replaced by the environment's value; others ``""``."""
    env = os.environ if environ is None else environ

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in allowed else ""

    return _REFERENCE.sub(one, value)


class BadHeader(ValueError):
    """A header whose expanded value cannot be sent; says which header, never the value (it may be a secret)."""


def request_headers(handler: Handler) -> dict[str, str]:
    spec = handler.spec
    headers = {"Content-Type": "application/json", "User-Agent": "harness-sidecar"}
    for name, value in spec.headers:
        value = expand(value, spec.allowed_env_vars)
        if any(c in value for c in "\r\n\0"):
            raise BadHeader(f"header {name!r}: its value, once its variables are expanded, holds a line break or "
                            "NUL (it would add headers of its own); the request is not sent")
        headers[name] = value
    return headers


class _Request:
    """One POST in a worker thread; ``abort`` (from the event loop) shuts its socket down."""

    def __init__(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> None:
        self.parts = urllib.parse.urlsplit(url)
        self.body, self.headers, self.timeout_s = body, headers, timeout_s
        self.conn: http.client.HTTPConnection | None = None
        self.aborted = False

    def run(self) -> tuple[int, str, bytes]:
        parts = self.parts
        cls = http.client.HTTPSConnection if parts.scheme.lower() == "https" else http.client.HTTPConnection
        self.conn = conn = cls(parts.hostname or "", parts.port, timeout=max(self.timeout_s, 0.001))
        if self.aborted:
            raise TimeoutError("aborted")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("POST", path, body=self.body, headers=self.headers)
            response = conn.getresponse()
            data = response.read(MAX_STDOUT + 1)
            return response.status, response.reason, data
        finally:
            conn.close()

    def abort(self) -> None:
        self.aborted = True
        sock = self.conn.sock if self.conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


async def run_http(handler: Handler, body: bytes, timeout_s: float) -> Answer:
    """POST ``body`` (the hook input JSON) to the handler's url; its ``Answer`` by ``timeout_s`` at the latest."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = Answer(handler)
    url = handler.spec.url
    try:
        headers = request_headers(handler)
        request = _Request(url, body, headers, timeout_s)
    except BadHeader as exc:
        answer.failure = f"POST {url}: {exc}"
        return answer
    except ValueError as exc:  # a url http.client cannot read (a bad port)
        answer.failure = f"its url {url} cannot be used: {exc}"
        return answer
    worker = asyncio.ensure_future(asyncio.to_thread(request.run))
    try:
        status, reason, data = await asyncio.wait_for(asyncio.shield(worker), timeout_s)
    except asyncio.TimeoutError:
        request.abort()
        answer.failure = f"POST {url} did not answer within {timeout_s * 1000:.0f} ms (the request was dropped)"
        worker.add_done_callback(_ignore)
        return _timed(answer, loop, started)
    except asyncio.CancelledError:
        request.abort()
        worker.add_done_callback(_ignore)
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        answer.failure = f"POST {url} failed: {type(exc).__name__}: {exc}"
        return _timed(answer, loop, started)
    answer.exit_code = 0
    answer.extra["status"] = status
    if len(data) > MAX_STDOUT:
        answer.failure = f"POST {url}: the response body is larger than {MAX_STDOUT} bytes"
        return _timed(answer, loop, started)
    text = data.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if not 200 <= status < 300:
        answer.failure = f"POST {url} answered {status} {reason}".rstrip()
        answer.stderr_tail = text.strip()[:2000]
        return _timed(answer, loop, started)
    answer.stdout = text
    if text.strip() and not text.lstrip().startswith("{"):
        answer.failure = f"POST {url} answered {status} with a body that is not a JSON object"
        return _timed(answer, loop, started)
    read_output(answer, "its response body")
    return _timed(answer, loop, started)


def _timed(answer: Answer, loop: asyncio.AbstractEventLoop, started: float) -> Answer:
    answer.elapsed_s = loop.time() - started
    return answer


def _ignore(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a dropped request's error is not "never retrieved"
