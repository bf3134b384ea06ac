"""protocol-v4 §6 "stdout is written off the event loop", through the real process, as an editor sees it.

An editor that has not read a 16 MB answer yet holds up only what it has not read: the sidecar goes
on serving every thread, a small answer made meanwhile overtakes a large answer still waiting (answers
need no order), frames are never interleaved, every request is answered once, nothing is lost when
the sidecar exits, and an editor that stops reading altogether (EPIPE) does not keep it from exiting.

The order is forced without timing: with ``--max-in-flight 1`` the requests run one after another,
so when thread B's last call has run (its extension wrote a trace file, seen by a bounded poll) the
first large answer is being written into a pipe nobody reads, the second is queued, and thread B's
``tools/list`` answer is queued after it.
"""

from __future__ import annotations

import io
import json
import subprocess
import threading
import time

from harness_sidecar.console.client import child_env, sidecar_command
from helpers import add_skill, write

BIG = 16_000_000
EXTENSION_A = f'''
def big(call_id, arguments):
    return "x" * {BIG}
def activate(api):
    api.register_tool(name="big", description="A 16 MB result.", input_schema={{}}, execute=big)
'''
EXTENSION_B = '''
TRACE = {trace!r}
def note(call_id, arguments):
    with open(TRACE, "a") as f:
        f.write(call_id + "\\n")
    return "noted " + call_id
def activate(api):
    api.register_tool(name="note", description="", input_schema={{}}, execute=note)
'''


class Editor:
    """The real sidecar on raw pipes: this editor reads stdout only when asked to."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(sidecar_command() + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=child_env(), bufsize=0)
        self.out = io.BufferedReader(self.proc.stdout, 1 << 20)  # a raw pipe's readline reads byte by byte
        self.next_id = 1

    def send(self, method: str, params: dict) -> int:
        request_id = self.next_id
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params}).encode() + b"\n")
        return request_id

    def read_line(self) -> bytes:
        return self.out.readline()

    def call(self, method: str, params: dict) -> dict:
        request_id = self.send(method, params)
        message = json.loads(self.read_line())
        assert message["id"] == request_id and "result" in message, message
        return message["result"]


def _threads(editor: Editor, tmp_path) -> tuple[str, str, object]:
    a = tmp_path / "a"
    add_skill(a, "demo", "Use when testing.")
    write(a / "extensions" / "big.py", EXTENSION_A)
    b = tmp_path / "b"
    add_skill(b, "demo", "Use when testing.")
    trace = tmp_path / "trace.txt"
    write(b / "extensions" / "noter.py", EXTENSION_B.format(trace=str(trace)))
    editor.call("initialize", {})
    thread_a = editor.call("thread/start", {"roots": [str(a)], "trustedExtensions": ["big"]})["threadId"]
    thread_b = editor.call("thread/start", {"roots": [str(b)], "trustedExtensions": ["noter"]})["threadId"]
    return thread_a, thread_b, trace


def _call(thread: str, call_id: str, name: str) -> dict:
    return {"threadId": thread, "call": {"id": call_id, "name": name, "arguments": {}}}


def _wait_for_file(path, within_s: float = 60.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return True
        time.sleep(0.02)
    return False


def test_a_small_answer_overtakes_a_large_one_the_editor_has_not_read(tmp_path):
    editor = Editor("--max-in-flight", "1")
    try:
        thread_a, thread_b, trace = _threads(editor, tmp_path)
        first = editor.send("tools/call", _call(thread_a, "a1", "big"))
        second = editor.send("tools/call", _call(thread_a, "a2", "big"))
        listing = editor.send("tools/list", {"threadId": thread_b})
        noted = editor.send("tools/call", _call(thread_b, "b2", "note"))
        # Nothing of stdout is read: the first 16 MB answer fills the pipe. Thread B is served all the same.
        assert _wait_for_file(trace), "thread B's call never ran while thread A's answer was unread"
        order = []
        sizes = {}
        for _ in range(4):
            line = editor.read_line()
            message = json.loads(line)  # a whole frame each: never two interleaved
            order.append(message["id"])
            sizes[message["id"]] = len(line)
            if message["id"] in (first, second):
                text = message["result"]["result"]["content"][0]["text"]
                assert text == "x" * BIG
            elif message["id"] == noted:
                assert message["result"]["result"]["content"][0]["text"] == "noted b2"
            else:
                assert "tools" in message["result"]
        assert sorted(order) == sorted([first, second, listing, noted])  # each answered once
        assert order[0] == first  # the one being written when the others were made
        assert order.index(listing) < order.index(second), order  # the small answer overtook the large one
        editor.proc.stdin.close()
        assert editor.out.read() == b""  # nothing more
        assert editor.proc.wait(30) == 0
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
            editor.proc.wait()


def test_large_answers_in_flight_at_eof_are_all_written_before_the_sidecar_exits(tmp_path):
    editor = Editor()
    try:
        thread_a, thread_b, _trace = _threads(editor, tmp_path)
        ids = [editor.send("tools/call", _call(thread_a, f"a{n}", "big")) for n in range(3)]
        ids.append(editor.send("tools/list", {"threadId": thread_b}))
        editor.proc.stdin.close()  # EOF with the answers still to be made and written
        out = editor.out.read()  # until the sidecar closes stdout: it exited
        assert editor.proc.wait(30) == 0
        messages = [json.loads(line) for line in out.splitlines()]
        assert sorted(m["id"] for m in messages) == sorted(ids)
        assert all(m["result"]["result"]["content"][0]["text"] == "x" * BIG for m in messages if m["id"] != ids[-1])
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
            editor.proc.wait()


def test_an_editor_that_stops_reading_stdout_does_not_keep_the_sidecar_from_exiting(tmp_path):
    editor = Editor()
    try:
        thread_a, thread_b, _trace = _threads(editor, tmp_path)
        editor.out.close()  # EPIPE from now on
        for n in range(2):
            editor.send("tools/call", _call(thread_a, f"a{n}", "big"))
        editor.send("tools/list", {"threadId": thread_b})
        done = threading.Event()
        editor.proc.stdin.close()
        threading.Thread(target=lambda: (editor.proc.wait(), done.set()), daemon=True).start()
        assert done.wait(60), "the sidecar did not exit after its stdout broke"
        assert editor.proc.returncode == 0
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
            editor.proc.wait()
