"""The traffic check (tests/traffic.py): what it validates, what it skips, and its recorder command."""

from __future__ import annotations

import json
import subprocess

import pytest
import traffic
from harness_sidecar.console.client import Malformed, child_env, sidecar_command
from harness_sidecar.wire import protocol
from helpers import WORKSPACE

SCHEMA = traffic.ProtocolSchema(protocol.document())


def _conversation(*frames, lsp=False):
    conversation = traffic.Conversation("example", lsp)
    for direction, message, *deliberate in frames:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        conversation.add(direction, data, bool(deliberate and deliberate[0]))
    return conversation


def test_the_check_fails_on_a_result_that_breaks_the_schema_with_a_readable_reason():
    stats = traffic.Stats()
    problems = _conversation(
        ("->", {"jsonrpc": "2.0", "id": 1, "method": "context/build", "params": {"threadId": "t"}}),
        ("<-", {"jsonrpc": "2.0", "id": 1, "result": {"prompt": "x"}}),
    ).check(SCHEMA, stats)
    assert len(problems) == 1
    assert "the sidecar sent context/build result" in problems[0] and "systemPrompt" in problems[0]
    assert "#/$defs/ContextBuildResult" in problems[0] and '"prompt"' in problems[0]


@pytest.mark.parametrize("frames, complaint", [
    ([("<-", {"jsonrpc": "2.0", "method": "thread/diagnostic", "params": {"threadId": "t", "kind": "throw"}})],
     "thread/diagnostic params"),
    ([("<-", {"jsonrpc": "2.0", "method": "made/up", "params": {}})], "no such server→client message"),
    ([("<-", {"id": None, "error": {"code": -32700, "message": "x", "data": {"kind": "parse_error"}}})],
     "jsonrpc"),
    ([("<-", b"not json")], "not JSON"),
    ([("->", {"id": 1, "method": "skills/activate", "params": {"threadId": "t", "name": "r"}}),
      ("<-", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "x",
                                                   "data": {"kind": "template_not_found"}}})],
     "not in x-messages['skills/activate'].errors"),
    ([("->", {"id": 1, "method": "context/build", "params": {"threadId": 5}}),
      ("<-", {"jsonrpc": "2.0", "id": 1, "result": {"systemPrompt": "", "revision": 1, "activeSkills": [],
                                                    "toolsRevision": 1}})],  # a v4 §5 result: only the params wrong
     "the test sent (and the sidecar accepted)"),
    ([("<-", {"jsonrpc": "2.0", "id": 4, "method": "item/tool/call", "params": {"threadId": "t", "callId": "c",
                                                                               "tool": "x", "arguments": {}}}),
      ("->", {"jsonrpc": "2.0", "id": 4, "result": {"contentItems": [], "success": "yes"}})], "item/tool/call result"),
])
def test_the_check_names_what_is_wrong(frames, complaint):
    problems = _conversation(*frames).check(SCHEMA, traffic.Stats())
    assert problems and complaint in problems[0], problems


def test_input_the_sidecar_refused_or_marked_deliberate_is_not_validated():
    stats = traffic.Stats()
    problems = _conversation(
        ("->", {"id": 1, "method": "thread/start", "params": {"roots": ["relative"]}}),
        ("<-", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "x",
                                                     "data": {"kind": "invalid_params", "field": "roots[0]"}}}),
        ("<-", {"jsonrpc": "2.0", "id": 1, "method": "item/tool/call", "params": {"threadId": "t", "callId": "c",
                                                                                 "tool": "x", "arguments": {}}}),
        ("->", {"jsonrpc": "2.0", "id": 1, "result": {"contentItems": "nope"}}),
        ("<-", {"jsonrpc": "2.0", "id": 2, "method": "item/tool/call", "params": {"threadId": "t", "callId": "d",
                                                                                 "tool": "x", "arguments": {}}}),
        ("->", {"jsonrpc": "2.0", "id": 2, "result": {"confirmed": "maybe"}}, True),
        ("->", {"id": 5, "method": "tools/call", "params": {"threadId": "t", "call": {"id": "c", "name": "x"}}}),
        ("<-", {"jsonrpc": "2.0", "id": 5, "result": {"result": {
            "toolCallId": "c", "toolName": "x", "content": [{"type": "text", "text": "malformed"}],
            "details": {"kind": "malformed_answer"}, "isError": True}}}),
    ).check(SCHEMA, stats)
    assert problems == []
    assert stats.refused_inputs == 3 and stats.validated["<-"] == 4  # an error, two requests, a result


def test_the_recorder_command_relays_unchanged_and_logs_both_directions(tmp_path):
    command = traffic.recording_command(tmp_path, sidecar_command())
    session = (b'{"id":1,"method":"initialize","params":{"capabilities":{"ui":{"confirm":true}}}}\n'
               b'{"id":2,"method":"thread/start","params":{"roots":["' + str(WORKSPACE / "project").encode() + b'"]}}\n'
               b'{"id":3,"method":"context/build","params":{"threadId":"thread-1"}}\n'
               b'garbage\n{"id":4,"method":"shutdown"}\n{"method":"exit"}\n')
    relayed = subprocess.run(command, input=session, capture_output=True, env=child_env(), timeout=60)
    direct = subprocess.run(sidecar_command(), input=session, capture_output=True, env=child_env(), timeout=60)
    assert relayed.returncode == direct.returncode == 0
    assert sorted(str(json.loads(line)["id"]) for line in relayed.stdout.splitlines()) == ["1", "2", "3", "4", "None"]
    assert len(relayed.stdout.splitlines()) == len(direct.stdout.splitlines())
    (log,) = tmp_path.glob("*.jsonl")
    conversation = traffic.read_log(log)
    assert [d for d, _, _ in conversation.frames].count("->") == 6
    assert [d for d, _, _ in conversation.frames].count("<-") == 5
    stats = traffic.Stats()
    assert conversation.check(SCHEMA, stats) == []
    assert stats.validated["<-"] >= 5 and stats.validated["->"] >= 3 and stats.unchecked == 1


def test_malformed_answers_are_sent_as_given(spawn, workspace_root=WORKSPACE / "project"):
    """A deliberate answer still reaches the sidecar byte for byte (only the check skips it)."""
    answer = Malformed({"result": {"contentItems": [{"type": "inputText", "text": "ok"}], "success": "yes"}})
    sidecar = spawn(on_request=lambda message: answer)
    thread = sidecar.call("thread/start", {"roots": [str(workspace_root)], "dynamicTools": [{"name": "sel"}]})
    result = sidecar.call("tools/call", {"threadId": thread["threadId"], "call": {"id": "c", "name": "sel"}})["result"]
    assert result["details"]["kind"] == "malformed_answer"
    assert isinstance(sidecar.recorder, traffic.ProcessRecorder)
    assert any(deliberate for _, _, deliberate in sidecar.recorder.frames)


