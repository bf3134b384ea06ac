"""Remote MCP servers (protocol-v4 §4), end to end through the real sidecar.

The servers are real: tests/mcp_servers/http_server.py, written with the official SDK
(``MCPServer``, uvicorn) on 127.0.0.1 — streamable HTTP, SSE, a bearer check, and an OAuth 2.1
authorization server of the SDK's own routes (metadata, dynamic registration, PKCE, tokens). The
"browser" of the OAuth tests is the test answering ``ui/openUrl``: it follows the authorization
URL (the server approves at once) to the sidecar's loopback redirect, as a user's browser would.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from helpers import add_skill, write
from mcp_helpers import read_events, wait_until

HTTP_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "http_server.py"

POLICY = """
def gate(event, ctx):
    if event["call"]["name"] == "mcp__remote__echo" and event["call"]["arguments"]["text"] == "forbidden":
        return {"block": True, "reason": "the policy forbids that text"}
def activate(api):
    api.on("tool_call", gate)
"""


class Remote:
    """One server process and its URL."""

    def __init__(self, tmp_path: Path, *flags: str) -> None:
        self.events = tmp_path / f"events-{len(list(tmp_path.glob('events-*')))}.txt"
        self.events.touch()
        env = {**os.environ, "MCP_TEST_EVENTS": str(self.events)}
        self.proc = subprocess.Popen([sys.executable, str(HTTP_SERVER), *flags], stdout=subprocess.PIPE, env=env,
                                     text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        transport = flags[flags.index("--transport") + 1] if "--transport" in flags else "http"
        self.url = f"http://127.0.0.1:{self.port}/" + ("mcp" if transport == "http" else "sse")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def remote(tmp_path):
    started: list[Remote] = []

    def make(*flags: str) -> Remote:
        server = Remote(tmp_path, *flags)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.")
    write(root / "extensions/policy.py", POLICY)
    return root


@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


def sidecar_env(state: Path, **extra: str) -> dict[str, str]:
    from harness_sidecar.console.client import child_env

    return {**child_env(), "HARNESS_SIDECAR_STATE_DIR": str(state), **extra}


def start(sidecar, root, servers, **extra):
    return sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["policy"],
                                         "mcpServers": servers, **extra}, timeout=60)


def call(sidecar, thread, name, arguments, ident="c1", timeout=60):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": ident, "name": name,
                                                                    "arguments": arguments}}, timeout=timeout)["result"]


def text(result) -> str:
    return result["content"][0]["text"]


def tool_names(result) -> list[str]:
    return sorted(t["name"] for t in result["tools"] if t["name"].startswith("mcp__"))


@pytest.mark.parametrize("transport, flags", [("http", ()), ("http", ("--json-response",)), ("sse", ())],
                         ids=["http-sse-answers", "http-json-answers", "sse"])
def test_a_remote_servers_tools_are_listed_and_called_with_its_headers_expanded(spawn, remote, root, state,
                                                                                transport, flags):
    server = remote("--transport", transport, *flags)
    sidecar = spawn(env=sidecar_env(state, HARNESS_TEST_HEADER="from-the-environment"))
    result = start(sidecar, root, [{"name": "remote", "type": transport, "url": server.url,
                                    "headers": {"X-Test": "${HARNESS_TEST_HEADER}"}}])
    assert tool_names(result) == ["mcp__remote__echo", "mcp__remote__headers", "mcp__remote__pid",
                                  "mcp__remote__sleep"]
    thread = result["threadId"]
    answer = call(sidecar, thread, "mcp__remote__echo", {"text": "hello"})
    assert not answer["isError"] and text(answer) == "hello"
    # the header reached the server with ${VAR} expanded from the sidecar's environment
    assert text(call(sidecar, thread, "mcp__remote__headers", {}, "c2")) == \
        "authorization=None x-test=from-the-environment"
    # a hook sees and blocks a remote tool call as any other
    blocked = call(sidecar, thread, "mcp__remote__echo", {"text": "forbidden"}, "c3")
    assert blocked["isError"] and "the policy forbids that text" in text(blocked)
    sidecar.call("thread/close", {"threadId": thread})


def test_a_bearer_header_authorises_and_a_wrong_one_is_reported_not_hung(spawn, remote, root, state):
    server = remote("--bearer", "s3cret")
    sidecar = spawn(env=sidecar_env(state, HARNESS_TEST_TOKEN="s3cret"))
    result = start(sidecar, root, [{"name": "remote", "type": "http", "url": server.url,
                                    "headers": {"Authorization": "Bearer ${HARNESS_TEST_TOKEN}"}}])
    assert "mcp__remote__echo" in tool_names(result)
    answer = call(sidecar, result["threadId"], "mcp__remote__headers", {})
    assert text(answer).startswith("authorization=Bearer s3cret")

    result = start(sidecar, root, [{"name": "remote", "type": "http", "url": server.url,
                                    "headers": {"Authorization": "Bearer wrong"}}])
    assert tool_names(result) == []
    failed = [d for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"]
    assert failed and failed[0]["name"] == "remote"
    assert "refused the Authorization header of its entry (HTTP 401)" in failed[0]["message"], failed
    assert "wrong" not in json.dumps(result)  # the header's value is never told


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_call_in_flight_when_the_server_dies_is_answered_and_the_next_call_reconnects(spawn, remote, root, state,
                                                                                      transport):
    server = remote("--transport", transport)
    sidecar = spawn(env=sidecar_env(state))
    result = start(sidecar, root, [{"name": "remote", "type": transport, "url": server.url}])
    thread = result["threadId"]
    pending = sidecar.request_async("tools/call", {"threadId": thread, "call": {
        "id": "c1", "name": "mcp__remote__sleep", "arguments": {"seconds": 120}}})
    assert wait_until(lambda: "sleeping" in read_events(server.events))
    server.stop()
    answer = sidecar.wait_for(pending, timeout=60)["result"]["result"]
    assert answer["isError"] and answer["details"]["kind"] == "mcp_exit", answer
    assert wait_until(lambda: any(n["method"] == "thread/diagnostic" and n["params"]["kind"] == "mcp_exit"
                                  for n in sidecar.notifications))
    # the next call tries to reconnect and says why it cannot
    again = call(sidecar, thread, "mcp__remote__echo", {"text": "x"}, "c2")
    assert again["isError"] and again["details"]["kind"] == "mcp_unavailable"
    # the server is back (same port): the next call reconnects, a new session, and is answered
    remote("--transport", transport, "--port", str(server.port))
    back = call(sidecar, thread, "mcp__remote__echo", {"text": "back"}, "c3")
    assert not back["isError"] and text(back) == "back", back
    assert any(n["method"] == "thread/diagnostic" and n["params"]["kind"] == "mcp_restarted"
               for n in sidecar.notifications)


def test_a_remote_entry_needs_a_url_and_no_command(spawn, root, state):
    sidecar = spawn(env=sidecar_env(state))
    for entry, field in (({"name": "r", "type": "http"}, "mcpServers[0].url"),
                         ({"name": "r", "type": "sse", "url": "http://127.0.0.1:1/sse", "command": ["x"]},
                          "mcpServers[0].command"),
                         ({"name": "r", "type": "http", "url": "ftp://x"}, "mcpServers[0].url"),
                         ({"name": "r"}, "mcpServers[0].command")):
        response = sidecar.request("thread/start", {"roots": [str(root)], "mcpServers": [entry]})
        assert response["error"]["data"]["kind"] == "invalid_params", entry
        assert response["error"]["data"]["field"] == field, entry


# -- OAuth ---------------------------------------------------------------------------------------


class Browser:
    """The user's browser: follows an authorization URL (the test server approves at once) to the redirect.

    ``hold``: URLs the editor is asked to open wait until ``release()`` (the user is slow to sign in)."""

    def __init__(self, hold: bool = False) -> None:
        self.opened: list[str] = []
        self.held: list[str] = []
        self.hold = hold

    def visit(self, url: str) -> None:
        self.opened.append(url)
        with urllib.request.urlopen(url, timeout=30) as response:  # the 302 to 127.0.0.1:<port>/callback followed
            assert response.status == 200

    def release(self) -> None:
        self.hold = False
        while self.held:
            self.visit(self.held.pop(0))

    def on_request(self, message):
        if message["method"] == "ui/openUrl":
            if self.hold:
                self.held.append(message["params"]["url"])
            else:
                self.visit(message["params"]["url"])
            return {"result": {"opened": True}}
        return {"error": {"code": -32601, "message": "not served"}}


def oauth_sidecar(spawn, state, browser=None, **env):
    sidecar = spawn(initialize=False, env=sidecar_env(state, **env),
                    on_request=browser.on_request if browser else None)
    ui = {"openUrl": True} if browser else {}
    sidecar.call("initialize", {"protocolVersion": "4", "capabilities": {"ui": ui}})
    return sidecar


def tools_now(sidecar, thread) -> list[str]:
    return sorted(t["name"] for t in sidecar.call("tools/list", {"threadId": thread})["tools"]
                  if t["name"].startswith("mcp__"))


def joined(sidecar, thread, name="mcp__auth__echo") -> bool:
    return name in tools_now(sidecar, thread)


def test_oauth_signs_in_through_the_editor_without_holding_thread_start_and_keeps_the_token_private(
        spawn, remote, root, state):
    server = remote("--oauth")
    browser = Browser(hold=True)
    sidecar = oauth_sidecar(spawn, state, browser)
    result = start(sidecar, root, [{"name": "auth", "type": "http", "url": server.url}])
    thread = result["threadId"]
    # thread/start answered while the sign-in waits for the user: without the server's tools
    assert tool_names(result) == [] and not browser.opened
    assert wait_until(lambda: sidecar.call("tools/list", {"threadId": thread}) and browser.held, 30)
    browser.release()
    # the tools join once signed in, announced by catalog/changed
    assert wait_until(lambda: joined(sidecar, thread), 60)
    assert any(n["method"] == "catalog/changed" for n in sidecar.notifications)
    assert len(browser.opened) == 1
    url = browser.opened[0]
    assert "code_challenge_method=S256" in url and "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
    answer = call(sidecar, thread, "mcp__auth__echo", {"text": "signed in"})
    assert not answer["isError"] and text(answer) == "signed in"
    assert read_events(server.events).count("register") == 1

    files = list((state / "mcp-auth").iterdir())
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((state / "mcp-auth").stat().st_mode) == 0o700
    token = json.loads(files[0].read_text())["tokens"]["access_token"]
    seen = text(call(sidecar, thread, "mcp__auth__headers", {}, "c2"))
    assert seen.startswith(f"authorization=Bearer {token}")
    sidecar.call("thread/close", {"threadId": thread})
    sidecar.close()
    # never in what the sidecar said (catalog, diagnostics, notifications) nor in its stderr
    said = json.dumps(result) + json.dumps(sidecar.notifications) + b"".join(sidecar.stderr_lines).decode()
    assert token not in said

    # a new sidecar over the same state directory uses the kept token: no sign-in, tools at once
    again = oauth_sidecar(spawn, state, Browser())
    result = start(again, root, [{"name": "auth", "type": "http", "url": server.url}])
    assert "mcp__auth__echo" in tool_names(result)
    assert read_events(server.events).count("token code") == 1


def test_without_the_capability_the_sign_in_url_is_a_diagnostic_and_the_tools_join_after(spawn, remote, root,
                                                                                         state):
    server = remote("--oauth")
    sidecar = oauth_sidecar(spawn, state)
    result = start(sidecar, root, [{"name": "auth", "type": "http", "url": server.url}])
    thread = result["threadId"]
    assert tool_names(result) == []

    def required():
        return [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"
                and n["params"]["kind"] == "mcp_auth_required"]
    assert wait_until(required, 30)
    data = required()[0]["data"]
    assert data["server"] == "auth" and data["url"].startswith(f"http://127.0.0.1:{server.port}/authorize?")
    Browser().visit(data["url"])  # the user opens it
    assert wait_until(lambda: joined(sidecar, thread), 60)
    assert text(call(sidecar, thread, "mcp__auth__echo", {"text": "ok"})) == "ok"


def test_a_token_is_refreshed_before_it_expires_and_a_revoked_grant_asks_again(spawn, remote, root, state):
    server = remote("--oauth", "--token-seconds", "20")
    browser = Browser()
    sidecar = oauth_sidecar(spawn, state, browser)
    thread = start(sidecar, root, [{"name": "auth", "type": "http", "url": server.url}])["threadId"]
    assert wait_until(lambda: joined(sidecar, thread), 60)
    # calls go on succeeding while the 20 s token is refreshed (from 18 s on: 2 s of margin on a loaded machine)
    calls = iter(range(10000))

    def refreshed() -> bool:
        answer = call(sidecar, thread, "mcp__auth__echo", {"text": "again"}, f"r{next(calls)}")
        assert not answer["isError"], answer
        return "token refresh" in read_events(server.events)
    assert wait_until(refreshed, 90)
    assert read_events(server.events).count("token code") == 1 and len(browser.opened) == 1
    assert "expired" not in read_events(server.events)  # refreshed before, never sent past its lifetime

    # the server forgets the access token before its time: the 401 gets one refresh and one retry, no sign-in
    refreshes = read_events(server.events).count("token refresh")
    assert text(call(sidecar, thread, "mcp__auth__drop_access", {}, "drop")) == "dropped"
    answer = call(sidecar, thread, "mcp__auth__echo", {"text": "retried"}, "retried")
    assert not answer["isError"] and text(answer) == "retried"
    assert read_events(server.events).count("token refresh") == refreshes + 1 and len(browser.opened) == 1

    # the user withdraws the grant: the next call's 401 gets one refresh (refused), then a new sign-in
    assert text(call(sidecar, thread, "mcp__auth__revoke_all", {}, "rv")) == "revoked"
    answer = call(sidecar, thread, "mcp__auth__echo", {"text": "after"}, "after")
    assert not answer["isError"] and text(answer) == "after"
    assert len(browser.opened) == 2
    assert read_events(server.events).count("token code") == 2


def test_only_a_thread_with_a_remote_server_imports_the_sdks_client(spawn, remote, root, state, tmp_path):
    from mcp_helpers import sdk_server

    sidecar = spawn(env=sidecar_env(state, PYTHONPROFILEIMPORTTIME="1"))

    def imported() -> set[str]:
        lines = b"".join(sidecar.stderr_lines).decode("utf-8", "replace").splitlines()
        return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:") and "|" in line}

    stdio = start(sidecar, root, [{"name": "local", "command": sdk_server()}])
    assert text(call(sidecar, stdio["threadId"], "mcp__local__ping", {})) == "pong"
    sidecar.call("thread/close", {"threadId": stdio["threadId"]})
    assert wait_until(lambda: "harness_sidecar.mcp.servers" in imported())  # the stdio client was imported...
    before = imported()
    for module in ("httpx2", "mcp", "mcp_types", "harness_sidecar.mcp.remote", "harness_sidecar.mcp.auth"):
        assert module not in before, module  # ...and nothing of the remote transports

    server = remote()
    result = start(sidecar, root, [{"name": "remote", "type": "http", "url": server.url}])
    assert "mcp__remote__echo" in tool_names(result)
    assert wait_until(lambda: {"httpx2", "harness_sidecar.mcp.remote"} <= imported())


def test_a_trusted_plugins_remote_server_starts_and_an_untrusted_ones_never_connects(spawn, remote, tree, state,
                                                                                   tmp_path):
    server = remote()
    root = tmp_path / "ws"
    write(root / "plugins/linear-like/.claude-plugin/plugin.json", json.dumps({"name": "linear-like"}))
    write(root / "plugins/linear-like/.mcp.json", json.dumps({"mcpServers": {"issues": {
        "type": "http", "url": server.url, "headers": {"X-Test": "${HARNESS_TEST_HEADER:-unset}"}}}}))
    sidecar = spawn(env=sidecar_env(state))
    result = sidecar.call("thread/start", {"roots": [str(root)]}, timeout=60)
    listed = [s for s in result["catalog"]["mcpServers"] if s["plugin"] == "linear-like"]
    assert listed and listed[0]["transport"] == "http" and listed[0]["url"] == server.url
    assert not listed[0]["trusted"] and "headers" not in listed[0]
    assert not [k for k in result["diagnostics"] if k["kind"] == "mcp_transport_unsupported"]
    assert tool_names(result) == []
    assert not [e for e in read_events(server.events) if e.startswith("request ")]  # never connected

    result = sidecar.call("thread/start", {"roots": [str(root)], "trustedPlugins": [{"name": "linear-like"}]},
                          timeout=60)
    name = "mcp__plugin_linear-like_issues__headers"
    assert name in tool_names(result)
    assert text(call(sidecar, result["threadId"], name, {})) == "authorization=None x-test=unset"


@pytest.mark.parametrize("mode, transport, path", [("streamableHttp", "http", "/mcp"), ("sse", "sse", "/sse")])
def test_the_reference_server_everything_over_http(spawn, root, state, mode, transport, path):
    """@modelcontextprotocol/server-everything (npm, MIT, github.com/modelcontextprotocol/servers) in its
    streamable-HTTP and SSE modes: a server of another SDK (TypeScript), with its GET stream and logging."""
    from mcp_helpers import everything_over_http

    with everything_over_http(mode) as port:
        sidecar = spawn(env=sidecar_env(state))
        result = start(sidecar, root, [{"name": "everything", "type": transport,
                                        "url": f"http://127.0.0.1:{port}{path}"}])
        names = tool_names(result)
        assert "mcp__everything__echo" in names and len(names) > 5, names
        answer = call(sidecar, result["threadId"], "mcp__everything__echo", {"message": "over http"})
        assert not answer["isError"] and "over http" in text(answer)
        blocked = call(sidecar, result["threadId"], "mcp__everything__echo", {}, "c2")  # validated before the server
        assert blocked["isError"] and blocked["details"]["kind"] == "invalid_arguments", blocked
        sidecar.call("thread/close", {"threadId": result["threadId"]})


def test_a_forged_redirect_to_the_loopback_listener_changes_nothing(spawn, remote, root, state):
    """As another local process: the sidecar's redirect port is reachable by anyone on 127.0.0.1. A
    callback with a code or an error but not the sign-in's state is refused; the real one still signs in."""
    from urllib.error import HTTPError
    from urllib.parse import parse_qs, urlsplit

    server = remote("--oauth")
    browser = Browser(hold=True)
    sidecar = oauth_sidecar(spawn, state, browser)
    thread = start(sidecar, root, [{"name": "auth", "type": "http", "url": server.url}])["threadId"]
    assert wait_until(lambda: sidecar.call("tools/list", {"threadId": thread}) and browser.held, 30)
    query = parse_qs(urlsplit(browser.held[0]).query)
    redirect = query["redirect_uri"][0]
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")
    for forged in ("code=stolen&state=guess", "error=access_denied&state=guess", "code=stolen",
                   "error=access_denied"):
        with pytest.raises(HTTPError) as refused:
            urllib.request.urlopen(f"{redirect}?{forged}", timeout=30)
        assert refused.value.code == 400
    browser.release()
    assert wait_until(lambda: joined(sidecar, thread), 60)
    assert text(call(sidecar, thread, "mcp__auth__echo", {"text": "mine"})) == "mine"


REAL_PLUGINS = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("fixture, name", [("plugin-loading/finance", "finance"),
                                           ("plugins/example-plugin", "example-plugin")])
def test_real_plugins_remote_servers_list_their_tools_when_trusted(spawn, remote, state, tmp_path, fixture, name):
    """Public plugins as published (anthropics/knowledge-work-plugins' finance, anthropics/claude-code's
    example-plugin; see their SOURCE.md): every remote server whose url is set gets its tools, against a
    local stand-in where the real one needs the network; one shipped with "url": "" is said unavailable."""
    import shutil

    server = remote()
    plugin = tmp_path / name
    shutil.copytree(REAL_PLUGINS / fixture, plugin, symlinks=True)
    declared = json.loads((plugin / ".mcp.json").read_text())
    servers = declared.get("mcpServers", declared)
    for spec in servers.values():
        if spec.get("url"):
            spec["url"] = server.url  # the stand-in for the network
    (plugin / ".mcp.json").write_text(json.dumps(declared))
    sidecar = spawn(env=sidecar_env(state))
    result = sidecar.call("thread/start", {"roots": [], "plugins": [str(plugin)], "watch": False,
                                           "trustedPlugins": [{"name": name}]}, timeout=120)
    listed = {m["server"]: m for m in result["catalog"]["mcpServers"] if m["plugin"] == name}
    assert set(listed) == set(servers)
    unavailable = {d["name"] for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"}
    for key, spec in servers.items():
        full = listed[key]["name"]
        if spec.get("url"):
            assert f"mcp__{full}__echo" in tool_names(result), key
        else:
            assert full in unavailable, key
    message = [d["message"] for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"]
    assert all("has no http(s) url" in m for m in message), message


def test_a_plugins_pre_registered_oauth_client_signs_in_on_its_fixed_port_without_registering(
        spawn, remote, state, tmp_path):
    """Claude Code's plugin field: oauth {clientId, callbackPort} (e.g. Slack's, which has no dynamic
    registration): the redirect is http://localhost:<callbackPort>/callback and no client is registered."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    redirect = f"http://localhost:{port}/callback"
    server = remote("--oauth", "--client-id", "pre-registered-1", "--client-redirect", redirect)
    root = tmp_path / "ws"
    write(root / "plugins/chat/.claude-plugin/plugin.json", json.dumps({"name": "chat"}))
    write(root / "plugins/chat/.mcp.json", json.dumps({"mcpServers": {"chat": {
        "type": "http", "url": server.url, "oauth": {"clientId": "pre-registered-1", "callbackPort": port}}}}))
    browser = Browser()
    sidecar = oauth_sidecar(spawn, state, browser)
    thread = sidecar.call("thread/start", {"roots": [str(root)], "trustedPlugins": [{"name": "chat"}]},
                          timeout=60)["threadId"]
    assert wait_until(lambda: joined(sidecar, thread, "mcp__plugin_chat_chat__echo"), 60)
    assert "client_id=pre-registered-1" in browser.opened[0]
    assert f"redirect_uri=http%3A%2F%2Flocalhost%3A{port}%2Fcallback" in browser.opened[0]
    assert "register" not in read_events(server.events)
    assert text(call(sidecar, thread, "mcp__plugin_chat_chat__echo", {"text": "hi"})) == "hi"


def test_a_real_plugins_servers_behind_oauth_without_a_ui_each_ask_for_a_sign_in_and_its_sse_one_signs_in(
        spawn, remote, state, tmp_path):
    """anthropics/knowledge-work-plugins' small-business as published (see its SOURCE.md): 8 servers with
    a url (PayPal's the corpus's one SSE server, Slack's with a pre-registered oauth client), 3 with
    "url": "". Behind OAuth stand-ins and without ui.openUrl, every one with a url is mcp_auth_required
    with its own sign-in URL; following PayPal's signs it in over SSE and its tools join."""
    import shutil

    http, sse = remote("--oauth"), remote("--oauth", "--transport", "sse")
    plugin = tmp_path / "small-business"
    shutil.copytree(REAL_PLUGINS / "plugin-loading/small-business", plugin)
    declared = json.loads((plugin / ".mcp.json").read_text())
    servers = declared["mcpServers"]
    for spec in servers.values():
        if spec["url"]:
            spec["url"] = sse.url if spec["type"] == "sse" else http.url
    (plugin / ".mcp.json").write_text(json.dumps(declared))
    sidecar = oauth_sidecar(spawn, state)
    result = sidecar.call("thread/start", {"roots": [], "plugins": [str(plugin)], "watch": False,
                                           "trustedPlugins": [{"name": "small-business"}]}, timeout=120)
    thread = result["threadId"]
    listed = {m["server"]: m["name"] for m in result["catalog"]["mcpServers"]}
    with_url = {listed[key] for key, spec in servers.items() if spec["url"]}
    assert len(with_url) == 8 and tool_names(result) == []

    def required():
        return {n["params"]["name"]: n["params"]["data"]["url"] for n in sidecar.notifications
                if n["method"] == "thread/diagnostic" and n["params"]["kind"] == "mcp_auth_required"}
    assert wait_until(lambda: set(required()) == with_url, 60), (required(), with_url)
    unavailable = {d["name"] for d in result["diagnostics"] if d["kind"] == "mcp_unavailable"}
    assert unavailable == {listed[key] for key, spec in servers.items() if not spec["url"]}
    paypal = listed["paypal"]
    assert required()[paypal].startswith(f"http://127.0.0.1:{sse.port}/authorize?")
    Browser().visit(required()[paypal])  # the user signs in to PayPal's only
    assert wait_until(lambda: joined(sidecar, thread, f"mcp__{paypal}__echo"), 60)
    assert text(call(sidecar, thread, f"mcp__{paypal}__echo", {"text": "paid"})) == "paid"
    assert not [t for t in tools_now(sidecar, thread) if not t.startswith(f"mcp__{paypal}__")]
