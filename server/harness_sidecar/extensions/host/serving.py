"""The channel, the host's side: reading frames (leader/follower), dispatching each to the part that
runs it, and running an exchange on the reading thread (its outcome: ``Exchange.finish``).

Given the host's state, its socket and the parts frames go to; no part reaches this one but through
``promote``, handed to the ones that wait (a question to the user)."""

from __future__ import annotations

import logging
import collections
import os
import socket
import threading
import time
from typing import Any, Callable

from harness_sidecar.extensions import channel
from harness_sidecar.extensions.host.exchanges import Abandoned, Exchange
from harness_sidecar.extensions.host.output import out_of_memory
from harness_sidecar.extensions.host.state import HostState

# The lines it logs on stderr name harness_sidecar.host, whichever piece of Host logs them.
log = logging.getLogger("harness_sidecar.host")
PROMOTE_S = 0.02  # a job running longer than this hands the channel to a new reading thread


class Serving:
    """Reading the channel and answering each frame."""

    def __init__(self, state: HostState, sock: socket.socket, runs: dict[str, Callable[[Exchange, dict[str, Any]], None]],
                 frames: dict[str, Callable[[int, Any], None]]) -> None:
        self.state = state
        self.out = state.out
        self.exchanges = state.exchanges
        self.runs = runs  # frame tag → the part that runs such an exchange (call, event, command, load)
        self.frames = frames  # frame tag → what applies a frame that starts no exchange (init, commit, uiAnswer)
        self.sock = sock
        self.inbox: collections.deque = collections.deque()  # frames read, not yet dispatched
        self.state_lines: collections.deque = collections.deque()  # whose ctx.state the next raw lines are
        self.splitter = channel.LineSplitter()
        self.read_buffer = bytearray(1 << 20)  # one reading thread at a time
        self.read_view = memoryview(self.read_buffer)
        self.lead_lock = threading.Lock()
        self.leader: threading.Thread | None = None
        self.busy: tuple[threading.Thread, float] | None = None  # the leader running a job, since when
        self.watching = threading.Event()  # set while the monitor should look at running jobs

    def serve(self) -> None:
        """Read and run until the channel ends (then the process exits)."""
        self.out.send(channel.READY, 0, {"pid": os.getpid()})
        threading.Thread(target=self._monitor, name="host-monitor", daemon=True).start()
        self.leader = self.out.reader = threading.current_thread()
        self._lead()
        if os.getpid() != self.state.pid:  # a child forked from the host: no channel, nobody to serve (v4 §2)
            os._exit(0)
        with self.out.lock:
            self.out.parked += 1
        threading.Event().wait()  # demoted while a job ran: the new leader ends the process

    def _lead(self) -> None:
        me = threading.current_thread()
        while self.leader is me:
            if not self.inbox:
                self.out.flush()  # nothing more to do for now: what waited goes out
                if not self._read():
                    self.out.flush()
                    os._exit(0)
                continue
            tag, ident, body = self.inbox.popleft()
            if tag == channel.CLOSE:
                self.out.flush()
                os._exit(0)
            self.dispatch(tag, ident, body)

    def _read(self) -> bool:
        """Read frames into the inbox; False at the end of the channel."""
        while True:
            try:
                size = self.sock.recv_into(self.read_buffer)  # recv(1 MiB) would map and unmap a new one each time
            except InterruptedError:
                continue
            except OSError:
                return False
            data = self.read_view[:size].tobytes()
            if not data:
                return False
            for line in self.splitter.feed(data):
                if isinstance(line, channel.TooLong):
                    log.error("the sidecar sent an over-long frame; exiting")
                    return False
                if self.state_lines:  # init's stateLines: a state's JSON text, kept unparsed (session_state)
                    self.state.states[self.state_lines.popleft()] = line
                    continue
                frame = channel.decode(line)
                if frame[0] == channel.INIT and type(frame[2]) is dict:
                    self.state_lines.extend(frame[2].get("stateLines") or ())
                self.inbox.append(frame)
            return True

    def _monitor(self) -> None:
        while True:
            self.watching.wait()  # no job running: sleep without waking
            time.sleep(PROMOTE_S)
            with self.lead_lock:
                busy = self.busy
                if busy is None:
                    self.watching.clear()
                    if self.busy is not None:  # a job began meanwhile and saw it still set: watch it
                        self.watching.set()
                elif time.monotonic() - busy[1] >= PROMOTE_S and busy[0] is self.leader:
                    self._promote_locked()

    def promote(self) -> None:
        """The reading thread is about to wait (for the user): another thread reads meanwhile."""
        with self.lead_lock:
            if threading.current_thread() is self.leader:
                self._promote_locked()

    def _promote_locked(self) -> None:
        old, busy = self.leader, self.busy
        thread = threading.Thread(target=self._lead, name="host-reader", daemon=True)
        with self.out.lock:  # from now on the old leader's frames go out at once
            self.leader = self.out.reader = thread  # the old leader sees it once its job ends, and stops reading
            self.out._flush_locked()
        self.busy = None  # before the new leader can start a job of its own
        try:
            thread.start()
        except RuntimeError as exc:  # can't start new thread: the old leader reads again after its job
            with self.out.lock:
                self.leader = self.out.reader = old
            self.busy = busy  # its job is still watched
            log.warning("cannot start another reading thread: %s", exc)

    def dispatch(self, tag: str, ident: int, body: Any) -> None:
        run = self.runs.get(tag)
        if run is not None:  # call, event, command, load
            self._start(ident, body, run)
        elif tag == channel.PING:
            self.out.send(channel.PONG, ident, None)
        elif tag == channel.ABORT:
            exchange = self.exchanges.get(ident)
            if exchange is not None:
                unless_at = body.get("unlessAt") if type(body) is dict else None
                exchange.abort(unless_at if type(unless_at) is int else None)
        elif tag == channel.SCHEMAS:
            self.state.schemas.update(body["tools"])
            for name in body["tools"]:
                self.state.compiled.pop(name, None)
        elif tag in self.frames:  # init, commit, uiAnswer
            self.frames[tag](ident, body)
        else:
            log.error("unknown frame %r", tag)

    def _start(self, ident: int, body: dict[str, Any], run: Callable[[Exchange, dict[str, Any]], None]) -> None:
        """Run exchange ``ident`` (``run(exchange, body)``) on this, the reading thread; the monitor hands
        the reading on if it runs long."""
        exchange = Exchange(self.state, ident, body["deadline"])
        self.exchanges[ident] = exchange
        me = threading.current_thread()
        # Set without lead_lock (one store): it is cleared, and a job promoted, only under it, and the
        # monitor looks again after it stopped watching. Cleared under it: a job that ends and one that
        # the monitor hands the reading on from never cross.
        self.busy = (me, time.monotonic())
        if not self.watching.is_set():
            self.watching.set()
        try:
            try:
                run(exchange, body)
            except Abandoned:
                # The code of the step that ran has returned: the sidecar stops counting it as
                # overrunning (a step that never returns ends the host at deadline + hostGraceMs).
                self.out.send_bytes(b'["ended",%d,null]\n' % exchange.id)
            finally:
                self.exchanges.pop(exchange.id, None)
                if exchange.cell >= 0:  # still has its board cell (a plain outcome that waits gave it up)
                    exchange.end()
        except MemoryError:
            out_of_memory()
        except BaseException:  # noqa: BLE001 - a bug of the host's own must not end the reading
            log.exception("host job failed")
        finally:
            with self.lead_lock:
                if self.busy is not None and self.busy[0] is me:
                    self.busy = None
