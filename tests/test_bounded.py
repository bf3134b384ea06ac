"""Bounded everywhere: what one thread's processes send never makes the sidecar, or another thread, wait.

Each test runs the real sidecar with a trusted-but-hostile extension in thread 1 and measures
what an editor would see in thread 2 (protocol-v3 §1 "Bounded everywhere").
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import child_env
from helpers import add_skill, error_kind, write


def extension(root: Path, ext_id: str, code: str) -> Path:
    return write(root / "extensions" / f"{ext_id}.py", "import os, sys, json\n" + code)


def tool(name: str, body: str) -> str:
    return (f"def {name}(call_id, arguments):\n" + "".join(f"    {line}\n" for line in body.splitlines())
            + f"def activate(api):\n    api.register_tool(name={name!r}, description='', input_schema={{}}, "
              f"execute={name})\n")


def call(sidecar, thread: str, name: str, arguments=None, call_id: str = "c1", timeout: float = 60):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}},
                        timeout=timeout)


def thread(sidecar, root: Path, trusted=(), **extra) -> str:
    return sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": list(trusted),
                                         **extra})["threadId"]


@pytest.fixture
def roots(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    add_skill(one, "alpha", "Use when testing alpha.")
    add_skill(two, "beta", "Use when testing beta.")
    return one, two


def test_an_editor_that_does_not_read_stderr_never_stops_the_sidecar(spawn, roots) -> None:
    """Before: a host printing 2.3 MB to an undrained stderr blocked the whole sidecar in write(2)."""
    one, two = roots
    extension(one, "noisy", tool("noisy", "for i in range(40000):\n    print('x' * 80, file=sys.stderr)\n"
                                          "sys.stderr.flush()\nreturn 'printed'"))
    read_end, write_end = os.pipe()  # the editor's stderr pipe, which it never reads
    try:
        sidecar = spawn(stderr=write_end)
        os.close(write_end)
        first = thread(sidecar, one, ["noisy"])
        second = thread(sidecar, two)
        result = call(sidecar, first, "noisy")["result"]
        assert result["content"][0]["text"] == "printed" and result["isError"] is False
        began = time.monotonic()
        listed = sidecar.call("tools/list", {"threadId": second}, timeout=30)
        assert "load_skill" in [t["name"] for t in listed["tools"]]
        assert time.monotonic() - began < 5.0  # before: never answered
        deadline = time.monotonic() + 10
        while not any(n["method"] == "thread/diagnostic" and n["params"]["kind"] == "stderr_dropped"
                      for n in sidecar.notifications):
            assert time.monotonic() < deadline, sidecar.notifications
            sidecar.call("tools/list", {"threadId": second}, timeout=30)
        dropped = [n["params"] for n in sidecar.notifications
                   if n["method"] == "thread/diagnostic" and n["params"]["kind"] == "stderr_dropped"]
        assert dropped[0]["threadId"] == first and dropped[0]["dropped"] > 0
        assert len(dropped) == 1  # at most one a minute per thread
        assert all(d["threadId"] == first for d in dropped)  # thread 2 printed nothing
    finally:
        os.close(read_end)


FLOODS = {
    # a 60 MiB line written straight onto the channel (the host's fd is its first argument)
    "a 60 MiB channel line": "import socket\ns = socket.socket(fileno=os.dup(int(sys.argv[1])))\ns.setblocking(True)\n"
                             "s.sendall(b'[\"done\",999,\"' + b'x' * (60 << 20) + b'\"]\\n')\nreturn 'sent'",
    # a 15 MB result that an observer also sees
    "a 15 MB result": "return 'x' * (15 << 20)",
    # 14 MB of small objects: ~0.4 s to parse on the loop
    "500,000 small values": "return {'content': [{'type': 'text', 'text': 'ab'} for _ in range(500000)]}",
}


@pytest.mark.parametrize("flood", list(FLOODS))
def test_a_flooding_thread_does_not_hold_up_another(spawn, roots, flood) -> None:
    """Before: a 60 MiB line froze every thread for ~36 s, a 15 MB result with an observer ~3 s (v3 §1)."""
    one, two = roots
    extension(one, "flood", tool("flood", FLOODS[flood]).replace(
        "def activate(api):\n", "def watch(event):\n    pass\ndef activate(api):\n    api.on('tool_result', watch)\n"))
    sidecar = spawn()
    first = thread(sidecar, one, ["flood"])
    second = thread(sidecar, two)
    waits, calls = [], []
    for i in range(2):
        called = time.monotonic()
        request = sidecar.request_async("tools/call", {"threadId": first, "call": {
            "id": f"c{i}", "name": "flood", "arguments": {}}})
        while request not in sidecar._stash:
            began = time.monotonic()
            sidecar.call("tools/list", {"threadId": second}, timeout=120)
            waits.append(time.monotonic() - began)
            time.sleep(0.005)
        calls.append(time.monotonic() - called)
        answer = sidecar._stash.pop(request)["result"]["result"]
        if flood == "500,000 small values":  # refused before parsing, as too large
            assert answer["isError"] and answer["details"]["kind"] == "too_large", answer
        else:
            assert not answer["isError"], answer
    waits.sort()
    # The contract's figure is p99 ≤ 100 ms (bench/); a loaded 2-core CI machine gets 10 times that
    # here, and a machine loaded far past its cores more: there, held up means waiting for most of the
    # flood (before: the whole of it, 3-36 s), so the bound is 1 s or half the flood call's own time.
    assert waits[-1] < max(1.0, 0.5 * max(calls)), (flood, waits[-5:], calls)
