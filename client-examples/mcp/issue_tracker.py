"""A small MCP server for the demo: a read-only view of a project's issues, and a comment box.

Written with the official Python SDK (``pip install -e '.[mcp]'`` in the harness-sidecar checkout), served over stdio.
An editor names it in ``thread/start.mcpServers``:

    {"name": "tracker", "command": ["python3", "client-examples/mcp/issue_tracker.py"]}

and the thread offers ``mcp__tracker__get_issue`` and ``mcp__tracker__post_comment``, behind the
same hooks as every other tool (the review extension can refuse a comment that holds a secret).
Comments live in memory, one list per server process.
"""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ISSUES = {
    1: ("parse() drops the last token", "open",
        "Given 'a b c', parse() returns ['a', 'b']. The loop stops one token early."),
    2: ("Document the --strict flag", "closed",
        "The README does not say what --strict changes. Fixed in the docs."),
}
COMMENTS: dict[int, list[str]] = {}

server = MCPServer("issue-tracker", instructions="Issues of the demo project; read them, comment on them.")


@server.tool(description="Read one issue: its title, state, body and comments.", structured_output=False)
def get_issue(id: int) -> str:
    if id not in ISSUES:
        raise ToolError(f"no issue #{id}; issues are {sorted(ISSUES)}")
    title, state, body = ISSUES[id]
    comments = "".join(f"\n- {text}" for text in COMMENTS.get(id, [])) or " none"
    return f"#{id} {title} [{state}]\n{body}\nComments:{comments}"


@server.tool(description="Post a comment on an issue.", structured_output=False)
def post_comment(issue: int, text: str) -> str:
    if issue not in ISSUES:
        raise ToolError(f"no issue #{issue}")
    COMMENTS.setdefault(issue, []).append(text)
    return f"comment {len(COMMENTS[issue])} posted on #{issue}"


if __name__ == "__main__":
    server.run("stdio")
