"""The wire as an editor (or a person piping JSONL) sees it, through the real process."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from harness_sidecar.console.client import child_env, sidecar_command
from helpers import WORKSPACE, add_skill

ROOTS = [str(WORKSPACE / "project"), str(WORKSPACE / "user")]


def run_lines(data: bytes, timeout: float = 30) -> tuple[list[dict], int, bytes]:
    """Pipe raw bytes into a fresh sidecar; return every stdout message, the exit code and stderr."""
    proc = subprocess.run(sidecar_command(), input=data, capture_output=True, env=child_env(), timeout=timeout)
    messages = [json.loads(line) for line in proc.stdout.splitlines(keepends=False) if line.strip()]
    return messages, proc.returncode, proc.stderr


INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'


def test_initialize_answers_server_info():
    messages, code, _ = run_lines(INIT)
    assert code == 0
    (response,) = messages
    assert response["jsonrpc"] == "2.0" and response["id"] == 0
    assert response["result"]["serverInfo"]["name"] == "harness-sidecar"
    assert response["result"]["protocolVersion"] == "4"


@pytest.mark.parametrize("line, code, kind", [
    (b'{"id": 1, "method": ', -32700, "parse_error"),
    (b'\xff\xfe{"id": 1}', -32700, "parse_error"),
    (b'[{"id": 1, "method": "initialize"}]', -32600, "invalid_request"),
    (b'"just a string"', -32600, "invalid_request"),
    (b'{"id": 1}', -32600, "invalid_request"),
    (b'{"id": 1.5, "method": "tools/list"}', -32600, "invalid_request"),
    (b'{"id": {"x": 1}, "method": "tools/list"}', -32600, "invalid_request"),
    (b'{"id": true, "method": "tools/list"}', -32600, "invalid_request"),
    (b'{"id": 7, "method": 12}', -32600, "invalid_request"),
    (b'{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}', -32600, "invalid_request"),
])
def test_bad_messages_are_answered_and_the_sidecar_keeps_serving(line, code, kind):
    messages, exit_code, _ = run_lines(INIT + line + b"\n" + b'{"id": 2, "method": "shutdown"}\n'
                                       + b'{"method": "exit"}\n')
    assert exit_code == 0
    assert [m.get("id") for m in messages][0] == 0
    error = messages[1]
    assert error["error"]["code"] == code and error["error"]["data"]["kind"] == kind
    if code == -32700 or b"id\": 1." in line or b"{\"x\"" in line or b"true" in line or b"[" in line[:1] \
            or line.startswith(b'"'):
        assert error["id"] is None
    assert messages[2] == {"jsonrpc": "2.0", "id": 2, "result": None}


def test_requests_before_initialize_get_32002_and_jsonrpc_is_optional():
    messages, _, _ = run_lines(b'{"id": "a", "method": "tools/list", "params": {}}\n' + INIT
                               + b'{"id": "b", "method": "no/such"}\n')
    assert messages[0]["id"] == "a" and messages[0]["error"]["code"] == -32002
    assert messages[1]["id"] == 0 and "result" in messages[1]
    assert messages[2]["id"] == "b" and messages[2]["error"]["code"] == -32601


def test_invalid_params_name_the_field():
    messages, _, _ = run_lines(INIT + b'{"id": 1, "method": "thread/start", "params": {"roots": ["relative/path"]}}\n'
                               + b'{"id": 2, "method": "thread/start", "params": []}\n'
                               + b'{"id": 3, "method": "thread/start", "params": {"roots": "/x"}}\n'
                               + b'{"id": 4, "method": "skills/activate", "params": {"threadId": 5}}\n')
    errors = {m["id"]: m["error"] for m in messages[1:]}
    assert errors[1]["code"] == -32602 and errors[1]["data"] == {
        "kind": "invalid_params", "field": "roots[0]"}
    assert errors[2]["code"] == -32602
    assert errors[3]["data"]["field"] == "roots"
    assert errors[4]["data"]["field"] == "threadId"


def test_unknown_thread_is_a_domain_error():
    messages, _, _ = run_lines(INIT + b'{"id": 1, "method": "context/build", "params": {"threadId": "nope"}}\n')
    error = messages[1]["error"]
    assert -32099 <= error["code"] <= -32000 and error["data"]["kind"] == "thread_not_found"


def test_too_large_line_is_refused_and_the_next_line_is_read():
    big = b'{"id": 9, "method": "x", "params": {"pad": "' + b"a" * (16 * 1024 * 1024 + 10) + b'"}}\n'
    messages, code, _ = run_lines(INIT + big + b'{"id": 3, "method": "shutdown"}\n{"method":"exit"}\n', timeout=60)
    assert code == 0
    assert messages[1]["id"] is None and messages[1]["error"]["data"]["kind"] == "too_large"
    assert messages[2]["id"] == 3 and messages[2]["result"] is None


def test_line_separator_inside_a_string_does_not_split_the_line(tree):
    root = tree("r")
    add_skill(root, "x")
    request = {"id": 1, "method": "thread/start", "params": {"roots": [str(root)], "note": "a\u2028b\u2029c\x85d"}}
    data = INIT + json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n"
    messages, _, _ = run_lines(data)
    assert len(messages) == 2 and messages[1]["result"]["catalog"]["skills"][0]["name"] == "x"


def test_crlf_blank_lines_and_a_last_line_without_newline():
    messages, code, _ = run_lines(b"\r\n\n" + INIT.replace(b"\n", b"\r\n") + b"\n  \n" + b'{"id": 5, "method": "shutdown"}')
    assert [m["id"] for m in messages] == [0, 5]
    assert code == 0  # EOF after shutdown without exit: EOF ends the session normally


def test_eof_with_requests_in_flight_answers_them_all(tree):
    root = tree("r")
    for i in range(20):
        add_skill(root, f"s{i}")
    lines = [INIT, json.dumps({"id": 1, "method": "thread/start", "params": {"roots": [str(root)]}}).encode() + b"\n"]
    lines += [json.dumps({"id": 100 + i, "method": "thread/start", "params": {"roots": [str(root)]}}).encode() + b"\n"
              for i in range(50)]
    messages, code, _ = run_lines(b"".join(lines))
    assert code == 0
    assert sorted(m["id"] for m in messages) == [0, 1] + list(range(100, 150))
    assert all(len(m["result"]["catalog"]["skills"]) == 20 for m in messages[1:])


def test_pipelined_burst_gets_one_response_per_request(spawn, tree):
    root = tree("r")
    add_skill(root, "review", body="BODY\n")
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)]})["threadId"]
    methods = [("context/build", {"threadId": thread}), ("tools/list", {"threadId": thread}),
               ("skills/activate", {"threadId": thread, "name": "review"}),
               ("skills/activate", {"threadId": thread, "name": "missing"}), ("no/such", {}),
               ("tools/call", {"threadId": thread, "call": {"id": "c", "name": "load_skill",
                                                              "arguments": {"name": "review"}}})]
    payload = b""
    expected = {}
    for i in range(600):
        method, params = methods[i % len(methods)]
        payload += json.dumps({"jsonrpc": "2.0", "id": f"r{i}", "method": method, "params": params}).encode() + b"\n"
        expected[f"r{i}"] = method
    sidecar.send_raw(payload)
    seen: dict[str, dict] = {}
    while len(seen) < len(expected):
        message = sidecar.next_message(30)
        assert message["id"] not in seen, "answered twice"
        seen[message["id"]] = message
    assert {i for i, m in seen.items() if "error" in m} == {f"r{i}" for i in range(600) if i % 6 in (3, 4)}
    sidecar.close_stdin()
    assert sidecar.drain() == [] and sidecar.wait() == 0


def test_cancel_request_answers_32800(spawn, tree, tmp_path):
    ext = tmp_path / "slow.py"
    ext.write_text("import time\n"
                   "def activate(api):\n"
                   "    api.register_tool(name='slow', description='', input_schema={}, "
                   "execute=lambda call_id, args: time.sleep(30) or 'late')\n")
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [], "extensions": [{"id": "slow", "path": str(ext)}],
                                           "trustedExtensions": ["slow"]})["threadId"]
    started = time.monotonic()
    request_id = sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "slow"}})
    sidecar.notify("$/cancelRequest", {"id": request_id})
    response = sidecar.wait_for(request_id, 10)
    assert response["error"]["code"] == -32800
    assert time.monotonic() - started < 10
    assert sidecar.call("tools/list", {"threadId": thread})["tools"]  # still serving


SLEEPY = ("import time\n"
          "def activate(api):\n"
          "    api.register_tool(name='sleep', description='', input_schema={}, "
          "execute=lambda call_id, args: time.sleep(args['s']) or f'slept {args[\"s\"]}')\n")


def test_shutdown_answers_the_tool_calls_in_flight_first(spawn, tmp_path):
    """A call of an extension's tool in flight when shutdown comes is answered with its result,
    and only then shutdown (the calls run without a task of their own: shutdown still waits)."""
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [], "trustedExtensions": ["sleepy"], "extensions": [
        {"id": "sleepy", "path": str(tmp_path / "sleepy.py")}]})["threadId"]
    calls = [sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": f"c{i}", "name": "sleep",
                                                                                "arguments": {"s": 0.5}}})
             for i in range(2)]
    down = sidecar.request_async("shutdown")
    answers = [sidecar.next_message(30) for _ in range(3)]
    assert {a["id"] for a in answers[:2]} == set(calls) and answers[2]["id"] == down
    assert [a["result"]["result"]["content"][0]["text"] for a in answers[:2]] == ["slept 0.5", "slept 0.5"]
    assert answers[2]["result"] is None
    sidecar.notify("exit")
    assert sidecar.wait(10) == 0


def test_exit_without_shutdown_answers_a_tool_call_in_flight_cancelled(spawn, tmp_path):
    (tmp_path / "sleepy.py").write_text(SLEEPY)
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [], "trustedExtensions": ["sleepy"], "extensions": [
        {"id": "sleepy", "path": str(tmp_path / "sleepy.py")}]})["threadId"]
    started = time.monotonic()
    request_id = sidecar.request_async("tools/call", {"threadId": thread, "call": {"id": "c", "name": "sleep",
                                                                                    "arguments": {"s": 30}}})
    time.sleep(0.3)  # the call is in the host
    sidecar.notify("exit")
    response = sidecar.wait_for(request_id, 10)
    assert response["error"]["code"] == -32800 and response["error"]["data"]["kind"] == "cancelled"
    assert sidecar.wait(10) == 1  # exit without shutdown
    assert time.monotonic() - started < 10
    assert sidecar.drain() == []  # answered once


def test_a_request_cancelled_in_the_same_write_is_answered_once_32800(spawn):
    """Request and $/cancelRequest (twice) read together: the request is cancelled before it starts
    and still gets exactly one answer; the sidecar keeps serving."""
    sidecar = spawn()
    payload = b"".join(json.dumps(m).encode() + b"\n" for m in [
        {"jsonrpc": "2.0", "id": "early", "method": "tools/list", "params": {"threadId": "none"}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "early"}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "early"}},
        {"jsonrpc": "2.0", "id": "after", "method": "shutdown"},
    ])
    sidecar.send_raw(payload)
    first, second = sidecar.next_message(30), sidecar.next_message(30)
    assert first["id"] == "early" and first["error"]["code"] == -32800 and first["error"]["data"]["kind"] == "cancelled"
    assert second["id"] == "after" and second["result"] is None  # no second answer to 'early' came before
    sidecar.close_stdin()
    assert sidecar.drain() == []


def test_shutdown_then_exit_codes_and_requests_after_shutdown():
    messages, code, _ = run_lines(INIT + b'{"id": 1, "method": "shutdown"}\n{"id": 2, "method": "tools/list"}\n'
                                  + b'{"method": "exit"}\n{"id": 3, "method": "shutdown"}\n')
    assert code == 0
    by_id = {m["id"]: m for m in messages}
    assert by_id[1] == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert by_id[2]["error"]["data"]["kind"] == "shutting_down"
    assert len(messages) == 3  # nothing is read after exit
    _, code, _ = run_lines(INIT + b'{"method": "exit"}\n')
    assert code == 1


def test_stdout_carries_protocol_only_even_when_code_prints(tmp_path):
    ext = tmp_path / "noisy.py"
    ext.write_text("import os, sys, subprocess\n"
                   "print('import-time print')\n"
                   "os.write(1, b'raw fd 1 write\\n')\n"
                   "subprocess.run(['echo', 'child process output'])\n"
                   "def tool(call_id, args):\n"
                   "    print('tool print'); sys.stdout.write('more'); sys.stdout.flush()\n"
                   "    return 'ok'\n"
                   "def activate(api):\n"
                   "    print('activate print')\n"
                   "    api.register_tool(name='noisy', description='', input_schema={}, execute=tool)\n")
    start = json.dumps({"id": 1, "method": "thread/start", "params": {
        "roots": [], "extensions": [{"id": "noisy", "path": str(ext)}], "trustedExtensions": ["noisy"]}})
    call = json.dumps({"id": 2, "method": "tools/call", "params": {"threadId": "thread-1",
                                                                    "call": {"id": "c", "name": "noisy"}}})
    proc = subprocess.run(sidecar_command(), input=INIT + start.encode() + b"\n" + call.encode() + b"\n",
                          capture_output=True, env=child_env(), timeout=30)
    lines = proc.stdout.splitlines()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    assert json.loads(lines[-1])["result"]["result"]["content"][0]["text"] == "ok"
    for text in [b"import-time print", b"raw fd 1 write", b"child process output", b"tool print",
                 b"activate print"]:
        assert text in proc.stderr


def test_output_is_flushed_without_pythonunbuffered(spawn):
    """The response must arrive while stdin is still open (no reliance on exit-time flushing)."""
    sidecar = spawn(initialize=False)
    started = time.monotonic()
    assert sidecar.initialize()["protocolVersion"] == "4"
    assert time.monotonic() - started < 20
    assert sidecar.proc.poll() is None


def test_help_and_version():
    out = subprocess.run(sidecar_command() + ["--version"], capture_output=True, env=child_env(), text=True)
    assert out.returncode == 0 and out.stdout.startswith("harness-sidecar 0.1.0")
    out = subprocess.run(sidecar_command() + ["--help"], capture_output=True, env=child_env(), text=True)
    assert out.returncode == 0 and "check" in out.stdout and "demo" in out.stdout
    out = subprocess.run(sidecar_command() + ["bogus"], capture_output=True, env=child_env(), text=True)
    assert out.returncode == 2 and "unknown command" in out.stderr


def test_lone_surrogate_in_input_is_echoed_safely(tree):
    root = tree("r")
    add_skill(root, "x")
    data = INIT + b'{"id": "\\ud800", "method": "context/build", "params": {"threadId": "t"}}\n'
    messages, _, _ = run_lines(data)
    assert messages[1]["error"]["data"]["kind"] == "thread_not_found"
    assert messages[1]["id"] == "\ud800"


def test_default_mode_starts_without_heavy_imports():
    code = ("import sys, runpy; sys.argv=['harness-sidecar', '--version'];\n"
            "from harness_sidecar.wire import endpoint, transport\n"
            "from harness_sidecar import cli\n"
            "bad = [m for m in ('yaml', 'pygls', 'lsprotocol', 'harness_sidecar.resources.extension_sources', 'harness_sidecar.extensions.sidecar.supervisor') if m in sys.modules]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=child_env(), text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_initialize_advertises_exactly_the_served_methods():
    from harness_sidecar.threads.sidecar import Sidecar
    from harness_sidecar.wire.lifecycle import SERVED_METHODS

    assert sorted(Sidecar(peer=None).methods) == sorted(SERVED_METHODS)  # type: ignore[arg-type]


def test_content_length_framing_is_detected_and_used_both_ways(spawn, tree):
    root = tree("r")
    add_skill(root, "revue", "Utilisé pour relire — « non-ASCII » ✓.", body="Corps: ünïcödé ✓\n")
    sidecar = spawn(initialize=False, framing="content-length")
    result = sidecar.initialize()
    assert result["capabilities"]["framing"] == "content-length"
    thread = sidecar.call("thread/start", {"roots": [str(root)]})["threadId"]
    skill = sidecar.call("skills/activate", {"threadId": thread, "name": "revue"})["skill"]
    assert skill["description"] == "Utilisé pour relire — « non-ASCII » ✓." and skill["body"] == "Corps: ünïcödé ✓\n"
    sidecar.close_stdin()
    assert sidecar.wait() == 0


def test_content_length_lengths_are_bytes_and_bad_frames_are_answered():
    body = json.dumps({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "é✓"}}},
                      ensure_ascii=False).encode("utf-8")
    bad = b"Content-Length: nope\r\n\r\n"
    huge = b"Content-Length: %d\r\n\r\n" % (16 * 1024 * 1024 + 1) + b" " * (16 * 1024 * 1024 + 1)
    tail = json.dumps({"id": 2, "method": "shutdown"}).encode()
    data = (b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body) + body
            + bad + huge + b"Content-Length: %d\r\n\r\n" % len(tail) + tail)
    proc = subprocess.run(sidecar_command(), input=data, capture_output=True, env=child_env(), timeout=60)
    out = proc.stdout
    messages = []
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        messages.append(json.loads(rest[:length]))
        assert len(rest[:length]) == length
        out = rest[length:]
    assert [m.get("id") for m in messages] == [1, None, None, 2]
    assert messages[1]["error"]["code"] == -32700
    assert messages[2]["error"]["data"]["kind"] == "too_large"
    assert proc.returncode == 0


@pytest.mark.parametrize("first", [
    b'{"id": 0, "method": "initialize"}\n',  # answered before the event loop starts
    b'{"id": 0, "method": "initialize", "params": {"protocolVersion": "9"}}\n',  # the endpoint's path
    b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": null}\n',
])
def test_initialize_first_then_a_second_initialize_is_refused(first):
    messages, code, stderr = run_lines(first + b'{"id": 1, "method": "initialize"}\n{"id": 2, "method": "shutdown"}\n'
                                       + b'{"method": "exit"}\n')
    assert code == 0
    by_id = {m["id"]: m for m in messages}
    assert by_id[0]["result"]["protocolVersion"] == "4"
    assert by_id[1]["error"]["data"]["kind"] == "already_initialized"
    assert by_id[2]["result"] is None
    if b'"9"' in first:  # a version it does not serve is said (v3 is served since v4: the v4 test asks "3")
        assert b"protocol '9'; serving protocol 4" in stderr


def test_a_large_thread_start_does_not_hold_up_other_requests(spawn, tree):
    big, small = tree("big"), tree("small")
    for i in range(3000):
        add_skill(big, f"skill-{i:04d}")
    add_skill(small, "one")
    sidecar = spawn()
    other = sidecar.call("thread/start", {"roots": [str(small)]})["threadId"]
    slow = sidecar.request_async("thread/start", {"roots": [str(big)], "limits": {"maxSkillsPerRoot": 5000}})
    quick = sidecar.request_async("context/build", {"threadId": other})
    order = []
    while len(order) < 2:
        message = sidecar.next_message(60)
        order.append(message["id"])
        if message["id"] == slow:
            assert len(message["result"]["catalog"]["skills"]) == 3000
    assert order == [quick, slow]
