"""What the sidecar started, and what strayed from it: the subreaper's sweep.

Where the sidecar adopts orphans (a child subreaper: with no cgroups, or with cgroups a process could
leave), each child it starts writes its pid into the registry between fork and exec; the sweep ends
every child of ours that is not in it, with everything below it (subreaper mode), or every descendant
outside our groups (cgroups), and reaps what ended. Owned by ``lifetimes.Lifetimes``.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any, Callable

from harness_sidecar.containment import reaper

logger = logging.getLogger("harness_sidecar.containment.lifetimes")

SWEEP_S = 1.0  # how often the subreaper mode ends adopted orphans

# Children the sidecar forks itself, not through the launcher (``wire.early_scan``'s helper): never a
# stray, whenever the sweep runs; each is taken out again once it is reaped (its pid may be reused).
OWN_CHILDREN: set[int] = set()


class Strays:
    """The pids we started (the registry), and the sweep that ends the others."""

    def __init__(self, cgroups: Any, adopts: bool, reaper_pid: Callable[[], int]) -> None:
        self.cgroups = cgroups  # lifetimes.Cgroups, or None (subreaper mode)
        self.reaper_pid = reaper_pid
        self.started: set[int] = set()  # our own children: pids the launcher started
        self.registry_r = self.registry_w = -1
        self._sweeping = False
        if adopts:
            self.registry_r, self.registry_w = os.pipe()
            os.set_blocking(self.registry_r, False)


    def start_sweeping(self) -> None:
        """Subreaper mode: end adopted orphans every ``SWEEP_S``; with cgroups, end every descendant that
        left them (call from the event loop)."""
        if self._sweeping:
            return
        import asyncio

        self._sweeping = True
        loop = asyncio.get_running_loop()

        def tick() -> None:
            self.sweep()
            loop.call_later(SWEEP_S, tick)

        loop.call_later(SWEEP_S, tick)

    def read_registry(self) -> None:
        self.started.update(OWN_CHILDREN)
        while True:
            try:
                data = os.read(self.registry_r, 65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not data:
                break
            self.started.update(int(x) for x in data.split() if x.isdigit())

    def sweep(self) -> None:
        """Subreaper mode: end every child of ours we did not start, with everything below it; reap them.
        With cgroups: end every descendant that is in no group of ours (it left its own), reap the orphans
        that ended (they are ours too: we adopt them)."""
        if self.cgroups is not None:
            self.end_escaped()
            return
        self.read_registry()
        me = os.getpid()
        zombies: set[int] = set()
        table = process_table(me, zombies)
        children = {pid for pid, (ppid, _start) in table.items() if ppid == me}
        for pid in zombies - self.started:  # strays that ended on their own: reaped
            _reap_soon(pid, 0)
        self.started &= children  # forget the ones that are gone
        if self.reaper_pid() >= 0:
            self.started.add(self.reaper_pid())
        strays = [pid for pid in children if pid not in self.started]
        if not strays:
            return
        below: dict[int, list[int]] = {}
        for pid, (ppid, _start) in table.items():
            below.setdefault(ppid, []).append(pid)
        doomed: list[int] = []
        todo = list(strays)
        while todo:
            pid = todo.pop()
            doomed.append(pid)
            todo += below.get(pid, [])
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in strays:  # they are our children now: reap them (no zombies)
            _reap_soon(pid)

    def end_escaped(self, everything: bool = False) -> bool:
        """Cgroups: SIGKILL each descendant of ours (the reaper excepted) outside our groups — or, with
        ``everything`` (the sidecar is leaving), each descendant at all. True when one was found."""
        assert self.cgroups is not None
        self.read_registry()
        me = os.getpid()
        zombies: set[int] = set()
        table = process_table(me, zombies)
        for pid in zombies - self.started:  # adopted orphans that ended: reaped (their pids are freed)
            _reap_soon(pid, 0)
        children = {pid for pid, (ppid, _start) in table.items() if ppid == me}
        self.started &= children | zombies
        below: dict[int, list[int]] = {}
        for pid, (ppid, _start) in table.items():
            below.setdefault(ppid, []).append(pid)
        reaper_pid = self.reaper_pid()
        found = False
        todo = [pid for pid in below.get(me, []) if pid != reaper_pid]
        while todo:
            pid = todo.pop()
            todo += below.get(pid, [])
            if not everything and table[pid][0] == me and pid in self.started:
                continue  # one we started, maybe entering its group now; its owner ends it (its stop, its pid)
            if everything or self.cgroups.holds(pid) is False:
                if not everything:
                    logger.warning("process %d left the cgroup it was started in: ended", pid)
                found = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                if table[pid][0] == me and pid not in self.started:
                    _reap_soon(pid)
        return found


def _reap_soon(pid: int, tries: int = 20) -> None:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return
    if done == 0 and tries > 0:
        try:
            import asyncio

            asyncio.get_running_loop().call_later(0.05, _reap_soon, pid, tries - 1)
        except RuntimeError:
            pass


def process_table(zombies_of: int = 0, zombies: set[int] | None = None) -> dict[int, tuple[int, int]]:
    """pid → (ppid, start time in clock ticks) of every live process; the zombie children of
    ``zombies_of`` go into ``zombies``."""
    table: dict[int, tuple[int, int]] = {}
    for pid, fields in reaper.stats():
        if fields[0] in (b"Z", b"X"):
            if zombies is not None and int(fields[1]) == zombies_of:
                zombies.add(pid)
            continue
        table[pid] = (int(fields[1]), int(fields[19]))
    return table
