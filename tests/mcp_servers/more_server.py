"""A stdio MCP server built with the official ``mcp`` SDK's ``MCPServer`` (FastMCP in mcp 1.x), for the
tests of what MCP offers beyond tools (protocol-v4 §4): resources, templates, prompts, and tools that
ask the client something.

Resources: ``memo://readme`` (text), ``memo://logo`` (a blob), and ``--resources N`` more
(``memo://extra/<i>``, to make resources/list page); the template ``memo://notes/{topic}``.
Prompts: ``review {path, focus?}`` and ``hello``.
Tools: ``ask_name`` (elicits ``{name, age, colour, ok}`` and says what came back), ``summarise {text}``
(samples a message from the client's model), ``my_roots`` (roots/list, answered as text),
``picture`` (an image and an audio item), ``link`` (a resource_link and an embedded resource),
``grow`` (adds a tool ``grown``, a resource and a prompt, and says the three lists changed),
``client_caps`` (the capabilities the client declared in initialize, as JSON text).
"""

from __future__ import annotations

import argparse
import base64
import json

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

parser = argparse.ArgumentParser()
parser.add_argument("--resources", type=int, default=0)
args = parser.parse_args()

server = MCPServer("more")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode()
WAV = base64.b64encode(b"RIFF\x00\x00\x00\x00WAVE").decode()


@server.resource("memo://readme", name="readme", description="The project's readme.", mime_type="text/markdown")
def readme() -> str:
    return "# Read me\nIt works.\n"


@server.resource("memo://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return base64.b64decode(PNG)


for i in range(args.resources):
    server.resource(f"memo://extra/{i}", name=f"extra-{i}")(lambda i=i: f"extra {i}")


@server.resource("memo://notes/{topic}", name="notes", description="Notes on a topic.", mime_type="text/plain")
def notes(topic: str) -> str:
    return f"notes on {topic}"


@server.prompt(description="Review a file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path}, looking for {focus}."


@server.prompt()
def hello() -> str:
    return "Say hello."


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age")
    colour: str = Field(description="Favourite colour", json_schema_extra={"enum": ["red", "green"]})
    ok: bool = Field(description="Agree?")


@server.tool(description="Ask the user for their name.")
async def ask_name(ctx: Context) -> str:
    result = await ctx.elicit("Who are you?", Person)
    if result.action == "accept":
        return f"accept: {result.data.name} {result.data.age} {result.data.colour} {result.data.ok}"
    return result.action


@server.tool(description="Summarise a text with the client's model.")
async def summarise(text: str, ctx: Context) -> str:
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(text=f"Summarise: {text}"))],
        max_tokens=50, system_prompt="Be brief.")
    content = result.content
    return f"{result.model}: {content.text if isinstance(content, types.TextContent) else content}"


@server.tool(description="The client's roots.")
async def my_roots(ctx: Context) -> str:
    result = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in result.roots)


@server.tool(description="An image and an audio clip.")
def picture() -> list[types.ContentBlock]:
    return [types.TextContent(text="a picture"), types.ImageContent(data=PNG, mime_type="image/png"),
            types.AudioContent(data=WAV, mime_type="audio/wav")]


@server.tool(description="A link and an embedded resource.")
def link() -> list[types.ContentBlock]:
    return [types.ResourceLink(name="readme", uri="memo://readme", mime_type="text/markdown"),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="memo://logo", mime_type="image/png",
                                                                       blob=PNG))]


@server.tool(description="Add a tool, a resource and a prompt.")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "grown", name="grown", description="Exists after grow.")
    server.resource("memo://grown", name="grown")(lambda: "grown")
    server.prompt(name="grown")(lambda: "grown")
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_resource_list_changed()
    await ctx.session.send_prompt_list_changed()
    return "grown"


@server.tool(description="The client's declared capabilities.")
def client_caps(ctx: Context) -> str:
    caps = ctx.session.client_capabilities
    return json.dumps(caps.model_dump(exclude_none=True, by_alias=True) if caps is not None else None)


if __name__ == "__main__":
    server.run("stdio")
