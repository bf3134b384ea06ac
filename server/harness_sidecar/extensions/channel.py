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


def decode(line: bytes) -> tuple[str, int, object]:
    """``(tag, id, body)`` of one line (without its newline). Raises ``FrameError``."""
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
        frame = jsonio.loads(line) if len(line) <= jsondepth.MAX_DEPTH else jsondepth.bounded_loads(jsonio.loads, line)
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

    __slots__ = ("parts", "size", "limit", "_skipping", "_head", "_commas", "_counted")

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = limit
        self._skipping = False
        self._head = b""
        # the commas of a long line counted piece by piece as it arrives (``too_many_values``), not all at
        # once when it is whole (~5 ms of 16 MB on the event loop, in the turn that parses it)
        self._commas = 0
        self._counted: tuple[bytes, int] | None = None

    def commas_of(self, line: bytes) -> int | None:
        """The commas of ``line`` if it was the last line joined from pieces (counted as they came)."""
        counted = self._counted
        return counted[1] if counted is not None and counted[0] is line else None

    def feed(self, data: bytes) -> list[bytes | "TooLong"]:
        out: list[bytes | TooLong] = []
        lines = data.split(b"\n")
        rest = lines.pop()
        limit = self.limit
        if lines:
            first = lines[0]
            if self._skipping:
                out.append(TooLong(self._head))
                self._skipping = False
            elif self.parts:
                if self.size + len(first) > limit:
                    out.append(TooLong(_head(self.parts)))
                else:
                    self.parts.append(first)
                    joined = b"".join(self.parts)
                    self._counted = (joined, self._commas + first.count(b","))
                    out.append(joined)
                self.parts.clear()
                self.size = 0
                self._commas = 0
            else:
                out.append(first if len(first) <= limit else TooLong(first[:128]))
            for line in lines[1:]:
                out.append(line if len(line) <= limit else TooLong(line[:128]))
        if rest and not self._skipping:
            if self.size + len(rest) > limit:
                self._head = _head(self.parts + [rest])
                self._skipping = True
                self.parts.clear()
                self.size = 0
                self._commas = 0
            else:
                self.parts.append(rest)
                self.size += len(rest)
                self._commas += rest.count(b",")
        return out


def _head(parts: list[bytes]) -> bytes:
    head = b""
    for part in parts:
        head += part[:128 - len(head)]
        if len(head) >= 128:
            break
    return head


SCAN_FROM = 256 * 1024  # frames at least this long are looked at before they are parsed
MAX_FRAME_VALUES = 250_000  # ~60 ms of parsing on a slow core: more would hold up every thread


def too_many_values(line: bytes, commas: int | None = None) -> int | None:
    """How many JSON values a long line may hold, when that is more than parsing it on the loop allows.

    Parsing costs per value, not per byte (14 MB of small objects: ~0.4 s; 15 MB of one string:
    ~30 ms), and no JSON parser lets go of the GIL, so a frame with very many values would stop
    every thread while it is parsed. Counted from the commas (those inside strings count too: an
    over-estimate; containers without commas nest, and nesting is bounded at 512 levels), in C,
    before parsing; ``None`` when the line may be parsed.
    """
    if len(line) < SCAN_FROM:
        return None
    values = line.count(b",") if commas is None else commas  # ``commas``: counted as it arrived
    return values if values > MAX_FRAME_VALUES else None


class TooLong:
    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head
