"""Reading SKILL.md headers off a cold disk: ask the kernel for the next files' first pages ahead of time.

The scan reads one file's first ``FIRST_CHUNK`` bytes at a time; from the page cache that is a copy,
from a disk it is one request, waited for, per skill (a thousand skills cold: 0.3-0.6 s on the virtual
disk measured). ``Readahead`` keeps ``WINDOW`` files ahead of the scan with ``POSIX_FADV_WILLNEED``
(the kernel starts reading and returns at once), so the disk holds many requests at a time and the
scan finds most pages already read. It only runs when ``cold`` says the files' data is not in memory
(``preadv2(RWF_NOWAIT)`` of a byte fails with EAGAIN): from the page cache nothing changes. The files
it opens are the ones the scan is about to open, with the same flags (no link followed at the end,
non-blocking, close-on-exec); nothing is read into the process.
"""

from __future__ import annotations

import os

WINDOW = 64  # files asked for ahead of the one read: enough requests in flight for a virtual disk
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def cold(paths: list[str]) -> bool:
    """Whether the first page of any of ``paths`` (a few samples) would have to come from the disk."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None or not hasattr(os, "preadv") or not hasattr(os, "posix_fadvise"):
        return False
    buffer = bytearray(1)
    for path in paths:
        try:
            fd = os.open(path, _FLAGS)
        except OSError:
            continue
        try:
            os.preadv(fd, [buffer], 0, nowait)
        except BlockingIOError:
            return True
        except OSError:  # a file system without RWF_NOWAIT, a FIFO: no opinion from this one
            pass
        finally:
            os.close(fd)
    return False


class Readahead:
    """``advance(i)`` before reading ``paths[i]``: the next ``WINDOW`` files' first pages are asked for."""

    __slots__ = ("paths", "size", "next")

    def __init__(self, paths: list[str], size: int) -> None:
        self.paths = paths
        self.size = size  # bytes asked for from each file's start (the scan's first read)
        self.next = 0

    def advance(self, index: int) -> None:
        stop = min(len(self.paths), index + WINDOW)
        while self.next < stop:
            path = self.paths[self.next]
            self.next += 1
            try:
                fd = os.open(path, _FLAGS)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, self.size, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
            finally:
                os.close(fd)
