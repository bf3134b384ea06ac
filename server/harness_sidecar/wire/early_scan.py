"""The first catalog, scanned by a forked helper while the sidecar imports the rest of itself.

A fresh sidecar answers ``initialize`` before asyncio is imported (``lifecycle``); the editor's
first ``thread/start`` follows at once, and the process still has most of its imports to go (asyncio,
the methods: ~80 ms of one core on a loaded 2-core machine) before it can serve it. Scanning the
roots needs none of them. So the reader thread keeps the raw frame of the first ``thread/start``
(``tap``); once ``initialize`` is answered, ``serve`` imports what a scan needs (the sidecar needs it
anyway) and forks a helper (``start``), which reads that frame, parses it with the very code the
endpoint uses (``wire.params``), builds the catalog (``catalog.build_catalog``, the header cache
included) on another core and writes it back as ``marshal`` data: the records' slots and plain
values, never code (``encode``/``decode``). ``take`` gives it to the first
``build_catalog(persist=True)`` of the process (through ``catalog.first_scan``: resources stay
below the wire) when that call's roots and limits are the ones scanned, and to no other call.
Anything else — the helper failed, other params, a frame it could not parse — and the scan runs in
the process, as it always did.

The helper runs nothing of the reader thread's (the only other thread at the fork) and imports
nothing the reader may be importing. Its snapshot is taken after the request arrived (it reads the
frame first), so it is as current as the request asks; ``Catalog.scanned_at_ns`` says when the
reading began, and the watch catches up from that moment. The helper holds none of the protocol's
pipes (fds 0-2 are ``/dev/null``: the editor sees EOF when the sidecar goes), dies with the sidecar
(``PR_SET_PDEATHSIG``), exits after one scan or as soon as the sidecar closes its end, and is reaped
here; a subreaper's or cgroups' sweep leaves it alone (``containment.strays.OWN_CHILDREN``). It is
forked only when a core is free to run it (``_a_core_is_free``); ``HARNESS_SIDECAR_EARLY_SCAN=on``
forks it always, ``off`` never (the bench and the tests use both).
"""

from __future__ import annotations

import marshal
import os
import threading
from typing import Any, Callable

ENV = "HARNESS_SIDECAR_EARLY_SCAN"
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9  # the same number on every Linux architecture


class _Early:
    """The first ``thread/start`` frame and the helper, shared by the reader thread, ``start`` and ``take``."""

    __slots__ = ("lock", "frame", "pid", "request_w", "result_r", "sent", "taken")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.frame: bytes | None = None  # the first thread/start frame, when it came before the helper
        self.pid: int | None = None
        self.request_w: int | None = None
        self.result_r: int | None = None
        self.sent = False  # the frame went to the helper
        self.taken = False  # the first build_catalog(persist=True) came: the helper's work is over

    def send(self, frame: bytes) -> None:
        """Under ``lock``: the frame to the helper, then EOF."""
        try:
            view = memoryview(frame)
            while view:
                view = view[os.write(self.request_w, view):]  # type: ignore[arg-type]
            self.sent = True
        except OSError:  # the helper is gone: the scan runs here
            pass
        self.close_request()

    def close_request(self) -> None:
        if self.request_w is not None:
            os.close(self.request_w)
            self.request_w = None


_early: _Early | None = None


def tap(deliver: Callable[[list[Any]], None]) -> Callable[[list[Any]], None]:
    """``deliver`` (the reader thread's), keeping the first ``thread/start`` frame for the helper."""
    global _early
    if os.environ.get(ENV, "").lower() in ("off", "0") or not hasattr(os, "fork"):
        return deliver
    early = _early = _Early()

    def offer_then_deliver(batch: list[Any]) -> None:
        if early.frame is None and not early.taken:
            for item in batch:
                if type(item) is bytes and b'"thread/start"' in item:
                    with early.lock:
                        if early.frame is None and not early.taken:
                            early.frame = item
                            if early.request_w is not None:
                                early.send(item)
                    break
        deliver(batch)

    return offer_then_deliver


def start() -> None:
    """Fork the helper (after ``tap``; from the main thread, when ``initialize`` is answered: the helper
    uses nothing the reader thread may hold, and imports only after the fork)."""
    early = _early
    if early is None or (os.environ.get(ENV, "").lower() != "on" and not _a_core_is_free()):
        return
    # What the helper runs is imported here, before the fork: the sidecar needs these modules for its
    # own thread/start anyway, and the helper inherits them instead of importing them a second time.
    import json  # noqa: F401

    from harness_sidecar.containment import strays
    from harness_sidecar.resources import catalog, header_cache  # noqa: F401
    from harness_sidecar.wire import params  # noqa: F401

    request_r, request_w = os.pipe()  # both non-inheritable: no process the sidecar execs gets them
    result_r, result_w = os.pipe()
    parent = os.getpid()
    with early.lock:
        if early.taken:
            for fd in (request_r, request_w, result_r, result_w):
                os.close(fd)
            return
        try:
            import warnings

            with warnings.catch_warnings():  # 3.12+ warns of fork with threads; the helper runs no thread's code
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            for fd in (request_r, request_w, result_r, result_w):
                os.close(fd)
            return
        if pid == 0:  # the helper: whatever happens, it ends here
            try:
                os.close(request_w)
                os.close(result_r)
                _serve_one(parent, request_r, result_w)
            finally:
                os._exit(0)
        os.close(request_r)
        os.close(result_w)
        strays.OWN_CHILDREN.add(pid)  # a subreaper's or cgroups' sweep leaves it alone
        early.pid, early.request_w, early.result_r = pid, request_w, result_r
        catalog.first_scan = take  # the first build_catalog(persist=True) asks here (resources stays below wire)
        if early.frame is not None:
            early.send(early.frame)


def _a_core_is_free() -> bool:
    """Whether a core would run the helper now: fewer runnable tasks than this process's cores (the
    4th field of /proc/loadavg counts them, this process included). On a machine whose every core is
    busy the helper only adds its fork, copy-on-write faults and the catalog's encoding (15-25 ms of
    CPU, measured on 2 cores at load 15-23) to the same share of CPU: the sidecar scans for itself."""
    try:
        with open("/proc/loadavg", "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
        cores = len(os.sched_getaffinity(0))
    except (OSError, ValueError, IndexError, AttributeError):
        return False
    return running < cores


def take(roots: list[str], limits: Any) -> tuple[Any, dict[tuple, Any]] | None:
    """``(catalog, new_headers)`` the helper scanned for exactly ``roots`` and ``limits``, or ``None``.

    Only the process's first caller asks the helper; any other gets ``None`` at once. Blocks until
    the helper has answered (it began when the request arrived, so most of its work is done)."""
    early = _early
    if early is None:
        return None
    with early.lock:
        if early.taken:
            return None
        early.taken = True
        sent = early.sent
        early.close_request()  # not sent: the helper reads EOF and exits
    if early.pid is None or early.result_r is None:
        return None
    data = b""
    if sent:
        chunks = []
        try:
            while True:
                chunk = os.read(early.result_r, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        data = b"".join(chunks)
    os.close(early.result_r)
    _reap(early.pid, wait=sent)
    if not data:
        _log("scanned here: the helper %s", "answered nothing" if sent else "had no thread/start frame")
        return None
    try:
        scanned_roots, scanned_limits, catalog, headers = marshal.loads(data)
        if scanned_roots != list(roots) or scanned_limits != repr(limits):
            _log("scanned here: the helper scanned other roots or limits")
            return None
        taken = decode(catalog), {tuple(k): decode_header(v) for k, v in headers}
    except Exception:  # noqa: BLE001 - a helper's answer that is not what this module writes: scan here
        _log("scanned here: the helper's answer does not decode")
        return None
    _log("the first catalog was scanned by the helper: %d skills", len(taken[0].skills))
    return taken


def _log(message: str, *args: Any) -> None:
    import logging

    logging.getLogger(__name__).debug(message, *args)


def _reap(pid: int, wait: bool) -> None:
    from harness_sidecar.containment import strays

    try:
        if wait:
            os.waitpid(pid, 0)
        elif os.waitpid(pid, os.WNOHANG)[0] == 0:
            # it exits as soon as it reads the EOF just written; a thread waits so no zombie stays
            threading.Thread(target=_reap, args=(pid, True), name="harness-early-scan-reap", daemon=True).start()
            return
    except ChildProcessError:  # reaped already
        pass
    strays.OWN_CHILDREN.discard(pid)


# -- the helper ---------------------------------------------------------------------------------


def _serve_one(parent: int, request_r: int, result_w: int) -> None:
    # No protocol pipe (fds 0-2, and the copies wire.transport keeps of them) and no other file of
    # the sidecar's stays open in the helper: only its request and its answer.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low, high = sorted((request_r, result_w))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 20)
    from harness_sidecar.containment.private import libc_prctl

    prctl = libc_prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the sidecar went before the death signal was armed
        return
    chunks = []
    while True:
        chunk = os.read(request_r, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(request_r)
    if not chunks:
        return  # the sidecar's first scan needed nobody
    import gc
    import json

    gc.disable()  # a short-lived process: no collector passes
    message = json.loads(b"".join(chunks))
    if not isinstance(message, dict) or message.get("method") != "thread/start":
        return
    from harness_sidecar.wire import params as P

    start = P.parse_thread_start(message.get("params"))
    from harness_sidecar.resources import catalog as C
    from harness_sidecar.resources import header_cache

    header_cache.load(C._HEADERS)
    known = set(C._HEADERS)
    catalog = C.build_catalog(start.roots, start.limits)
    headers = [(k, encode_header(v)) for k, v in C._HEADERS.items() if k not in known]
    data = marshal.dumps([list(start.roots), repr(start.limits), encode(catalog), headers])
    view = memoryview(data)
    while view:
        view = view[os.write(result_w, view):]
    header_cache.save(C._HEADERS)  # before the EOF: written before the answer, as a scan in the sidecar does
    os.close(result_w)


# -- a catalog as marshal data --------------------------------------------------------------------
# Each record is the tuple of its slots' values, in ``__slots__`` order; a ``root`` slot holds the
# root's place in ``Catalog.roots`` (the objects stay shared). The other values are plain data
# (str, int, None, tuples, lists, dicts of them): marshal refuses anything else, and then the
# sidecar scans for itself.


def _slots(record: Any) -> tuple:
    return tuple(getattr(record, slot) for slot in type(record).__slots__)


def encode(catalog: Any) -> list:
    """``catalog`` (a ``catalog.Catalog`` before ``plugins.attach``) as plain data."""
    places = {id(root): i for i, root in enumerate(catalog.roots)}

    def rooted(record: Any) -> tuple:
        return tuple(places[id(v)] if slot == "root" else v
                     for slot, v in zip(type(record).__slots__, _slots(record)))

    if catalog.plugins is not None:
        raise ValueError("the helper encodes a catalog before plugins.attach")
    return [[_slots(r) for r in catalog.roots], [rooted(i) for i in catalog.instructions],
            [rooted(s) for s in catalog.skills.values()], [rooted(t) for t in catalog.templates.values()],
            [_slots(d) for d in catalog.diagnostics], catalog.scanned_at_ns]


def _make(cls: type, values: tuple, roots: list | None = None) -> Any:
    record = cls.__new__(cls)
    for slot, value in zip(cls.__slots__, values):
        setattr(record, slot, roots[value] if roots is not None and slot == "root" else value)
    return record


def decode(data: list) -> Any:
    """The inverse of ``encode``."""
    from harness_sidecar.resources.catalog import Catalog, Diagnostic, Instructions, Root, SkillEntry, TemplateEntry

    roots_data, instructions, skills, templates, diagnostics, scanned_at_ns = data
    roots = [_make(Root, r) for r in roots_data]
    skill_entries = [_make(SkillEntry, s, roots) for s in skills]
    template_entries = [_make(TemplateEntry, t, roots) for t in templates]
    catalog = Catalog(roots, [_make(Instructions, i, roots) for i in instructions],
                      {s.name: s for s in skill_entries}, {t.name: t for t in template_entries},
                      [_make(Diagnostic, d) for d in diagnostics])
    catalog.scanned_at_ns = scanned_at_ns
    return catalog


def encode_header(header: tuple) -> tuple:
    """A ``catalog._HEADERS`` value: ``(description, problems[, served name])``."""
    return (header[0], tuple(_slots(p) for p in header[1]), *header[2:])


def decode_header(data: tuple) -> tuple:
    from harness_sidecar.resources.frontmatter import Problem

    return (data[0], tuple(_make(Problem, p) for p in data[1]), *data[2:])
