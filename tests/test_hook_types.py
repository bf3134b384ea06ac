"""Handler types beyond ``command`` (protocol-v4 §3) through the real sidecar: ``http`` against a real
HTTP server on 127.0.0.1 (stdlib ``http.server`` in a thread), ``mcp_tool`` against a real MCP server
written with the official ``mcp`` SDK (tests/mcp_servers/sdk_server.py), ``prompt``/``agent`` through
the editor's ``hook/prompt`` (this test is the editor and answers it).

What the hooks saw is observed from outside: the HTTP server records each request, the editor each
``hook/prompt``; what the user sees is the ``tools/call`` result and the ``thread/diagnostic``s.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import end_deciding_call, write
from mcp_helpers import sdk_server

from harness_sidecar.console.client import Malformed, child_env

BASH = {"name": "Bash", "description": "Run a shell command.",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"],
                        "additionalProperties": False}}


class HookServer:
    """A real HTTP server on 127.0.0.1: each path answers as told; every request is recorded."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: dict[str, tuple[int, bytes, dict]] = {}
        self.release = threading.Event()  # /slow waits for it (set at the end of the test)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append({"path": self.path, "headers": dict(self.headers.items()),
                                       "body": json.loads(body)})
                if self.path == "/slow":
                    outer.release.wait(60)
                status, data, headers = outer.answers.get(self.path, (200, b"", {}))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, path: str, status: int, body: dict | str | bytes = b"", **headers: str) -> str:
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        self.answers[path] = (status, data, headers)
        return self.url + path

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = HookServer()
    yield s
    s.close()


class Editor:
    """Runs Bash calls (records them); answers hook/prompt as told (records each)."""

    def __init__(self, prompt_answer: dict | None = None) -> None:
        self.ran: list[dict] = []
        self.prompts: list[dict] = []
        self.prompt_answer = prompt_answer

    def __call__(self, message: dict) -> dict | None:
        if message["method"] == "item/tool/call":
            self.ran.append(message["params"]["arguments"])
            return {"result": {"contentItems": [{"type": "inputText", "text": "ran"}], "success": True}}
        if message["method"] == "hook/prompt":
            self.prompts.append(message["params"])
            if self.prompt_answer is None:
                return {"error": {"code": -32603, "message": "no model here"}}
            if type(self.prompt_answer.get("ok")) is not bool:  # off the protocol on purpose
                return Malformed({"result": self.prompt_answer})
            return {"result": self.prompt_answer}
        return {"error": {"code": -32601, "message": "no"}}


def hooks_file(tmp_path: Path, events: dict) -> Path:
    return write(tmp_path / "project" / "hooks.json", json.dumps({"hooks": events}))


def group(matcher: str | None, *handlers: dict) -> list[dict]:
    out: dict = {"hooks": list(handlers)}
    if matcher is not None:
        out["matcher"] = matcher
    return [out]


def open_thread(spawn, tmp_path: Path, editor: Editor, *, capabilities: dict | None = None, trusted: bool = True,
                env: dict | None = None, **extra):
    sidecar = spawn(initialize=False, on_request=editor, env={**child_env(), **(env or {})})
    sidecar.call("initialize", {"clientInfo": {"name": "test"}, "capabilities": capabilities or {}})
    file = tmp_path / "project" / "hooks.json"
    started = sidecar.call("thread/start", {
        "roots": [str(tmp_path / "project")], "cwd": str(tmp_path), "dynamicTools": [BASH], "watch": False,
        "trustedHooks": [{"path": str(file)}] if trusted else [], **extra}, timeout=60)
    return sidecar, started


def bash(sidecar, started, command: str = "ls", call_id: str = "c1") -> dict:
    return sidecar.call("tools/call", {"threadId": started["threadId"],
                                       "call": {"id": call_id, "name": "Bash", "arguments": {"command": command}}},
                        timeout=60)["result"]


def diagnostics(sidecar, kind: str) -> list[dict]:
    return [n["params"] for n in sidecar.notifications
            if n["method"] == "thread/diagnostic" and n["params"].get("kind") == kind]


# -- http ---------------------------------------------------------------------------------------------

def test_an_http_hook_gets_the_hook_input_and_its_answer_decides(spawn, tmp_path, server):
    """The stdin JSON is POSTed; headers expand $VAR/${VAR} only from allowedEnvVars; a deny in the body blocks
    with its reason, and the editor never runs the call."""
    url = server.answer("/pre", 200, {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                             "permissionDecision": "deny",
                                                             "permissionDecisionReason": "no rm here"}})
    file = hooks_file(tmp_path, {"PreToolUse": group("Bash", {
        "type": "http", "url": url, "timeout": 30, "allowedEnvVars": ["HOOK_TOKEN"],
        "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Team": "${HOOK_TOKEN}-${HOOK_SECRET}"}})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor, env={"HOOK_TOKEN": "t0k", "HOOK_SECRET": "s3cret"})
    assert started["catalog"]["hooks"] == [{"source": f"root:{file}", "event": "PreToolUse", "matcher": "Bash",
                                            "type": "http", "url": url, "timeout": 30, "trusted": True}]
    assert [d for d in started["diagnostics"] if d["kind"].startswith("hook_")] == []
    result = bash(sidecar, started, "rm -rf build")
    assert result["isError"] and result["details"]["blocked"] == {"kind": "hook", "reason": "no rm here",
                                                                  "by": [f"root:{file}"]}
    assert editor.ran == []
    [seen] = server.requests
    assert seen["path"] == "/pre" and seen["headers"]["Content-Type"] == "application/json"
    assert seen["headers"]["Authorization"] == "Bearer t0k"
    assert seen["headers"]["X-Team"] == "t0k-"  # HOOK_SECRET is not in allowedEnvVars: it is never sent
    body = seen["body"]
    assert body["hook_event_name"] == "PreToolUse" and body["tool_name"] == "Bash"
    assert body["tool_input"] == {"command": "rm -rf build"} and body["session_id"] == started["threadId"]


def test_an_http_hook_that_says_nothing_lets_the_call_run_and_its_context_is_kept(spawn, tmp_path, server):
    quiet = server.answer("/quiet", 204)
    context = server.answer("/context", 200, {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                                     "additionalContext": "from the service"}})
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": quiet},
                                              {"type": "http", "url": context})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor)
    result = bash(sidecar, started)
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    assert result["details"]["hookContext"] == ["from the service"]
    assert sorted(r["path"] for r in server.requests) == ["/context", "/quiet"]


@pytest.mark.parametrize("path, status, body, said", [
    ("/error", 500, "boom", "answered 500"),
    ("/text", 200, "allowed, I suppose", "not a JSON object"),
    ("/badjson", 200, "{not json", "not JSON"),
    ("/strict", 200, json.dumps({"decision": "deny"}), "'decision'"),
    ("/moved", 302, "", "answered 302"),
])
def test_an_http_hook_that_fails_blocks_a_blocking_event(spawn, tmp_path, server, path, status, body, said):
    extra = {"Location": server.url + "/elsewhere"} if status == 302 else {}
    url = server.answer(path, status, body, **extra)
    file = hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": url})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor)
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert said in result["details"]["blocked"]["reason"] and result["details"]["blocked"]["by"] == [f"root:{file}"]
    assert editor.ran == []
    assert [r["path"] for r in server.requests] == [path]  # a redirect is not followed


def test_an_http_hook_past_its_timeout_or_unreachable_fails_closed(spawn, tmp_path, server):
    import socket

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": server.url + "/slow", "timeout": 1}),
                          "PostToolUse": group("Bash", {"type": "http", "url": f"http://127.0.0.1:{port}/gone"})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor)
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert "did not answer within 1000 ms" in result["details"]["blocked"]["reason"]
    assert editor.ran == []
    # a failure of an event that cannot block (PostToolUse) is said, and the call's result stands
    hooks_file(tmp_path, {"PostToolUse": group("Bash", {"type": "http", "url": f"http://127.0.0.1:{port}/gone"})})
    sidecar, started = open_thread(spawn, tmp_path, editor)
    result = bash(sidecar, started, call_id="c2")
    assert not result["isError"] and editor.ran == [{"command": "ls"}]
    [failed] = diagnostics(sidecar, "hook_failed")
    assert failed["type"] == "http" and failed["command"] == f"http://127.0.0.1:{port}/gone"
    assert "failed" in failed["message"] and failed["event"] == "PostToolUse"


def test_an_environment_value_cannot_inject_a_header(spawn, tmp_path, server):
    """An allowed variable whose value holds a line break would add headers of its own: the request is not
    sent, and the call fails closed."""
    url = server.answer("/pre", 200, {})
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": url, "allowedEnvVars": ["HOOK_TOKEN"],
                                                       "headers": {"Authorization": "Bearer $HOOK_TOKEN"}})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor, env={"HOOK_TOKEN": "t0k\r\nX-Injected: yes"})
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert "'Authorization'" in result["details"]["blocked"]["reason"]
    assert "t0k" not in json.dumps(result) and "t0k" not in json.dumps(sidecar.notifications)  # the value is not said
    assert server.requests == [] and editor.ran == []


@pytest.mark.parametrize("how", ["thread/close", "$/cancelRequest"])
def test_a_call_whose_http_or_prompt_hook_is_deciding_ends_at_close_or_cancel(spawn, tmp_path, server, how):
    """An http hook waiting on a slow server and a prompt hook waiting on the editor: thread/close answers the
    call blocked "closed", $/cancelRequest cancelled; the editor is told to stop asking; the tool never runs."""
    import time

    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": server.url + "/slow"},
                                              {"type": "prompt", "prompt": "Safe? $ARGUMENTS"})})
    editor = Editor()
    answer_prompt = editor.__call__

    def thinking_editor(message: dict) -> dict | None:  # the model never answers (until the request is cancelled)
        if message["method"] == "hook/prompt":
            editor.prompts.append(message["params"])
            return None
        return answer_prompt(message)

    sidecar, started = open_thread(spawn, tmp_path, thinking_editor, capabilities={"hookPrompt": True})
    call = sidecar.request_async("tools/call", {"threadId": started["threadId"],
                                                "call": {"id": "c1", "name": "Bash", "arguments": {"command": "ls"}}})
    deadline = time.monotonic() + 20
    while not (server.requests and editor.prompts) and time.monotonic() < deadline:
        sidecar.call("tools/list", {"threadId": started["threadId"]})  # reads what the sidecar sent meanwhile
        time.sleep(0.02)
    assert [r["path"] for r in server.requests] == ["/slow"] and len(editor.prompts) == 1
    end_deciding_call(sidecar, started["threadId"], call, how)
    assert editor.ran == []
    deadline = time.monotonic() + 20
    while not [n for n in sidecar.notifications if n["method"] == "$/cancelRequest"] and time.monotonic() < deadline:
        sidecar.request("tools/list", {"threadId": "thread-999"})  # reads what the sidecar sent meanwhile
        time.sleep(0.02)
    assert [n for n in sidecar.notifications if n["method"] == "$/cancelRequest"], "the editor was not told"
    server.release.set()
    assert sidecar.call("thread/start", {"roots": [str(tmp_path / "project")]})["threadId"]  # still serving


def test_an_http_hook_of_an_untrusted_file_is_never_sent(spawn, tmp_path, server):
    url = server.answer("/pre", 200, {"decision": "block", "reason": "x"})
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": url})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor, trusted=False)
    assert started["catalog"]["hooks"][0]["trusted"] is False
    assert not bash(sidecar, started)["isError"] and editor.ran == [{"command": "ls"}]
    assert server.requests == []
    assert len(diagnostics(sidecar, "hook_untrusted")) == 1


def test_malformed_typed_handlers_are_hook_invalid_and_http_on_session_start_is_not_run(spawn, tmp_path, server):
    url = server.answer("/start", 200, {})
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "http", "url": "ftp://example.invalid/x"},
                                              {"type": "mcp_tool", "tool": "x"},
                                              {"type": "prompt", "prompt": ""}),
                          "SessionStart": group(None, {"type": "http", "url": url})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor)
    kinds = sorted(d["kind"] for d in started["diagnostics"] if d["kind"].startswith("hook_"))
    assert kinds == ["hook_invalid"] * 3 + ["hook_type_unsupported"]
    assert [h.get("supported") for h in started["catalog"]["hooks"]] == [False]  # only the SessionStart one
    assert server.requests == []  # Claude Code runs no http hook on SessionStart; neither does the sidecar
    assert not bash(sidecar, started)["isError"]


# -- prompt and agent ------------------------------------------------------------------------------------

def test_a_prompt_hook_asks_the_editors_model_and_ok_false_blocks(spawn, tmp_path):
    file = hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "prompt", "model": "fast",
                                                              "prompt": "Is this safe? $ARGUMENTS"},
                                                     {"type": "agent", "prompt": "Verify the command."})})
    editor = Editor({"ok": False, "reason": "it deletes the build"})
    sidecar, started = open_thread(spawn, tmp_path, editor, capabilities={"hookPrompt": True})
    assert [(h["type"], h.get("supported")) for h in started["catalog"]["hooks"]] == [("prompt", None),
                                                                                      ("agent", None)]
    result = bash(sidecar, started, "rm -rf build")
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook"
    assert result["details"]["blocked"]["reason"] == "it deletes the build; it deletes the build"
    assert result["details"]["blocked"]["by"] == [f"root:{file}"] and editor.ran == []
    by_kind = {p["kind"]: p for p in editor.prompts}
    assert set(by_kind) == {"prompt", "agent"}
    assert by_kind["prompt"]["model"] == "fast" and "model" not in by_kind["agent"]
    asked = by_kind["prompt"]["prompt"]
    assert asked.startswith("Is this safe? {")
    seen = json.loads(asked[len("Is this safe? "):])  # $ARGUMENTS is the hook input JSON
    assert seen["tool_input"] == {"command": "rm -rf build"} and seen["hook_event_name"] == "PreToolUse"
    head, _, appended = by_kind["agent"]["prompt"].partition("\n\n")  # no $ARGUMENTS: the JSON is appended
    assert head == "Verify the command." and json.loads(appended)["tool_name"] == "Bash"
    editor.prompt_answer = {"ok": True}
    assert not bash(sidecar, started, "ls", "c2")["isError"] and editor.ran == [{"command": "ls"}]


def test_a_prompt_hooks_bad_answer_is_a_failure_that_blocks(spawn, tmp_path):
    hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "prompt", "prompt": "Safe? $ARGUMENTS"})})
    editor = Editor({"ok": "yes"})
    sidecar, started = open_thread(spawn, tmp_path, editor, capabilities={"hookPrompt": True})
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert "{ok: bool" in result["details"]["blocked"]["reason"]
    editor.prompt_answer = None  # the editor answers with an error
    result = bash(sidecar, started, call_id="c2")
    assert result["isError"] and "no model here" in result["details"]["blocked"]["reason"] and editor.ran == []


def test_without_hook_prompt_a_prompt_hook_is_unsupported_and_blocks_never_a_silent_allow(spawn, tmp_path):
    file = hooks_file(tmp_path, {"PreToolUse": group("Bash", {"type": "prompt", "prompt": "Safe? $ARGUMENTS"}),
                                 "PostToolUse": group("Bash", {"type": "agent", "prompt": "Check the result"})})
    editor = Editor({"ok": True})
    sidecar, started = open_thread(spawn, tmp_path, editor, limits={"commandHookFailure": "open"})
    assert [(h["type"], h.get("supported")) for h in started["catalog"]["hooks"]] == [("prompt", False),
                                                                                      ("agent", False)]
    said = [d for d in started["diagnostics"] if d["kind"] == "hook_type_unsupported"]
    assert len(said) == 2 and all("capabilities.hookPrompt" in d["message"] for d in said)
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert "capabilities.hookPrompt" in result["details"]["blocked"]["reason"]
    assert result["details"]["blocked"]["by"] == [f"root:{file}"]
    assert editor.ran == [] and editor.prompts == []  # nothing was asked
    # where it cannot block (PostToolUse) it is not run at all: thread/start said why, once
    hooks_file(tmp_path, {"PostToolUse": group("Bash", {"type": "agent", "prompt": "Check the result"})})
    sidecar, started = open_thread(spawn, tmp_path, editor)
    assert not bash(sidecar, started, call_id="c2")["isError"] and editor.ran == [{"command": "ls"}]
    assert diagnostics(sidecar, "hook_failed") == [] and editor.prompts == []


def test_a_stop_prompt_hook_keeps_the_agent_working(spawn, tmp_path):
    hooks_file(tmp_path, {"Stop": group(None, {"type": "prompt", "prompt": "Done? $ARGUMENTS"})})
    editor = Editor({"ok": False, "reason": "the tests were not run"})
    sidecar, started = open_thread(spawn, tmp_path, editor, capabilities={"hookPrompt": True})
    said = sidecar.call("loop/event", {"threadId": started["threadId"], "event": "stop",
                                       "payload": {"stopHookActive": False, "lastAssistantMessage": "All done."}})
    assert said["blocked"]["reason"] == "the tests were not run"  # the agent keeps working
    assert json.loads(editor.prompts[0]["prompt"][len("Done? "):])["last_assistant_message"] == "All done."


# -- mcp_tool -------------------------------------------------------------------------------------------

def test_an_mcp_tool_hook_calls_the_threads_server_with_the_input_substituted(spawn, tmp_path):
    """The echo tool of a real MCP server answers what it is given: the hook's answer is the tool's text."""
    deny = json.dumps({"decision": "block", "reason": "refused ${tool_input.command} in ${cwd}"})
    file = hooks_file(tmp_path, {
        "PreToolUse": group("Bash", {"type": "mcp_tool", "server": "guard", "tool": "echo", "input": {"text": deny}}),
        "UserPromptSubmit": group(None, {"type": "mcp_tool", "server": "guard", "tool": "echo",
                                         "input": {"text": "context for ${prompt}"}})})
    events = tmp_path / "events.txt"
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor, mcpServers=[
        {"name": "guard", "command": sdk_server(), "env": {"MCP_TEST_EVENTS": str(events)}}])
    assert started["catalog"]["hooks"][0] == {"source": f"root:{file}", "event": "PreToolUse", "matcher": "Bash",
                                              "type": "mcp_tool", "server": "guard", "tool": "echo", "trusted": True}
    result = bash(sidecar, started, "rm -rf build")
    assert result["isError"] and result["details"]["blocked"] == {
        "kind": "hook", "reason": f"refused rm -rf build in {tmp_path}", "by": [f"root:{file}"]}
    assert editor.ran == []
    submitted = sidecar.call("input/submit", {"threadId": started["threadId"], "text": "hello"})
    assert submitted["hookContext"] == ["context for hello"]  # plain text is context, as a command's stdout


def test_an_mcp_tool_hook_that_fails_blocks_and_a_missing_server_is_said(spawn, tmp_path):
    file = hooks_file(tmp_path, {
        "PreToolUse": group("Bash", {"type": "mcp_tool", "server": "guard", "tool": "fail"}),
        "PostToolUse": group("Bash", {"type": "mcp_tool", "server": "nowhere", "tool": "echo",
                                      "input": {"text": "x"}})})
    editor = Editor()
    sidecar, started = open_thread(spawn, tmp_path, editor, mcpServers=[{"name": "guard", "command": sdk_server()}])
    result = bash(sidecar, started)
    assert result["isError"] and result["details"]["blocked"]["kind"] == "hook_failed"
    assert "it failed on purpose" in result["details"]["blocked"]["reason"] and editor.ran == []
    hooks_file(tmp_path, {"PostToolUse": group("Bash", {"type": "mcp_tool", "server": "nowhere", "tool": "echo",
                                                        "input": {"text": "x"}})})
    sidecar, started = open_thread(spawn, tmp_path, editor, mcpServers=[{"name": "guard", "command": sdk_server()}])
    assert not bash(sidecar, started, call_id="c2")["isError"] and editor.ran == [{"command": "ls"}]
    [failed] = diagnostics(sidecar, "hook_failed")
    assert failed["type"] == "mcp_tool" and "no MCP server 'nowhere'" in failed["message"]
    assert "guard" in failed["message"] and failed["source"] == f"root:{file}"


def test_a_plugins_hooks_of_other_types_run_under_its_grant_and_name_its_own_server(spawn, tmp_path, server):
    """A trusted plugin's http hook is sent, and its mcp_tool hook names the plugin's MCP server as its .mcp.json
    does ("guard", run as plugin_guarded_guard)."""
    import sys

    url = server.answer("/plugin", 200, {})
    plugin = tmp_path / "project" / "plugins" / "guarded"
    write(plugin / ".claude-plugin" / "plugin.json", json.dumps({"name": "guarded"}))
    write(plugin / ".mcp.json", json.dumps({"mcpServers": {"guard": {"command": sys.executable,
                                                                     "args": sdk_server()[1:]}}}))
    deny = json.dumps({"decision": "block", "reason": "the plugin's server says no to ${tool_input.command}"})
    write(plugin / "hooks" / "hooks.json", json.dumps({"hooks": {"PreToolUse": group(
        "Bash", {"type": "http", "url": url},
        {"type": "mcp_tool", "server": "guard", "tool": "echo", "input": {"text": deny}})}}))
    editor = Editor()
    sidecar = spawn(initialize=False, on_request=editor)
    sidecar.call("initialize", {"clientInfo": {"name": "test"}})
    started = sidecar.call("thread/start", {"roots": [str(tmp_path / "project")], "cwd": str(tmp_path),
                                            "dynamicTools": [BASH], "watch": False,
                                            "trustedPlugins": [{"name": "guarded"}]}, timeout=60)
    assert [(h["source"], h["type"], h["trusted"]) for h in started["catalog"]["hooks"]] == [
        ("plugin:guarded", "http", True), ("plugin:guarded", "mcp_tool", True)]
    result = bash(sidecar, started, "make deploy")
    assert result["isError"] and result["details"]["blocked"]["reason"] == "the plugin's server says no to make deploy"
    assert editor.ran == [] and [r["body"]["tool_input"] for r in server.requests] == [{"command": "make deploy"}]
