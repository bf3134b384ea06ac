"""LSP mode end to end: the real process, driven by pytest-lsp as Neovim and as VS Code.

Each test that a client's capabilities could change runs twice, with pytest-lsp's recorded
capability sets of Neovim 0.11 (UTF-8 positions) and VS Code (UTF-16 positions). The server
is started as vscode-languageclient starts it: ``harness-sidecar --lsp --stdio``. What
pytest-lsp cannot send (malformed JSON, a request before ``initialize``) goes through the
raw wire client (``harness_sidecar.console.client``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from harness_sidecar.console.client import child_env
from helpers import WORKSPACE, add_skill, write

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
import itertools  # noqa: E402

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from pygls.protocol import (  # noqa: E402
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,  # noqa: E402
)
from pytest_lsp.client import register_lsp_features  # noqa: E402

LSP = [sys.executable, "-P", "-m", "harness_sidecar", "--lsp", "--stdio"]
CLIENTS = {"neovim": "utf-8", "visual_studio_code": "utf-16"}  # and the encoding each negotiates
# the watchers registered per root: what the sidecar's own watcher watches in JSONL mode (v4: command
# templates, plugins/, the hooks sources beside hooks.json; a .codex root's prompts/ besides)
WATCHED = ("AGENTS.md", "skills/*", "skills/*/SKILL.md", "templates/*.md", "extensions/**", "hooks.json",
           "commands/*.md", "plugins/**", "settings.json", "settings.local.json", "config.toml")


def uri(path: Path | str) -> str:
    return Path(path).as_uri()


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in a client's position units (computed independently of the server)."""
    return len(text.encode("utf-8")) if encoding == "utf-8" else len(text.encode("utf-16-le")) // 2


class JsonClientProtocol(pytest_lsp.LanguageClientProtocol):
    """pytest-lsp's client protocol, keeping the sidecar's own messages as JSON (as an editor sees
    them): pygls would turn the results of custom requests, ``item/tool/call`` and
    ``thread/diagnostic`` into namedtuples."""

    raw_ids: set[str] = set()

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "error" not in data:
            method = data.get("method")
            if method is None and data.get("id") in self.raw_ids:
                return JsonRPCResponseMessage(id=data["id"], jsonrpc="2.0", result=data.get("result"))
            if method is not None and method not in types.METHOD_TO_TYPES:
                if "id" in data:
                    return JsonRPCRequestMessage(id=data["id"], method=method, jsonrpc="2.0", params=data.get("params"))
                return JsonRPCNotification(method=method, jsonrpc="2.0", params=data.get("params"))
        return super().structure_message(data)


def make_client() -> Any:
    client = pytest_lsp.LanguageClient(protocol_cls=JsonClientProtocol, converter_factory=default_converter)
    register_lsp_features(client)
    return client


CUSTOM_IDS = itertools.count(1)


@pytest.fixture(params=list(CLIENTS))
def client_name(request) -> str:
    return request.param


@pytest_asyncio.fixture
async def lsp(client_name):
    """``start(roots, trusted=…)``: a real server and a pytest-lsp client impersonating ``client_name``."""
    started: list[Any] = []

    async def start(roots: list[Path] | None = None, trusted: list[str] | None = None, *,
                    workspace: Path | None = None, env: dict[str, str] | None = None,
                    capabilities: types.ClientCapabilities | None = None,
                    initialization: dict[str, Any] | None = None):
        config = pytest_lsp.ClientServerConfig(server_command=LSP, server_env=env or child_env(),
                                               client_factory=make_client)
        client = await config.start()
        started.append(client)
        client.encoding = CLIENTS[client_name]
        options: dict[str, Any] = {"trustedExtensions": trusted or []}
        if roots is not None:
            options["roots"] = [str(r) for r in roots]
        options.update(initialization or {})
        client.init_result = await client.initialize_session(types.InitializeParams(
            capabilities=capabilities or pytest_lsp.client_capabilities(client_name),
            initialization_options=options,
            workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name="ws")] if workspace else None))
        return client

    yield start
    for client in started:
        try:
            await asyncio.wait_for(client.shutdown_session(), 10)
        except Exception:  # noqa: BLE001 - a test that ended the session itself
            pass
        await client.stop()


async def opened(client, path: Path, text: str | None = None, version: int = 1) -> list[types.Diagnostic]:
    """didOpen, then the diagnostics published for it."""
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri(path), language_id="markdown", version=version, text=path.read_text() if text is None else text)))
    return await published(client, path)


async def published(client, path: Path) -> list[types.Diagnostic]:
    while True:
        params = await asyncio.wait_for(client.wait_for_notification("textDocument/publishDiagnostics"), 20)
        if params.uri == uri(path):
            return list(params.diagnostics)


async def changed(client, path: Path, text: str, version: int) -> list[types.Diagnostic]:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    return await published(client, path)


def send_custom(client, method: str, params: dict[str, Any]) -> Any:
    msg_id = f"custom-{next(CUSTOM_IDS)}"
    client.protocol.raw_ids.add(msg_id)
    return client.protocol.send_request_async(method, params, msg_id=msg_id)


async def custom(client, method: str, params: dict[str, Any]) -> Any:
    return await asyncio.wait_for(send_custom(client, method, params), 30)


def span(d: types.Diagnostic) -> tuple[int, int, int, int]:
    return d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character


async def hover(client, path: Path, line: int, character: int) -> types.Hover | None:
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line, character=character)))


# -- start-up and lifecycle ------------------------------------------------------------------------

async def test_initialize_answers_the_negotiated_encoding_and_hover(lsp, tree, client_name):
    client = await lsp([tree("r")])
    capabilities = client.init_result.capabilities
    assert capabilities.position_encoding == CLIENTS[client_name]
    assert capabilities.hover_provider is True
    assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Full
    assert client.init_result.server_info.name == "harness-sidecar"


def test_exit_codes_and_the_stdio_flag(spawn, tree):
    for flags in (["--lsp"], ["--lsp", "--stdio"], ["--stdio", "--lsp"]):
        server = spawn(initialize=False, command=[sys.executable, "-P", "-m", "harness_sidecar", *flags],
                       framing="content-length")
        server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert server.call("shutdown") is None
        server.notify("exit")
        assert server.wait() == 0, flags
    server = spawn(initialize=False, command=LSP, framing="content-length")
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    server.notify("exit")
    assert server.wait() == 1  # exit without shutdown


@pytest.mark.parametrize("flag", ["--pipe=/tmp/x.sock", "--socket=5007", "--node-ipc"])
def test_other_transports_are_refused_with_a_reason(flag):
    proc = subprocess.run([*LSP[:-1], flag], capture_output=True, text=True, env=child_env(), timeout=30,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{flag.split('=')[0]} is not supported" in proc.stderr and "stdin/stdout" in proc.stderr


def test_requests_before_initialize_are_not_served(spawn, tree):
    server = spawn(initialize=False, command=LSP, framing="content-length")
    early = server.request("thread/start", {"roots": [str(tree("r"))]})
    assert early["error"]["code"] == -32002 and early["error"]["data"] == {"kind": "not_initialized"}
    hover_early = server.request("textDocument/hover", {"textDocument": {"uri": "file:///x"},
                                                        "position": {"line": 0, "character": 0}})
    assert hover_early["error"]["code"] == -32002
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri(tree("r") / "AGENTS.md"), "languageId": "md",
                                                            "version": 1, "text": "x"}})  # dropped, as LSP says
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                               "initializationOptions": {"roots": [str(tree("r"))]}})
    assert server.call("thread/start", {"roots": [str(tree("r"))]})["threadId"] == "thread-1"
    assert not [n for n in server.notifications if n["method"] == "textDocument/publishDiagnostics"]


async def test_error_kinds_as_a_real_client_sees_them(lsp, tree):
    """Through pytest-lsp's client, a kind on every error, pygls's own ones included. (That client
    refuses to send anything before initialize or a malformed typed request: those are tested on
    the raw wire.)"""
    client = await lsp([tree("r")])
    with pytest.raises(JsonRpcException) as unknown:
        await custom(client, "no/such", {})
    assert unknown.value.code == -32601 and unknown.value.data == {"kind": "method_not_found"}
    with pytest.raises(JsonRpcException) as bad:
        await custom(client, "skills/activate", {"threadId": 3})
    assert bad.value.code == -32602 and bad.value.data == {"kind": "invalid_params", "field": "threadId"}
    with pytest.raises(JsonRpcException) as missing:
        await custom(client, "context/build", {"threadId": "thread-7"})
    assert missing.value.code == -32001 and missing.value.data == {"kind": "thread_not_found", "threadId": "thread-7"}


def test_every_error_carries_a_kind(spawn, tree):
    """Errors that pygls would answer on its own, or not at all, or with a traceback."""
    server = spawn(initialize=False, command=LSP, framing="content-length")
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    again = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    assert again["error"]["data"]["kind"] == "already_initialized"
    server.send_raw(b"Content-Length: 9\r\n\r\n{\"id\": 1,")
    assert server.next_message(10)["error"]["data"]["kind"] == "parse_error"
    unknown = server.request("no/such", {})
    assert unknown["error"]["code"] == -32601 and unknown["error"]["data"] == {"kind": "method_not_found"}
    bad_hover = server.request("textDocument/hover", {"textDocument": {}, "position": {"line": -1}})
    assert bad_hover["error"]["data"]["kind"] == "invalid_params"
    bad = server.request("thread/start", {"roots": "nope"})
    assert bad["error"]["data"] == {"kind": "invalid_params", "field": "roots"}
    missing = server.request("skills/activate", {"threadId": "thread-9", "name": "x"})
    assert missing["error"]["data"] == {"kind": "thread_not_found", "threadId": "thread-9"}
    assert "traceback" not in str(missing).lower()
    assert server.call("shutdown") is None
    late = server.request("thread/start", {"roots": [str(tree("r"))]})
    assert late["error"]["data"]["kind"] == "shutting_down"  # pygls would leave it unanswered
    server.notify("exit")
    assert server.wait() == 0


def test_a_cancelled_request_is_answered_with_its_kind(spawn, tree):
    """Through the raw wire: pygls's own client fails on the answer to a request it cancelled."""
    asked = []
    server = spawn(initialize=False, command=LSP, framing="content-length",
                   on_request=lambda message: asked.append(message))  # the editor's tool never answers
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    thread = server.call("thread/start", {"roots": [str(tree("r"))], "dynamicTools": [
        {"name": "slow", "description": "", "inputSchema": {}}]})["threadId"]
    call_id = server.request_async("tools/call", {"threadId": thread, "call": {"id": "c", "name": "slow",
                                                                                "arguments": {}}})
    for _ in range(200):
        if asked:
            break
        try:
            server._dispatch(server.next_message(0.05))
        except Exception:  # noqa: BLE001 - queue.Empty
            pass
    assert asked and asked[0]["method"] == "item/tool/call"
    server.notify("$/cancelRequest", {"id": call_id})
    answer = server.wait_for(call_id, 20)
    assert answer["error"]["code"] == -32800 and answer["error"]["data"] == {"kind": "cancelled"}


def test_the_first_diagnostic_does_not_wait_for_pygls(spawn, tmp_path):
    """With pygls broken, diagnostics still arrive: they never waited for its import. Requests
    that need it are answered with how to install it, and the server keeps serving."""
    shadow = tmp_path / "shadow"
    write(shadow / "pygls/__init__.py", "raise ImportError('pygls is broken here')\n")
    env = child_env()
    env["PYTHONPATH"] = f"{shadow}:{env['PYTHONPATH']}"
    root = tmp_path / "r"
    skill = add_skill(root, "review", directory="reviews")
    server = spawn(initialize=False, command=LSP, framing="content-length", env=env)
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                               "initializationOptions": {"roots": [str(root)]}})
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri(skill), "languageId": "markdown",
                                                            "version": 1, "text": skill.read_text()}})
    note = server.next_message(20)
    assert note["method"] == "textDocument/publishDiagnostics"
    assert [d["code"] for d in note["params"]["diagnostics"]] == ["name_mismatch"]
    failed = server.request("thread/start", {"roots": [str(root)]})
    assert failed["error"]["data"] == {"kind": "internal_error"} and "pip install -e '.[lsp]'" in failed["error"]["message"]
    assert server.call("shutdown") is None
    server.notify("exit")
    assert server.wait() == 0


def test_lsp_without_pygls_installed_says_how_to_install():
    code = ("import sys; sys.modules['pygls'] = None\n"
            "from harness_sidecar.cli import main\nraise SystemExit(main(['--lsp']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=30,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "pip install -e '.[lsp]'" in proc.stderr and "harness-sidecar[" not in proc.stderr
    assert proc.stdout == ""


# -- custom requests -------------------------------------------------------------------------------

async def test_review_scenario_through_custom_requests(lsp):
    client = await lsp([WORKSPACE / "project"])
    asked = []

    @client.feature("item/tool/call")
    def editor(params):
        asked.append(params)
        return {"contentItems": [{"type": "inputText", "text": "sélection ✓"}], "success": True}

    started = await custom(client, "thread/start", {
        "roots": [str(WORKSPACE / "project"), str(WORKSPACE / "user")], "trustedExtensions": ["review-extension"],
        "dynamicTools": [{"name": "editor_selection", "description": "", "inputSchema": {}}]})
    thread = started["threadId"]
    assert [s["name"] for s in started["catalog"]["skills"]] == ["commit-message", "review"]
    assert started["catalog"]["extensions"][0]["status"] == "loaded"
    skill = (await custom(client, "skills/activate", {"threadId": thread, "name": "review",
                                                      "resources": ["references/checklist.md"]}))["skill"]
    assert skill["body"].startswith("# Reviewing in this project")
    message = (await custom(client, "templates/render", {"threadId": thread, "name": "review",
                                                         "arguments": {"path": "src/parser.ts", "focus": "errors"}}))
    assert message["message"]["content"] == "Review src/parser.ts with the review skill. Focus on errors.\n"
    assert "# Active skill: review" in (await custom(client, "context/build", {"threadId": thread}))["systemPrompt"]
    blocked = (await custom(client, "tools/call", {"threadId": thread, "call": {
        "id": "c1", "name": "review_note", "arguments": {"text": "SECRET"}}}))["result"]
    assert blocked["toolCallId"] == "c1" and blocked["details"]["blocked"]["kind"] == "deny"
    selection = await custom(client, "tools/call", {"threadId": thread, "call": {
        "id": "c2", "name": "editor_selection", "arguments": {"key-with-dash": 1}}})
    assert selection["result"]["content"] == [{"type": "text", "text": "sélection ✓"}]
    assert asked and asked[0]["callId"] == "c2" and asked[0]["arguments"] == {"key-with-dash": 1}
    with pytest.raises(JsonRpcException) as missing:
        await custom(client, "templates/render", {"threadId": thread, "name": "review", "arguments": {}})
    assert missing.value.code == -32021 and missing.value.data["kind"] == "missing_argument"


def test_tool_arguments_reach_the_sidecar_as_json(spawn):
    """Keys that are not identifiers survive (pygls would make a namedtuple of unknown params)."""
    asked = []

    def editor(message):
        asked.append(message)
        return {"result": {"contentItems": [{"type": "inputText", "text": "ok"}], "success": True}}

    server = spawn(initialize=False, command=LSP, framing="content-length", on_request=editor)
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    thread = server.call("thread/start", {"roots": [str(WORKSPACE / "project")], "dynamicTools": [
        {"name": "editor_selection", "description": "", "inputSchema": {}}]})["threadId"]
    server.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "editor_selection",
                                                            "arguments": {"key-with-dash": 1}}})
    # a string id: never one of the client's own numbered request ids (see LspPeer.request)
    assert asked[0]["method"] == "item/tool/call" and asked[0]["id"] == "harness-sidecar-1"
    assert asked[0]["params"]["arguments"] == {"key-with-dash": 1}


async def test_hook_faults_are_thread_diagnostic_notifications(lsp, tree):
    root = tree("r")
    write(root / "extensions/faulty.py", "def activate(api):\n"
          "    api.register_tool(name='t', description='', input_schema={}, execute=lambda c, a: 'ok')\n"
          "    api.on('tool_result', lambda e: 1 / 0)\n")
    client = await lsp([root])
    notes = []

    @client.feature("thread/diagnostic")
    def diagnostic(params):
        notes.append(params)

    thread = (await custom(client, "thread/start", {"roots": [str(root)], "trustedExtensions": ["faulty"]}))["threadId"]
    result = await custom(client, "tools/call", {"threadId": thread, "call": {"id": "c", "name": "t", "arguments": {}}})
    assert result["result"]["isError"] is False
    for _ in range(100):
        if notes:
            break
        await asyncio.sleep(0.05)
    (note,) = notes
    assert note["kind"] == "throw" and "ZeroDivisionError" in note["message"]


# -- live diagnostics ------------------------------------------------------------------------------

@pytest.mark.parametrize("content, kind, line, start, end", [
    ("---\nname: other\ndescription: d\n---\n", "name_mismatch", 1, "name: ", "name: other"),
    ("---\nname: Bad_Name\ndescription: d\n---\n", "invalid_name", 1, "name: ", "name: Bad_Name"),
    ("---\nname: x\ndescription: |\n\n---\n", "invalid_frontmatter", 2, "description: ", "description: |"),  # blank
    ("---\nname: x\ndescription: a: b\n---\n", "invalid_frontmatter", 2, "description: a", "description: a: b"),
    ("---\nname: x\ndescription: '✓😀' : b: c\n---\n", "invalid_frontmatter", 2, "description: '✓😀' ",
     "description: '✓😀' : b: c"),
    ("no frontmatter\n", "invalid_frontmatter", 0, "", "no frontmatter"),
    ("---\nname: x\ndescription: never closed\n", "invalid_frontmatter", 0, "", "---"),
    ("---\nname: x\n---\n", "invalid_frontmatter", 0, "", "---"),  # a missing field: the opening line
    ("---\nname: nul\ndescription: d\n---\n", "invalid_name", 1, "name: ", "name: nul"),
    ("---\nname: x\ndescription: '  '\n---\n", "invalid_frontmatter", 2, "description: ", "description: '  '"),
    ("---\nname: x\ndescription: [a, b]\n---\n", "invalid_frontmatter", 2, "description: ", "description: [a, b]"),
    ("---\nname: " + "a" * 65 + "\ndescription: d\n---\n", "invalid_name", 1, "name: ", "name: " + "a" * 65),
])
async def test_skill_diagnostics_with_ranges_in_the_clients_units(lsp, tree, content, kind, line, start, end):
    root = tree("r")
    directory = content.split("name: ")[1].split("\n")[0] if kind == "invalid_name" else "x"
    path = root / "skills" / directory / "SKILL.md"
    path.parent.mkdir(parents=True)
    client = await lsp([root])
    found = await opened(client, path, content)  # never saved: the editor's text is what counts
    assert [d.code for d in found][:1] == [kind], found
    assert found[0].severity == types.DiagnosticSeverity.Error and found[0].source == "harness-sidecar"
    assert span(found[0]) == (line, units(start, client.encoding), line, units(end, client.encoding)), found[0]


async def test_a_fix_in_the_unsaved_buffer_clears_the_diagnostic(lsp, tree):
    root = tree("r")
    path = add_skill(root, "review", description="Use when reviewing.")
    client = await lsp([root])
    assert await opened(client, path) == []
    found = await changed(client, path, "---\nname: reviews\ndescription: Use when reviewing.\n---\nbody\n", 2)
    assert [d.code for d in found] == ["name_mismatch"]
    assert await changed(client, path, "---\nname: review\ndescription: Use when reviewing.\n---\nbody\n", 3) == []
    assert "name: reviews" not in path.read_text()  # nothing was written to disk


def test_ranged_changes_are_applied_in_the_clients_units(spawn, tree):
    """A client that sends incremental edits anyway (UTF-16 ranges after an astral character)."""
    root = tree("r")
    path = add_skill(root, "review", description="😀 Use when reviewing.")
    server = spawn(initialize=False, command=LSP, framing="content-length")
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                               "initializationOptions": {"roots": [str(root)]}})
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri(path), "languageId": "markdown", "version": 1,
                                                            "text": path.read_text()}})
    assert server.next_message(20)["params"]["diagnostics"] == []
    # "description: 😀 Use when …": replace "Use" (UTF-16 columns 16–19, code points 15–18).
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri(path), "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 2, "character": 16}, "end": {"line": 2, "character": 19}}, "text": "Apply"}]})
    assert server.next_message(20)["params"]["diagnostics"] == []
    shown = server.call("textDocument/hover", {"textDocument": {"uri": uri(path)}, "position": {"line": 1,
                                                                                               "character": 7}})
    assert "😀 Apply when reviewing." in shown["contents"]["value"], shown
    assert shown["contents"]["kind"] == "plaintext"  # the client declared no markdown


async def test_shadowing_is_information_on_both_sides(lsp, tree):
    project, user = tree("project"), tree("user")
    winner = add_skill(project, "review")
    loser = add_skill(user, "review")
    client = await lsp([project, user])
    (info,) = await opened(client, loser)
    assert info.severity == types.DiagnosticSeverity.Information and info.code == "shadowed"
    assert str(winner) in info.message
    (info,) = await opened(client, winner)
    assert info.code == "shadows" and str(loser) in info.message


async def test_template_and_extension_files(lsp, tree):
    root = tree("r")
    template = write(root / "templates/ask.md", "---\ndescription: Ask.\n---\nAbout {{topic}} and {{ path }}.\n")
    bad_name = write(root / "templates/Bad_Name.md", "x\n")
    trusted = write(root / "extensions/trusted-one.py", "def activate(api):\n    pass\n")
    untrusted = write(root / "extensions/other.py", "def activate(api):\n    pass\n")
    client = await lsp([root], trusted=["trusted-one"])
    (hint,) = await opened(client, template)
    assert hint.severity == types.DiagnosticSeverity.Hint and hint.code == "not_a_placeholder"
    assert span(hint) == (3, 20, 3, 30) and "{{path}}" in hint.message
    assert [d.code for d in await opened(client, bad_name)] == ["invalid_name"]
    assert [(d.code, d.severity) for d in await opened(client, trusted)] == [("trusted", 3)]
    (info,) = await opened(client, untrusted)
    assert info.code == "untrusted" and "never imports" in info.message


async def test_a_resource_outside_every_root_is_explained(lsp, tree, tmp_path):
    root = tree("r")
    outside = write(tmp_path / "elsewhere/skills/x/SKILL.md", "garbage\n")
    other = write(tmp_path / "elsewhere/notes.md", "garbage\n")
    client = await lsp([root])
    (info,) = await opened(client, outside)
    assert info.code == "outside_roots" and info.severity == types.DiagnosticSeverity.Information
    assert str(tmp_path / "elsewhere") in info.message and str(root) in info.message
    assert await opened(client, other) == []  # not laid out like a resource: nothing to say


async def test_missing_default_roots_are_said_once(lsp, tmp_path):
    workspace, home = tmp_path / "repo", tmp_path / "home"
    skill = write(workspace / "skills/x/SKILL.md", "garbage\n")
    client = await lsp(workspace=workspace, env=child_env({"HOME": str(home)}))
    found = await opened(client, skill)  # by now the message has arrived (it precedes any diagnostic)
    (message,) = client.messages
    assert message.type == types.MessageType.Info
    assert str(workspace / ".agents") in message.message and str(home / ".agents") in message.message
    assert "initializationOptions.roots" in message.message
    assert [d.code for d in found] == ["outside_roots"]
    client2 = await lsp([tmp_path])  # an existing root: nothing to say
    await opened(client2, skill)
    assert client2.messages == []


async def test_default_roots_are_the_workspace_agents_folder_then_the_users(lsp, tmp_path):
    workspace, home = tmp_path / "repo", tmp_path / "home"
    project_skill = add_skill(workspace / ".agents", "review", "Project review.")
    user_skill = add_skill(home / ".agents", "review", "User review.")
    client = await lsp(workspace=workspace, env=child_env({"HOME": str(home)}))
    (info,) = await opened(client, user_skill)
    assert info.code == "shadowed" and str(project_skill) in info.message
    assert client.messages == []


async def test_the_broken_example_root_explains_itself(lsp):
    broken = WORKSPACE / "broken"
    client = await lsp([broken])
    expected = {"Review-Old": "invalid_name", "deploy": "invalid_frontmatter", "notes": "invalid_frontmatter",
                "wrong-name": "name_mismatch"}
    for directory, kind in expected.items():
        path = broken / "skills" / directory / "SKILL.md"
        assert kind in [d.code for d in await opened(client, path)], directory


# -- hovers ----------------------------------------------------------------------------------------

async def test_hover_on_a_skill_name_and_a_placeholder(lsp, tree):
    project, user = tree("project"), tree("user")
    winner = add_skill(project, "review", "Use when reviewing code.")
    loser = add_skill(user, "review", "The user's review.")
    template = write(project / "templates/ask.md", "Ask about {{topic}} now\n")
    client = await lsp([project, user])
    for path in (winner, loser, template):
        await opened(client, path)
    found = await hover(client, winner, 1, 7)
    assert found.contents.kind == types.MarkupKind.Markdown
    assert "Use when reviewing code." in found.contents.value and "**wins**" in found.contents.value
    found = await hover(client, loser, 1, 7)
    assert "**shadowed**" in found.contents.value and str(winner) in found.contents.value
    found = await hover(client, template, 0, 12)
    assert "`topic`" in found.contents.value
    assert span(types.Diagnostic(range=found.range, message="")) == (0, 10, 0, 19)
    assert await hover(client, template, 0, 1) is None


async def test_hover_honours_a_plaintext_only_client(lsp, tree, client_name):
    root = tree("r")
    skill = add_skill(root, "review", "Use when reviewing code.")
    capabilities = pytest_lsp.client_capabilities(client_name)
    capabilities.text_document.hover.content_format = [types.MarkupKind.PlainText]
    client = await lsp([root], capabilities=capabilities)
    await opened(client, skill)
    found = await hover(client, skill, 1, 7)
    assert found.contents.kind == types.MarkupKind.PlainText
    assert "Use when reviewing code." in found.contents.value
    assert "**" not in found.contents.value and "`" not in found.contents.value


async def test_a_placeholder_in_a_templates_frontmatter_is_no_variable(lsp, tree):
    root = tree("r")
    template = write(root / "templates/ask.md", "---\ndescription: Fill {{x}} in.\n---\nAsk about {{topic}}.\n")
    client = await lsp([root])
    await opened(client, template)
    assert await hover(client, template, 1, 19) is None  # on {{x}} in the frontmatter
    found = await hover(client, template, 3, 13)
    assert "`topic`" in found.contents.value
    thread = await custom(client, "thread/start", {"roots": [str(root)]})
    assert thread["catalog"]["templates"][0]["variables"] == ["topic"]  # what the catalog says too


# -- JSONL mode stays light ------------------------------------------------------------------------

def test_jsonl_mode_never_imports_pygls(spawn, tree):
    root = tree("r")
    write(root / "extensions/probe.py", "import sys\n"
          "def activate(api):\n"
          "    api.register_tool(name='modules', description='', input_schema={}, execute=lambda c, a: "
          "','.join(sorted(m for m in ('pygls', 'lsprotocol', 'cattrs') if m in sys.modules)) or 'none')\n")
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["probe"]})["threadId"]
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "modules", "arguments": {}}})
    assert result["result"]["content"][0]["text"] == "none"


# -- watching: the client's didChangeWatchedFiles, or the sidecar's own watcher --------------------

async def test_watching_follows_the_client_capability_and_diagnostics_follow_the_new_catalog(lsp, tree, client_name):
    """VS Code's capability set registers file watchers dynamically: the server registers globs for
    its roots and each thread's, the threads start no watcher of their own, and the client's
    didChangeWatchedFiles feeds the rescan. Neovim 0.11's set (no dynamic registration on Linux)
    registers nothing: the sidecar watches itself. Either way a skill that becomes shadowed gets
    its information diagnostic without being reopened, and the thread gets catalog/changed."""
    project, user, other = tree("project"), tree("user"), tree("other")
    loser = add_skill(user, "review")
    client = await lsp([project, user])
    registrations: list[Any] = []
    changes: list[dict[str, Any]] = []

    @client.feature("client/registerCapability")
    def register(params):
        registrations.extend(params.registrations)

    @client.feature("catalog/changed")
    def catalog_changed(params):
        changes.append(params)

    assert await opened(client, loser) == []
    started = await custom(client, "thread/start", {"roots": [str(project), str(user)]})
    other_thread = await custom(client, "thread/start", {"roots": [str(other)]})
    unwatched = await custom(client, "thread/start", {"roots": [str(other), str(user)], "watch": False})
    client_watches = client_name == "visual_studio_code"
    if client_watches:
        for _ in range(200):
            if len(registrations) >= 2:
                break
            await asyncio.sleep(0.02)
        assert [r.method for r in registrations] == ["workspace/didChangeWatchedFiles"] * 2
        globs = [w["globPattern"] for r in registrations for w in r.register_options["watchers"]]
        # the server's roots at `initialized`, then the roots a thread named that were not watched yet
        assert globs == [str(project), *(f"{project}/{g}" for g in
                                         WATCHED),
                         str(user), *(f"{user}/{g}" for g in
                                      WATCHED),
                         str(other), *(f"{other}/{g}" for g in
                                       WATCHED)]

    winner = add_skill(project, "review", description="Use when reviewing, the project's way.")
    if client_watches:
        # The threads watch nothing themselves: without the client's word nothing changes.
        await asyncio.sleep(1.5)
        assert changes == []
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=uri(winner.parent), type=types.FileChangeType.Created),
            types.FileEvent(uri=uri(winner), type=types.FileChangeType.Created)]))
    else:
        assert registrations == []
    (info,) = await published(client, loser)  # republished without reopening the file
    assert info.code == "shadowed" and str(winner) in info.message
    for _ in range(250):
        if changes:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # nothing else is coming: not the other thread, not the unwatched one
    assert [c["threadId"] for c in changes] == [started["threadId"]], changes
    assert changes[0]["revision"] == 2 and changes[0]["changed"] == [{"kind": "skill", "name": "review"}]
    assert other_thread["threadId"] != unwatched["threadId"]
    listed = await custom(client, "thread/refresh", {"threadId": started["threadId"]})
    assert [s["description"] for s in listed["catalog"]["skills"]] == ["Use when reviewing, the project's way."]


async def test_client_watching_with_relative_patterns(lsp, tree):
    """A client that supports relative patterns gets them (a root with glob characters included)."""
    root = tree("odd [root] {x}")
    capabilities = pytest_lsp.client_capabilities("neovim")
    capabilities.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
        dynamic_registration=True, relative_pattern_support=True)
    client = await lsp([root], capabilities=capabilities)
    registrations: list[Any] = []

    @client.feature("client/registerCapability")
    def register(params):
        registrations.extend(params.registrations)

    for _ in range(200):
        if registrations:
            break
        await asyncio.sleep(0.02)
    (registration,) = registrations
    watchers = registration.register_options["watchers"]
    assert watchers[0]["globPattern"] == {"baseUri": uri(root.parent), "pattern": root.name}
    assert [w["globPattern"] for w in watchers[1:]] == [
        {"baseUri": uri(root), "pattern": g} for g in
        WATCHED]
    changes: list[dict[str, Any]] = []

    @client.feature("catalog/changed")
    def catalog_changed(params):
        changes.append(params)

    started = await custom(client, "thread/start", {"roots": [str(root)]})
    assert started["catalog"]["skills"] == []
    skill = add_skill(root, "late")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(skill), type=types.FileChangeType.Created)]))
    for _ in range(250):
        if changes:
            break
        await asyncio.sleep(0.02)
    assert changes and changes[0]["added"] == [{"kind": "skill", "name": "late"}], changes
    assert len(registrations) == 1  # the thread's root was registered already


async def test_a_codex_homes_prompts_are_registered_and_a_new_prompt_is_a_catalog_change(lsp, tree):
    """In LSP mode the client watches for the sidecar: a .codex root's prompts/*.md (Codex's custom
    prompts, served as prompts:<name>) is among its watchers, so a prompt written while the editor is
    open reaches the catalog as it does in JSONL mode."""
    codex_home = tree("home/.codex")
    write(codex_home / "prompts/draftpr.md", "---\ndescription: Prep a branch\n---\nBranch $1\n")
    capabilities = pytest_lsp.client_capabilities("neovim")
    capabilities.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
        dynamic_registration=True, relative_pattern_support=True)
    client = await lsp([codex_home], capabilities=capabilities)
    registrations: list[Any] = []

    @client.feature("client/registerCapability")
    def register(params):
        registrations.extend(params.registrations)

    for _ in range(200):
        if registrations:
            break
        await asyncio.sleep(0.02)
    (registration,) = registrations
    patterns = [w["globPattern"] for w in registration.register_options["watchers"][1:]]
    assert patterns == [{"baseUri": uri(codex_home), "pattern": g} for g in (*WATCHED, "prompts/*.md")]
    changes: list[dict[str, Any]] = []

    @client.feature("catalog/changed")
    def catalog_changed(params):
        changes.append(params)

    started = await custom(client, "thread/start", {"roots": [str(codex_home)]})
    assert [c["name"] for c in started["catalog"]["commandTemplates"]] == ["prompts:draftpr"]
    prompt = codex_home / "prompts/ship.md"
    write(prompt, "---\ndescription: Ship it\n---\nShip $1 now\n")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(prompt), type=types.FileChangeType.Created)]))
    for _ in range(250):
        if changes:
            break
        await asyncio.sleep(0.02)
    assert changes and changes[0]["added"] == [{"kind": "commandTemplate", "name": "prompts:ship"}], changes


async def test_ui_confirm_over_lsp_when_initialization_options_declare_it(lsp):
    """initializationOptions.capabilities.ui is the LSP mode's initialize.capabilities.ui: the
    permission-gate example asks the client, and a question the client leaves open is cancelled
    ($/cancelRequest) when uiTimeoutMs runs out."""
    client = await lsp([], initialization={"capabilities": {"ui": {"confirm": True}}})
    answers = [True, False, None]
    asked, cancelled = [], []

    @client.feature("ui/confirm")
    async def confirm(params):
        asked.append(params)
        answer = answers.pop(0)
        if answer is None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(params["callId"])
                raise
        return {"confirmed": answer}

    @client.feature("item/tool/call")
    def editor(params):
        return {"contentItems": [{"type": "inputText", "text": "ran " + params["arguments"]["command"]}],
                "success": True}

    gate = Path(__file__).resolve().parents[1] / "client-examples/extensions/permission-gate.py"
    thread = (await custom(client, "thread/start", {
        "roots": [], "trustedExtensions": ["permission-gate"], "limits": {"uiTimeoutMs": 500},
        "extensions": [{"id": "permission-gate", "path": str(gate)}],
        "dynamicTools": [{"name": "bash", "description": "", "inputSchema": {"type": "object"}}]}))["threadId"]

    async def call(call_id):
        return (await custom(client, "tools/call", {"threadId": thread, "call": {
            "id": call_id, "name": "bash", "arguments": {"command": "sudo rm -rf /"}}}))["result"]

    assert (await call("c1"))["content"] == [{"type": "text", "text": "ran sudo rm -rf /"}]
    assert (await call("c2"))["details"]["blocked"]["kind"] == "deny"
    assert (await call("c3"))["details"]["blocked"]["kind"] == "deny"
    assert [a["callId"] for a in asked] == ["c1", "c2", "c3"]
    assert asked[0]["extensionId"] == "permission-gate" and asked[0]["tool"] == "bash"
    for _ in range(100):
        if cancelled:
            break
        await asyncio.sleep(0.02)
    assert cancelled == ["c3"]


# -- v3 §3: `check` equals the editor ----------------------------------------------------------------

async def test_check_reports_every_diagnostic_the_editor_shows(lsp, tmp_path):
    """Each file the LSP mode lints, opened in the real server: every (file, line, code) it publishes
    (but the editor's trust setting) is in `check --json` for the same roots."""
    import json

    broken = WORKSPACE / "broken"
    project, user = tmp_path / "project", tmp_path / "user"
    add_skill(project, "review", "Use when reviewing.")
    add_skill(user, "review", "The user's review.")
    write(project / "templates/ask.md", "---\ndescription: Ask.\n---\nAbout {{ path }} and {{topic}}.\n")
    write(project / "extensions/broken.py", "def activate(api)\n    pass\n")
    write(project / "commands/status.md", "Report on $1; see !`git status`\n")  # v4: positional_shift
    roots = [broken, project, user]
    files = [p for root in roots for p in sorted(root.rglob("*"))
             if p.is_file() and (p.name == "SKILL.md" or p.parent.name in ("templates", "commands")
                                 or p.suffix == ".py")]
    client = await lsp(roots)
    shown = set()
    for path in files:
        for d in await opened(client, path):
            if d.code not in ("trusted", "untrusted"):
                shown.add((str(path), d.range.start.line + 1, d.code))
    out = subprocess.run([sys.executable, "-P", "-m", "harness_sidecar", "check", "--json", *map(str, roots)],
                         capture_output=True, text=True, env=child_env(), timeout=120)
    reported = {(d.get("path"), d.get("line"), d["kind"]) for d in json.loads(out.stdout)["diagnostics"]}
    reported_files = {(p, k) for p, _, k in reported}
    assert {(p, k) for p, _, k in shown} <= reported_files, sorted({(p, k) for p, _, k in shown} - reported_files)
    assert {k for _, _, k in shown} >= {"not_a_placeholder", "syntax_error", "shadowed", "invalid_frontmatter",
                                        "positional_shift", "template_feature_unsupported"}
    for path, line, kind in shown:  # the same place, where check gives one
        lines = {ln for p, ln, k in reported if p == path and k == kind}
        assert line in lines or lines == {None}, (path, kind, line, lines)


# -- v4 §3: command templates in their dialect ---------------------------------------------------------

async def test_a_command_template_shows_positional_shift_where_it_uses_dollar_one(lsp, tree):
    root = tree("r")
    command = write(root / "commands/status.md", "---\ndescription: Status\n---\nReport on `$1` now;\n"
                                                 "see !`git status` and @docs/notes.md\n")
    codex_home = tree("home/.codex")
    prompt = write(codex_home / "prompts/status.md", "Report on $1; see !`git status`\n")
    client = await lsp([root, codex_home])
    shift, shell, file_ref = await opened(client, command)
    assert (shift.code, shift.severity) == ("positional_shift", types.DiagnosticSeverity.Warning)
    assert span(shift) == (3, 11, 3, 13) and "$1 is the second word" in shift.message
    assert (shell.code, span(shell)) == ("template_feature_unsupported", (4, 4, 4, 17))
    assert (file_ref.code, span(file_ref)) == ("template_feature_unsupported", (4, 22, 4, 36))
    # a Codex prompt reads $1 as the first word and has no shell expansion: nothing to say
    assert await opened(client, prompt) == []
