"""How the candidate file-watching libraries idle: ``python -m bench.watch_libraries [ROOT] [SECONDS]``.

The figures behind the choice of inotify_simple for resources/watch.py: for each library that
is installed (watchfiles, watchdog, inotify_simple, asyncinotify — only inotify_simple is a
dependency), a fresh process imports it after asyncio (CPU time), watches ROOT (a 1,000-skill
tree is made when none is given) the way the sidecar would, and reports its CPU time over
SECONDS of quiet (60 by default) and its thread count. The processes run side by side.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r'''
import asyncio, os, resource, sys, time
lib, root, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
import logging
started = time.process_time()
if lib == "watchfiles":
    import watchfiles
elif lib == "watchdog":
    from watchdog.observers import Observer
    from watchdog.events import FileSystemEventHandler
elif lib == "inotify_simple":
    from inotify_simple import INotify, flags
else:
    from asyncinotify import Inotify, Mask
imported = (time.process_time() - started) * 1000

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000

def skill_dirs():
    return [f"{root}/skills/{name}" for name in os.listdir(root + "/skills")]

async def main():
    if lib == "watchfiles":
        async def consume():
            async for _ in watchfiles.awatch(root):
                pass
        asyncio.create_task(consume())
    elif lib == "watchdog":
        observer = Observer()
        observer.schedule(FileSystemEventHandler(), root, recursive=True)
        observer.start()
    elif lib == "inotify_simple":
        inotify = INotify()
        mask = flags.CREATE | flags.DELETE | flags.MODIFY | flags.MOVED_FROM | flags.MOVED_TO | flags.CLOSE_WRITE
        for path in [root, root + "/skills", *skill_dirs()]:
            inotify.add_watch(path, mask)
        asyncio.get_running_loop().add_reader(inotify.fileno(), lambda: inotify.read(timeout=0))
    else:
        inotify = Inotify()
        mask = Mask.CREATE | Mask.DELETE | Mask.MODIFY | Mask.MOVED_FROM | Mask.MOVED_TO | Mask.CLOSE_WRITE
        for path in [root, root + "/skills", *skill_dirs()]:
            inotify.add_watch(path, mask)
        async def consume():
            async for _ in inotify:
                pass
        asyncio.create_task(consume())
    await asyncio.sleep(3)  # set-up done (some libraries add their watches on a thread)
    before = cpu()
    await asyncio.sleep(seconds)
    idle = cpu() - before
    print(f"{lib:15s} import {imported:5.1f} ms CPU   idle {idle:6.1f} ms CPU over {seconds:.0f} s   "
          f"threads {len(os.listdir('/proc/self/task'))}", flush=True)
    os._exit(0)

asyncio.run(main())
'''


def main() -> int:
    seconds = sys.argv[2] if len(sys.argv) > 2 else "60"
    libraries = []
    for lib, module in [("watchfiles", "watchfiles"), ("watchdog", "watchdog"),
                        ("inotify_simple", "inotify_simple"), ("asyncinotify", "asyncinotify")]:
        found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0
        (libraries.append(lib) if found else print(f"{lib:15s} not installed: left out"))
    with tempfile.TemporaryDirectory(prefix="harness-bench-watchers-") as tmp:
        if len(sys.argv) > 1 and sys.argv[1]:
            root = sys.argv[1]
        else:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from bench.workspace import make_skills

            root = str(make_skills(Path(tmp) / "root", 1000, 2000))
            time.sleep(1)
        children = [subprocess.Popen([sys.executable, "-c", CHILD, lib, root, seconds]) for lib in libraries]
        for child in children:
            child.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
