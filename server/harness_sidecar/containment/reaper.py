"""The reaper: ends what a sidecar left when the sidecar itself is killed (even by SIGKILL).

Started by ``lifetimes`` at the sidecar's start — directly, not through the launcher, in a session
of its own, as ``python -I -S reaper.py SIDECAR_PID cgroup ROOT KILLABLE`` or ``... SIDECAR_PID tree``.
Its stdin is a pipe whose only write end the sidecar holds: EOF means the sidecar is gone. Then:

- ``cgroup``: every process in the sidecar's cgroup subtree ``ROOT`` is killed (``cgroup.kill``, or
  ``pids.max`` 0 and SIGKILL to each member until none is left) and the groups are removed;
- ``tree``: while the sidecar runs, it notes the sidecar's descendants every 0.5 s (pid and start
  time); at EOF it kills those still alive (same pid, same start time).
- ``cgroup ROOT KILLABLE 1`` (where Landlock is missing, so a process may leave its group) notes the
  descendants too, and kills those still alive after the groups.

Standard library only, no imports of the project: it starts in a few milliseconds and holds nothing.
``lifetimes`` and ``mcp.process`` use its cgroup and ``/proc`` helpers too, so that there is one of each.
"""

import os
import select
import signal
import sys
import time

LOOK_S = 0.5


def write(path, text):
    """Write ``text`` to a control file: the ``OSError``, or None."""
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        return exc
    return None


def members(path):
    """The pids in the group ``path`` and in the groups below it."""
    pids = []
    for dirpath, _dirs, _files in os.walk(path):
        try:
            with open(os.path.join(dirpath, "cgroup.procs"), "rb") as f:
                pids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return pids


def end_pass(path, killable, freeze):
    """One pass over the group ``path`` and the groups below it: every member killed (``cgroup.kill``;
    without it, with ``freeze`` ``pids.max`` 0 first so that nothing in them can fork meanwhile, then
    SIGKILL to each), the emptied groups removed. True when ``path`` is gone."""
    if not os.path.isdir(path):
        return True
    if killable:
        write(os.path.join(path, "cgroup.kill"), "1")
    else:
        if freeze:
            for dirpath, _dirs, _files in os.walk(path):
                write(os.path.join(dirpath, "pids.max"), "0")
        for pid in members(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for dirpath, _dirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass
    return not os.path.isdir(path)


def end_cgroups(root, killable):
    for _ in range(100):
        if end_pass(root, killable, True):
            return
        time.sleep(0.03)


def stats():
    """``(pid, fields)`` of every process: ``fields`` are those of ``/proc/<pid>/stat`` after the
    command name (``fields[0]`` the state, ``[1]`` the ppid, ``[2]`` the group, ``[19]`` the start time)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), fields


def table():
    out = {}
    for pid, fields in stats():
        if fields[0] not in (b"Z", b"X"):
            out[pid] = (int(fields[1]), int(fields[19]))
    return out


def descendants(root, procs):
    below = {}
    for pid, (ppid, _start) in procs.items():
        below.setdefault(ppid, []).append(pid)
    found, todo = {}, list(below.get(root, []))
    me = os.getpid()
    while todo:
        pid = todo.pop()
        if pid != me:
            found[pid] = procs[pid][1]
            todo += below.get(pid, [])
    return found


def main(argv):
    sidecar, mode = int(argv[0]), argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    seen = {}
    track = mode == "tree" or (len(argv) > 4 and argv[4] == "1")
    while True:
        ready, _w, _x = select.select([0], [], [], LOOK_S if track else None)
        if ready:
            try:
                data = os.read(0, 4096)
            except OSError:
                data = b""
            if not data:
                break
            continue
        procs = table()
        if sidecar not in procs:
            break
        seen.update(descendants(sidecar, procs))
        seen = {pid: start for pid, start in seen.items() if procs.get(pid, (0, None))[1] == start}
    if mode == "cgroup":
        end_cgroups(argv[2], argv[3] == "1")
        if not track:
            return
    for _ in range(3):
        procs = table()
        seen.update(descendants(sidecar, procs) if sidecar in procs else {})
        for pid, start in seen.items():
            if procs.get(pid, (0, None))[1] == start:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.05)


if __name__ == "__main__":
    main(sys.argv[1:])
