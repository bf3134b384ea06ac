"""Byte transport: claim stdout, frame messages (JSONL or Content-Length), write them whole.

Reading happens on a thread doing blocking ``os.read`` on fd 0, which works for every
kind of stdin (pipe, file, terminal, socket); complete frames are handed to the event
loop in batches. Framing is decided by the first non-blank input: ``Content-Length:``
selects LSP base-protocol framing for the whole session, both ways; anything else is
JSONL. Lines are split on ``\\n`` bytes only (never on U+2028 inside a string).
"""

from __future__ import annotations

import os
import sys
import threading

from harness_sidecar.base import stdjson

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and logging are not imported on the way to the first answer
    from typing import Any, Callable


def _log() -> Any:
    import logging

    return logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
READ_CHUNK = 256 * 1024
JSONL = "jsonl"
CONTENT_LENGTH = "content-length"
_HEADER = b"content-length:"
MAX_HEADER_BYTES = 8192
LARGE_ANSWER = 64 * 1024  # = outbox.LARGE (not imported before the loop runs)


class TooLarge:
    """A frame longer than ``MAX_MESSAGE_BYTES``; it was skipped."""

    def __init__(self, size: int | None) -> None:
        self.size = size


class BadFrame:
    """Content-Length headers that cannot be parsed."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def claim_stdin() -> int:
    """Keep the real stdin for the protocol and point fd 0 at ``/dev/null``.

    A child process the sidecar starts (an extension host, an MCP server, whatever they
    start) inherits fd 0: it must not be able to read, or close, the editor's requests.
    """
    protocol_fd = os.dup(0)
    os.set_inheritable(protocol_fd, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return protocol_fd


def claim_stdout() -> int:
    """Keep the real stdout for the protocol and point fd 1 (and ``sys.stdout``) at stderr.

    After this, a ``print`` in an extension, a C library writing to fd 1 or a child
    process inheriting it all land in the log, never in the protocol stream.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    protocol_fd = os.dup(1)
    os.set_inheritable(protocol_fd, False)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


class Writer:
    """Writes whole frames to the protocol fd under a lock.

    With ``coalesce(loop)``, the frames produced during one turn of the event loop are
    written together at its end: one ``write`` for a burst of responses instead of one
    each (every syscall is also a GIL hand-over to the worker threads) — on the loop when
    it surely does not wait for the editor, else by the writer thread (``outbox``), where a
    large answer (``write_encoded(data, answer=True)``) holds no small frame up. Nothing
    waits for a later turn, and ``flush`` writes everything handed over before it returns
    (the endpoint calls it before the process exits).
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.framing = JSONL
        self.jsonio: Any = None  # harness_sidecar.base.jsonio once the event loop runs (not on the way to initialize)
        self._lock = threading.Lock()
        self.broken = False
        self._loop: Any = None
        self._pending: list[bytes] = []
        self._outbox: Any = None  # wire.outbox.Outbox once coalescing (the JSON-RPC endpoint's loop)

    def coalesce(self, loop: Any) -> None:
        from harness_sidecar.wire.outbox import Outbox

        self._loop = loop
        self._outbox = Outbox(self.fd, self.write_bytes, lambda: self.broken)

    def flush(self) -> None:
        """Everything out before this returns (the process is about to exit)."""
        self._end_of_turn()
        if self._outbox is not None:
            self._outbox.drain()

    def _end_of_turn(self) -> None:
        """This turn's frames out: written now if they surely fit, else by the writer thread."""
        if self._pending:
            data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
            self._pending.clear()
            outbox = self._outbox
            if outbox is None or (outbox.idle() and outbox.fits(len(data))):
                self.write_bytes(data)
            else:
                outbox.put(data, False)

    def encode(self, message: dict[str, Any]) -> bytes:
        """The frame of ``message``; ``ValueError``/``TypeError`` for what is not JSON data."""
        if self.jsonio is not None:
            body = self.jsonio.dumps(message)
        else:  # the first answer, before the faster codec is loaded
            body = stdjson.dumps(message)
        if self.framing == CONTENT_LENGTH:
            return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        return body + b"\n"

    def encode_parts(self, message: dict[str, Any]) -> bytes | list[bytes | memoryview]:
        """``encode(message)``, or its pieces to be written one after the other: a long string the sidecar read
        from a host is written from the bytes it came in, not encoded again (``jsonio.dumps_parts``)."""
        jsonio = self.jsonio
        if jsonio is None or not jsonio.kept():
            return self.encode(message)
        parts = jsonio.dumps_parts(message)
        if len(parts) == 1:
            body = parts[0]
            return b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if self.framing == CONTENT_LENGTH \
                else body + b"\n"
        if self.framing == CONTENT_LENGTH:
            return [b"Content-Length: %d\r\n\r\n" % sum(map(len, parts)), *parts]
        parts.append(b"\n")
        return parts

    def write(self, message: dict[str, Any]) -> None:
        self.write_encoded(self.encode(message))

    def write_encoded(self, data: bytes | list[bytes | memoryview], answer: bool = False) -> None:
        """``data`` (a whole frame, or its pieces: ``encode_parts``) to the editor; ``answer``: a response to
        one of its requests, which may be overtaken by frames written after it (a large one waits in its own lane)."""
        if type(data) is list:
            if len(data) == 1 or sum(map(len, data)) <= LARGE_ANSWER or self._loop is None:
                data = b"".join(data)
            else:
                self._end_of_turn()
                self._outbox.put(data, True)
                return
        if self._loop is None:
            self.write_bytes(data)
            return
        if answer and len(data) > LARGE_ANSWER:
            self._end_of_turn()  # what this turn made before it goes first
            self._outbox.put(data, True)
            return
        if not self._pending:
            self._loop.call_soon(self._end_of_turn)
        self._pending.append(data)

    def write_bytes(self, data: bytes | list[bytes | memoryview]) -> None:
        """A whole frame (or its pieces, written one after the other: nothing between them) to the fd."""
        with self._lock:
            if self.broken:
                return
            try:
                for part in (data if type(data) is list else (data,)):
                    view = memoryview(part)
                    while view:
                        written = os.write(self.fd, view)
                        view = view[written:]
            except OSError as exc:  # the editor closed our stdout: nothing more can be said
                self.broken = True
                _log().warning("cannot write to the protocol stream: %s", exc)


def batch_bytes(batch: list[Any]) -> int:
    return sum(len(item) for item in batch if type(item) is bytes)


class Reader:
    """Splits fd input into frames on a daemon thread and delivers them in batches."""

    def __init__(self, fd: int, deliver: Callable[[list[Any]], None], on_framing: Callable[[str], None]) -> None:
        self.fd = fd
        self.deliver = deliver  # called from the reader thread; must be thread-safe
        self.on_framing = on_framing
        self.framing: str | None = None
        # Frames read but not yet handled by the event loop may total at most this many bytes (None: no
        # bound; the JSONL endpoint reports back with ``handled``). The loop only parses and dispatches
        # them — never waits — so reading goes on within moments: answers are never held back for long.
        self.max_in_transit: int | None = None
        self._in_transit = 0
        self._handled = threading.Condition()

    def start(self) -> None:
        threading.Thread(target=self._run, name="harness-stdin", daemon=True).start()

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # noqa: BLE001 - a reader bug must still end the session cleanly
            _log().exception("stdin reader failed")
        self.deliver([EOFError()])

    def _hand_over(self, batch: list[Any]) -> None:
        if self.max_in_transit is not None:
            size = batch_bytes(batch)
            with self._handled:
                while self._in_transit > self.max_in_transit:
                    self._handled.wait()
                self._in_transit += size
        self.deliver(batch)

    def handled(self, batch: list[Any]) -> None:
        """The event loop handled ``batch`` (called on the loop)."""
        if self.max_in_transit is not None:
            size = batch_bytes(batch)
            with self._handled:
                self._in_transit -= size
                self._handled.notify()

    def _read(self) -> bytes:
        # Always read: the editor's answers to the sidecar's requests come this way (backpressure is
        # the endpoint's queue, never a stopped pipe).
        try:
            return os.read(self.fd, READ_CHUNK)
        except OSError as exc:
            _log().warning("cannot read stdin: %s", exc)
            return b""

    def _loop(self) -> None:
        buf = bytearray()
        while self.framing is None:
            chunk = self._read()
            if not chunk:
                if buf.strip():
                    self._set_framing(JSONL)
                    break
                return
            buf += chunk
            head = bytes(buf.lstrip()[: len(_HEADER)]).lower()
            if len(head) >= len(_HEADER) or (head and not _HEADER.startswith(head)) or b"\n" in head:
                self._set_framing(CONTENT_LENGTH if head.startswith(_HEADER) else JSONL)
        if self.framing == JSONL:
            self._jsonl(buf)
        else:
            self._content_length(buf)

    def _set_framing(self, framing: str) -> None:
        self.framing = framing
        self.on_framing(framing)

    def _jsonl(self, buf: bytearray) -> None:
        discarding = False
        chunk: bytes = b"x"
        searched = 0  # bytes at the front of buf already known to hold no newline
        while True:
            out: list[Any] = []
            start = 0
            while True:
                newline = buf.find(b"\n", start if start else searched)
                if newline < 0:
                    break
                if discarding:
                    discarding = False
                elif newline - start > MAX_MESSAGE_BYTES:
                    out.append(TooLarge(newline - start))
                elif newline > start:
                    line = bytes(buf[start:newline])
                    if line.strip():
                        out.append(line)
                start = newline + 1
            del buf[:start]
            if not discarding and len(buf) > MAX_MESSAGE_BYTES:
                out.append(TooLarge(None))
                discarding = True
            if discarding:
                buf.clear()
            searched = len(buf)
            if out:
                self._hand_over(out)
            if not chunk:
                break
            chunk = self._read()
            if not chunk:
                if buf.strip() and not discarding:  # a last line without its newline
                    buf += b"\n"
                    continue
                return
            buf += chunk

    def _content_length(self, buf: bytearray) -> None:
        skip = 0
        eof = False
        while True:
            out: list[Any] = []
            while True:
                if skip:
                    dropped = min(skip, len(buf))
                    del buf[:dropped]
                    skip -= dropped
                    if skip:
                        break
                stripped = len(buf) - len(buf.lstrip())
                if stripped:
                    del buf[:stripped]
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEADER_BYTES:
                        out.append(BadFrame("headers longer than 8 KiB without a blank line"))
                        buf.clear()
                    break
                headers = bytes(buf[:end]).decode("ascii", "replace").split("\r\n")
                length = None
                for header in headers:
                    key, _, value = header.partition(":")
                    if key.strip().lower() == "content-length":
                        try:
                            length = int(value.strip())
                        except ValueError:
                            length = None
                if length is None or length < 0:
                    out.append(BadFrame(f"no valid Content-Length in headers {headers!r}"))
                    del buf[: end + 4]
                    continue
                if length > MAX_MESSAGE_BYTES:
                    out.append(TooLarge(length))
                    del buf[: end + 4]
                    skip = length
                    continue
                if len(buf) < end + 4 + length:
                    break
                out.append(bytes(buf[end + 4: end + 4 + length]))
                del buf[: end + 4 + length]
            if out:
                self._hand_over(out)
            if eof:
                return
            chunk = self._read()
            if not chunk:
                eof = True
                continue
            buf += chunk
