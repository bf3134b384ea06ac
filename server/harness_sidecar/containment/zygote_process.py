"""The zygote's own program: a small process, one per thread, that starts that thread's command hooks.

Run by ``containment.zygote`` through the launcher (so it is fenced as any started process: its own
session, its owner's cgroup, a Landlock domain, killed when the sidecar dies) as
``python -I -S zygote_process.py FD``; it imports only the standard library and none of the sidecar.
Its children inherit its fences, and since it has no ``preexec_fn`` to run, Python starts them with
``vfork`` — the cost the sidecar's own ``fork`` (a large address space, ~4 ms) would add per hook.

The control socket (``SOCK_SEQPACKET``, fd ``FD``) carries, from the sidecar, one JSON request per
message — ``{"argv", "env", "cwd", "stdio": [how, how, how]}`` (``how``: ``"fd"``, one of the
message's ``SCM_RIGHTS`` descriptors in order, or ``"devnull"``) — answered in order by ``{"pid"}``
or ``{"errno", "error"}``; and, when a child exits, ``{"exit": pid, "code": returncode}`` (negative:
the signal). EOF on the socket, or SIGTERM (its parent-death signal: the sidecar died), ends every
child's process group and then the zygote.
"""

from __future__ import annotations

import array
import json
import os
import selectors
import signal
import socket
import subprocess
import sys

MAX_REQUEST = 1 << 20
MAX_FDS = 3
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Zygote:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.children: dict[int, subprocess.Popen] = {}  # pid → its Popen
        self.pidfds: dict[int, int] = {}  # pidfd → pid
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ)

    def send(self, message: dict) -> None:
        try:
            self.control.sendall(json.dumps(message).encode())
        except OSError:
            self.end()

    def start(self, data: bytes, fds: list[int]) -> None:
        try:
            request = json.loads(data)
            stdio = []
            given = iter(fds)
            for how in request["stdio"]:
                stdio.append(next(given) if how == "fd" else subprocess.DEVNULL)
            proc = subprocess.Popen(request["argv"], stdin=stdio[0], stdout=stdio[1], stderr=stdio[2],
                                    env=request["env"], cwd=request["cwd"], start_new_session=True, close_fds=True)
        except OSError as exc:
            self.send({"errno": exc.errno or 0, "error": exc.strerror or str(exc)})
            return
        except (ValueError, KeyError, TypeError, StopIteration) as exc:
            self.send({"errno": 22, "error": f"bad request: {exc}"})
            return
        finally:
            for fd in fds:
                os.close(fd)
        self.children[proc.pid] = proc
        self.send({"pid": proc.pid})
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:  # already gone and reaped? (it is our child: it cannot be reaped by anyone else)
            self.exited(proc.pid)
            return
        self.pidfds[pidfd] = proc.pid
        self.selector.register(pidfd, selectors.EVENT_READ)

    def exited(self, pid: int) -> None:
        proc = self.children.pop(pid)
        code = proc.wait()
        self.send({"exit": pid, "code": code})

    def run(self) -> None:
        fd_size = array.array("i").itemsize
        while True:
            for key, _events in self.selector.select():
                if key.fileobj is self.control:
                    try:
                        data, ancillary, _flags, _addr = self.control.recvmsg(
                            MAX_REQUEST, socket.CMSG_SPACE(MAX_FDS * fd_size))
                    except InterruptedError:
                        continue
                    except OSError:
                        self.end()
                    fds: list[int] = []
                    for level, kind, payload in ancillary:
                        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                            received = array.array("i")
                            received.frombytes(payload[:len(payload) - len(payload) % fd_size])
                            fds += list(received)
                    if not data:
                        for fd in fds:
                            os.close(fd)
                        self.end()
                    self.start(data, fds)
                else:
                    pidfd = key.fd
                    self.selector.unregister(pidfd)
                    os.close(pidfd)
                    self.exited(self.pidfds.pop(pidfd))

    def end(self, *_args: object) -> None:
        """The sidecar is gone or done with us: what we started ends with us."""
        for pid in list(self.children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    zygote = Zygote(control)
    signal.signal(signal.SIGTERM, zygote.end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The launcher asked for SIGKILL at the sidecar's death; SIGTERM lets us end our children first.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    _prctl(_PR_SET_DUMPABLE, 0)
    if os.getppid() != int(sys.argv[2]):  # the sidecar died before that took effect
        zygote.end()
    zygote.run()


if __name__ == "__main__":
    main()
