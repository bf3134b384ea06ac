"""MCP beyond tools (protocol-v4 §4), end to end through the real sidecar against a real server built
with the official ``mcp`` SDK (tests/mcp_servers/more_server.py): resources, templates and prompts in
the catalog and read with ``mcp/resource/read``/``mcp/prompt/get``; the server's ``roots/list``,
``elicitation/create`` (relayed as ``ui/elicit``) and ``sampling/createMessage`` (relayed as
``model/sample``), offered only as far as the editor's capabilities allow; resources/prompts
``list_changed`` as ``catalog/changed``.
"""

from __future__ import annotations

import base64
import json
import sys

from helpers import changes_until, error_kind
from mcp_helpers import REPO, sdk_server

MORE = [sys.executable, str(REPO / "tests" / "mcp_servers" / "more_server.py")]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()


class Editor:
    """Answers the sidecar's reverse requests as a scripted user would, and records them."""

    def __init__(self, elicit=None, sample=None):
        self.elicit, self.sample = elicit, sample
        self.asked: list[dict] = []

    def __call__(self, message):
        self.asked.append(message)
        if message["method"] == "ui/elicit" and self.elicit is not None:
            return self.elicit(message["params"])
        if message["method"] == "model/sample" and self.sample is not None:
            return self.sample(message["params"])
        return None  # silent


def open_editor(spawn, editor=None, ui=None, sampling=None):
    sidecar = spawn(initialize=False, on_request=editor or Editor())
    capabilities = {"ui": ui or {}}
    if sampling is not None:
        capabilities["sampling"] = sampling
    sidecar.call("initialize", {"capabilities": capabilities})
    return sidecar


def start(sidecar, roots, servers=None, **extra):
    return sidecar.call("thread/start", {"roots": [str(r) for r in roots],
                                         "mcpServers": servers or [{"name": "more", "command": MORE}], **extra},
                        timeout=60)


def call(sidecar, thread, name, arguments=None, call_id="c1"):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}},
                        timeout=60)["result"]


def text(result) -> str:
    return "".join(item["text"] for item in result["content"] if item["type"] == "text")


def test_resources_templates_and_prompts_are_in_the_catalog_and_readable(spawn, tmp_path):
    sidecar = open_editor(spawn)
    started = start(sidecar, [tmp_path], [{"name": "more", "command": MORE},
                                          {"name": "plain", "command": sdk_server()}])
    catalog = started["catalog"]
    assert catalog["mcpResources"] == [
        {"server": "more", "name": "readme", "uri": "memo://readme", "description": "The project's readme.",
         "mimeType": "text/markdown"},
        {"server": "more", "name": "logo", "uri": "memo://logo", "description": "", "mimeType": "image/png"},
        {"server": "more", "name": "notes", "uriTemplate": "memo://notes/{topic}", "description": "Notes on a topic.",
         "mimeType": "text/plain"}]
    assert catalog["mcpPrompts"] == [
        {"server": "more", "name": "review", "description": "Review a file.",
         "arguments": [{"name": "path", "required": True}, {"name": "focus", "required": False}]},
        {"server": "more", "name": "hello", "description": ""}]
    thread = started["threadId"]
    read = sidecar.call("mcp/resource/read", {"threadId": thread, "server": "more", "uri": "memo://readme"})
    assert read == {"contents": [{"uri": "memo://readme", "mimeType": "text/markdown", "text": "# Read me\nIt works.\n"}]}
    logo = sidecar.call("mcp/resource/read", {"threadId": thread, "server": "more", "uri": "memo://logo"})
    assert logo["contents"][0]["blob"] == PNG
    notes = sidecar.call("mcp/resource/read", {"threadId": thread, "server": "more", "uri": "memo://notes/parsing"})
    assert notes["contents"][0]["text"] == "notes on parsing"
    prompt = sidecar.call("mcp/prompt/get", {"threadId": thread, "server": "more", "name": "review",
                                             "arguments": {"path": "src/a.py", "focus": "naming"}})
    assert prompt == {"description": "Review a file.", "messages": [
        {"role": "user", "content": {"type": "text", "text": "Review src/a.py, looking for naming."}}]}
    assert sidecar.call("thread/refresh", {"threadId": thread})["catalog"]["mcpPrompts"] == catalog["mcpPrompts"]


def test_resource_and_prompt_errors_have_a_kind_and_the_sidecar_keeps_serving(spawn, tmp_path):
    sidecar = open_editor(spawn)
    thread = start(sidecar, [tmp_path], [{"name": "more", "command": MORE},
                                         {"name": "plain", "command": sdk_server()}])["threadId"]
    read = lambda **p: sidecar.request("mcp/resource/read", {"threadId": thread, **p})  # noqa: E731
    get = lambda **p: sidecar.request("mcp/prompt/get", {"threadId": thread, **p})  # noqa: E731
    unknown_server = read(server="nope", uri="memo://readme")
    assert error_kind(unknown_server) == "mcp_server_not_found" and unknown_server["error"]["data"]["server"] == "nope"
    unknown_uri = read(server="more", uri="memo://missing")
    assert error_kind(unknown_uri) == "mcp_error" and isinstance(unknown_uri["error"]["data"]["code"], int)
    assert error_kind(read(server="plain", uri="memo://readme")) == "mcp_error"  # it declares no resources
    assert error_kind(get(server="more", name="nope")) == "mcp_error"
    assert error_kind(get(server="more", name="review", arguments={"path": 3})) == "invalid_params"
    assert error_kind(sidecar.request("mcp/resource/read", {"threadId": "thread-99", "server": "more",
                                                            "uri": "memo://readme"})) == "thread_not_found"
    no_mcp = sidecar.call("thread/start", {"roots": [str(tmp_path)]})
    assert "mcpResources" not in no_mcp["catalog"]
    assert error_kind(sidecar.request("mcp/prompt/get", {"threadId": no_mcp["threadId"], "server": "more",
                                                         "name": "hello"})) == "mcp_server_not_found"
    assert sidecar.call("mcp/prompt/get", {"threadId": thread, "server": "more", "name": "hello"})["messages"]


def test_roots_list_answers_the_threads_roots_as_file_uris(spawn, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two words"
    one.mkdir()
    two.mkdir()
    sidecar = open_editor(spawn)
    thread = start(sidecar, [one, two])["threadId"]
    result = call(sidecar, thread, "mcp__more__my_roots")
    assert result["isError"] is False
    assert text(result).splitlines() == [one.as_uri(), two.as_uri()]
    assert "%20" in text(result)  # a URI, not a path


def test_servers_are_offered_only_what_the_editor_can_do(spawn, tmp_path):
    bare = open_editor(spawn)
    caps = json.loads(text(call(bare, start(bare, [tmp_path])["threadId"], "mcp__more__client_caps")))
    assert caps == {"roots": {}}
    able = open_editor(spawn, ui={"elicit": True}, sampling=True)
    caps = json.loads(text(call(able, start(able, [tmp_path])["threadId"], "mcp__more__client_caps")))
    assert set(caps) == {"roots", "elicitation", "sampling"}


def test_elicitation_is_relayed_to_the_editor_as_ui_elicit(spawn, tmp_path):
    editor = Editor(elicit=lambda params: {"result": {"action": "accept", "content": {
        "name": "Ann", "age": 30, "colour": "green", "ok": True}}})
    sidecar = open_editor(spawn, editor, ui={"elicit": True})
    thread = start(sidecar, [tmp_path])["threadId"]
    result = call(sidecar, thread, "mcp__more__ask_name")
    assert text(result) == "accept: Ann 30 green True"
    (asked,) = [m["params"] for m in editor.asked if m["method"] == "ui/elicit"]
    assert asked["threadId"] == thread and asked["server"] == "more" and asked["message"] == "Who are you?"
    schema = asked["requestedSchema"]
    assert schema["type"] == "object" and set(schema["properties"]) == {"name", "age", "colour", "ok"}
    assert schema["properties"]["colour"]["enum"] == ["red", "green"]


def test_a_user_who_declines_cancels_or_does_not_answer_is_a_decline(spawn, tmp_path):
    for answer, expected in (({"result": {"action": "cancel"}}, "cancel"),
                             ({"error": {"code": -32000, "message": "no form here"}}, "decline"),
                             ({"result": {"action": "accept", "content": {"name": {"nested": 1}}}}, "decline"),
                             (None, "decline")):  # silent: uiTimeoutMs
        sidecar = open_editor(spawn, Editor(elicit=lambda params, answer=answer: answer), ui={"elicit": True})
        thread = start(sidecar, [tmp_path], limits={"uiTimeoutMs": 300})["threadId"]
        assert text(call(sidecar, thread, "mcp__more__ask_name")) == expected, answer


def test_without_ui_elicit_the_user_is_never_asked(spawn, tmp_path):
    editor = Editor(elicit=lambda params: {"result": {"action": "accept", "content": {"name": "x"}}})
    sidecar = open_editor(spawn, editor)
    thread = start(sidecar, [tmp_path])["threadId"]
    result = call(sidecar, thread, "mcp__more__ask_name")
    assert text(result) == "decline"  # the SDK asks anyway; the sidecar declines without asking the user
    assert not any(m["method"] == "ui/elicit" for m in editor.asked)


def test_a_server_cannot_flood_the_user_with_forms(spawn, tmp_path):
    """Attacker test: a server that asks 20 questions at once gets one form shown; the others are
    declined at once (one question per server at a time)."""
    editor = Editor()  # silent: the one form shown times out (uiTimeoutMs) as a decline
    sidecar = open_editor(spawn, editor, ui={"elicit": True})
    raw = [sys.executable, str(REPO / "tests" / "mcp_servers" / "raw_server.py"), "--elicit", "20"]
    thread = start(sidecar, [tmp_path], [{"name": "raw", "command": raw}], limits={"uiTimeoutMs": 3000})["threadId"]
    answers = [json.loads(line) for line in text(call(sidecar, thread, "mcp__raw__say")).splitlines()]
    assert sorted(a["id"] for a in answers) == sorted(f"elicit-{i}" for i in range(20))
    assert all(a["result"] == {"action": "decline"} for a in answers)
    assert [m["params"]["message"] for m in editor.asked if m["method"] == "ui/elicit"] == ["question 0"]


def test_sampling_is_relayed_as_model_sample_only_with_the_capability(spawn, tmp_path):
    def sample(params):
        return {"result": {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "editor-model",
                           "stopReason": "endTurn"}}
    editor = Editor(sample=sample)
    sidecar = open_editor(spawn, editor, sampling=True)
    thread = start(sidecar, [tmp_path])["threadId"]
    assert text(call(sidecar, thread, "mcp__more__summarise", {"text": "a long story"})) == "editor-model: short"
    (asked,) = [m["params"] for m in editor.asked if m["method"] == "model/sample"]
    assert asked["threadId"] == thread and asked["maxTokens"] == 50 and asked["systemPrompt"] == "Be brief."
    assert asked["messages"] == [{"role": "user", "content": {"type": "text", "text": "Summarise: a long story"}}]

    refusing = open_editor(spawn, Editor(sample=lambda p: {"error": {"code": 1, "message": "the user said no"}}),
                           sampling=True)
    refused = call(refusing, start(refusing, [tmp_path])["threadId"], "mcp__more__summarise", {"text": "x"})
    assert refused["isError"] is True and "the user said no" in text(refused)

    without = Editor(sample=sample)
    bare = open_editor(spawn, without)
    result = call(bare, start(bare, [tmp_path])["threadId"], "mcp__more__summarise", {"text": "x"})
    assert result["isError"] is True and "sampling is not offered" in text(result)  # the server's tool failed
    assert not any(m["method"] == "model/sample" for m in without.asked)


def test_list_changed_of_tools_resources_and_prompts_is_catalog_changed(spawn, tmp_path):
    sidecar = open_editor(spawn)
    started = start(sidecar, [tmp_path])
    thread = started["threadId"]
    assert call(sidecar, thread, "mcp__more__grow")["content"] == [{"type": "text", "text": "grown"}]
    entries = lambda c: {(e["kind"], e["name"]) for e in c["added"]}  # noqa: E731
    wanted = {("tool", "mcp__more__grown"), ("mcpResource", "more:memo://grown"), ("mcpPrompt", "more:grown")}
    seen = lambda: set().union(*(entries(n["params"]) for n in sidecar.notifications  # noqa: E731
                                 if n["method"] == "catalog/changed"))
    changes = changes_until(sidecar, lambda c: wanted <= seen(), timeout=60)
    assert all(c["threadId"] == thread and c["revision"] > started["revision"] for c in changes)
    refreshed = sidecar.call("thread/refresh", {"threadId": thread})
    assert {"server": "more", "name": "grown", "uri": "memo://grown", "description": ""} in \
        [{k: v for k, v in r.items() if k != "mimeType"} for r in refreshed["catalog"]["mcpResources"]]
    assert "grown" in [p["name"] for p in refreshed["catalog"]["mcpPrompts"]]
    assert call(sidecar, thread, "mcp__more__grown", call_id="c2")["content"][0]["text"] == "grown"


def test_over_streamable_http_the_reference_server_gets_the_same(spawn, tmp_path):
    """A remote server (v4 §4 transports) is offered what a stdio one is: @modelcontextprotocol/server-everything
    (npm, MIT, github.com/modelcontextprotocol/servers) in its streamable-HTTP mode lists its resources and
    prompts in the catalog, reads one, asks roots/list and has model/sample relayed."""
    from mcp_helpers import everything_over_http

    with everything_over_http("streamableHttp") as port:
        editor = Editor(sample=lambda params: {"result": {"role": "assistant", "model": "editor-model",
                                                          "content": {"type": "text", "text": "sampled over http"}}})
        sidecar = open_editor(spawn, editor, sampling=True)
        started = start(sidecar, [tmp_path], [{"name": "everything", "type": "http",
                                               "url": f"http://127.0.0.1:{port}/mcp"}])
        thread = started["threadId"]
        resources = [r for r in started["catalog"]["mcpResources"] if "uri" in r]
        assert resources and {p["name"] for p in started["catalog"]["mcpPrompts"]} >= {"simple-prompt", "args-prompt"}
        read = sidecar.call("mcp/resource/read", {"threadId": thread, "server": "everything",
                                                  "uri": resources[0]["uri"]})
        assert read["contents"][0]["uri"] == resources[0]["uri"]
        assert tmp_path.as_uri() in text(call(sidecar, thread, "mcp__everything__get-roots-list"))
        sampled = call(sidecar, thread, "mcp__everything__trigger-sampling-request", {"prompt": "hi"}, "c2")
        assert not sampled["isError"] and "sampled over http" in json.dumps(sampled["content"])
        assert [m["params"]["threadId"] for m in editor.asked if m["method"] == "model/sample"] == [thread]
