"""LSP mode end to end: the real process in LSP framing, custom requests, live diagnostics."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness_sidecar.client import child_env
from helpers import WORKSPACE, add_skill, write

pytest.importorskip("pygls")

LSP = [sys.executable, "-m", "harness_sidecar", "--lsp"]


def uri(path: Path | str) -> str:
    return Path(path).as_uri()


@pytest.fixture
def lsp(spawn):
    def start(roots: list[Path], trusted: list[str] | None = None, **kwargs):
        server = spawn(initialize=False, command=LSP, framing="content-length", **kwargs)
        result = server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                            "initializationOptions": {"roots": [str(r) for r in roots],
                                                                      "trustedExtensions": trusted or []}})
        assert result["capabilities"]["hoverProvider"] is True
        server.notify("initialized", {})
        return server
    return start


def open_document(server, path: Path, text: str | None = None, version: int = 1) -> None:
    server.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri(path), "languageId": "markdown", "version": version,
        "text": path.read_text() if text is None else text}})


def change_document(server, path: Path, text: str, version: int) -> None:
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri(path), "version": version},
                                             "contentChanges": [{"text": text}]})


def diagnostics_for(server, path: Path, timeout: float = 10) -> list[dict]:
    """The next publishDiagnostics for ``path``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, note in enumerate(server.notifications):
            if note["method"] == "textDocument/publishDiagnostics" and note["params"]["uri"] == uri(path):
                del server.notifications[i]
                return note["params"]["diagnostics"]
        try:
            server._dispatch(server.next_message(max(0.01, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001 - queue.Empty on timeout
            break
    raise AssertionError(f"no diagnostics published for {path}")


def span(diagnostic: dict) -> tuple[int, int, int, int]:
    r = diagnostic["range"]
    return r["start"]["line"], r["start"]["character"], r["end"]["line"], r["end"]["character"]


def test_lifecycle_and_exit_codes(lsp, tree):
    server = lsp([tree("r")])
    assert server.call("shutdown") is None
    server.notify("exit")
    assert server.wait() == 0
    server = lsp([tree("r")])
    server.notify("exit")
    assert server.wait() == 1


def test_review_scenario_through_custom_requests(lsp):
    asked = []

    def editor(message):
        asked.append(message)
        return {"result": {"contentItems": [{"type": "inputText", "text": "sélection ✓"}], "success": True}}

    server = lsp([WORKSPACE / "project"], on_request=editor)
    started = server.call("thread/start", {
        "roots": [str(WORKSPACE / "project"), str(WORKSPACE / "user")], "trustedExtensions": ["review-extension"],
        "dynamicTools": [{"name": "editor_selection", "description": "", "inputSchema": {}}]})
    thread = started["threadId"]
    assert [s["name"] for s in started["catalog"]["skills"]] == ["commit-message", "review"]
    assert started["catalog"]["extensions"][0]["status"] == "loaded"
    skill = server.call("skills/activate", {"threadId": thread, "name": "review",
                                            "resources": ["references/checklist.md"]})["skill"]
    assert skill["body"].startswith("# Reviewing in this project")
    message = server.call("templates/render", {"threadId": thread, "name": "review",
                                               "arguments": {"path": "src/parser.ts", "focus": "errors"}})["message"]
    assert message["content"] == "Review src/parser.ts with the review skill. Focus on errors.\n"
    assert "# Active skill: review" in server.call("context/build", {"threadId": thread})["systemPrompt"]
    blocked = server.call("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "review_note",
                                                                      "arguments": {"text": "SECRET"}}})["result"]
    assert blocked["toolCallId"] == "c1" and blocked["details"]["blocked"]["kind"] == "deny"
    selection = server.call("tools/call", {"threadId": thread, "call": {"id": "c2", "name": "editor_selection",
                                                                        "arguments": {"key-with-dash": 1}}})
    assert selection["result"]["content"] == [{"type": "text", "text": "sélection ✓"}]
    assert asked[0]["method"] == "item/tool/call" and isinstance(asked[0]["id"], int)
    assert asked[0]["params"]["arguments"] == {"key-with-dash": 1}  # kept as JSON, not a namedtuple
    # the same errors as on the JSONL wire
    missing = server.request("templates/render", {"threadId": thread, "name": "review", "arguments": {}})
    assert missing["error"]["code"] == -32021 and missing["error"]["data"]["kind"] == "missing_argument"
    bad = server.request("thread/start", {"roots": ["relative"]})
    assert bad["error"]["data"] == {"kind": "invalid_params", "field": "roots[0]"}
    assert server.request("context/build", {"threadId": "nope"})["error"]["data"]["kind"] == "thread_not_found"


def test_hook_faults_are_thread_diagnostic_notifications(lsp, tree):
    root = tree("r")
    write(root / "extensions/faulty.py", "def activate(api):\n"
          "    api.register_tool(name='t', description='', input_schema={}, execute=lambda c, a: 'ok')\n"
          "    api.on('tool_result', lambda e: 1 / 0)\n")
    server = lsp([root])
    thread = server.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["faulty"]})["threadId"]
    result = server.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "t", "arguments": {}}})
    assert result["result"]["isError"] is False
    (note,) = [n for n in server.notifications if n["method"] == "thread/diagnostic"]
    assert note["params"]["kind"] == "throw" and "ZeroDivisionError" in note["params"]["message"]


@pytest.mark.parametrize("content, kind, expected_span", [
    ("---\nname: other\ndescription: d\n---\n", "name_mismatch", (1, 6, 1, 11)),
    ("---\nname: Bad_Name\ndescription: d\n---\n", "invalid_name", (1, 6, 1, 14)),
    ("---\nname: x\ndescription: |\n  one\n  two\n---\n", "invalid_frontmatter", (2, 13, 2, 14)),
    ("---\nname: x\ndescription: a: b\n---\n", "invalid_frontmatter", (2, 14, 2, 17)),
    ("---\nname: x\ndescription: '✓😀' : b: c\n---\n", "invalid_frontmatter", (2, 19, 2, 25)),  # UTF-16 columns
    ("no frontmatter\n", "invalid_frontmatter", (0, 0, 0, 14)),
    ("---\nname: x\ndescription: never closed\n", "invalid_frontmatter", (0, 0, 0, 3)),
    ("---\nname: x\n---\n", "invalid_frontmatter", (0, 0, 0, 3)),  # a missing field: the opening line
    ("---\nname: nul\ndescription: d\n---\n", "invalid_name", (1, 6, 1, 9)),
    ("---\nname: x\ndescription: '  '\n---\n", "invalid_frontmatter", (2, 13, 2, 17)),
    ("---\nname: x\ndescription: [a, b]\n---\n", "invalid_frontmatter", (2, 13, 2, 19)),
    ("---\nname: " + "a" * 65 + "\ndescription: d\n---\n", "invalid_name", (1, 6, 1, 71)),
])
def test_skill_diagnostics_with_ranges(lsp, tree, content, kind, expected_span):
    root = tree("r")
    directory = content.split("name: ")[1].split("\n")[0] if kind == "invalid_name" else "x"
    path = root / "skills" / directory / "SKILL.md"
    path.parent.mkdir(parents=True)
    server = lsp([root])
    open_document(server, path, content)  # never saved: the editor's text is what counts
    found = diagnostics_for(server, path)
    assert [d["code"] for d in found][:1] == [kind], found
    assert found[0]["severity"] == 1 and found[0]["source"] == "harness-sidecar"
    assert span(found[0]) == expected_span, found[0]


def test_a_fix_in_the_unsaved_buffer_clears_the_diagnostic(lsp, tree):
    root = tree("r")
    path = add_skill(root, "review", description="Use when reviewing.")
    server = lsp([root])
    open_document(server, path)
    assert diagnostics_for(server, path) == []
    change_document(server, path, "---\nname: reviews\ndescription: Use when reviewing.\n---\nbody\n", 2)
    assert [d["code"] for d in diagnostics_for(server, path)] == ["name_mismatch"]
    change_document(server, path, "---\nname: review\ndescription: Use when reviewing.\n---\nbody\n", 3)
    assert diagnostics_for(server, path) == []
    assert "name: reviews" not in path.read_text()  # nothing was written to disk


def test_shadowing_is_information_on_both_sides(lsp, tree):
    project, user = tree("project"), tree("user")
    winner = add_skill(project, "review")
    loser = add_skill(user, "review")
    server = lsp([project, user])
    open_document(server, loser)
    (info,) = diagnostics_for(server, loser)
    assert info["severity"] == 3 and info["code"] == "shadowed" and str(winner) in info["message"]
    open_document(server, winner)
    (info,) = diagnostics_for(server, winner)
    assert info["code"] == "shadows" and str(loser) in info["message"]


def test_template_and_extension_and_outside_files(lsp, tree, tmp_path):
    root = tree("r")
    template = write(root / "templates/ask.md", "---\ndescription: Ask.\n---\nAbout {{topic}} and {{ path }}.\n")
    bad_name = write(root / "templates/Bad_Name.md", "x\n")
    trusted = write(root / "extensions/trusted-one.py", "def activate(api):\n    pass\n")
    untrusted = write(root / "extensions/other.py", "def activate(api):\n    pass\n")
    outside = write(tmp_path / "elsewhere/skills/x/SKILL.md", "garbage\n")
    server = lsp([root], trusted=["trusted-one"])
    open_document(server, template)
    (hint,) = diagnostics_for(server, template)
    assert hint["severity"] == 4 and hint["code"] == "not_a_placeholder" and span(hint) == (3, 20, 3, 30)
    assert "{{path}}" in hint["message"]
    open_document(server, bad_name)
    assert [d["code"] for d in diagnostics_for(server, bad_name)] == ["invalid_name"]
    open_document(server, trusted)
    assert [(d["code"], d["severity"]) for d in diagnostics_for(server, trusted)] == [("trusted", 3)]
    open_document(server, untrusted)
    (info,) = diagnostics_for(server, untrusted)
    assert info["code"] == "untrusted" and "never imports" in info["message"]
    open_document(server, outside)
    assert diagnostics_for(server, outside) == []


def test_hover_on_a_skill_name_and_a_placeholder(lsp, tree):
    project, user = tree("project"), tree("user")
    winner = add_skill(project, "review", "Use when reviewing code.")
    loser = add_skill(user, "review", "The user's review.")
    template = write(project / "templates/ask.md", "Ask about {{topic}} now\n")
    server = lsp([project, user])
    for path in (winner, loser, template):
        open_document(server, path)
    hover = server.call("textDocument/hover", {"textDocument": {"uri": uri(winner)},
                                               "position": {"line": 1, "character": 7}})
    assert "Use when reviewing code." in hover["contents"]["value"] and "**wins**" in hover["contents"]["value"]
    hover = server.call("textDocument/hover", {"textDocument": {"uri": uri(loser)},
                                               "position": {"line": 1, "character": 7}})
    assert "**shadowed**" in hover["contents"]["value"] and str(winner) in hover["contents"]["value"]
    hover = server.call("textDocument/hover", {"textDocument": {"uri": uri(template)},
                                               "position": {"line": 0, "character": 12}})
    assert "`topic`" in hover["contents"]["value"]
    assert hover["range"] == {"start": {"line": 0, "character": 10}, "end": {"line": 0, "character": 19}}
    assert server.call("textDocument/hover", {"textDocument": {"uri": uri(template)},
                                              "position": {"line": 0, "character": 1}}) is None


def test_the_broken_example_root_explains_itself(lsp):
    broken = WORKSPACE / "broken"
    server = lsp([broken])
    expected = {"Review-Old": "invalid_name", "deploy": "invalid_frontmatter", "notes": "invalid_frontmatter",
                "wrong-name": "name_mismatch"}
    for directory, kind in expected.items():
        path = broken / "skills" / directory / "SKILL.md"
        open_document(server, path)
        assert kind in [d["code"] for d in diagnostics_for(server, path)], directory


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


def test_lsp_without_pygls_says_how_to_install(tmp_path):
    shadow = tmp_path / "shadow"
    write(shadow / "pygls/__init__.py", "raise ImportError('not installed')\n")
    env = child_env()
    env["PYTHONPATH"] = f"{shadow}:{env['PYTHONPATH']}"
    proc = subprocess.run(LSP, capture_output=True, text=True, env=env, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "harness-sidecar[lsp]" in proc.stderr
    assert proc.stdout == ""


def test_default_roots_are_the_workspace_agents_folder_then_the_users(spawn, tmp_path):
    workspace, home = tmp_path / "repo", tmp_path / "home"
    project_skill = add_skill(workspace / ".agents", "review", "Project review.")
    user_skill = add_skill(home / ".agents", "review", "User review.")
    env = child_env({"HOME": str(home)})
    server = spawn(initialize=False, command=LSP, framing="content-length", env=env)
    server.call("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                               "workspaceFolders": [{"uri": uri(workspace), "name": "repo"}]})
    server.notify("initialized", {})
    open_document(server, user_skill)
    (info,) = diagnostics_for(server, user_skill)
    assert info["code"] == "shadowed" and str(project_skill) in info["message"]
