"""Content as it comes (protocol-v4 §4): image, audio, resource_link and embedded resource items pass
through every tool result unchanged — an MCP server's (a real one, built with the official SDK:
tests/mcp_servers/more_server.py), an editor tool's ``item/tool/call`` answer, an extension tool's —
and through an extension's before hook, transform and observer; ``--max-result-bytes`` still applies.
"""

from __future__ import annotations

import base64
import sys

from harness_sidecar.console.client import sidecar_command
from helpers import write
from mcp_helpers import REPO

MORE = [sys.executable, str(REPO / "tests" / "mcp_servers" / "more_server.py")]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()
WAV = base64.b64encode(b"RIFF\x00\x00\x00\x00WAVE").decode()

EXTENSIONS = """
SEEN = []
def before(event, ctx):
    return None
def transform(event):
    kinds = [item["type"] for item in event["result"]["content"]]
    SEEN.append(kinds)
    if event["call"]["name"] == "mcp__more__link":  # a transform may return blocks of its own
        return {"content": [*event["result"]["content"], {"type": "image", "data": "AAAA", "mimeType": "image/gif"}]}
    return {"details": {"seen": kinds}}
def observe(event):
    pass
def execute(call_id, arguments):
    return {"content": [{"type": "text", "text": "drawn"},
                        {"type": "image", "data": "R0lGOD", "mimeType": "image/gif",
                         "annotations": {"audience": ["user"]}}]}
def bad(call_id, arguments):
    return {"content": [{"type": "image", "mimeType": "image/gif"}]}
def activate(api):
    api.on("tool_call", before)
    api.on("tool_result_transform", transform)
    api.on("tool_result", observe)
    api.register_tool("draw", "Draw.", {"type": "object"}, execute)
    api.register_tool("bad_draw", "Forgets data.", {"type": "object"}, bad)
"""


def call(sidecar, thread, name, call_id="c1"):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name, "arguments": {}}},
                        timeout=60)["result"]


def start(sidecar, root, **extra):
    return sidecar.call("thread/start", {"roots": [str(root)], "mcpServers": [{"name": "more", "command": MORE}],
                                         **extra}, timeout=60)


def test_mcp_image_audio_links_and_resources_pass_hooks_and_transforms_unchanged(spawn, tmp_path):
    root = tmp_path / "project"
    write(root / "extensions/seer.py", EXTENSIONS)
    sidecar = spawn()
    started = start(sidecar, root, trustedExtensions=["seer"])
    assert [e["status"] for e in started["catalog"]["extensions"]] == ["loaded"]
    thread = started["threadId"]
    picture = call(sidecar, thread, "mcp__more__picture")
    assert picture["isError"] is False
    assert picture["content"] == [{"type": "text", "text": "a picture"},
                                  {"type": "image", "data": PNG, "mimeType": "image/png"},
                                  {"type": "audio", "data": WAV, "mimeType": "audio/wav"}]
    assert picture["details"]["seen"] == ["text", "image", "audio"]  # the transform saw them as they came
    link = call(sidecar, thread, "mcp__more__link", "c2")
    assert link["content"] == [
        {"type": "resource_link", "name": "readme", "uri": "memo://readme", "mimeType": "text/markdown"},
        {"type": "resource", "resource": {"uri": "memo://logo", "mimeType": "image/png", "blob": PNG}},
        {"type": "image", "data": "AAAA", "mimeType": "image/gif"}]  # the transform's own image
    assert link["details"]["transformedBy"] == ["seer"]


def test_an_extension_tool_may_answer_an_image_and_a_malformed_one_is_an_error(spawn, tmp_path):
    root = tmp_path / "project"
    write(root / "extensions/seer.py", EXTENSIONS)
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["seer"]}, timeout=60)["threadId"]
    drawn = call(sidecar, thread, "draw")
    assert drawn["content"] == [{"type": "text", "text": "drawn"},
                                {"type": "image", "data": "R0lGOD", "mimeType": "image/gif",
                                 "annotations": {"audience": ["user"]}}]
    bad = call(sidecar, thread, "bad_draw", "c2")
    assert bad["isError"] is True  # the transform replaced its details
    assert "returned an unusable value" in bad["content"][0]["text"]
    assert "content[0]: an item of type image needs a string data" in bad["content"][0]["text"]


def editor_answer(items, success=True):
    def answer(message):
        if message["method"] == "item/tool/call":
            return {"result": {"contentItems": items, "success": success}}
        return None
    return answer


def test_an_editor_tool_may_answer_images_audio_and_links(spawn, tmp_path):
    items = [{"type": "inputText", "text": "the screen"},
             {"type": "inputImage", "imageUrl": f"data:image/png;base64,{PNG}"},
             {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
             {"type": "resource_link", "name": "file", "uri": "file:///tmp/a.txt"},
             {"type": "resource", "resource": {"uri": "file:///tmp/b.txt", "text": "b"}}]
    sidecar = spawn(on_request=editor_answer(items))
    thread = sidecar.call("thread/start", {"roots": [str(tmp_path)], "dynamicTools": [{"name": "screen"}]})["threadId"]
    result = call(sidecar, thread, "screen")
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": "the screen"},
                                 {"type": "image", "data": PNG, "mimeType": "image/png"}, *items[2:]]


def test_an_editor_image_without_data_is_still_malformed(spawn, tmp_path):
    for bad in ({"type": "image", "mimeType": "image/png"}, {"type": "inputImage", "imageUrl": "https://x/y.png"},
                {"type": "video", "data": "AAAA", "mimeType": "video/mp4"}):
        sidecar = spawn(on_request=editor_answer([bad]))
        thread = sidecar.call("thread/start", {"roots": [str(tmp_path)], "dynamicTools": [{"name": "s"}]})["threadId"]
        result = call(sidecar, thread, "s")
        assert result["isError"] is True and result["details"]["kind"] == "malformed_answer", bad


def test_a_large_image_is_still_bounded_by_max_result_bytes(spawn, tmp_path):
    big = base64.b64encode(b"\x00" * 300_000).decode()
    sidecar = spawn(command=sidecar_command() + ["--max-result-bytes", "200000"],
                    on_request=editor_answer([{"type": "image", "data": big, "mimeType": "image/png"}]))
    thread = sidecar.call("thread/start", {"roots": [str(tmp_path)], "dynamicTools": [{"name": "s"}]})["threadId"]
    result = call(sidecar, thread, "s")
    assert result["isError"] is True and result["details"]["kind"] == "too_large"
    assert "draw" not in str(result)
