"""Long result texts on their way from an extension host to the editor (issue 32 item 4), through the real sidecar.

A string that spans a host line's pieces is decoded slice by slice as the pieces arrive
(``extensions.channel.LongStrings``, ``jsonio.loads_spans``) and, when its bytes are what the sidecar would
write for it, written to the editor from those bytes (``jsonio.dumps_parts``), not encoded again. What the
editor sees must not change: the same texts in every framing, whatever they hold (non-ASCII, quotes,
newlines, control characters), several in one result; ``--max-result-bytes`` bounds the answer to the byte
as before; and a frame whose long string is not JSON (a raw control byte, bytes that are not UTF-8) still
breaks the channel — never reaches stdout.
"""

from __future__ import annotations

import json

import pytest
from harness_sidecar.console.client import sidecar_command
from helpers import FIND_EXCHANGE, TraceWorkspace

MB = 1_000_000
# Results of a few MB arrive in several reads of the channel (the pass-through's case); each kind is
# built in the host, so the test sends only its name.
TEXTS = {
    "ascii": "'a' * (3 * MB)",
    "unicode": "'é ü 😀 \\u2028 ' * (MB // 5)",  # raw UTF-8 on the channel, no backslash
    "escaped": "'line \"one\"\\n\\ttab \\\\ back\\x01 ' * (MB // 10)",  # escapes, \\u0001 among them
    "csv": "'id,name,score,comment\\n' + '1,a,2,x\\n' * (MB // 2)",  # 1.5 M commas in one value
}
EXTENSION = f'''
MB = {MB}
TEXTS = {{{", ".join(f"{k!r}: {v}" for k, v in TEXTS.items())}}}
def run(call_id, arguments):
    kinds = arguments["kinds"]
    if len(kinds) == 1:
        return TEXTS[kinds[0]]
    same = TEXTS[kinds[0]]
    return {{"content": [{{"type": "text", "text": TEXTS[k] if k != "same" else same}} for k in kinds],
            "details": {{"kinds": kinds, "first": TEXTS[kinds[0]][:10]}}}}
def activate(api):
    api.register_tool(name="long", description="Long texts.", input_schema={{}}, execute=run)
'''


def expected(kind: str) -> str:
    return eval(TEXTS[kind])  # noqa: S307 - the test's own literals, as the host builds them


@pytest.fixture
def ws(tmp_path):
    workspace = TraceWorkspace.make(tmp_path, ())
    workspace.extension("long", EXTENSION)
    return workspace


def long_call(sidecar, ws, kinds, call_id="c1"):
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["long"]},
                          timeout=60)["threadId"]
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": "long",
                                                                     "arguments": {"kinds": kinds}}}, timeout=60)


@pytest.mark.parametrize("framing", ["jsonl", "content-length"])
@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_a_long_text_reaches_the_editor_exactly_in_either_framing(spawn, ws, framing, kind):
    sidecar = spawn(framing=framing)
    result = long_call(sidecar, ws, [kind])["result"]  # the client parses strictly (no raw control character)
    assert result["toolCallId"] == "c1" and result["isError"] is False, result["content"][0]["text"][:300]
    assert result["content"] == [{"type": "text", "text": expected(kind)}]
    assert sidecar.call("tools/list", {"threadId": "thread-1"})["tools"][0]["name"]  # and it goes on serving


def test_several_long_texts_in_one_result_keep_their_order_and_the_rest_of_the_result(spawn, ws):
    sidecar = spawn()
    kinds = ["unicode", "ascii", "escaped", "same"]  # "same": the first text's object again
    result = long_call(sidecar, ws, kinds)["result"]
    assert [c["text"] for c in result["content"]] == [expected(k if k != "same" else kinds[0]) for k in kinds]
    assert result["details"] == {"kinds": kinds, "first": expected(kinds[0])[:10]}
    for i in range(3):  # what was kept for the first answer is not written into later ones
        again = long_call(sidecar, ws, ["ascii", "unicode"], call_id=f"again-{i}")["result"]
        assert [c["text"] for c in again["content"]] == [expected("ascii"), expected("unicode")]


def test_max_result_bytes_bounds_a_passed_through_answer_to_the_byte(spawn, ws):
    answer = long_call(spawn(), ws, ["unicode", "ascii"])
    # the answer's line as the sidecar writes it (compact UTF-8, the newline counted), request id 3 each time
    size = len(json.dumps({"jsonrpc": "2.0", "id": 3, "result": answer}, ensure_ascii=False,
                          separators=(",", ":")).encode()) + 1
    for limit, fits in ((size, True), (size - 1, False)):
        bounded = spawn(command=sidecar_command() + ["--max-result-bytes", str(limit)])
        result = long_call(bounded, ws, ["unicode", "ascii"])["result"]
        if fits:
            assert [c["text"] for c in result["content"]] == [expected("unicode"), expected("ascii")]
        else:
            assert result["isError"] and result["details"]["kind"] == "too_large", result["details"]
            assert result["details"]["size"] == size and result["details"]["limit"] == limit


# Extension code that writes a forged outcome on its own channel (as hostile code in the host could):
# a result whose long text is not a JSON string's content.
FORGER = '''
import os, sys
''' + FIND_EXCHANGE + '''
def forge(call_id, arguments):
    exchange = here()
    bad = {"control": b"\\x01", "not-utf8": b"\\xff\\xfe"}[arguments["bad"]]
    text = b"a" * 1_500_000 + bad + b"a" * 1_500_000
    frame = (b'["done",%d,{"faults":[],"result":{"content":[{"type":"text","text":"' % exchange.id + text
             + b'"}],"details":{},"isError":false}}]\\n')
    os.write(exchange.host.out.sock.fileno(), frame)
    return "the real outcome"
def activate(api):
    api.register_tool(name="forge", description="", input_schema={}, execute=forge)
'''


@pytest.mark.parametrize("bad", ["control", "not-utf8"])
def test_a_forged_long_text_that_is_not_json_never_reaches_stdout(spawn, ws, bad):
    ws.extension("forger", FORGER)
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["forger"]},
                          timeout=60)["threadId"]
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "f", "name": "forge",
                                                                       "arguments": {"bad": bad}}}, timeout=60)["result"]
    # the channel broke (the host is ended): the call has its real outcome or is answered for, never the forged
    # text (the client parses strictly: a raw control byte or a byte that is not UTF-8 would fail it)
    text = result["content"][0]["text"]
    crashed = "crash" in (result["details"].get("kind"), result["details"].get("blocked", {}).get("kind"))
    assert "a" * 100 not in text and (text == "the real outcome" or (result["isError"] and crashed)), text[:200]
    assert sidecar.call("tools/list", {"threadId": thread})["tools"]  # and the sidecar goes on serving


NOTIFIER = '''
def run(call_id, arguments, ctx):
    ctx.ui.notify("\\x01" * 700_000)  # 4.2 MB on the channel (\\u0001 each): longer than any answer may be
    return "notified"
def activate(api):
    api.register_tool(name="notify", description="", input_schema={}, execute=run)
'''


def test_a_notification_longer_than_any_answer_is_still_relayed_cut_to_fit(spawn, ws):
    # a result-carrying frame that long is let go as it comes; a notification's text is cut to fit instead
    ws.extension("notifier", NOTIFIER)
    sidecar = spawn(initialize=False, command=sidecar_command() + ["--max-result-bytes", "1000000"])
    sidecar.call("initialize", {"protocolVersion": "4", "capabilities": {"ui": {"notify": True}}})
    thread = sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["notifier"]},
                          timeout=60)["threadId"]
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "n", "name": "notify", "arguments": {}}},
                          timeout=60)["result"]
    assert result["content"][0]["text"] == "notified"
    notified = [n["params"] for n in sidecar.notifications if n["method"] == "ui/notify"]
    assert len(notified) == 1 and notified[0]["extensionId"] == "notifier", notified[:1]
    assert notified[0]["message"].startswith("\x01" * 1000)
