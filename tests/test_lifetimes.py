"""Nothing a thread's code starts outlives its owner, and no thread takes another's share (v3 §1).

Every test drives the real sidecar, which starts real hosts and MCP servers; the extension and the
server act as an attacker with the user's rights would: a child, a ``setsid`` child and a
``fork``+``setsid``+``fork`` grandchild (re-parented away from its owner), and a fork bomb. Whether
a process still lives is judged from ``/proc`` by pid *and* start time, so a reused pid never passes
for a survivor. Each lifetime test runs three ways: with the cgroups the kernel offers (on a hybrid
machine: the v1 ``pids`` hierarchy), with cgroup v2 alone (``HARNESS_SIDECAR_CGROUPS=v2``: membership
and ``cgroup.kill``), and with cgroups switched off (``=off``: the subreaper path).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sys
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import SidecarProcess, child_env, sidecar_command
from helpers import add_skill, write

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process lifetimes are Linux's /proc")

# thread/close ends a group still stopping at 2.2 s (containment.lifetimes.STOP_DEADLINE_S); a stubborn server's
# graceful stop would take 4 s. 3.6 s tells the two apart and leaves a loaded 2-core machine 1.4 s to reap.
GONE_WITHIN_S = 3.6

SPAWNER = """\
import json, os, subprocess

def spawn(call_id, arguments):
    kids = [subprocess.Popen(["sleep", "600"]).pid,
            subprocess.Popen(["setsid", "sleep", "600"]).pid]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a daemon: its own session, and re-parented away from us
        try:
            os.setsid()
            if os.fork() == 0:
                os.write(w, str(os.getpid()).encode())
                os.execvp("sleep", ["sleep", "600"])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    os.close(w)
    kids.append(int(os.read(r, 64)))
    os.close(r)
    return json.dumps({"host": os.getpid(), "kids": kids})

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
    api.register_tool(name="spawn", description="", input_schema={}, execute=spawn)
    api.register_tool(name="bomb", description="", input_schema={}, execute=bomb)
"""

# A stdio MCP server that leaves a setsid grandchild behind at start (its pid in PIDFILE).
MCP_SERVER = """\
import json, os, signal, subprocess, sys, time
pidfile = sys.argv[1]
stubborn = "--stubborn" in sys.argv  # ignores SIGTERM and lives on after EOF
crashes = "--exit-on-call" in sys.argv  # exits (status 3) when its tool is called
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
kid = subprocess.Popen(["setsid", "sleep", "600"]).pid
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        os.execvp("sleep", ["sleep", "600"])
    os._exit(0)
os.waitpid(pid, 0)
os.close(w)
grand = int(os.read(r, 64))
with open(pidfile + ".tmp", "w") as f:
    json.dump({"server": os.getpid(), "kids": [kid, grand]}, f)
os.rename(pidfile + ".tmp", pidfile)
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "leaver", "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "noop", "inputSchema": {"type": "object"}}]}
    elif crashes:
        os._exit(3)
    else:
        result = {"content": [{"type": "text", "text": "ok"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
if stubborn:
    time.sleep(600)
"""


SEEN: set[tuple[int, int]] = set()  # every process a test saw started: none is left behind, pass or fail


@pytest.fixture(autouse=True)
def _leave_nothing():
    yield
    for pid, start in list(SEEN):
        if identity(pid, record=False) == (pid, start):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    SEEN.clear()


def identity(pid: int, record: bool = True) -> tuple[int, int] | None:
    """(pid, start time) of a live process; None for one that is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    if record:
        SEEN.add((pid, int(fields[19])))
    return pid, int(fields[19])


def alive(ids: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [i for i in ids if identity(i[0], record=False) == i]


def assert_gone_within(ids: list[tuple[int, int]], since: float, what: str) -> None:
    """Every process of ``ids`` is gone, and was gone within ``GONE_WITHIN_S`` of ``since``."""
    while alive(ids) and time.monotonic() - since < GONE_WITHIN_S:
        time.sleep(0.02)
    took = time.monotonic() - since
    survivors = alive(ids)
    assert not survivors, f"{len(survivors)} of {len(ids)} processes outlived {what} by {GONE_WITHIN_S} s"
    assert took <= GONE_WITHIN_S + 0.1, f"the processes outlived {what} by {took:.2f} s"


def close(sidecar: SidecarProcess, thread: str, ids: list[tuple[int, int]], what: str = "thread/close") -> None:
    """thread/close, watching the processes die while it is answered (not only after)."""
    since = time.monotonic()
    pending = sidecar.request_async("thread/close", {"threadId": thread})
    assert_gone_within(ids, since, what)
    assert sidecar.wait_for(pending, 30)["result"] == {"state": {}}  # v4 §5: thread/close answers the extensions' state


def marked(marker: str) -> list[tuple[int, int]]:
    """The live processes whose command line carries ``marker``."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read().split(b"\0"):
                        found = identity(int(entry))
                        if found:
                            out.append(found)
            except OSError:
                pass
    return out


def cgroup_mounts(version2: bool | None = None) -> list[str]:
    """The writable cgroup mounts: v1 ``pids`` (unless ``version2``) and cgroup2 with ``cgroup.kill``."""
    found = []
    with open("/proc/self/mounts") as f:
        for line in f:
            _dev, path, kind, options = line.split()[:4]
            if kind == "cgroup2":
                usable = os.path.exists(os.path.join(path, "cgroup.kill")) or bool(os.listdir(path))
            elif kind == "cgroup" and "pids" in options.split(",") and not version2:
                usable = True
            else:
                continue
            if usable and os.access(path, os.W_OK):
                found.append(path)
    return found


def cgroups_offered() -> bool:
    """Whether this machine lets us make cgroups (v1 pids, or a cgroup2 mount we can write)."""
    return bool(cgroup_mounts())


@pytest.fixture(params=["cgroups", "cgroup2", "subreaper"])
def mode(request):
    if request.param == "cgroups" and not cgroups_offered():
        pytest.skip("this machine offers no writable cgroups")
    if request.param == "cgroup2" and not cgroup_mounts(version2=True):
        pytest.skip("this machine offers no writable cgroup2 hierarchy")
    return request.param


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.", "BODY\n")
    write(root / "extensions" / "spawner.py", SPAWNER)
    return root


def sidecar_env(mode: str) -> dict[str, str]:
    switch = {"subreaper": "off", "cgroup2": "v2"}.get(mode)
    return child_env({"HARNESS_SIDECAR_CGROUPS": switch} if switch else {})


def started(sidecar: SidecarProcess, root: Path, **extra) -> str:
    return sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": [{"id": "spawner"}], **extra},
                        timeout=60)["threadId"]


def running(pids: list[int], mode: str) -> list[tuple[int, int]]:
    """The identities of ``pids``, the processes a test's code started, each of which must be running.

    The last is a double-forked daemon. Without cgroups it is re-parented to the sidecar (a
    subreaper) and swept within ``SWEEP_S`` — on a loaded machine that can happen before we look;
    it ran (it wrote its pid), so there it is left out instead of failing the test.
    """
    ids = [identity(pid) for pid in pids]
    if mode == "subreaper" and ids[-1] is None:
        ids = ids[:-1]
    assert all(ids), f"the processes should run: {pids} → {ids}"
    return ids  # type: ignore[return-value]


def spawn_kids(sidecar: SidecarProcess, thread: str, mode: str) -> tuple[int, list[tuple[int, int]]]:
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "s", "name": "spawn", "arguments": {}}},
                          timeout=60)["result"]
    assert result["isError"] is False, result
    report = json.loads(result["content"][0]["text"])
    return report["host"], running(report["kids"], mode)


def fence_of(pid: int) -> dict[str, str]:
    """hierarchy ("pids" or "" for cgroup2) → the process's cgroup, where it is one of the sidecar's."""
    with open(f"/proc/{pid}/cgroup") as f:
        entries = [line.rstrip("\n").split(":", 2) for line in f]
    return {controllers: path for _id, controllers, path in entries if "/harness-sidecar-" in path}


def test_a_threads_processes_end_with_thread_close(spawn, ws, mode):
    sidecar = spawn(env=sidecar_env(mode))
    thread = started(sidecar, ws)
    other = started(sidecar, ws)
    host, kids = spawn_kids(sidecar, thread, mode)
    # the setsid double-forked daemon is still in its thread's group (without cgroups a sweep may end it
    # any moment: look at the setsid child instead)
    where = fence_of(kids[2 if mode != "subreaper" else 1][0])
    expected_fence = {"cgroups": {"pids"}, "cgroup2": {""}, "subreaper": set()}[mode]
    assert set(where) == expected_fence, where
    assert all(path.endswith(f"/host-{host}") for path in where.values()), where
    _other_host, others = spawn_kids(sidecar, other, mode)
    time.sleep(1.5)  # a sweep (subreaper mode) has run: a running owner keeps what stays in its tree
    # Without cgroups the daemon, re-parented to the sidecar, is ended at the first sweep even though
    # its owner runs (the documented price of the subreaper path); with cgroups it lives with its owner.
    expected = others if mode != "subreaper" else others[:2]
    assert alive(others) == expected
    close(sidecar, thread, kids)
    assert alive(expected) == expected  # the other thread's processes are its own: untouched
    close(sidecar, other, others)


def test_a_hosts_processes_end_when_the_host_is_killed_and_the_thread_goes_on(spawn, ws, mode):
    sidecar = spawn(env=sidecar_env(mode))
    thread = started(sidecar, ws)
    host, kids = spawn_kids(sidecar, thread, mode)
    since = time.monotonic()
    os.kill(host, signal.SIGKILL)  # a crash, as another process of the user could cause it
    assert_gone_within(kids, since, "its host's exit")
    # the host is started again on the next call, and its new processes are fenced the same way
    new_host, new_kids = spawn_kids(sidecar, thread, mode)
    assert new_host != host
    close(sidecar, thread, new_kids, "thread/close after a restart")


@pytest.mark.parametrize("how", ["SIGKILL", "EOF"])
def test_nothing_outlives_the_sidecar(spawn, ws, mode, tmp_path, how):
    write(tmp_path / "leaver.py", MCP_SERVER)
    pidfile = tmp_path / "mcp.json"
    sidecar = spawn(env=sidecar_env(mode))
    thread = started(sidecar, ws, mcpServers=[{"name": "leaver", "required": True,
                                               "command": [sys.executable, str(tmp_path / "leaver.py"),
                                                           str(pidfile)]}])
    host, kids = spawn_kids(sidecar, thread, mode)
    report = json.loads(pidfile.read_text())
    mcp = running([report["server"], *report["kids"]], mode)
    everything = [identity(host)] + kids + mcp  # type: ignore[list-item]
    time.sleep(0.6)  # subreaper mode: the reaper looks every 0.5 s
    since = time.monotonic()
    if how == "SIGKILL":
        sidecar.proc.kill()
    else:
        sidecar.close_stdin()  # the editor went away: the sidecar ends its threads and exits
    sidecar.proc.wait(30)
    assert_gone_within(everything, since, f"the sidecar's end by {how}")


def test_an_mcp_servers_setsid_grandchildren_end_with_thread_close(spawn, ws, mode, tmp_path):
    write(tmp_path / "leaver.py", MCP_SERVER)
    pidfile = tmp_path / "mcp.json"
    sidecar = spawn(env=sidecar_env(mode))
    answer = sidecar.call("thread/start", {"roots": [str(ws)], "mcpServers": [{
        "name": "leaver", "required": True, "command": [sys.executable, str(tmp_path / "leaver.py"), str(pidfile)]}]},
        timeout=60)
    assert any(t["name"] == "mcp__leaver__noop" for t in answer["tools"])
    report = json.loads(pidfile.read_text())
    ids = running([report["server"], *report["kids"]], mode)
    close(sidecar, answer["threadId"], ids)


def test_an_mcp_servers_grandchildren_end_when_it_exits_and_the_thread_goes_on(spawn, ws, mode, tmp_path):
    write(tmp_path / "leaver.py", MCP_SERVER)
    pidfile = tmp_path / "mcp.json"
    sidecar = spawn(env=sidecar_env(mode))
    thread = started(sidecar, ws, mcpServers=[{"name": "crasher", "command": [
        sys.executable, str(tmp_path / "leaver.py"), str(pidfile), "--exit-on-call"]}])
    report = json.loads(pidfile.read_text())
    ids = running([report["server"], *report["kids"]], mode)
    _host, kids = spawn_kids(sidecar, thread, mode)  # the thread's host's processes: not the server's
    since = time.monotonic()
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "x", "name": "mcp__crasher__noop",
                                                                     "arguments": {}}}, timeout=60)["result"]
    assert result["isError"] is True
    assert_gone_within(ids, since, "the MCP server's exit")
    expected = kids if mode != "subreaper" else kids[:2]  # (without cgroups the daemon is swept anyway)
    assert alive(expected) == expected  # the host's processes are not the server's: they live on


@pytest.mark.parametrize("mode", ["cgroups", "cgroup2"], indirect=True)
def test_a_stubborn_mcp_server_is_ended_with_its_group_before_its_graceful_stop_would_end(spawn, ws, mode, tmp_path):
    """It ignores EOF on stdin and SIGTERM: the graceful stop would take 4 s; the thread's group is
    ended at 2.2 s. (Without cgroups the stop sequence stands: 2 s, SIGTERM, 2 s, SIGKILL.)"""
    write(tmp_path / "leaver.py", MCP_SERVER)
    pidfile = tmp_path / "mcp.json"
    sidecar = spawn(env=sidecar_env(mode))
    answer = sidecar.call("thread/start", {"roots": [str(ws)], "mcpServers": [{
        "name": "stubborn", "required": True,
        "command": [sys.executable, str(tmp_path / "leaver.py"), str(pidfile), "--stubborn"]}]}, timeout=60)
    report = json.loads(pidfile.read_text())
    close(sidecar, answer["threadId"], running([report["server"], *report["kids"]], mode))


def test_a_fork_bomb_is_bounded_by_max_processes_and_other_threads_start_and_call(spawn, ws):
    if not cgroups_offered():
        pytest.skip("limits.maxProcesses needs cgroups, which this machine does not offer")
    sidecar = spawn()
    marker = f"600.{os.getpid()}"
    bomber = started(sidecar, ws, limits={"maxProcesses": 64})
    pending = sidecar.request_async("tools/call", {"threadId": bomber, "call": {
        "id": "b", "name": "bomb", "arguments": {"marker": marker}}})
    time.sleep(0.3)
    victim = started(sidecar, ws)  # while the bomb goes off: starts (a new host) and calls normally
    _host, kids = spawn_kids(sidecar, victim, "cgroups")
    result = sidecar.wait_for(pending, 60)["result"]["result"]
    bombed = json.loads(result["content"][0]["text"])
    assert bombed["errno"] == errno.EAGAIN, bombed  # the fork failed inside the bomber's own process
    assert 0 < bombed["forked"] < 64
    deadline = time.monotonic() + 10
    while len(marked(marker)) < bombed["forked"] and time.monotonic() < deadline:
        time.sleep(0.05)  # the last children may not have reached exec yet
    assert len(marked(marker)) == bombed["forked"]
    again = started(sidecar, ws)  # and after it: still no -32603 for anyone else
    spawn_kids(sidecar, again, "cgroups")
    close(sidecar, bomber, marked(marker), "the bomber's thread/close")
    assert alive(kids) == kids  # the victim's processes live on


def test_max_threads_caps_open_threads(spawn, ws):
    sidecar = spawn(command=sidecar_command() + ["--max-threads", "2"])
    first = sidecar.call("thread/start", {"roots": [str(ws)]})["threadId"]
    sidecar.call("thread/start", {"roots": [str(ws)]})
    refused = sidecar.request("thread/start", {"roots": [str(ws)]})
    assert refused["error"]["code"] == -32071
    assert refused["error"]["data"] == {"kind": "too_many_threads", "limit": 2}
    sidecar.call("thread/close", {"threadId": first})
    assert sidecar.call("thread/start", {"roots": [str(ws)]})["threadId"]


def test_max_threads_must_be_a_positive_integer():
    import subprocess

    done = subprocess.run(sidecar_command() + ["--max-threads", "0"], capture_output=True, text=True,
                          env=child_env(), timeout=30)
    assert done.returncode == 2 and "--max-threads takes a positive integer" in done.stderr


def test_the_sidecar_out_of_fds_answers_resources_exhausted_and_serves_on(spawn, ws):
    def few_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    import subprocess

    real = subprocess.Popen
    sidecar = None

    class Limited(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            kwargs["preexec_fn"] = few_fds
            super().__init__(*args, **kwargs)

    subprocess.Popen = Limited  # the sidecar alone runs under the limit
    try:
        sidecar = spawn(command=sidecar_command() + ["--max-threads", "1000"])
    finally:
        subprocess.Popen = real
    threads, refused = [], None
    for _ in range(40):
        answer = sidecar.request("thread/start", {"roots": [str(ws)], "trustedExtensions": [{"id": "spawner"}]},
                                 timeout=60)
        if "error" in answer:
            refused = answer["error"]
            break
        threads.append(answer["result"]["threadId"])
    assert threads, "a first thread fits in 40 fds"
    assert refused is not None, "40 fds cannot hold 40 hosts"
    assert refused["code"] == -32070 and refused["data"]["kind"] == "resources_exhausted", refused
    assert refused["data"]["errno"] == errno.EMFILE and "thread/start" in refused["message"]
    for thread in threads:
        sidecar.call("thread/close", {"threadId": thread})
    # the sidecar serves on: with fds given back, a thread starts and its extension runs
    thread = started(sidecar, ws)
    spawn_kids(sidecar, thread, "cgroups" if cgroups_offered() else "subreaper")
