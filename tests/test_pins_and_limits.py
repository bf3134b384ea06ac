"""Pins and bounds, attacked from outside: what a pinned extension may load, and how much anything may send.

Every test drives the real sidecar, which runs extensions in real host processes. Planted
files write to a trace file when executed, so what ran (and what never ran) is observed from
outside, as the user who planted them would see it.
"""

from __future__ import annotations

import json
import py_compile
import sys
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import Malformed
from helpers import TraceWorkspace, add_skill, write


@pytest.fixture
def ws(tmp_path):
    return TraceWorkspace.make(tmp_path)


def start(sidecar, ws, trusted, **extra):
    return sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": trusted, **extra})


def status_of(result, ext_id):
    return next(e for e in result["catalog"]["extensions"] if e["id"] == ext_id)


def call(sidecar, thread, name, arguments=None, call_id="c1", timeout=60):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}},
                        timeout=timeout)["result"]


def compiled(source: str, target: Path, tmp: Path) -> Path:
    """``source`` compiled by this interpreter (the hosts' own) into the bytecode file ``target``."""
    src = tmp / f"planted_{target.stem}.py"
    src.write_text(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    py_compile.compile(str(src), cfile=str(target), doraise=True)
    src.unlink()
    return target


# -- pins cover what is loaded -------------------------------------------------------------------------


def _pinned_package(ws) -> Path:
    package = ws.root / "extensions" / "pinned"
    write(package / "__init__.py", ws.header() + """
trace('init', 'hashed')
import importlib
from . import real
def activate(api):
    try:
        helper = importlib.import_module(__name__ + '.helper')
        trace('helper', helper.WHO)
    except ImportError as exc:
        trace('helper_refused', str(exc))
    try:
        from . import native
        trace('native', 'imported')
    except ImportError as exc:
        trace('native_refused', str(exc))
    api.register_tool(name='who', description='', input_schema={}, execute=lambda c, a: real.WHO)
""")
    write(package / "real.py", ws.header() + "trace('real', 'hashed')\nWHO = 'hashed real.py'\n")
    return package


def test_planted_bytecode_beside_a_pinned_package_is_never_executed(spawn, ws):
    package = _pinned_package(ws)
    sidecar = spawn()
    digest = status_of(start(sidecar, ws, []), "pinned")["sha256"]
    planted = ws.header() + "trace('PLANTED', __name__)\nWHO = 'planted'\n"
    tag = sys.implementation.cache_tag
    compiled(planted, package / "helper.pyc", ws.tmp)  # sourceless bytecode beside the package's files
    compiled(planted, package / "__pycache__" / f"real.{tag}.pyc", ws.tmp)  # a cache for real.py, other source
    compiled(planted, package / "__pycache__" / f"__init__.{tag}.pyc", ws.tmp)
    compiled(planted, package / "__pycache__" / f"native.{tag}.pyc", ws.tmp)

    result = start(sidecar, ws, [{"id": "pinned", "sha256": digest}])
    assert status_of(result, "pinned")["status"] == "loaded"  # bytecode is outside the pin, and never loaded
    assert call(sidecar, result["threadId"], "who")["content"][0]["text"] == "hashed real.py"
    events = ws.events()
    assert not [e for e in events if e[0] == "PLANTED"], events
    assert ["init", "hashed"] in events and ["real", "hashed"] in events
    refused = dict((e[0], e[1]) for e in events)
    assert "helper" not in refused and "native" not in refused
    assert "imports only the .py files the sidecar hashed" in refused["helper_refused"]


def test_a_planted_module_or_extension_module_breaks_the_pin(spawn, ws):
    package = _pinned_package(ws)
    sidecar = spawn()
    digest = status_of(start(sidecar, ws, []), "pinned")["sha256"]
    for planted in ("helper.py", f"native{_so_suffix()}"):
        write(package / planted, ws.header() + "trace('PLANTED', __name__)\nWHO = 'planted'\n")
        result = start(sidecar, ws, [{"id": "pinned", "sha256": digest}])
        entry = status_of(result, "pinned")
        assert entry["status"] == "hash_mismatch", (planted, entry)
        assert any(d["kind"] == "hash_mismatch" for d in result["diagnostics"])
        (package / planted).unlink()
    assert ws.events() == []  # nothing of the package ran, planted or not
    assert status_of(start(sidecar, ws, [{"id": "pinned", "sha256": digest}]), "pinned")["status"] == "loaded"


def _so_suffix() -> str:
    import importlib.machinery

    return importlib.machinery.EXTENSION_SUFFIXES[0]


def test_a_package_imports_namespace_subpackages_and_reads_data_from_hashed_bytes_and_writes_no_bytecode(spawn, ws):
    package = ws.root / "extensions" / "layered"
    write(package / "__init__.py", ws.header() + """
from .parts import inner
from .parts.deeper import leaf
import importlib
def activate(api):
    try:
        importlib.import_module(__name__ + '.parts.missing')
    except ModuleNotFoundError as exc:
        trace('missing', exc.name)
    api.register_tool(name='layers', description='', input_schema={},
                      execute=lambda c, a: inner.WHO + '+' + leaf.WHO + '+' + data())
def data():
    import importlib.resources, pkgutil
    via_files = importlib.resources.files(__name__).joinpath('parts/words.txt').read_text()
    return via_files + '/' + pkgutil.get_data(__name__, 'parts/words.txt').decode()
""")
    write(package / "parts" / "words.txt", "hashed words")
    write(package / "parts" / "inner.py", "WHO = 'inner'\n")
    write(package / "parts" / "deeper" / "leaf.py", "WHO = 'leaf'\n")
    sidecar = spawn()
    result = start(sidecar, ws, ["layered"])
    assert status_of(result, "layered")["status"] == "loaded", status_of(result, "layered")
    # the files change on disk after hashing: the host runs what was hashed, not what is there now
    write(package / "parts" / "inner.py", ws.header() + "trace('PLANTED', 'inner')\nWHO = 'changed'\n")
    write(package / "parts" / "words.txt", "planted words")
    assert call(sidecar, result["threadId"], "layers")["content"][0]["text"] == \
        "inner+leaf+hashed words/hashed words"
    events = ws.events()
    assert [e[0] for e in events] == ["missing"] and events[0][1].endswith(".parts.missing"), events
    assert not list(package.rglob("*.pyc")) and not list(package.rglob("__pycache__"))


# -- registering many tools: O(N), limits.maxTools ----------------------------------------------------


def _many_tools(ws, ext_id: str, count: int, duplicate: str | None = None) -> None:
    write(ws.root / "extensions" / f"{ext_id}.py", ws.header() + f"""
def tool(c, a):
    return 'ran'
def activate(api):
    trace('activate', {ext_id!r})
    for i in range({count}):
        api.register_tool(name=f't{{i}}', description='', input_schema={{'type': 'object'}}, execute=tool)
    if {duplicate!r}:
        api.register_tool(name={duplicate!r}, description='', input_schema={{}}, execute=tool)
""")


def test_an_extension_over_limits_max_tools_fails_its_load_with_the_reason(spawn, ws):
    _many_tools(ws, "bulk", 51)
    sidecar = spawn()
    over = start(sidecar, ws, ["bulk"], limits={"maxTools": 50})
    entry = status_of(over, "bulk")
    assert entry["status"] == "failed"
    assert "more than limits.maxTools (50)" in entry["error"] and "'t50'" in entry["error"], entry
    assert [t["name"] for t in over["tools"]] == ["load_skill"]  # nothing of it was registered
    assert any(d["kind"] == "extension_failed" and "limits.maxTools" in d["message"] for d in over["diagnostics"])
    at = start(sidecar, ws, ["bulk"], limits={"maxTools": 51})
    assert status_of(at, "bulk")["status"] == "loaded"
    assert len([t for t in at["tools"] if t["origin"]["kind"] == "extension"]) == 51
    assert call(sidecar, at["threadId"], "t50")["content"][0]["text"] == "ran"


def test_ten_thousand_tools_load_by_default(spawn, ws):
    _many_tools(ws, "bulk", 10_000)
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["bulk"]}, timeout=120)
    assert status_of(result, "bulk")["status"] == "loaded"
    assert len(result["tools"]) == 10_001
    assert call(sidecar, result["threadId"], "t9999")["content"][0]["text"] == "ran"
    over = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["bulk"],
                                         "limits": {"maxTools": 9_999}}, timeout=120)
    assert "limits.maxTools (9999)" in status_of(over, "bulk")["error"]


def test_checking_twenty_thousand_registrations_does_not_stall_another_thread(spawn, ws):
    # The whole report is checked (the clash is the last tool), and the answer is small: what is
    # timed is the sidecar's checking. Before it was linear, thread 2 waited ~7 s here.
    _many_tools(ws, "bulk", 20_000, duplicate="t19999")
    other = ws.tmp / "other"
    add_skill(other, "other", "Use when other.", "BODY\n")
    sidecar = spawn()
    quiet = sidecar.call("thread/start", {"roots": [str(other)]})["threadId"]
    loading = sidecar.request_async("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["bulk"],
                                                     "limits": {"maxTools": 30_000}})
    waits = []
    while loading not in sidecar._stash:
        began = time.monotonic()
        assert "result" in sidecar.request("tools/list", {"threadId": quiet}, timeout=60)
        waits.append(time.monotonic() - began)
    result = sidecar.wait_for(loading)["result"]
    assert status_of(result, "bulk")["error"] == "registers the tool 't19999' twice"
    assert ["activate", "bulk"] in ws.events()
    assert max(waits) < 2.0, f"thread 2 waited {max(waits):.2f} s for tools/list (a loaded 2-core machine)"


# -- limits.hostMemoryMb: no nonsense values -------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 63, -1])
def test_host_memory_below_a_runnable_host_is_invalid_params_not_unlimited(spawn, ws, value):
    write(ws.root / "extensions" / "probe.py", ws.header() + """
import resource
def activate(api):
    trace('limit', resource.getrlimit(resource.RLIMIT_AS)[0])
""")
    sidecar = spawn()
    refused = sidecar.request("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["probe"],
                                               "limits": {"hostMemoryMb": value}})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"] == {"kind": "invalid_params", "field": "limits.hostMemoryMb"}
    assert "at least 64" in refused["error"]["message"]
    assert ws.events() == []  # no host ran the extension without a memory limit
    start(sidecar, ws, ["probe"], limits={"hostMemoryMb": 64})
    assert ws.events() == [["limit", 64 * 1024 * 1024]]


# -- JSON nested deeper than 512 levels: too_deep, whoever sent it ------------------------------------


def _deep_call(request_id: int, thread: str, arrays: int) -> bytes:
    """A tools/call whose message nests ``arrays + 4`` levels (message, params, call, arguments, arrays)."""
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"threadId":"%s","call":{"id":"c",'
            b'"name":"echo","arguments":{"a":' % (request_id, thread.encode())
            + b"[" * arrays + b"1" + b"]" * arrays + b"}}}}")


def _frame(body: bytes, framing: str) -> bytes:
    return body + b"\n" if framing == "jsonl" else b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


ECHO = """
def echo(c, a):
    return 'ok'
def deep(c, a):
    value = 'x'
    for _ in range(a['depth']):
        value = [value]
    return {'content': [{'type': 'text', 'text': 'deep'}], 'details': {'v': value}}
def activate(api):
    api.register_tool(name='echo', description='', input_schema={}, execute=echo)
    api.register_tool(name='deep', description='', input_schema={}, execute=deep)
"""


@pytest.mark.parametrize("framing", ["jsonl", "content-length"])
def test_a_request_nested_deeper_than_512_levels_is_answered_too_deep_by_its_id(spawn, ws, framing):
    write(ws.root / "extensions" / "echo.py", ECHO)
    sidecar = spawn(framing=framing)
    thread = start(sidecar, ws, ["echo"])["threadId"]
    for request_id, arrays in ((100, 508), (101, 509), (102, 1_000), (103, 100_000)):
        sidecar.send_raw(_frame(_deep_call(request_id, thread, arrays), framing), deliberate=True)
        answer = sidecar.wait_for(request_id, timeout=30)
        if arrays + 4 <= 512:
            assert answer["result"]["result"]["content"][0]["text"] == "ok", answer
        else:
            assert answer["error"]["code"] == -32602, answer
            assert answer["error"]["data"] == {"kind": "too_deep"}
            assert "deeper than 512 levels" in answer["error"]["message"]
    # the id written after a part too deep to parse cannot be read: the error still comes, with id null
    late_id = (b'{"jsonrpc":"2.0","method":"tools/call","params":{"threadId":"%s","call":{"id":"c","name":"echo",'
               b'"arguments":{"a":' % thread.encode() + b"[" * 3_000 + b"]" * 3_000 + b'}}},"id":104}')
    sidecar.send_raw(_frame(late_id, framing), deliberate=True)
    assert sidecar.wait_for(None, timeout=30)["error"]["data"] == {"kind": "too_deep"}
    assert call(sidecar, thread, "echo")["content"][0]["text"] == "ok"  # still serving, same thread


def test_an_extension_result_nested_600_deep_is_the_extensions_failure(spawn, ws):
    write(ws.root / "extensions" / "echo.py", ECHO)
    sidecar = spawn()
    thread = start(sidecar, ws, ["echo"])["threadId"]
    result = call(sidecar, thread, "deep", {"depth": 600})
    assert result["isError"] is True and "nested deeper than" in result["content"][0]["text"]
    assert call(sidecar, thread, "echo", call_id="c2")["content"][0]["text"] == "ok"


def test_an_mcp_server_answer_nested_600_deep_is_the_servers_failure(spawn, ws):
    raw = Path(__file__).resolve().parent / "mcp_servers" / "raw_server.py"
    deep = "x"
    for _ in range(600):
        deep = [deep]
    answer = {"content": [{"type": "text", "text": "deep"}], "structuredContent": {"v": deep}}
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "mcpServers": [
        {"name": "raw", "command": [sys.executable, str(raw), "--result", json.dumps(answer)]}]},
                          timeout=60)["threadId"]
    response = sidecar.request("tools/call", {"threadId": thread, "call": {"id": "m1", "name": "mcp__raw__say",
                                                                           "arguments": {"text": "hi"}}}, timeout=60)
    result = response["result"]["result"]
    assert result["isError"] is True
    assert "nested deeper than 512 levels" in json.dumps(result)


def test_an_editor_answer_nested_600_deep_fails_its_call_closed(spawn, ws):
    deep = "x"
    for _ in range(600):
        deep = [deep]
    answer = {"result": {"contentItems": [{"type": "inputText", "text": "sel"}], "success": True, "extra": deep}}
    sidecar = spawn(on_request=lambda message: Malformed(answer))  # deliberate: not checked against the schema
    thread = start(sidecar, ws, [], dynamicTools=[{"name": "editor_selection", "description": "",
                                                   "inputSchema": {"type": "object"}}])["threadId"]
    result = call(sidecar, thread, "editor_selection", {}, call_id="d1")
    assert result["isError"] is True and "nested deeper than 512 levels" in result["content"][0]["text"], result


# -- every stdout line within --max-result-bytes ---------------------------------------------------------

LIMIT = 65_536
LOUD = """
def loud(call_id, arguments, ctx):
    big = arguments['fill'] * arguments['size']
    ctx.ui.notify(big, 'warning')
    ctx.ui.set_status('progress', big)
    sent = ctx.ui.send_message(big)
    answer = ctx.ui.confirm('Delete everything?', big)
    trace('confirm', answer, ctx.ui.last_outcome, sent)
    small = ctx.ui.confirm('Small?', 'fits')
    trace('small', bool(small))
    return 'done'
def activate(api):
    api.register_tool(name='loud', description='', input_schema={}, execute=loud)
"""


def _bounded_editor(spawn, asked):
    from harness_sidecar.console.client import sidecar_command

    def on_request(message):
        asked.append(message)
        if message["method"] == "ui/confirm":
            return {"result": {"confirmed": True}}
        return {"result": {"contentItems": [{"type": "inputText", "text": "ran"}], "success": True}}

    lines: list[tuple[str, int]] = []
    sidecar = spawn(initialize=False, on_request=on_request,
                    command=sidecar_command() + ["--max-result-bytes", str(LIMIT)],
                    on_message=lambda direction, m: lines.append((direction, len(json.dumps(
                        m, ensure_ascii=False, separators=(",", ":")).encode()))))
    sidecar.call("initialize", {"capabilities": {"ui": {"confirm": True, "notify": True, "status": True,
                                                        "sendMessage": True}}})
    return sidecar, lines


@pytest.mark.parametrize("fill", ["a", "é\"\\\n"])  # escapes and multi-byte characters count as written
def test_over_long_notifications_are_cut_and_over_long_reverse_requests_fail_closed(spawn, ws, fill):
    write(ws.root / "extensions" / "loud.py", ws.header() + LOUD)
    asked: list[dict] = []
    sidecar, lines = _bounded_editor(spawn, asked)
    thread = start(sidecar, ws, ["loud"])["threadId"]
    result = call(sidecar, thread, "loud", {"fill": fill, "size": 5 * LIMIT})
    assert result["content"][0]["text"] == "done"
    _pump_until(sidecar, lambda: {"ui/notify", "ui/status", "chat/send"} <= {n["method"] for n in sidecar.notifications})
    by_method = {n["method"]: n["params"] for n in sidecar.notifications}
    for method, field in (("ui/notify", "message"), ("ui/status", "text"), ("chat/send", "text")):
        text = by_method[method][field]
        assert text.startswith(fill * 100) and "cut by the sidecar" in text and f"is {LIMIT}]" in text, method
    assert all(size <= LIMIT for direction, size in lines if direction == "<-"), max(s for _, s in lines)
    # the big confirm never reached the editor and counted as not confirmed; a small one still works
    assert [m["params"]["message"] for m in asked if m["method"] == "ui/confirm"] == ["fits"]
    confirm = next(e for e in ws.events() if e[0] == "confirm")
    assert confirm[1] is False and confirm[2] == "unavailable", confirm
    assert ["small", True] in ws.events()


def test_an_over_long_item_tool_call_is_a_failed_call_never_sent(spawn, ws):
    asked: list[dict] = []
    sidecar, lines = _bounded_editor(spawn, asked)
    thread = start(sidecar, ws, [], dynamicTools=[{"name": "editor_run", "description": "",
                                                   "inputSchema": {"type": "object"}}])["threadId"]
    # arguments that fit the editor's request (16 MiB) but not a line of the sidecar's (--max-result-bytes)
    big = call(sidecar, thread, "editor_run", {"text": "x" * (2 * LIMIT)}, call_id="d1")
    assert big["isError"] is True and "over --max-result-bytes" in big["content"][0]["text"]
    assert asked == []
    small = call(sidecar, thread, "editor_run", {"text": "x"}, call_id="d2")
    assert small["isError"] is False and small["content"][0]["text"] == "ran"
    assert all(size <= LIMIT for direction, size in lines if direction == "<-")


def _pump_until(sidecar, predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, [n["method"] for n in sidecar.notifications]
        try:
            sidecar._dispatch(sidecar.next_message(0.05))
        except Exception:  # noqa: BLE001 - queue.Empty: nothing yet
            pass


def test_an_over_long_error_response_is_cut_and_keeps_its_id(spawn, ws):
    sidecar, lines = _bounded_editor(spawn, [])
    method = "m" * (2 * LIMIT)
    sidecar.send_raw(json.dumps({"jsonrpc": "2.0", "id": 7, "method": method}).encode() + b"\n", deliberate=True)
    error = sidecar.wait_for(7)["error"]
    assert error["code"] == -32601 and error["data"] == {"kind": "method_not_found"}
    assert "cut by the sidecar" in error["message"]
    assert all(size <= LIMIT for direction, size in lines if direction == "<-")


def test_the_lsp_mode_answers_a_request_nested_too_deep_by_its_id(spawn, ws):
    lsp = [sys.executable, "-m", "harness_sidecar", "--lsp", "--stdio"]
    asked: list[dict] = []
    server = spawn(initialize=False, command=lsp, framing="content-length",
                   on_request=lambda message: asked.append(message) or {"result": {
                       "contentItems": [{"type": "inputText", "text": "ran"}], "success": True}})
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    thread = server.call("thread/start", {"roots": [str(ws.root)], "dynamicTools": [
        {"name": "echo", "description": "", "inputSchema": {}}]})["threadId"]
    for request_id, arrays in ((50, 600), (51, 5_000)):
        server.send_raw(_frame(_deep_call(request_id, thread, arrays), "content-length"), deliberate=True)
        answer = server.wait_for(request_id, timeout=30)
        assert answer["error"]["code"] == -32602 and answer["error"]["data"] == {"kind": "too_deep"}, answer
    assert asked == []  # nothing of the deep calls reached the editor's tool
    ok = server.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "echo", "arguments": {}}})
    assert ok["result"]["content"][0]["text"] == "ran"
