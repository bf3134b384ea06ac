"""``harness-sidecar demo``: the review scenario against the bundled workspace, printed readably.

Then one more scene: a hook asks the editor (``ui/confirm``) and the simulated user answers —
the ported permission-gate extension (``client-examples/extensions``) on the editor's
``run_command`` tool, allowed once and refused once.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from typing import Any

from harness_sidecar.console.client import SidecarProcess, child_env, sidecar_command

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
        os.path.join(os.path.dirname(__file__), "..", "..", "..", "client-examples", "workspace"),
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


def _show(direction: str, message: dict[str, Any], out: Any, explain: dict[str, str] = EXPLAIN) -> None:
    method = message.get("method")
    if direction == "->" and method in explain and "id" in message:
        out.write(f"\n## {explain[method]}\n")
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


class SimulatedEditor:
    """The demo's editor: runs its tools (nothing is really run) and shows ``ui/confirm`` to a
    simulated user, who answers from ``answers`` in turn (and says no when they run out)."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.answers: list[bool] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        params = request.get("params", {})
        if request.get("method") == "ui/confirm":
            yes = self.answers.pop(0) if self.answers else False
            self.out.write(f"    (the editor shows a dialog from {params.get('extensionId')}: "
                           f"{params.get('title')!r}; the simulated user clicks {'Allow' if yes else 'Deny'})\n")
            return {"result": {"confirmed": yes}}
        if params.get("tool") == "run_command":
            shown = f"$ {params['arguments'].get('command')}\n(simulated: nothing ran)"
            return {"result": {"contentItems": [{"type": "inputText", "text": shown}], "success": True}}
        return editor_selection(request)


def _find_example(root: str, *parts: str) -> str | None:
    """``client-examples/<parts…>`` next to the workspace or to the package."""
    for base in (os.path.dirname(root), os.path.join(os.path.dirname(__file__), "..", "..", "..", "client-examples")):
        path = os.path.join(base, *parts)
        if os.path.isfile(path):
            return os.path.realpath(path)
    return None


ASK_EXPLAIN = {
    "thread/start": "Open a second thread trusting the permission-gate example; the editor offers run_command.",
    "tools/call": "The model calls run_command; permission-gate's hook asks the user through the editor "
                  "(ui/confirm) - the user's time is not charged to the hook's deadline.",
}


def ask_the_user_scene(sidecar: SidecarProcess, root: str, editor: SimulatedEditor, explain: dict[str, Any],
                       out: Any) -> list[str]:
    """The scene where a hook asks the editor: one command allowed, one refused. Returns summary lines."""
    gate = _find_example(root, "extensions", "permission-gate.py")
    if gate is None:
        return ["permission-gate scene skipped: client-examples/extensions/permission-gate.py not found"]
    explain.clear()
    explain.update(ASK_EXPLAIN)
    project = os.path.join(root, "project")
    thread = sidecar.call("thread/start", {
        "roots": [project], "cwd": project, "trustedExtensions": ["permission-gate"],
        "extensions": [{"id": "permission-gate", "path": gate}],
        "dynamicTools": [{"name": "run_command", "description": "Run a shell command in the user's terminal.",
                          "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}},
                                          "required": ["command"]}}],
    })["threadId"]
    summary = []
    for call_id, command, yes in [("call_4", "rm -rf build", True), ("call_5", "sudo reboot", False)]:
        editor.answers.append(yes)
        result = sidecar.call("tools/call", {"threadId": thread, "call": {
            "id": call_id, "name": "run_command", "arguments": {"command": command}}})["result"]
        verdict = result["details"].get("blocked")
        summary.append(f"{call_id} ({command}): " + (
            f"blocked by {verdict['extensionId']} ({verdict['kind']}): {verdict['reason']}" if verdict
            else "the user allowed it; the editor ran it"))
    return summary


MCP_EXPLAIN = {
    "thread/start": "Open a third thread with the project's MCP issue tracker (client-examples/mcp): its tools "
                    "join the thread's behind the same hooks.",
    "tools/call": "Call an MCP tool; the review extension's hook decides before the server sees it.",
}


def mcp_scene(sidecar: SidecarProcess, root: str, explain: dict[str, Any]) -> list[str]:
    """The scene with an MCP server: one comment blocked by the review extension's policy, one call that passes."""
    tracker = _find_example(root, "mcp", "issue_tracker.py")
    if tracker is None:
        return ["MCP scene skipped: client-examples/mcp/issue_tracker.py not found"]
    explain.clear()
    explain.update(MCP_EXPLAIN)
    started = sidecar.call("thread/start", {
        "roots": [os.path.join(root, "project")], "trustedExtensions": ["review-extension"],
        "mcpServers": [{"name": "tracker", "command": [sys.executable, tracker]}]}, timeout=60)
    unavailable = [d for d in started["diagnostics"] if d["kind"] == "mcp_unavailable"]
    if unavailable:
        return [f"MCP scene skipped: {unavailable[0]['message']} (install the extra: pip install -e '.[mcp]')"]
    thread = started["threadId"]
    summary = []
    for call_id, name, arguments in [
            ("call_6", "mcp__tracker__get_issue", {"id": 1}),
            ("call_7", "mcp__tracker__post_comment", {"issue": 1, "text": "the token is SECRET-1234"}),
            ("call_8", "mcp__tracker__post_comment", {"issue": 1, "text": "fixed by stopping at EOF"})]:
        result = sidecar.call("tools/call", {"threadId": thread, "call": {
            "id": call_id, "name": name, "arguments": arguments}})["result"]
        verdict = result["details"].get("blocked")
        summary.append(f"{call_id} ({name}): " + (
            f"blocked by {verdict['extensionId']} ({verdict['kind']}): {verdict['reason']}" if verdict
            else f"the server answered: {result['content'][0]['text'].splitlines()[0]}"))
    return summary


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
    editor = SimulatedEditor(out)
    explain = dict(EXPLAIN)
    with SidecarProcess(sidecar_command(), env=child_env(), on_request=editor, stderr=None,
                        on_message=lambda d, m: _show(d, m, out, explain)) as sidecar:
        sidecar.call("initialize", {"clientInfo": {"name": "harness-sidecar-demo"}, "protocolVersion": "4",
                                    "capabilities": {"ui": {"confirm": True}}})
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
        asked = ask_the_user_scene(sidecar, root, editor, explain, out)
        asked += mcp_scene(sidecar, root, explain)
        explain["shutdown"] = EXPLAIN["shutdown"]
        sidecar.call("shutdown")
        sidecar.notify("exit")
        code = sidecar.wait()
    verdict = blocked["result"]["details"].get("blocked", {})
    out.write(f"\n# call_2 was blocked by {verdict.get('extensionId')} ({verdict.get('kind')}): "
              f"{verdict.get('reason')}\n")
    for line in asked:
        out.write(f"# {line}\n")
    out.write(f"# sidecar exited with status {code}\n")
    return 0 if code == 0 else 1
