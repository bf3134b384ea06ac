"""Command hooks are contained as every process the sidecar starts (v3 §1, §5 "Started under §1").

A thread's command hooks are started by a zygote of its own (``containment/zygote.py``): one
Landlock domain, one cgroup and one death signal per thread's hooks. These tests drive the real
sidecar; the hook is a hostile Python script, run as the user (root on CI) with the hooks file
trusted, that reports what it could reach: the sidecar (every one of its threads), another thread's
hooks and zygote, its own zygote. Lifetimes run with the cgroups the kernel offers, with cgroup v2
alone and without cgroups (the subreaper path), as in ``test_lifetimes.py``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import child_env
from helpers import write
from test_containment import KERNEL_ABI, REFUSED, needs_scopes
from test_lifetimes import alive, assert_gone_within, cgroups_offered, identity
from test_lifetimes import mode  # noqa: F401 - the fence modes' fixture, shared

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="containment is Linux's")

HOOK = r'''
import ctypes, errno, json, os, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out_dir, name = sys.argv[1], sys.argv[2]
event = json.load(sys.stdin)

def outcome(attempt):
    try:
        attempt()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "allowed"

def tgkill(pid, tid):
    def attempt():
        if libc.syscall(234, pid, tid, 0) != 0:  # tgkill(pid, tid, 0): may this thread be signalled?
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    return attempt

def opened(path):
    def attempt():
        with open(path, "rb", buffering=0):
            pass
    return attempt

found = {"pid": os.getpid(), "zygote": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0)}
targets = os.path.join(out_dir, "targets.json")
if os.path.exists(targets):
    with open(targets) as f:
        t = json.load(f)
    reached = {}
    for tid in t["sidecar_tasks"]:  # every thread of the sidecar, each a way into all of it
        reached[f"sidecar task {tid} signal"] = outcome(tgkill(t["sidecar"], tid))
        reached[f"sidecar task {tid} mem"] = outcome(opened(f"/proc/{t['sidecar']}/task/{tid}/mem"))
    reached["sidecar fd/1"] = outcome(opened(f"/proc/{t['sidecar']}/fd/1"))
    for what, pid in t["others"].items():
        reached[f"{what} signal"] = outcome(lambda: os.kill(pid, 0))
        reached[f"{what} mem"] = outcome(opened(f"/proc/{pid}/mem"))
    found["reached"] = reached
    found["own zygote"] = outcome(lambda: os.kill(os.getppid(), 0))
def tell(found):  # whole or not at all: the test reads the file as soon as it exists
    with open(os.path.join(out_dir, name + ".json.tmp"), "w") as f:
        json.dump(found, f)
    os.replace(os.path.join(out_dir, name + ".json.tmp"), os.path.join(out_dir, name + ".json"))
if event.get("tool_input", {}).get("command") == "linger":
    found["lingering"] = subprocess.Popen(["setsid", "sleep", "600"]).pid
    tell(found)
    time.sleep(600)
tell(found)
'''

BASH = {"name": "Bash", "description": "Run a shell command.",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}


def editor(message: dict) -> dict:
    if message["method"] == "item/tool/call":
        return {"result": {"contentItems": [{"type": "inputText", "text": "ran"}], "success": True}}
    return {"error": {"code": -32601, "message": "no"}}


def hooked_root(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    script = write(tmp_path / "hook.py", HOOK)
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": sys.executable, "args": [str(script), str(tmp_path), name],
         "timeout": 120}]}]}}))
    return root


def start(sidecar, root: Path) -> str:
    return sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "dynamicTools": [BASH],
                                         "trustedHooks": [{"path": str(root / "hooks.json")}]}, timeout=60)["threadId"]


def bash(sidecar, thread: str, command: str = "ls") -> dict:
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "Bash",
                                                                    "arguments": {"command": command}}},
                        timeout=60)["result"]


def report(tmp_path: Path, name: str) -> dict:
    return json.loads((tmp_path / f"{name}.json").read_text())


@needs_scopes
def test_a_hook_cannot_reach_the_sidecar_or_another_threads_hooks(spawn, tmp_path):
    sidecar = spawn(env=child_env(), on_request=editor)
    victim, attacker = start(sidecar, hooked_root(tmp_path, "victim")), start(sidecar, hooked_root(tmp_path, "attacker"))
    assert bash(sidecar, victim)["isError"] is False
    seen = report(tmp_path, "victim")
    assert seen["pgid"] == seen["pid"] == seen["sid"]  # its own session and group: the deadline's killpg
    pid = sidecar.proc.pid
    tasks = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    assert len(tasks) >= 1
    others = {"the other thread's zygote": seen["zygote"]}
    # control: what is attacked is there, and reachable by an unfenced process of the user (this test)
    for target in [pid, *others.values()]:
        os.kill(target, 0)
    write(tmp_path / "targets.json", json.dumps({"sidecar": pid, "sidecar_tasks": tasks, "others": others}))
    assert bash(sidecar, attacker)["isError"] is False
    found = report(tmp_path, "attacker")
    assert found["zygote"] != seen["zygote"]  # one zygote per thread
    assert set(found["reached"].values()) <= REFUSED, found["reached"]
    assert found["own zygote"] == "allowed"  # what changes: a thread's hooks share their zygote's domain
    assert bash(sidecar, victim)["isError"] is False  # and everything still serves


def test_hooks_run_in_their_threads_cgroup(spawn, tmp_path):
    if not cgroups_offered():
        pytest.skip("this machine offers no writable cgroups")
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, hooked_root(tmp_path, "one"))
    assert bash(sidecar, thread)["isError"] is False
    zygote = report(tmp_path, "one")["zygote"]
    with open(f"/proc/{zygote}/cgroup") as f:
        groups = [line.rstrip("\n").split(":", 2)[2] for line in f]
    assert any(f"/harness-sidecar-{sidecar.proc.pid}/" in g and g.endswith(f"/hook-{zygote}") for g in groups), groups


def lingering(sidecar, thread: str, tmp_path: Path, name: str) -> tuple[list[tuple[int, int]], str]:
    """A PreToolUse hook that starts a setsid grandchild and then hangs: the call waits on it."""
    pending = sidecar.request_async("tools/call", {"threadId": thread, "call": {
        "id": "l", "name": "Bash", "arguments": {"command": "linger"}}})
    path = tmp_path / f"{name}.json"
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    found = json.loads(path.read_text())
    ids = [identity(found["pid"]), identity(found["lingering"]), identity(found["zygote"])]
    assert all(ids), found
    return ids, pending  # type: ignore[return-value]


@pytest.mark.parametrize("how", ["SIGKILL", "thread/close"])
def test_a_running_hook_and_what_it_started_end_with_its_owner(spawn, tmp_path, mode, how):
    switch = {"subreaper": "off", "cgroup2": "v2"}.get(mode)
    env = child_env({"HARNESS_SIDECAR_CGROUPS": switch} if switch else {})
    sidecar = spawn(env=env, on_request=editor)
    thread = start(sidecar, hooked_root(tmp_path, "one"))
    ids, pending = lingering(sidecar, thread, tmp_path, "one")
    try:
        time.sleep(0.6)  # subreaper mode: the reaper looks every 0.5 s (what it never saw may survive)
        since = time.monotonic()
        if how == "SIGKILL":
            sidecar.proc.kill()
            sidecar.proc.wait(30)
        else:
            sidecar.request_async("thread/close", {"threadId": thread})
        assert_gone_within(ids, since, f"its owner's end ({how})")
    finally:
        for pid, _start in alive(ids):
            os.kill(pid, signal.SIGKILL)


def test_a_killed_zygote_fails_its_running_hook_and_the_next_call_gets_a_new_one(spawn, tmp_path):
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, hooked_root(tmp_path, "one"))
    ids, pending = lingering(sidecar, thread, tmp_path, "one")
    os.kill(ids[2][0], signal.SIGKILL)  # another process of the user kills the zygote
    result = sidecar.wait_for(pending, 30)["result"]["result"]
    assert result["details"]["blocked"]["kind"] == "hook_failed", result  # fails closed, never silently open
    assert_gone_within(ids[:1], time.monotonic(), "its zygote's death")
    (tmp_path / "one.json").unlink()
    assert bash(sidecar, thread)["isError"] is False
    assert report(tmp_path, "one")["zygote"] != ids[2][0]


COUNTER = r'''
import hashlib, json, os, sys
data = sys.stdin.buffer.read()  # all of it, then EOF
event = json.loads(data)
with open(os.path.join(sys.argv[1], "stdin.json"), "w") as f:
    json.dump({"bytes": len(data), "sha256": hashlib.sha256(event["tool_input"]["command"].encode()).hexdigest()}, f)
sys.stdout.write(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow",
                                                    "additionalContext": "x" * 200000}}))
'''


def test_a_large_stdin_and_stdout_pass_whole_through_the_zygotes_pipes(spawn, tmp_path):
    import hashlib

    root = tmp_path / "big"
    script = write(tmp_path / "counter.py", COUNTER)
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": sys.executable, "args": [str(script), str(tmp_path)]}]}]}}))
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, root)
    command = "echo " + "y" * 300_000  # several times a pipe's buffer: written as the hook drains it
    result = bash(sidecar, thread, command)
    assert result["isError"] is False, result
    seen = json.loads((tmp_path / "stdin.json").read_text())
    assert seen["bytes"] > 300_000 and seen["sha256"] == hashlib.sha256(command.encode()).hexdigest()
    assert result["details"]["hookContext"] == ["x" * 200000]


def test_a_pid_the_zygote_names_is_believed_only_for_its_own_child():
    """The sidecar signals what a zygote names (the deadline's killpg); a zygote shares its hooks' domain,
    so one taken over by a hook could name the editor. Such a pid is refused and never signalled."""
    import asyncio
    import subprocess

    from harness_sidecar.containment import zygote

    victim = subprocess.Popen(["sleep", "30"], start_new_session=True)  # not the zygote's child
    try:
        async def named() -> tuple[str, int | None]:
            transport = zygote._Transport(asyncio.get_running_loop(), asyncio.SubprocessProtocol())
            try:
                transport.started(victim.pid, os.getpid() + 1)
            except ValueError as exc:
                outcome = str(exc)
            else:
                outcome = "believed"
            transport.close()  # would kill a believed, still running process
            return outcome, transport.get_pid()

        outcome, pid = asyncio.run(named())
        assert "not the zygote's child" in outcome and pid is None
        time.sleep(0.1)
        assert victim.poll() is None  # never signalled
    finally:
        victim.kill()
        victim.wait()


THREADED = r'''
import ctypes, os, sys, threading, time
code = int(sys.argv[2])
with open(os.path.join(sys.argv[1], "zygote"), "w") as f:
    f.write(str(os.getppid()))
sys.stdin.buffer.read()
if code == 2:
    sys.stderr.write("not this one\n")
    sys.stderr.flush()
def last():
    time.sleep(0.2)
    os._exit(code)  # exit_group from a thread that is not the leader
threading.Thread(target=last).start()
ctypes.CDLL(None).pthread_exit(None)  # the leader ends first: the process lives on in the other thread
'''


def children_of(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of ``pid``'s children, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append((int(entry), fields[0].decode()))
    return out


def test_a_hooks_exit_status_is_its_process_groups_and_nothing_is_left_unreaped(spawn, tmp_path):
    """The status the sidecar acts on is what waitpid reports — here the exit 2 of a thread that outlived
    its leader (it blocks the call), then an exit 0 the same way (it does not) — and the zygote is left
    with no child, running or zombie, once the calls are answered."""
    script = write(tmp_path / "threaded.py", THREADED)
    roots = {}
    for code in (2, 0):
        root = roots[code] = tmp_path / f"exit{code}"
        write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": sys.executable, "args": [str(script), str(tmp_path), str(code)]}]}]}}))
    sidecar = spawn(env=child_env(), on_request=editor)
    blocked = bash(sidecar, start(sidecar, roots[2]))
    assert blocked["isError"] is True and blocked["details"]["blocked"]["kind"] == "hook", blocked
    assert "not this one" in blocked["details"]["blocked"]["reason"]
    thread = start(sidecar, roots[0])
    for _ in range(3):
        assert bash(sidecar, thread)["isError"] is False
    zygote = int((tmp_path / "zygote").read_text())
    deadline = time.monotonic() + 5
    while children_of(zygote) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert children_of(zygote) == [] and Path(f"/proc/{zygote}").exists()  # reaped, by a zygote still serving


def test_where_the_sidecar_cannot_read_a_hooks_zombie_its_zygote_reaps_it_and_says_its_status(monkeypatch, tmp_path):
    """Kernels before 6.15 (or a /proc the sidecar cannot read): the zygote is asked to wait for the hook,
    and its answer carries the status — an exit code, a signal."""
    import asyncio

    from harness_sidecar.containment import zygote
    from harness_sidecar.hooks import command
    from harness_sidecar.hooks.declared import Handler, HookSource
    from harness_sidecar.hooks.matcher import compile_matcher

    source = HookSource(source=f"root:{tmp_path}", path=str(tmp_path / "hooks.json"), trusted=True)

    def handler(text: str) -> Handler:
        return Handler(source, "PreToolUse", compile_matcher("Bash"), text, None, None, 0)

    async def run(text: str) -> command.Answer:
        return await command.run_handler(handler(text), b"{}", thread_id="fallback", cwd=str(tmp_path), timeout_s=30)

    async def both() -> list[command.Answer]:
        try:
            return [await run("cat >/dev/null; exit 3"), await run("kill -TERM $$"), await run("exit 0")]
        finally:
            zygote.end("fallback")

    for readable in (False, True):
        monkeypatch.setattr(zygote, "_ZOMBIE_STATUS", readable and zygote._ZOMBIE_STATUS)
        three, killed, zero = asyncio.run(both())
        assert (three.exit_code, three.failure) == (3, "it exited with code 3")
        assert killed.exit_code == -signal.SIGTERM and killed.failure == "it was killed by signal 15"
        assert (zero.exit_code, zero.failure) == (0, None)


def test_a_hook_the_zygote_cannot_start_blocks_the_call_and_says_why(spawn, tmp_path):
    """The transport comes back before the zygote has answered; a start it refuses still fails the
    call closed (``hook_failed``), with the reason."""
    root = tmp_path / "missing"
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": str(tmp_path / "no-such-hook"), "args": []}]}]}}))
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, root)
    for _ in range(2):  # and the zygote serves on
        result = bash(sidecar, thread)
        blocked = result["details"]["blocked"]
        assert result["isError"] is True and blocked["kind"] == "hook_failed", result
        assert "could not be started" in blocked["reason"] and "No such file" in blocked["reason"]


def test_a_group_kill_asked_for_before_the_pid_is_known_happens_when_it_comes():
    """A hook's deadline (or its call's end) may come before the zygote names its pid: its process group
    is killed as soon as the pid is known — the hook and what it started."""
    import asyncio
    import subprocess

    from harness_sidecar.containment import zygote

    group = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30; wait"], start_new_session=True)
    try:
        async def late_pid() -> None:
            transport = zygote._Transport(asyncio.get_running_loop(), asyncio.SubprocessProtocol())
            transport.at_once = True
            transport.kill_group()  # no pid yet: nothing to kill, remembered
            time.sleep(0.2)
            assert group.poll() is None
            transport.started(group.pid, os.getpid())  # we are its parent, as the zygote would be
            transport.close()

        asyncio.run(late_pid())
        assert group.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.system(f"pgrep -g {group.pid} >/dev/null") == 0:
            time.sleep(0.05)
        assert os.system(f"pgrep -g {group.pid} >/dev/null") != 0  # its sleeps are gone too
    finally:
        if group.poll() is None:
            os.killpg(group.pid, signal.SIGKILL)
            group.wait()


STOPPER = r'''
import os, signal, sys
sys.stdin.buffer.read()
marker = os.path.join(sys.argv[1], "stopped")
if not os.path.exists(marker):
    with open(marker, "w") as f:
        f.write(str(os.getppid()))
    os.kill(os.getppid(), signal.SIGSTOP)  # its zygote, in its domain: stopped, not killed
'''


def test_a_stopped_zygote_fails_the_next_hook_at_its_deadline_not_never(spawn, tmp_path):
    """A hook can stop its own zygote (they share a domain). The hook that stopped it is answered (its
    exit is read without the zygote), and the next hook, which that zygote never starts, fails closed
    at its deadline — the deadline counts from the call, not from a pid that never comes."""
    root = tmp_path / "stopper"
    script = write(tmp_path / "stopper.py", STOPPER)
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": sys.executable, "args": [str(script), str(tmp_path)], "timeout": 1}]}]}}))
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, root)
    try:
        assert bash(sidecar, thread)["isError"] is False
        started = time.monotonic()
        result = bash(sidecar, thread)
        blocked = result["details"]["blocked"]
        assert blocked["kind"] == "hook_failed" and "did not finish within 1000 ms" in blocked["reason"], result
        assert time.monotonic() - started < 30
    finally:
        zygote = int((tmp_path / "stopped").read_text())
        try:
            os.kill(zygote, signal.SIGCONT)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("code", [2, 0])
def test_a_hook_that_closes_its_output_and_goes_on_is_waited_for(spawn, tmp_path, code):
    """The sidecar reads a hook's pid when its pipes end (the zygote says it before letting go of them);
    a hook whose pipes end while it still runs is waited for, and its own exit status is the one acted on."""
    root = tmp_path / "closes"
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"exec >/dev/null 2>&1 </dev/null; sleep 0.3; exit {code}"}]}]}}))
    sidecar = spawn(env=child_env(), on_request=editor)
    thread = start(sidecar, root)
    for _ in range(2):
        result = bash(sidecar, thread)
        if code == 2:
            assert result["isError"] is True and result["details"]["blocked"]["kind"] == "hook", result
        else:
            assert result["isError"] is False, result
