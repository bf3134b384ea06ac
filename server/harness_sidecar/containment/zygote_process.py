"""The zygote's own program: a small process, one per thread, that starts that thread's command hooks.

Run by ``containment.zygote`` through the launcher (so it is fenced as any started process: its own
session, its owner's cgroup, a Landlock domain, killed when the sidecar dies) as
``python -I -S zygote_process.py FD``; it imports only the standard library and none of the sidecar.
Its children inherit its fences, and since it has no ``preexec_fn`` to run, Python starts them with
``vfork`` — the cost the sidecar's own ``fork`` (a large address space, ~4 ms) would add per hook.

The control socket (``SOCK_SEQPACKET``, fd ``FD``) carries, from the sidecar, one JSON message each:
- a start, ``{"argv", "env", "add", "cwd", "stdio": [how, how, how], "direct"?}`` (``env`` null: ours,
  which is the sidecar's, plus ``add``; ``how``: ``"fd"``, one of the message's ``SCM_RIGHTS``
  descriptors in order, or ``"devnull"``; ``direct``: the command line ``/bin/sh -c`` would exec for a
  simple shell-form command, started without the shell when its program is found and execs — else
  ``argv`` is), answered in order by ``{"pid"}`` or ``{"errno", "error"}``, optionally
  followed by a newline and ``[pid]``: children to reap after that answer (as ``{"reap"}``). A
  thread's hooks send the same few start objects again and again: what one says is kept by its bytes;
- ``{"reap": [pid]}``: the sidecar read those children's exit status itself (from their zombies,
  through pidfds of its own): reap them now, unanswered;
- ``{"wait": pid}``: the sidecar wants to be told — reap that child when it exits and answer
  ``{"exit": pid, "code": returncode}`` (negative: the signal).
A child is reaped only when the sidecar says one of the two: until then it stays a zombie once it has
exited, so its pid is not reused while the sidecar reads its status (and the zygote watches nothing
per hook). EOF on the socket, or SIGTERM (its parent-death signal: the sidecar died), ends every
child's process group and then the zygote (its zombies go to whoever adopts them).
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys

MAX_REQUEST = 64 * 1024  # the sidecar sends at most 60 KiB (a larger start it makes itself)
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
        self.children: dict[int, bool] = {}  # the pids we started and have not reaped
        self._devnull = -1
        self.pidfds: dict[int, int] = {}  # pidfd → pid, of the children the sidecar waits for through us
        self.epoll = select.epoll()  # the control socket and those pidfds (no selectors layer: per hook)
        self.epoll.register(control.fileno(), select.EPOLLIN)

    def send(self, message: dict) -> None:
        self.send_raw(json.dumps(message).encode())

    def send_raw(self, message: bytes) -> None:
        try:
            self.control.sendall(message)
        except OSError:
            self.end()

    def handle(self, data: bytes, fds: list[int]) -> None:
        head, _, tail = data.partition(b"\n")  # JSON never holds a raw newline: a start's reap list follows one
        plan = PLANS.get(head)
        if plan is None:
            try:
                request = json.loads(head)
            except ValueError as exc:
                request = exc
            if type(request) is dict and "argv" not in request:
                for fd in fds:
                    os.close(fd)
                self.told(request)
                return
            plan = self.plan(head, request, fds)
        if plan is not None:
            self.start(plan, fds)
        if tail:  # the sidecar's last hooks, read meanwhile: reaped after this start's answer
            try:
                self.reap(json.loads(tail))
            except ValueError:
                pass

    def plan(self, head: bytes, request: object, fds: list[int]) -> Plan | None:
        """A start request read (and kept by its bytes, when it has no PATH search to make again), or None
        when it is answered at once: why it cannot be started."""
        try:
            if isinstance(request, ValueError):
                raise request
            if type(request) is not dict:
                raise TypeError("not an object")
            env = request["env"]
            environ = environment(request.get("add") or {}) if env is None else env
            plan = Plan(*planned(request["argv"], environ, request["cwd"]), tuple(request["stdio"]))
            direct = request.get("direct")
            if direct is not None:  # the shell's own exec, without the shell; the shell form if that fails
                try:
                    plan = Plan(*planned(direct, environ, request["cwd"]), plan.stdio, fallback=plan)
                except OSError:
                    pass  # not found (or not executable): the shell says so, as it would have
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            self.send({"errno": exc.errno or 0, "error": exc.strerror or str(exc)})
            return None
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            for fd in fds:
                os.close(fd)
            self.send({"errno": 22, "error": f"bad request: {exc}"})
            return None
        if "/" in plan.argv[0] and (plan.fallback is None or "/" in plan.fallback.argv[0]):
            if len(PLANS) >= 64:
                PLANS.clear()
            PLANS[head] = plan
        return plan

    def told(self, request: dict) -> None:
        """``{"reap": [pid]}`` or ``{"wait": pid}`` of children of ours (anything else: ignored)."""
        if "reap" in request:
            self.reap(request["reap"])
        else:
            self.wait(request.get("wait"))

    def reap(self, pids: object) -> None:
        """Children whose exit the sidecar has read: reaped (one not exited yet is waited for, and said)."""
        for pid in pids if type(pids) is list else ():
            if type(pid) is not int or pid not in self.children:
                continue
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    del self.children[pid]
                    continue
            except ChildProcessError:
                del self.children[pid]
                continue
            self.wait(pid)

    def wait(self, pid: object) -> None:
        """Reap ``pid`` when it exits and say its status."""
        if type(pid) is not int or pid not in self.children or pid in self.pidfds.values():
            return
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # cannot watch it: wait for it here
            self.exited(pid)
            return
        self.pidfds[pidfd] = pid
        self.epoll.register(pidfd, select.EPOLLIN)

    def start(self, plan: Plan, fds: list[int]) -> None:
        """A start request, read: answered by its pid or why not."""
        try:
            given = iter(fds)
            stdio = [next(given) if how == "fd" else self.devnull() for how in plan.stdio]
            try:
                pid = spawn(plan, stdio)
            except OSError:
                if plan.fallback is None:
                    raise
                pid = spawn(plan.fallback, stdio)  # ENOEXEC, EACCES…: the shell does what it does with it
        except OSError as exc:
            self.send({"errno": exc.errno or 0, "error": exc.strerror or str(exc)})
            return
        except (ValueError, StopIteration) as exc:
            self.send({"errno": 22, "error": f"bad request: {exc}"})
            return
        finally:
            for fd in fds:
                os.close(fd)
        self.children[pid] = True
        self.send_raw(b'{"pid": %d}' % pid)

    def devnull(self) -> int:
        if self._devnull < 0:
            self._devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        return self._devnull

    def exited(self, pid: int) -> None:
        self.children.pop(pid, None)
        try:
            _pid, status = os.waitpid(pid, 0)
        except ChildProcessError:  # not ours (any more): nothing to tell
            return
        self.send_raw(b'{"exit": %d, "code": %d}' % (pid, os.waitstatus_to_exitcode(status)))

    def run(self) -> None:
        fd_size = array.array("i").itemsize
        control = self.control.fileno()
        # received into one buffer, made once: recvmsg(n) allocates n bytes per message (a large one by mmap)
        buffer = bytearray(MAX_REQUEST)
        ancillary_size = socket.CMSG_SPACE(MAX_FDS * fd_size)
        while True:
            try:
                ready = self.epoll.poll()
            except InterruptedError:
                continue
            for fd, _events in ready:
                if fd == control:
                    try:
                        size, ancillary, flags, _addr = self.control.recvmsg_into(
                            [buffer], ancillary_size, socket.MSG_CMSG_CLOEXEC)
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
                    if not size:
                        for received_fd in fds:
                            os.close(received_fd)
                        self.end()
                    # a truncated message is not JSON: answered as a bad request
                    self.handle(bytes(memoryview(buffer)[:size]) if not flags & socket.MSG_TRUNC else b"", fds)
                elif fd in self.pidfds:
                    self.epoll.unregister(fd)
                    os.close(fd)
                    self.exited(self.pidfds.pop(fd))

    def end(self, *_args: object) -> None:
        """The sidecar is gone or done with us: what we started ends with us."""
        for pid in list(self.children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)


class Plan:
    """A start request as read: what to run, with what environment, where, and its fds 0-2 (``how``);
    ``fallback``: the shell form, where this is the program a simple shell command would have exec'd."""

    __slots__ = ("program", "argv", "environ", "cwd", "stdio", "fallback")

    def __init__(self, program: str, argv: list[str], environ: dict, cwd: str, stdio: tuple,
                 fallback: Plan | None = None) -> None:
        self.program, self.argv, self.environ, self.cwd, self.stdio = program, argv, environ, cwd, stdio
        self.fallback = fallback
        if fallback is not None:  # the shell exports PWD: what it would have (dash's getpwd at start-up)
            encoded = any(type(key) is bytes for key in environ)
            pwd = shell_pwd(environ, cwd)
            self.environ = {k: v for k, v in environ.items() if k not in (b"PWD", "PWD")}
            self.environ[b"PWD" if encoded else "PWD"] = os.fsencode(pwd) if encoded else pwd


def shell_pwd(environ: dict, cwd: str) -> str:
    """The ``PWD`` ``/bin/sh`` (dash) exports in ``cwd``: the inherited one if it is absolute and names that
    directory, else the physical path."""
    inherited = environ.get(b"PWD") if b"PWD" in environ else environ.get("PWD")
    if inherited is not None:
        inherited = os.fsdecode(inherited)
        try:
            if inherited.startswith("/") and os.path.samestat(os.stat(inherited), os.stat(cwd)):
                return inherited
        except OSError:
            pass
    return os.path.realpath(cwd)


def planned(argv: object, environ: object, cwd: object) -> tuple[str, list[str], dict, str]:
    """``argv`` checked and its program found (as execvp would, but in the hook's PATH); where it runs."""
    if type(argv) is not list or not argv or not all(type(a) is str for a in argv):
        raise ValueError("argv must be a non-empty list of strings")
    if type(environ) is not dict or (cwd is not None and type(cwd) is not str):
        raise ValueError("env must be an object or null, cwd a string or null")
    program = argv[0]
    if "/" not in program:
        path = environ.get(b"PATH") if b"PATH" in environ else environ.get("PATH", os.defpath)
        for folder in os.fsdecode(path).split(os.pathsep):
            candidate = os.path.join(folder or ".", program)
            if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
                program = candidate
                break
        else:
            raise FileNotFoundError(2, os.strerror(2), program)
    return program, argv, environ, cwd if cwd is not None else HOME


def spawn(plan: Plan, stdio: list[int]) -> int:
    """Start ``plan`` in a session of its own with ``stdio`` as its fds 0-2: ``posix_spawn`` (glibc:
    ``clone(CLONE_VM|CLONE_VFORK)``, no Python in the child). Every other descriptor of ours is
    close-on-exec. The zygote is single-threaded, so ``chdir`` for the child is ours to make."""
    os.chdir(plan.cwd)
    if _POSIX_SPAWN:
        try:
            actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(stdio)]
            # every signal's default action, as a program the launcher starts has (we ignore SIGINT, and
            # Python SIGPIPE and SIGXFSZ: a hook must not inherit that — ``yes | head -1`` would never end)
            return os.posix_spawn(plan.program, plan.argv, plan.environ, file_actions=actions, setsid=True,
                                  setsigdef=DEFAULT_SIGNALS)
        except NotImplementedError:  # a C library without POSIX_SPAWN_SETSID
            pass
    import subprocess

    proc = subprocess.Popen(plan.argv, executable=plan.program, stdin=stdio[0], stdout=stdio[1], stderr=stdio[2],
                            env=plan.environ, start_new_session=True, close_fds=True, restore_signals=True)
    proc.returncode = 0  # we reap it ourselves (waitpid): its Popen must not
    return proc.pid


_POSIX_SPAWN = hasattr(os, "posix_spawn")
DEFAULT_SIGNALS = tuple(sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}))
PLANS: dict[bytes, Plan] = {}  # start requests read, by their bytes (those with no PATH search)
HOME = os.getcwd()
ENVIRON = dict(os.environ)  # the sidecar's, as it started us (decoded once, not per hook)
_ENVIRONMENTS: dict[tuple, dict[bytes, bytes]] = {}


def environment(add: dict[str, str]) -> dict[bytes, bytes]:
    """Ours (the sidecar's) plus ``add``, encoded once per distinct ``add`` (a thread's hooks share one or
    a few): ``posix_spawn`` takes bytes as they are, where it would encode every variable per hook."""
    key = tuple(add.items())
    env = _ENVIRONMENTS.get(key)
    if env is None:
        if len(_ENVIRONMENTS) >= 64:
            _ENVIRONMENTS.clear()
        merged = {**ENVIRON, **add}
        env = _ENVIRONMENTS[key] = {os.fsencode(k): os.fsencode(v) for k, v in merged.items()}
    return env


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    os.set_inheritable(control.fileno(), False)
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
