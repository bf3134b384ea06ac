"""harness_sidecar.mcp against the reference server @modelcontextprotocol/server-everything (npm).

.ci/run installs it (``npm ci`` in tests/mcp_servers/everything); without it these tests are
skipped here and fail in CI.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import uuid
from typing import Any

import pytest
from harness_sidecar.mcp import McpServerConfig, McpServers
from mcp_helpers import EVERYTHING, pids_with_env, wait_until

# The tools these tests call (the closing note of issue 14 lists them).
EXERCISED = ["echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-links",
             "get-resource-reference", "get-annotated-message", "get-env", "trigger-long-running-operation"]


@pytest.fixture
def everything() -> list[str]:
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        what = "node" if node is None else "@modelcontextprotocol/server-everything"
        if os.environ.get("CI"):
            pytest.fail(f"{what} is not installed; .ci/run should have installed it")
        pytest.skip(f"{what} is not installed here (CI installs it: npm ci in tests/mcp_servers/everything)")
    return [node, str(EVERYTHING), "stdio"]


MARK = "HARNESS_TEST_MARK"  # set in the server's env, to find its process


@pytest.fixture
def mark() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def notes() -> list[dict[str, Any]]:
    return []


@pytest.fixture
async def servers(everything: list[str], mark: str, notes: list[dict[str, Any]]):
    started = await McpServers.start("thread-1", [McpServerConfig(
        "everything", everything, env={MARK: mark, "MCP_TEST_VALUE": "given"}, startup_timeout_ms=30000)],
        notify=notes.append)
    yield started
    await started.close()
    assert wait_until(lambda: not pids_with_env(MARK, mark), 10), "server-everything outlived close()"


def texts(result) -> list[str]:
    return [item["text"] for item in result.content if item["type"] == "text"]


async def test_lists_the_reference_servers_tools(servers: McpServers) -> None:
    tools = {tool.tool: tool for tool in servers.tools()}
    assert set(EXERCISED) <= set(tools)
    assert all(tool.full_name == f"mcp__everything__{name}" for name, tool in tools.items())
    assert servers.diagnostics == []
    schema = tools["get-sum"].input_schema
    assert schema["type"] == "object" and set(schema["properties"]) == {"a", "b"}


async def test_calls_and_content_mapping(servers: McpServers) -> None:
    echo = await servers.call("everything", "echo", {"message": "hello"}, 10)
    assert (texts(echo), echo.is_error, echo.details) == (["Echo: hello"], False, {})
    assert texts(await servers.call("everything", "get-sum", {"a": 2, "b": 40}, 10)) == ["The sum of 2 and 40 is 42."]

    image = await servers.call("everything", "get-tiny-image", {}, 10)
    # v4 §4: non-text content passes through in MCP's shapes (before v4: "[image content: mimeType image/png]")
    assert [item["type"] for item in image.content] == ["text", "image", "text"]
    assert image.content[1]["mimeType"] == "image/png" and base64.b64decode(image.content[1]["data"])[:4] == b"\x89PNG"

    weather = await servers.call("everything", "get-structured-content", {"location": "Chicago"}, 10)
    assert weather.details["structuredContent"] == json.loads(texts(weather)[0])
    assert set(weather.details["structuredContent"]) == {"temperature", "conditions", "humidity"}

    links = await servers.call("everything", "get-resource-links", {"count": 2}, 10)
    assert [item["type"] for item in links.content] == ["text", "resource_link", "resource_link"]
    assert links.content[1]["uri"].startswith("demo://resource/")

    reference = await servers.call("everything", "get-resource-reference", {"resourceType": "Text", "resourceId": 1}, 10)
    embedded = [item["resource"] for item in reference.content if item["type"] == "resource"]
    assert [(r["uri"], r["mimeType"]) for r in embedded] == [("demo://resource/dynamic/text/1", "text/plain")]

    annotated = await servers.call("everything", "get-annotated-message",
                                   {"messageType": "error", "includeImage": True}, 10)
    assert texts(annotated)[0] == "Error: Operation failed"
    assert any(item["type"] == "image" and item["mimeType"] == "image/png" for item in annotated.content)

    env = json.loads(texts(await servers.call("everything", "get-env", {}, 10))[0])
    assert env["MCP_TEST_VALUE"] == "given" and env["PATH"] == os.environ["PATH"]


async def test_invalid_arguments_are_the_servers_error_result(servers: McpServers) -> None:
    # Argument validation is the tool pipeline's job; here only: the server's answer comes back as a result.
    result = await servers.call("everything", "get-sum", {"a": "two"}, 10)
    assert result.is_error


async def test_timeout_leaves_the_server_running(servers: McpServers) -> None:
    slow = await servers.call("everything", "trigger-long-running-operation", {"duration": 30, "steps": 30}, 0.5)
    assert slow.is_error and slow.details == {"kind": "timeout"}
    assert texts(await servers.call("everything", "echo", {"message": "after"}, 10)) == ["Echo: after"]
    assert servers.status() == {"everything": "ready"}


async def test_exit_by_signal_then_restart(servers: McpServers, mark: str, notes: list[dict[str, Any]]) -> None:
    [pid] = pids_with_env(MARK, mark)
    os.kill(pid, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + 15
    while servers.status()["everything"] != "exited" and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert servers.status() == {"everything": "exited"}
    assert notes[0]["kind"] == "mcp_exit" and notes[0]["signal"] == 15
    assert texts(await servers.call("everything", "echo", {"message": "back"}, 30)) == ["Echo: back"]
    assert pids_with_env(MARK, mark) != [pid]
    assert [note["kind"] for note in notes] == ["mcp_exit", "mcp_restarted"]


async def test_resources_prompts_and_roots_of_the_reference_server(everything: list[str], mark: str) -> None:
    """v4 §4 against server-everything: its resources, templates and prompts listed; one of each read;
    its roots tool (offered because the client offers roots) gets the thread's roots; sampling and
    elicitation reach the editor's side (here the relays a thread would give, answering as a user)."""
    from harness_sidecar.mcp.client_side import ClientSide
    from harness_sidecar.mcp.listing import check_prompt_result, check_read_result

    asked: list[tuple[str, dict[str, Any]]] = []

    async def sample(server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((server, params))
        return {"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "editor-model"}

    async def elicit(server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((server, params))
        return {"action": "decline"}

    servers = await McpServers.start("thread-1", [McpServerConfig("everything", everything, env={MARK: mark},
                                                                  startup_timeout_ms=30000)],
                                     client=ClientSide(["/tmp/a root"], elicit, sample))
    try:
        resources = servers.resources()
        static = [r for r in resources if "uri" in r]
        templates = {r["uriTemplate"] for r in resources if "uriTemplate" in r}
        assert static and all(r["server"] == "everything" for r in resources)
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        read = await servers.ask("everything", "resources/read", {"uri": static[0]["uri"]}, 10, check_read_result)
        assert read["contents"][0]["uri"] == static[0]["uri"] and read["contents"][0]["text"]
        dynamic = await servers.ask("everything", "resources/read", {"uri": "demo://resource/dynamic/text/3"}, 10,
                                    check_read_result)
        assert dynamic["contents"][0]["uri"] == "demo://resource/dynamic/text/3"
        prompts = {p["name"]: p for p in servers.prompts()}
        assert {"name": "city", "description": "Name of the city", "required": True} in \
            prompts["args-prompt"]["arguments"]
        got = await servers.ask("everything", "prompts/get", {"name": "args-prompt", "arguments": {"city": "Oslo"}},
                                10, check_prompt_result)
        assert "Oslo" in got["messages"][0]["content"]["text"]
        tools = {tool.tool for tool in servers.tools()}
        assert {"get-roots-list", "trigger-sampling-request", "trigger-elicitation-request"} <= tools
        roots = texts(await servers.call("everything", "get-roots-list", {}, 10))
        assert "file:///tmp/a%20root" in "".join(roots)
        sampled = await servers.call("everything", "trigger-sampling-request", {"prompt": "hi", "maxTokens": 20}, 10)
        assert not sampled.is_error and "sampled" in "".join(texts(sampled))
        assert asked and asked[0][0] == "everything" and asked[0][1]["maxTokens"] == 20
    finally:
        await servers.close()
