"""The private channel between the sidecar and a thread's extension host: the one place it is defined.

A Unix socket pair whose host end is passed to the host process by fd (never fds 0/1/2).
Each frame is one line: a compact JSON array ``[tag, id, body]`` ending in ``\\n`` (JSON
escapes every newline inside strings, so lines split on ``\\n`` bytes only). ``id`` is
an integer: the exchange a frame belongs to (0 when none). Both sides encode with
``allow_nan=False``: nothing that is not standard JSON crosses.

Sidecar → host
  ``init``      0    {threadId, cwd, roots, ui: {confirm, select, ...}, memoryMb, maxResultBytes, maxTools,
                      stateLines: [extension id, ...], stateBytes}  then, raw, one line per id of stateLines:
                      that extension's ctx.state as its compact JSON text (no newline byte in it; no frame
                      around it: the host keeps the bytes as they came and parses them at ctx.state.get())
  ``load``      seq  {id, code (base64 of the hashed bytes), codePath, package, directory,
                      settings, deadline}                                  → ``loaded``
  ``commit``    0    {ids: [extension id, ...]}  the extensions whose registrations are live
  ``schemas``   0    {tools: {name: inputSchema}}  tools the host does not own (re-validation)
  ``call``      x    {phase: "full"|"before"|"after", threadId, call, result?, deadline,
                      hookTimeout, toolTimeout, stepTimeouts?}             → ``step``…, ``done``
  ``event``     x    {event, payload, deadline, hookTimeout}  lifecycle, context, input handlers
  ``command``   x    {name, arguments, deadline, timeout}
  ``abort``     x    null | {unlessAt}   the sidecar gave up on exchange x: run none of its further
                     steps (with ``unlessAt``: unless step ``unlessAt``, a call's core, has begun)
  ``uiAnswer``  u    {value, shift}  the editor's answer; ``shift``: seconds of user time so far
  ``ping``      n    null   → ``pong``
  ``close``     0    null   exit now

Host → sidecar
  ``ready``     0    {pid}
  ``loaded``    seq  {ok, error?, tools: [...], hooks: [event, ...], commands: [...]}
  ``step``      x    [index] or [index, carry, faults]   step ``index`` of exchange x begins now
                     (sent before its code runs; the sidecar stamps it on receipt by its own
                     clock; ``carry``: the call's result when it changed since the sidecar last
                     had it — the first step after a core carries the core's result)
  ``done``      x    {...}   the exchange's outcome (see ``extensions.exchanges``); each of its faults (and
                     a step frame's) is {extensionId, hook, kind, message, step}: the sidecar names it
                     by the extension and event of step ``step`` of its plan
  ``ended``     x    null    the code of an exchange the sidecar aborted (or that ran late) returned
  ``ui``        u    {exchange, step, method, params}   ask the editor (``ui/confirm`` …)
  ``notify``    x    {method, params, step}   ``ui/notify``, ``ui/status``, ``chat/send``, an author's
                     ``thread/diagnostic``, made by the handler of step ``step`` of exchange x
                     The sidecar relays both with its own ``threadId`` and the ``extensionId`` of that
                     step in its plan, whatever ``params`` say; one outside every exchange is dropped.
  ``state``     x    {step, state}   ``ctx.state.set(state)`` by the handler of step ``step`` of exchange x
                     (protocol-v4 §5): the sidecar keeps it for that step's extension in its plan, whatever
                     else the frame says; one outside every exchange, or larger than stateBytes, is dropped
  ``pong``      n    null

Only the host answers: the sidecar reads with ``SO_PASSCRED`` and drops what any other process
wrote on the channel (a child forked by extension code, which also finds the channel dead at fork).

Deadlines: every step has one. The sidecar keeps them by its own clock: every step starts
when the sidecar reads its ``step`` frame, or its cell of the step board (``board``: a step that
carries nothing is announced there, with no write on the channel; the host passes its fd as the
third argument) — no time the host states counts; a step index only moves forward within the plan;
an exchange not yet begun is bounded by its first step's deadline counted from when the sidecar
sent it (the host begins none after that).
The host announces a step *before* it starts it and runs the step only if the previous
one ended by its own deadline (which is never later than the sidecar's); the sidecar decides
a timeout only at ``deadline + MARGIN_S`` and only after reading everything the host wrote.
So a step the sidecar has answered as timed out is never followed by the next one in the
host. A ``step`` is written at once; a ``done`` may wait in the host only while no foreign code
can run before its next write or board announcement (then a pipelined call's ``done`` goes out
with the next frame, or alone just before the next step goes on the board: ``extensions.host.output.Output``). A step still running ``hostGraceMs`` after the sidecar answered for it (no ``done``
or ``ended`` came) ends its host.
"""

from __future__ import annotations

import re

from harness_sidecar.base import jsondepth, jsonio

MARGIN_S = 0.03  # the sidecar's backstop waits this long past a step's deadline
MAX_FRAME_BYTES = 64 * 1024 * 1024  # a host line longer than this is a host fault
_ID_PREFIX = re.compile(rb'\["(\w+)",(-?\d+),')
_PLAIN_DONE = re.compile(rb'\["done",(0|[1-9]\d{0,17}),\{"faults":\[\],"carried":true\}\]')
PLAIN_DONE = b'["done",%d,{"faults":[],"carried":true}]\n'  # what the host writes for that outcome
_PLAIN_STEP = re.compile(rb'\["step",(0|[1-9]\d{0,17}),\[(0|[1-9]\d{0,8})\]\]')

# Tags (sidecar → host)
INIT, LOAD, COMMIT, SCHEMAS, CALL, EVENT, COMMAND, ABORT, UI_ANSWER, PING, CLOSE = (
    "init", "load", "commit", "schemas", "call", "event", "command", "abort", "uiAnswer", "ping", "close")
# Tags (host → sidecar)
READY, LOADED, STEP, DONE, UI, NOTIFY, PONG = "ready", "loaded", "step", "done", "ui", "notify", "pong"
STATE = "state"
ENDED = "ended"
# What a host's ``ui`` frame may ask the sidecar itself (``ctx.tools``; answered from the thread's tools,
# never sent to the editor): threads.model_tools answers them; ``ctx.commands``, threads.extensions.
TOOLS_LIST, TOOLS_SET_ACTIVE = "host/tools.list", "host/tools.setActive"
COMMANDS_LIST = "host/commands.list"  # ctx.commands.list(): answered by threads.extensions

def encode(tag: str, ident: int, body: object) -> bytes:
    """One frame. Raises ``ValueError``/``TypeError`` for what is not JSON data (callers check beforehand)."""
    return jsonio.dumps([tag, ident, body]) + b"\n"


class FrameError(Exception):
    """A line that is not a frame: the peer broke the channel's rules."""


def decode(line: bytes, strings: list[tuple[int, int, str, bool]] | None = None) -> tuple[str, int, object]:
    """``(tag, id, body)`` of one line (without its newline). Raises ``FrameError``. ``strings``: those the line's
    pieces brought, decoded as they came (``LineSplitter.strings_of``; ``jsonio.loads_spans``)."""
    if line.startswith(b'["step",'):  # most frames of a call: ["step",<id>,[<index>]], read without a parser
        match = _PLAIN_STEP.fullmatch(line)
        if match is not None:
            return STEP, int(match.group(1)), [int(match.group(2))]
    elif line.startswith(b'["done",'):  # and the outcome of one whose result the sidecar has
        match = _PLAIN_DONE.fullmatch(line)
        if match is not None:
            return DONE, int(match.group(1)), {"faults": [], "carried": True}
    try:
        # a line of at most MAX_DEPTH bytes cannot nest deeper: most frames (step, done, call) skip the check
        frame = jsonio.loads(line) if len(line) <= jsondepth.MAX_DEPTH else jsondepth.bounded_loads(
            (lambda data: jsonio.loads_spans(data, strings)) if strings else jsonio.loads, line)
    except (ValueError, RecursionError) as exc:  # NaN, Infinity and nesting past 512 levels are refused too
        raise FrameError(f"not a JSON frame: {exc}") from None
    if (type(frame) is not list or len(frame) != 3 or type(frame[0]) is not str
            or type(frame[1]) is not int):
        raise FrameError("a frame is [tag, id, body]")
    return frame[0], frame[1], frame[2]


def peek_id(line: bytes) -> tuple[str, int] | None:
    """The tag and id of an over-long line, read from its first bytes."""
    match = _ID_PREFIX.match(line[:128])
    return (match.group(1).decode(), int(match.group(2))) if match else None


class LineSplitter:
    """Bytes in, complete lines out; a line over ``limit`` bytes comes out as ``TooLong``.

    Linear in what is fed: a long line arriving in many pieces is kept as a list of pieces and
    joined once, when its newline comes (joining the buffer at every piece made a 60 MiB line
    cost seconds of copying on the event loop).
    """

    __slots__ = ("parts", "size", "limit", "track_limit", "answer_limit", "_skipping", "_head", "_commas", "_strings",
                 "_track", "_counted")

    def __init__(self, limit: int = MAX_FRAME_BYTES, strings: bool = False) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = limit
        self._skipping = False
        self._head = b""
        # the commas of a long line counted piece by piece as it arrives (``too_many_values``), not all at
        # once when it is whole (~5 ms of 16 MB on the event loop, in the turn that parses it)
        self._commas = 0
        self._track = strings  # with ``strings``: its strings that span pieces, decoded as they come (the sidecar's)
        self.track_limit = limit  # a line longer than this is not followed (refused unparsed, or parsed whole)
        # a frame that may carry a result (not ``notify``/``ui``) longer than this comes out as ``TooLong`` too: its
        # pieces are let go as they come, never joined (a 60 MiB line: not held, nor copied on the loop)
        self.answer_limit = limit
        self._strings = LongStrings()
        self._counted: tuple[bytes, int, list[tuple[int, int, str, bool]]] | None = None

    def commas_of(self, line: bytes) -> int | None:
        """The commas of ``line`` if it was the last line joined from pieces (counted as they came)."""
        counted = self._counted
        return counted[1] if counted is not None and counted[0] is line else None

    def strings_of(self, line: bytes) -> list[tuple[int, int, str, bool]]:
        """The strings of ``line`` decoded as its pieces came (``LongStrings``), if it was the last line joined; asked
        once, when the line is decoded (then neither the line nor its strings are held here any longer)."""
        counted = self._counted
        if counted is None or counted[0] is not line:
            return []
        self._counted = None
        return counted[2]

    def feed(self, data: bytes) -> list[bytes | "TooLong"]:
        out: list[bytes | TooLong] = []
        if b"\n" in data:
            lines = data.split(b"\n")
            rest = lines.pop()
        else:  # a piece of a long line: not split (a copy of it, ~0.6 ms a MiB)
            lines, rest = [], data
        limit = self.limit
        if lines:
            first = lines[0]
            if self._skipping:
                out.append(TooLong(self._head))
                self._skipping = False
            elif self.parts:
                if self.size + len(first) > limit or (self.size + len(first) > self.answer_limit
                                                      and carries_result(_head(self.parts))):
                    out.append(TooLong(_head(self.parts)))
                else:
                    self.parts.append(first)
                    joined = b"".join(self.parts)
                    if self._track and self._strings.ok:
                        if self.size + len(first) > self.track_limit:
                            self._strings.give_up()
                        else:
                            self._strings.feed(first)
                    # the values the parser will meet: the commas but those inside strings (a long CSV text is
                    # one value, not 250,000)
                    commas = self._commas + first.count(b",") - self._strings.commas_inside()
                    self._counted = (joined, commas, self._strings.found())
                    out.append(joined)
                self.parts.clear()
                self.size = 0
                self._commas = 0
                self._strings = LongStrings()
            else:
                out.append(first if len(first) <= limit else TooLong(first[:128]))
            for line in lines[1:]:
                out.append(line if len(line) <= limit else TooLong(line[:128]))
        if rest and not self._skipping:
            if self.size + len(rest) > limit or (self.size + len(rest) > self.answer_limit
                                                 and carries_result(_head(self.parts + [rest]))):
                self._head = _head(self.parts + [rest])
                self._skipping = True
                self.parts.clear()
                self.size = 0
                self._commas = 0
                self._strings = LongStrings()
            else:
                self.parts.append(rest)
                self.size += len(rest)
                self._commas += rest.count(b",")
                if self._track and self._strings.ok:
                    if self.size > self.track_limit:
                        self._strings.give_up()
                    else:
                        self._strings.feed(rest)
        return out


def carries_result(line: bytes) -> bool:
    """Whether a frame beginning with ``line`` may carry a result (every tag but ``notify`` and ``ui``, whose text
    the sidecar cuts to fit: they may be longer than any answer)."""
    head = peek_id(line)
    return head is None or head[0] not in (NOTIFY, UI)


def _head(parts: list[bytes]) -> bytes:
    head = b""
    for part in parts:
        head += part[:128 - len(head)]
        if len(head) >= 128:
            break
    return head


class LongStrings:
    """The strings of a long line that span its pieces, decoded slice by slice as the pieces arrive (issue 32 item 4):
    orjson reads each slice (~0.5 ms a MiB, in the turn that reads it) instead of the whole text in the turn that
    completes the line, and refuses what is not JSON as it would have. A slice ends before a backslash run or a
    UTF-8 sequence that may go on in the next piece. Anything unusual (a slice orjson refuses, a surrogate pair cut in
    two, more than ``MAX_QUOTES`` escaped quotes or ``MAX_SEEN`` quotes in all) and the line is parsed whole, as before."""

    __slots__ = ("ok", "size", "open", "done", "tail", "parts", "plain", "spans", "quotes", "commas", "seen")
    MAX_QUOTES = 10_000
    MAX_SEEN = 20_000  # quotes in the line: past them it is parsed whole, as before (its commas all count)

    def __init__(self) -> None:
        self.ok = True
        self.size = 0  # bytes of the line fed so far
        self.open = -1  # where the string being read opened (its quote), -1 between strings
        self.done = 0  # up to where its content is decoded; ``tail`` holds what came after, not yet decoded
        self.tail = b""
        self.parts: list[str] = []
        self.plain = True  # its bytes so far are what orjson writes for its value
        self.spans: list[tuple[int, int, str, bool]] = []  # (opening quote, closing quote, value, plain)
        self.quotes = 0
        self.commas = 0  # the commas inside the line's strings: they cost the parser nothing
        self.seen = 0

    def found(self) -> list[tuple[int, int, str, bool]]:
        return self.spans if self.ok and self.open < 0 else []

    def commas_inside(self) -> int:
        """The commas inside the line's strings, once the whole line was followed (else 0: all of them count)."""
        return self.commas if self.ok and self.open < 0 else 0

    def give_up(self) -> None:
        """The line is not followed further (and what was decoded of it is let go)."""
        self.ok = False
        self.parts, self.spans, self.tail = [], [], b""

    def feed(self, data: bytes) -> None:
        """The next piece of the line. Linear in the piece: a string that opens and closes within it is stepped over
        by offsets (its commas counted), never sliced — a piece of 200,000 short strings is one pass, not 200,000
        copies of what follows each."""
        base = self.size
        self.size += len(data)
        self.seen += data.count(b'"')  # in C: a line of very many strings is not followed string by string in Python
        if self.seen > self.MAX_SEEN:
            self.give_up()  # (~1 µs a string here: 200,000 short strings would hold the loop ~0.25 s)
            return
        at = 0  # in data: what is not looked at yet
        while self.ok:
            if self.open < 0:  # between strings: the next quote opens one
                quote = data.find(b'"', at)
                if quote < 0:
                    return
                close = self._closing(data, quote + 1)
                if close is None:
                    return
                if close >= 0:  # a string within one piece: the parser reads it with the rest
                    self.commas += data.count(b",", quote + 1, close)
                    at = close + 1
                    continue
                self.open, self.done, self.tail, self.parts, self.plain = base + quote, base + quote + 1, b"", [], True
                buf = data[quote + 1:]  # it goes on in the next piece: one copy of this piece's rest
            else:  # the string opened in an earlier piece goes on here (``at`` is 0)
                buf = self.tail + data if self.tail else data
                close = self._closing(buf, 0)
                if close is None:
                    return
                if close >= 0:
                    self._decode(buf[:close])  # ``done`` is now the closing quote
                    self.spans.append((self.open, self.done, "".join(self.parts), self.plain))
                    self.open, self.parts = -1, []
                    at = self.done - base + 1
                    continue
            cut = _cut(buf)
            self._decode(buf[:cut])
            self.tail = buf[cut:]
            return

    def _closing(self, buf: bytes, start: int) -> int | None:
        """Where the string whose content begins at ``start`` closes in ``buf`` (-1: not in it); None: too many
        escaped quotes."""
        quote = buf.find(b'"', start)
        while quote >= 0:
            run = 0
            while run < quote - start and buf[quote - 1 - run] == 0x5C:
                run += 1
            if run % 2 == 0:
                return quote
            self.quotes += 1
            if self.quotes > self.MAX_QUOTES:
                self.ok = False
                return None
            quote = buf.find(b'"', quote + 1)
        return -1

    def _decode(self, chunk: bytes) -> None:
        """The next slice of the string's content: decoded, ``done`` moved past it. ``plain`` stays true while every
        slice is what orjson writes for its value: one without a backslash is; one with is written again to see
        (~0.4 ms a MiB here, where the answer's encoding took ~7 ms of 16 MB in one turn)."""
        if chunk:
            quoted = b'"' + chunk + b'"'
            try:
                part = jsonio.orjson.loads(quoted)
            except ValueError:
                self.ok = False
                return
            self.parts.append(part)
            self.commas += chunk.count(b",")
            if self.plain and b"\\" in chunk and jsonio.orjson.dumps(part) != quoted:
                self.plain = False  # an escape orjson writes otherwise (\u0041, \/): encoded again when written
        self.done += len(chunk)


def _cut(buf: bytes) -> int:
    """Where a slice of a string's content may end: before a backslash run among its last 16 bytes (an escape, even a
    surrogate pair's second half, may go on in the next piece) and before a UTF-8 sequence that may not be whole."""
    cut = len(buf)
    while cut > 0 and buf[cut - 1] & 0xC0 == 0x80:
        cut -= 1
    if cut > 0 and buf[cut - 1] >= 0xC0:
        cut -= 1
    backslash = buf.rfind(b"\\", max(0, cut - 16), cut)
    if backslash >= 0:
        cut = backslash
        while cut > 0 and buf[cut - 1] == 0x5C:
            cut -= 1
    return cut


# frames at least this long are looked at before they are parsed. Below it the worst line parses within the budget
# (1 MB of "1,1,1,…", 500,000 values: 29 ms; 100,000 small objects: 40 ms, orjson on this 2-core machine), and
# it is the sidecar's read size, so every longer line was joined from pieces and had its strings followed.
SCAN_FROM = 1 << 20
MAX_FRAME_VALUES = 250_000  # ~60 ms of parsing on a slow core: more would hold up every thread


def too_many_values(line: bytes, commas: int | None = None) -> int | None:
    """How many JSON values a long line may hold, when that is more than parsing it on the loop allows.

    Parsing costs per value, not per byte (14 MB of small objects: ~0.4 s; 15 MB of one string:
    ~30 ms), and no JSON parser lets go of the GIL, so a frame with very many values would stop
    every thread while it is parsed. Counted from the commas (containers without commas nest, and
    nesting is bounded at 512 levels), in C, before parsing; ``None`` when the line may be parsed.
    For a line joined from pieces, the commas inside its strings are not counted (``LongStrings``
    followed them as the pieces came: the parser meets each string as one value); a line that came
    in one read is not scanned at all (below ``SCAN_FROM``).
    """
    if len(line) < SCAN_FROM:
        return None
    values = line.count(b",") if commas is None else commas  # ``commas``: counted as it arrived
    return values if values > MAX_FRAME_VALUES else None


class TooLong:
    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head
