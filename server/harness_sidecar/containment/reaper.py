"""The reaper: ends what a sidecar left when the sidecar itself is killed (even by SIGKILL).

Started by ``lifetimes`` at the sidecar's start — directly, not through the launcher, in a session
of its own, as ``python -I -S reaper.py SIDECAR_PID cgroup ROOT KILLABLE`` or ``... SIDECAR_PID tree``.
Its stdin is a pipe whose only write end the sidecar holds: EOF means the sidecar is gone. Then:

- ``cgroup``: every process in the sidecar's cgroup subtree ``ROOT`` is killed (``cgroup.kill``, or
  ``pids.max`` 0 and SIGKILL to each member until none is left) and the groups are removed;
- ``tree``: while the sidecar runs, it notes the sidecar's descendants every 0.5 s (pid and start
  time); at EOF it kills those still alive (same pid, same start time).

Standard library only, no imports of the project: it starts in a few milliseconds and holds nothing.
"""

import os
import select
import signal
import sys
import time

LOOK_S = 0.5


def write(path, text):
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def end_cgroups(root, killable):
    for _ in range(100):
        if not os.path.isdir(root):
            return
        if killable:
            write(os.path.join(root, "cgroup.kill"), "1")
        else:
            for dirpath, _dirs, _files in os.walk(root):
                write(os.path.join(dirpath, "pids.max"), "0")
            for dirpath, _dirs, _files in os.walk(root):
                try:
                    with open(os.path.join(dirpath, "cgroup.procs"), "rb") as f:
                        pids = [int(x) for x in f.read().split()]
                except (OSError, ValueError):
                    continue
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
        time.sleep(0.03)


def table():
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in (b"Z", b"X"):
            out[int(entry)] = (int(fields[1]), int(fields[19]))
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
    while True:
        ready, _w, _x = select.select([0], [], [], LOOK_S if mode == "tree" else None)
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
