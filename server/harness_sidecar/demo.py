"""``harness-sidecar demo``: the review scenario against the bundled workspace, printed readably."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from typing import Any

from harness_sidecar.client import SidecarProcess, child_env, sidecar_command

EXPLAIN = {
    "initialize": "Start the session.",
    "thread/start": "Open a thread on [project, user] roots; trust review-extension; offer an editor tool.",
    "skills/activate": "Activate the 'review' skill with its checklist: only now does its body enter the context.",
    "templates/render": "Render the project's 'review' template (it shadows the user's) into a user message.",
    "context/build": "Build the one system prompt: instructions, skill listing, active skill bodies.",
    "tools/call": "Call a tool; every call passes the extension's hooks.",
    "shutdown": "End the session.",
}


def find_workspace(explicit: str | None) -> str:
    candidates = [explicit] if explicit else [
        os.path.join(os.getcwd(), "client-examples", "workspace"),
        os.path.join(os.path.dirname(__file__), "..", "..", "client-examples", "workspace"),
    ]
    for candidate in candidates:
        if candidate and os.path.isdir(os.path.join(candidate, "project")):
            return os.path.realpath(candidate)
    raise SystemExit("harness-sidecar demo: cannot find client-examples/workspace; run it from the repository "
                     "root or pass --workspace DIR")


def compact(value: Any, indent: int = 0, width: int = 104) -> str:
    """JSON, one line where it fits, else one item per line: readable and still valid JSON."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {compact(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _show(direction: str, message: dict[str, Any], out: Any) -> None:
    method = message.get("method")
    if direction == "->" and method in EXPLAIN and "id" in message:
        out.write(f"\n## {EXPLAIN[method]}\n")
    text = json.dumps(message, ensure_ascii=False)
    label = "editor  -> sidecar" if direction == "->" else "sidecar -> editor "
    if len(text) <= 110:
        out.write(f"{label}  {text}\n")
        return
    out.write(f"{label}\n{textwrap.indent(compact(message, 0, 100), '    ')}\n")
    prompt = message.get("result", {}).get("systemPrompt") if isinstance(message.get("result"), dict) else None
    if prompt:
        out.write("    -- the systemPrompt above, as the model reads it --\n")
        out.write(textwrap.indent(prompt, "    | ", lambda line: True))


def editor_selection(request: dict[str, Any]) -> dict[str, Any]:
    params = request.get("params", {})
    if params.get("tool") == "editor_selection":
        return {"result": {"contentItems": [{"type": "inputText", "text": "export function parse(src: string) {"}],
                           "success": True}}
    return {"error": {"code": -32601, "message": f"unknown editor tool {params.get('tool')!r}"}}


def main(args: list[str]) -> int:
    workspace = None
    if args[:1] == ["--workspace"] and len(args) > 1:
        workspace = args[1]
    elif args:
        print("usage: harness-sidecar demo [--workspace DIR]", file=sys.stderr)
        return 2
    root = find_workspace(workspace)
    out = sys.stdout
    out.write(f"# harness-sidecar demo: the review scenario against {root}\n")
    out.write("# Each line is one JSON-RPC message as it crosses the sidecar's stdin/stdout.\n")
    with SidecarProcess(sidecar_command(), env=child_env(), on_request=editor_selection, stderr=None,
                        on_message=lambda d, m: _show(d, m, out)) as sidecar:
        sidecar.initialize()
        started = sidecar.call("thread/start", {
            "roots": [os.path.join(root, "project"), os.path.join(root, "user")],
            "trustedExtensions": ["review-extension"],
            "dynamicTools": [{"name": "editor_selection", "description": "The text selected in the editor.",
                              "inputSchema": {"type": "object", "properties": {}}}],
        })
        thread = started["threadId"]
        sidecar.call("skills/activate", {"threadId": thread, "name": "review",
                                         "resources": ["references/checklist.md"]})
        sidecar.call("templates/render", {"threadId": thread, "name": "review",
                                          "arguments": {"path": "src/parser.ts", "focus": "error handling"}})
        sidecar.call("context/build", {"threadId": thread})
        sidecar.call("tools/call", {"threadId": thread, "call": {
            "id": "call_1", "name": "review_note", "arguments": {"text": "parse() drops the last token on EOF"}}})
        blocked = sidecar.call("tools/call", {"threadId": thread, "call": {
            "id": "call_2", "name": "review_note", "arguments": {"text": "the API key is SECRET-1234"}}})
        sidecar.call("tools/call", {"threadId": thread, "call": {
            "id": "call_3", "name": "editor_selection", "arguments": {}}})
        sidecar.call("shutdown")
        sidecar.notify("exit")
        code = sidecar.wait()
    verdict = blocked["result"]["details"].get("blocked", {})
    out.write(f"\n# call_2 was blocked by {verdict.get('extensionId')} ({verdict.get('kind')}): "
              f"{verdict.get('reason')}\n# sidecar exited with status {code}\n")
    return 0 if code == 0 else 1
