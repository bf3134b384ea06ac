"""Containment promises of protocol v4 §2, driven from outside the real sidecar.

- "Every call is answered by its deadline, however many hooks": 300 matching command handlers on one
  call, one handler and 300 pipelined calls, with each fence mode (the cgroups the kernel offers, cgroup
  v2 alone, none: the subreaper path); a hook the thread cannot start (its ``maxProcesses``, the user's
  process limit) blocks its call ``hook_failed`` at once.
- "Nothing outlives its owner, as root too": a started process cannot move itself out of its thread's
  cgroup (Landlock denies writing the cgroup file system but its own groups' folder), and one that did
  (Landlock off) is still ended by thread/close, the sidecar's exit and its SIGKILL within 3 s.
- Subreaper mode is named in ``containment_reduced`` (``what: ["processes"]``) once per thread.
- A user-mode fork bomb in one thread: another thread's hook blocks at once, its ``thread/start`` with
  an MCP server answers ``resources_exhausted``, never -32603, and the sidecar serves on.

The ordinary user is a uid of its own (no other process of the machine shares its process limit).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import sys
import tempfile
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import child_env
from harness_sidecar.containment.reaper import LOOK_S
from helpers import add_skill, write
from test_lifetimes import GONE_WITHIN_S, alive, assert_gone_within, cgroup_mounts, identity, marked, sidecar_env
from test_lifetimes import _leave_nothing, mode  # noqa: F401 - fixtures, shared: the fence modes; no survivors

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="containment is Linux's")

SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
AS_USER = os.geteuid() == 0 and shutil.which("setpriv") is not None and shutil.which("prlimit") is not None \
    and os.path.exists(SYSTEM_PYTHON)
GRACE_S = 2.0  # limits.hostGraceMs's default


def hooked(root: Path, handlers: list[dict], matcher: str = "load_skill") -> Path:
    add_skill(root, "demo", "Use when testing.")
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": handlers}]}}))
    return root


def thread_of(sidecar, root: Path, **extra) -> str:
    return sidecar.call("thread/start", {"roots": [str(root)], "watch": False,
                                         "trustedHooks": [{"path": str(root / "hooks.json")}], **extra},
                        timeout=60)["threadId"]


def load_skill(thread: str, n: int = 0) -> dict:
    return {"threadId": thread, "call": {"id": f"c{n}", "name": "load_skill", "arguments": {"name": "demo"}}}


# -- every call answered by its deadline ----------------------------------------------------------------

def test_300_matching_handlers_on_one_call_all_run_and_it_is_answered_by_its_deadline(spawn, tmp_path, mode):
    ran = tmp_path / "ran.txt"
    handlers = [{"type": "command", "command": f"echo {n} >> '{ran}'", "timeout": 10} for n in range(300)]
    sidecar = spawn(env=sidecar_env(mode))
    thread = thread_of(sidecar, hooked(tmp_path / "p", handlers))
    since = time.monotonic()
    answer = sidecar.request("tools/call", load_skill(thread), timeout=10 + GRACE_S + 30)
    took = time.monotonic() - since
    assert took <= 10 + GRACE_S, f"answered after {took:.1f} s: past the hooks' deadline plus hostGraceMs"
    assert answer["result"]["result"]["isError"] is False, answer
    assert sorted(int(n) for n in ran.read_text().split()) == list(range(300))  # every one ran, once


def test_one_handler_and_300_pipelined_calls_are_each_answered_by_their_deadline(spawn, tmp_path, mode):
    sidecar = spawn(env=sidecar_env(mode))
    thread = thread_of(sidecar, hooked(tmp_path / "p", [{"type": "command", "command": "exit 0", "timeout": 10}]))
    since = time.monotonic()
    pending = [sidecar.request_async("tools/call", load_skill(thread, n)) for n in range(300)]
    answers = [sidecar.wait_for(p, timeout=max(1.0, 10 + GRACE_S + 30 - (time.monotonic() - since)))
               for p in pending]
    took = time.monotonic() - since
    assert took <= 10 + GRACE_S, f"the last answered after {took:.1f} s"
    assert [a["result"]["result"]["isError"] for a in answers] == [False] * 300


def test_hooks_waiting_their_turn_still_end_at_their_deadline(spawn, tmp_path, mode):
    """maxProcesses 16: four of the thread's hooks run at once, the others wait; a deadline passes for all."""
    handlers = [{"type": "command", "command": f"sleep 30 # {n}", "timeout": 1} for n in range(100)]
    sidecar = spawn(env=sidecar_env(mode))
    thread = thread_of(sidecar, hooked(tmp_path / "p", handlers), limits={"maxProcesses": 16})
    since = time.monotonic()
    result = sidecar.call("tools/call", load_skill(thread), timeout=60)["result"]
    took = time.monotonic() - since
    assert took <= 1 + GRACE_S, f"answered after {took:.1f} s: past the hooks' 1 s deadline plus hostGraceMs"
    assert result["isError"] is True and result["details"]["blocked"]["kind"] == "hook_failed", result
    assert "did not finish within 1000 ms" in result["details"]["blocked"]["reason"]
    # and the thread serves on: its queue is empty again
    sidecar.call("thread/close", {"threadId": thread}, timeout=30)


def test_a_hook_past_max_processes_blocks_its_call_at_once(spawn, tmp_path, mode):
    """Where the fence can count processes (cgroups with the pids controller) a hook it cannot start
    blocks its call at once; where it cannot (the subreaper mode, a cgroup2 hierarchy without pids),
    the thread says so in containment_reduced — the user's process limit is what stops a bomb there
    (test_a_fork_bomb_as_the_user_...)."""
    sidecar = spawn(env=sidecar_env(mode))
    # one task: the thread's hooks' zygote takes it, and no hook can start
    thread = thread_of(sidecar, hooked(tmp_path / "p", [{"type": "command", "command": "exit 0"}]),
                       limits={"maxProcesses": 1})
    reduced = [set(n["params"]["what"]) for n in sidecar.notifications
               if n["method"] == "thread/diagnostic" and n["params"].get("kind") == "containment_reduced"
               and n["params"].get("threadId") == thread]
    if mode == "subreaper":
        assert any("processes" in what for what in reduced), sidecar.notifications
        return
    if any("maxProcesses" in what for what in reduced):  # this hierarchy has no pids controller: said so
        assert not Path("/sys/fs/cgroup/cgroup.subtree_control").exists() or \
            "pids" not in Path("/sys/fs/cgroup/cgroup.controllers").read_text().split(), reduced
        return
    for n in range(3):
        since = time.monotonic()
        result = sidecar.call("tools/call", load_skill(thread, n), timeout=60)["result"]
        assert time.monotonic() - since < 10, "blocked at once, not at the hook's 60 s deadline"
        assert result["isError"] is True and result["details"]["blocked"]["kind"] == "hook_failed", result
        assert "could not be started" in result["details"]["blocked"]["reason"]


# -- nothing outlives its owner ---------------------------------------------------------------------------

# A hook that tries to leave its thread's cgroup: it writes its own pid into the root group of every cgroup
# mount, into the sidecar's own group, and raises its thread's pids.max. With "--linger", a setsid child
# of its does the same and then lives on (the hook itself exits at once): its report says where it got to.
ESCAPER = r'''
import json, os, sys, time
out = sys.argv[1]
def groups():
    with open("/proc/self/cgroup") as f:
        return {c: p for _i, c, p in (l.rstrip("\n").split(":", 2) for l in f) if c in ("pids", "")}
moved = set()  # the hierarchies it left its group in: the first move the kernel allowed stands
def attempt(mount, path, text):
    if mount in moved:
        return "not tried"
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        return exc.__class__.__name__
    if path.endswith("cgroup.procs"):
        moved.add(mount)
    return "allowed"
def escape():
    tried = {}
    mounts = [l.split()[1] for l in open("/proc/self/mounts")  # the pids hierarchy and cgroup2: no others
              if l.split()[2] == "cgroup2" or (l.split()[2] == "cgroup" and "pids" in l.split()[3].split(","))]
    for mount in mounts:
        tried[mount + "/cgroup.procs"] = attempt(mount, mount + "/cgroup.procs", str(os.getpid()))
        for controllers, path in groups().items():
            if "harness-sidecar-" in path:
                top = path[:path.index("/slot-")]
                slot = path[:path.index("/g/")]
                above = top.rsplit("/", 1)[0]  # the group the sidecar runs in (a delegated one, for a user)
                for target in (above + "/cgroup.procs", top + "/cgroup.procs", slot + "/pids.max"):
                    if os.path.exists(mount + target) and mount + target not in tried:
                        tried[mount + target] = attempt(mount, mount + target,
                                                        "max" if target.endswith("max") else str(os.getpid()))
    return tried
def tell(report, name):
    with open(out + name + ".tmp", "w") as f:
        json.dump(report, f)
    os.replace(out + name + ".tmp", out + name)
if "--linger" in sys.argv:
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # a daemon: the hook's pipes are not held (its call is answered as it exits)
            os.dup2(null, fd)
        tried = escape()
        tell({"pid": os.getpid(), "tried": tried, "groups": groups()}, ".child")
        time.sleep(600)
        os._exit(0)
    sys.exit(0)
tell({"pid": os.getpid(), "tried": escape(), "groups": groups()}, "")
'''


def escaper_root(tmp_path: Path, linger: bool) -> tuple[Path, Path]:
    script = write(tmp_path / "escaper.py", ESCAPER)
    out = tmp_path / "escape.json"
    args = [str(script), str(out)] + (["--linger"] if linger else [])
    return hooked(tmp_path / "p", [{"type": "command", "command": sys.executable, "args": args}]), out


def wait_file(path: Path, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.02)
    return json.loads(path.read_text())


def ours(groups: dict, sidecar_pid: int) -> bool:
    """In a group of the sidecar's, in the hierarchy it fences with (the other shows the root)."""
    return any(f"/harness-sidecar-{sidecar_pid}/" in path for path in groups.values())


@pytest.mark.parametrize("fences", ["cgroups", "cgroup2"])
def test_a_started_process_cannot_move_itself_out_of_its_threads_cgroup(spawn, tmp_path, fences):
    if not cgroup_mounts(version2=fences == "cgroup2"):
        pytest.skip("this machine offers no writable cgroups of that kind")
    sidecar = spawn(env=sidecar_env(fences), initialize=False)
    if not sidecar.call("initialize", {})["containment"]["landlockAbi"]:
        pytest.skip("the kernel has no Landlock: test_a_process_that_left_its_cgroup_is_still_ended covers it")
    root, out = escaper_root(tmp_path, linger=False)
    thread = thread_of(sidecar, root)
    assert sidecar.call("tools/call", load_skill(thread), timeout=60)["result"]["isError"] is False
    report = wait_file(out)
    assert report["tried"], report
    # as root: every cgroup file is refused by the kernel (Landlock), its own root's, the sidecar's, pids.max
    assert set(report["tried"].values()) == {"PermissionError"}, report["tried"]
    assert ours(report["groups"], sidecar.proc.pid), report["groups"]
    assert sidecar.call("tools/call", load_skill(thread, 1), timeout=60)["result"]["isError"] is False


def _escaped(spawn, tmp_path: Path, fences: str):
    env = sidecar_env(fences)
    env["HARNESS_SIDECAR_LANDLOCK"] = "off"  # what an older kernel gives: nothing stops the move itself
    sidecar = spawn(env=env)
    root, out = escaper_root(tmp_path, linger=True)
    thread = thread_of(sidecar, root)
    assert sidecar.call("tools/call", load_skill(thread), timeout=60)["result"]["isError"] is False
    report = wait_file(Path(str(out) + ".child"))
    assert "allowed" in report["tried"].values(), report  # it did leave: root, as the kernel lets it
    assert not ours(report["groups"], sidecar.proc.pid), report["groups"]
    return sidecar, thread, report["pid"]


@pytest.mark.parametrize("how", ["thread/close", "EOF", "SIGKILL"])
@pytest.mark.parametrize("fences", ["cgroups", "cgroup2"])
def test_a_process_that_left_its_cgroup_is_still_ended(spawn, tmp_path, fences, how):
    if not cgroup_mounts(version2=fences == "cgroup2"):
        pytest.skip("this machine offers no writable cgroups of that kind")
    sidecar, thread, pid = _escaped(spawn, tmp_path, fences)
    escaped = identity(pid)  # may already be gone: the sweep ends what left its group within a second
    ids = [escaped] if escaped else []
    since = time.monotonic()
    if how == "thread/close":
        sidecar.call("thread/close", {"threadId": thread}, timeout=30)
    elif how == "EOF":
        sidecar.proc.stdin.close()
    else:
        # The reaper notes the sidecar's descendants every LOOK_S (0.5 s): one that left its group and lived
        # less than that before the SIGKILL may survive (protocol.md says so). Past it, none does.
        time.sleep(2 * LOOK_S)
        since = time.monotonic()
        sidecar.proc.send_signal(signal.SIGKILL)
    assert_gone_within(ids, since, how)


# -- subreaper mode is named --------------------------------------------------------------------------------

def test_subreaper_mode_is_named_once_per_thread_that_starts_foreign_code(spawn, tmp_path, mode):
    sidecar = spawn(env=sidecar_env(mode))
    root = hooked(tmp_path / "p", [{"type": "command", "command": "exit 0"}])
    threads = [thread_of(sidecar, root) for _ in range(2)]
    plain = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})["threadId"]  # runs no code
    sidecar.call("tools/call", load_skill(threads[0]), timeout=60)
    sidecar.call("tools/call", load_skill(plain), timeout=60)
    said = [n["params"] for n in sidecar.notifications
            if n["method"] == "thread/diagnostic" and n["params"]["kind"] == "containment_reduced"]
    named = [d["threadId"] for d in said if "processes" in d["what"]]
    if mode == "subreaper":
        assert sorted(named) == sorted(threads), said  # once each, and not for the thread that runs nothing
        assert all("subreaper" in d["message"] for d in said)
    else:
        assert named == [], said


# -- as an ordinary user: the user's process limit, and the sidecar's own failures ----------------------------

BOMB = """\
import json, os

def bomb(call_id, arguments):
    forked = 0
    try:
        while forked < 5000:
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", arguments["marker"]])
            forked += 1
    except OSError as exc:
        return json.dumps({"forked": forked, "errno": exc.errno})
    return json.dumps({"forked": forked, "errno": None})

def activate(api):
    api.register_tool(name="bomb", description="", input_schema={}, execute=bomb)
"""

SERVER = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "noop", "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "noop", "inputSchema": {"type": "object"}}]}
    else:
        result = {"content": [{"type": "text", "text": "ok"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.fixture
def shared():
    """A folder an ordinary user can read (this test's tmp_path may be root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="harness-contain-v4-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_user(spawn, uid: int, nproc: int):
    env = child_env({"HARNESS_SIDECAR_STATE_DIR": "/tmp/harness-contain-v4-state-%d" % uid})
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])
    command = ["prlimit", f"--nproc={nproc}:{nproc}", "setpriv", f"--reuid={uid}", f"--regid={uid}",
               "--clear-groups", SYSTEM_PYTHON, "-P", "-m", "harness_sidecar"]
    return spawn(env=env, command=command)


@pytest.mark.skipif(not AS_USER, reason="needs root, setpriv, prlimit and a system Python to become an ordinary user")
def test_a_fork_bomb_as_the_user_blocks_hooks_at_once_and_thread_start_says_resources_exhausted(spawn, shared):
    uid = 40000 + os.getpid() % 20000  # a user of its own: no other process counts against its limit
    root = shared / "project"
    write(root / "extensions" / "bomber.py", BOMB)
    hooked(root, [{"type": "command", "command": "exit 0"}])
    write(shared / "server.py", SERVER)
    for path in [shared, *shared.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    sidecar = as_user(spawn, uid, 80)
    hooks = thread_of(sidecar, root)  # its zygote is warm before the bomb
    assert sidecar.call("tools/call", load_skill(hooks), timeout=60)["result"]["isError"] is False
    bomber = sidecar.call("thread/start", {"roots": [str(root)], "watch": False,
                                           "trustedExtensions": [{"id": "bomber"}]}, timeout=60)["threadId"]
    marker = f"600.{os.getpid()}"
    result = sidecar.call("tools/call", {"threadId": bomber, "call": {"id": "b", "name": "bomb",
                                                                      "arguments": {"marker": marker}}}, timeout=60)
    bombed = json.loads(result["result"]["content"][0]["text"])
    assert bombed["errno"] == 11 and bombed["forked"] > 0, bombed  # EAGAIN: the user's limit is reached
    try:
        since = time.monotonic()
        blocked = sidecar.call("tools/call", load_skill(hooks, 1), timeout=60)["result"]
        assert time.monotonic() - since < 10, "blocked at once, not at the hook's deadline"
        assert blocked["isError"] is True and blocked["details"]["blocked"]["kind"] == "hook_failed", blocked
        refused = sidecar.request("thread/start", {"roots": [str(root)], "watch": False, "mcpServers": [
            {"name": "noop", "required": True, "command": [SYSTEM_PYTHON, str(shared / "server.py")]}]}, timeout=60)
        assert "error" in refused, refused
        assert refused["error"]["code"] == -32070 and refused["error"]["data"]["kind"] == "resources_exhausted", refused
        host = sidecar.request("thread/start", {"roots": [str(root)], "watch": False,
                                                "trustedExtensions": [{"id": "bomber"}]}, timeout=60)
        if "error" in host:  # a spare host may have been ready before the bomb: then it starts
            assert host["error"]["data"]["kind"] == "resources_exhausted", host
        else:
            sidecar.call("thread/close", {"threadId": host["result"]["threadId"]}, timeout=30)
    finally:
        sidecar.call("thread/close", {"threadId": bomber}, timeout=30)
    deadline = time.monotonic() + GONE_WITHIN_S
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(marked(marker))
    # the sidecar serves on: the same start succeeds once the processes are back, and the hook runs
    again = sidecar.call("thread/start", {"roots": [str(root)], "watch": False, "mcpServers": [
        {"name": "noop", "required": True, "command": [SYSTEM_PYTHON, str(shared / "server.py")]}]}, timeout=60)
    assert again["threadId"]
    assert sidecar.call("tools/call", load_skill(hooks, 2), timeout=60)["result"]["isError"] is False


# -- the same as an ordinary user, with a delegated cgroup v2 subtree (as systemd delegates one) ---------------

def unified_mount() -> str | None:
    for line in open("/proc/self/mounts"):
        parts = line.split()
        if parts[2] == "cgroup2" and os.path.exists(os.path.join(parts[1], "cgroup.procs")) \
                and os.access(parts[1], os.W_OK):
            return parts[1]
    return None


@pytest.fixture
def delegated(shared):
    """A cgroup v2 group owned by a user of its own (its folder, cgroup.procs, subtree_control, threads)."""
    mount = unified_mount()
    if not AS_USER or mount is None:
        pytest.skip("needs root, setpriv, prlimit, a system Python and a writable cgroup2 mount")
    uid = 40000 + os.getpid() % 20000
    group = Path(tempfile.mkdtemp(prefix=f"harness-v4-user-{os.getpid()}-", dir=mount))  # a cgroup folder
    for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
        os.chown(group / name if name else group, uid, uid)
    yield uid, group
    try:
        (group / "cgroup.kill").write_text("1")  # the sidecar too (its fixture ends after this one)
    except OSError:
        pass
    for _ in range(100):
        leftovers = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(str(p)))
        for folder in [*leftovers, group]:
            try:
                folder.rmdir()
            except OSError:
                pass
        if not group.exists():
            break
        time.sleep(0.05)


def user_sidecar_in(spawn, uid: int, group: Path, landlock: bool):
    env = child_env({"HARNESS_SIDECAR_STATE_DIR": "/tmp/harness-contain-v4-state-%d" % uid,
                     "HARNESS_SIDECAR_CGROUPS": "v2"})
    if not landlock:
        env["HARNESS_SIDECAR_LANDLOCK"] = "off"
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])
    command = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec setpriv --reuid={uid} --regid={uid} '
               f'--clear-groups {SYSTEM_PYTHON} -P -m harness_sidecar']
    sidecar = spawn(env=env, command=command, initialize=False)
    return sidecar, sidecar.call("initialize", {})


@pytest.mark.parametrize("landlock", [True, False])
def test_as_an_ordinary_user_with_a_delegated_cgroup_a_process_cannot_leave_or_outlive_it(spawn, shared, delegated,
                                                                                         landlock):
    uid, group = delegated
    sidecar, initialized = user_sidecar_in(spawn, uid, group, landlock)
    if landlock and not initialized["containment"]["landlockAbi"]:
        pytest.skip("the kernel has no Landlock")
    script = write(shared / "escaper.py", ESCAPER)
    out = shared / "escape.json"
    root = hooked(shared / "p", [{"type": "command", "command": SYSTEM_PYTHON,
                                  "args": [str(script), str(out), "--linger"]}])
    for path in [shared, *shared.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o644)
    thread = thread_of(sidecar, root)
    assert sidecar.call("tools/call", load_skill(thread), timeout=60)["result"]["isError"] is False
    report = wait_file(Path(str(out) + ".child"))
    target = str(group / "cgroup.procs")
    assert target in report["tried"], report  # the group the sidecar runs in: the user's own, writable
    if landlock:
        assert set(report["tried"].values()) == {"PermissionError"}, report["tried"]
        assert ours(report["groups"], sidecar.proc.pid), report["groups"]
    else:  # without Landlock the kernel lets the user move it there: it left the sidecar's groups
        assert report["tried"][target] == "allowed", report["tried"]
        assert not ours(report["groups"], sidecar.proc.pid), report["groups"]
    escaped = identity(report["pid"])
    since = time.monotonic()
    sidecar.call("thread/close", {"threadId": thread}, timeout=30)
    assert_gone_within([escaped] if escaped else [], since, "thread/close")
