"""The ported example extensions in client-examples/extensions/, used as a user would: trusted in a
thread of the real sidecar, with an editor that answers ui/* requests and runs its own tools."""

from __future__ import annotations

import json
import os
import re

import pytest
from helpers import REPO, add_skill, write

EXAMPLES = REPO / "client-examples" / "extensions"
UI = {"confirm": True, "select": True, "input": True, "notify": True, "status": True}
PORTS = ["permission-gate", "protected-paths", "secret-mask", "todo", "input-transform", "claude-rules", "hello",
         "pirate"]
# issue #30 item 9, part 1 (tests/test_pi_ports_a.py)
PORTS += ["plan-mode", "preset", "tools"]
# issue #30 item 9, part 2 (tests/test_pi_ports_b.py)
PORTS += ["summarize", "confirm-destructive", "dirty-repo-guard", "auto-commit-on-exit"]


class Editor:
    """An editor: declares ``capabilities``, answers ``ui/confirm`` and ``ui/select`` from ``confirm`` and
    ``select`` (one answer per question, in turn; silent once they run out), and runs its own tools
    (dynamic tools) with ``tools``."""

    def __init__(self, spawn, capabilities=UI, confirm=None, tools=None, select=None):
        self.asked: list[dict] = []
        self.ran: list[dict] = []
        self.confirm = list(confirm or [])
        self.select = list(select or [])
        self.tools = tools or {}
        self.sidecar = spawn(on_request=self.on_request, initialize=False)
        self.sidecar.call("initialize", {"protocolVersion": "2",
                                         "capabilities": {"ui": capabilities} if capabilities else {}})

    def on_request(self, message):
        method, params = message["method"], message["params"]
        if method == "item/tool/call":
            self.ran.append(params)
            text = self.tools[params["tool"]](params["arguments"])
            return {"result": {"contentItems": [{"type": "inputText", "text": text}], "success": True}}
        self.asked.append(message)
        if method == "ui/confirm" and self.confirm:
            return {"result": {"confirmed": self.confirm.pop(0)}}
        if method == "ui/select" and self.select:
            return {"result": {"value": self.select.pop(0)}}
        return None

    def open(self, ids, tmp_path, also=(), **extra):
        """thread/start trusting the example extensions ``ids`` (explicit sources) and the extensions
        ``also`` found in the thread's root, ``tmp_path/root``."""
        root = tmp_path / "root"
        root.mkdir(exist_ok=True)
        started = self.sidecar.call("thread/start", {
            "roots": [str(root)], "trustedExtensions": [*also, *ids],
            "extensions": [{"id": i, "path": str(EXAMPLES / f"{i}.py")} for i in ids], **extra})
        statuses = [e["status"] for e in started["catalog"]["extensions"]]
        assert statuses == ["loaded"] * (len(ids) + len(also)), started
        self.thread = started["threadId"]
        return started

    def call(self, name, arguments=None, call_id="c1"):
        return self.sidecar.call("tools/call", {"threadId": self.thread, "call": {
            "id": call_id, "name": name, "arguments": arguments or {}}}, timeout=60)["result"]

    def request(self, method, **params):
        return self.sidecar.request(method, {"threadId": self.thread, **params}, timeout=60)

    def prompt(self):
        return self.sidecar.call("context/build", {"threadId": self.thread})["systemPrompt"]

    def ui(self, method):
        """The ``method`` notifications (ui/notify, ui/status) seen so far, as their params."""
        return [n["params"] for n in self.sidecar.notifications if n["method"] == method]

    def questions(self, method="ui/confirm"):
        return [m["params"] for m in self.asked if m["method"] == method]


def text(result):
    return "".join(item["text"] for item in result["content"])


def test_every_port_loads_beside_the_others_and_says_what_it_shows_and_where_it_is_from(spawn, tmp_path):
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(PORTS)
    for port in PORTS:
        header = (EXAMPLES / f"{port}.py").read_text().split('"""')[1]
        assert "Shows:" in header and "Ported from" in header and "Settings" in header, port
    editor = Editor(spawn)
    started = editor.open(PORTS, tmp_path)
    assert [t["name"] for t in started["tools"]] == ["load_skill", "todo", "hello"]
    listed = editor.request("commands/list")["result"]["commands"]
    assert [(c["name"], c["origin"]["id"]) for c in listed] == [
        ("todos", "todo"), ("pirate", "pirate"), ("plan", "plan-mode"), ("plan-todos", "plan-mode"),
        ("preset", "preset"), ("tools", "tools"), ("summarize", "summarize")]


# -- permission-gate ------------------------------------------------------------------------------------


def shell_editor(spawn, **kwargs):
    return Editor(spawn, tools={"run_command": lambda args: "ran: " + args["command"]}, **kwargs)


RUN_COMMAND = [{"name": "run_command", "description": "Run a shell command in the user's terminal.",
                "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}},
                                "required": ["command"]}}]


@pytest.mark.parametrize("command, why", [("rm -rf build", "recursive delete"), ("rm -fr ~/x", "recursive delete"),
                                          ("sudo apt-get install jq", "sudo"),
                                          ("chmod -R 777 /srv", "world-writable permissions")])
def test_permission_gate_asks_and_a_yes_runs_the_command(spawn, tmp_path, command, why):
    editor = shell_editor(spawn, confirm=[True])
    editor.open(["permission-gate"], tmp_path, dynamicTools=RUN_COMMAND)
    result = editor.call("run_command", {"command": command}, call_id="k1")
    assert result["isError"] is False and text(result) == "ran: " + command
    (question,) = editor.questions()
    assert question == {"threadId": editor.thread, "extensionId": "permission-gate", "title": "Dangerous command",
                        "message": f"{command}\n\nThis looks like {why}. Allow it?", "callId": "k1",
                        "tool": "run_command", "arguments": {"command": command}}
    assert editor.ran == [{"threadId": editor.thread, "callId": "k1", "tool": "run_command",
                           "arguments": {"command": command}}]


def test_permission_gate_a_no_blocks_and_the_command_never_reaches_the_terminal(spawn, tmp_path):
    editor = shell_editor(spawn, confirm=[False])
    editor.open(["permission-gate"], tmp_path, dynamicTools=RUN_COMMAND)
    result = editor.call("run_command", {"command": "sudo rm -rf /"})
    assert result["isError"] is True
    assert result["details"]["blocked"] == {"extensionId": "permission-gate", "kind": "deny",
                                            "reason": "the user did not allow it (recursive delete)"}
    assert editor.ran == []


def test_permission_gate_harmless_commands_run_without_a_question(spawn, tmp_path):
    editor = shell_editor(spawn)
    editor.open(["permission-gate"], tmp_path, dynamicTools=RUN_COMMAND)
    for command in ["ls -la", "git status", "rm notes.txt", "echo sudoku"]:
        assert text(editor.call("run_command", {"command": command})) == "ran: " + command
    assert editor.asked == []


def test_permission_gate_without_a_ui_blocks_and_asks_nobody(spawn, tmp_path):
    editor = shell_editor(spawn, capabilities=None, confirm=[True])
    editor.open(["permission-gate"], tmp_path, dynamicTools=RUN_COMMAND)
    result = editor.call("run_command", {"command": "rm -rf build"})
    assert result["details"]["blocked"]["reason"] == "dangerous command blocked (recursive delete; no UI to confirm it)"
    assert editor.asked == [] and editor.ran == []


def test_permission_gate_an_unanswered_question_blocks(spawn, tmp_path):
    editor = shell_editor(spawn)  # the user never answers
    editor.open(["permission-gate"], tmp_path, dynamicTools=RUN_COMMAND, limits={"uiTimeoutMs": 300})
    result = editor.call("run_command", {"command": "rm -rf build"})
    assert result["details"]["blocked"]["reason"] == "the user did not allow it (recursive delete)"
    assert len(editor.questions()) == 1 and editor.ran == []


def test_permission_gate_settings_choose_the_tools_the_argument_and_more_patterns(spawn, tmp_path):
    editor = Editor(spawn, confirm=[False], tools={"exec": lambda args: "ran: " + args["cmd"],
                                                   "run_command": lambda args: "ran: " + args["command"]})
    editor.open(["permission-gate"], tmp_path, dynamicTools=[
        {"name": "exec", "inputSchema": {"type": "object"}}, *RUN_COMMAND],
        extensionSettings={"permission-gate": {"tools": ["exec"], "argument": "cmd",
                                               "patterns": [r"\bgit\s+push\s+--force\b"]}})
    blocked = editor.call("exec", {"cmd": "git push --force origin main"})
    assert blocked["details"]["blocked"]["reason"] == \
        "the user did not allow it (matches '\\\\bgit\\\\s+push\\\\s+--force\\\\b')"
    assert editor.questions()[0]["message"].startswith("git push --force origin main\n")
    assert text(editor.call("run_command", {"command": "rm -rf build"})) == "ran: rm -rf build"  # not gated now


# -- protected-paths -------------------------------------------------------------------------------------


def writer(spawn, **kwargs):
    return Editor(spawn, tools={"write_file": lambda args: "wrote " + args["path"]}, **kwargs)


WRITE_FILE = [{"name": "write_file", "description": "Write a file in the workspace.", "inputSchema": {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path"]}}]


@pytest.mark.parametrize("path, entry", [(".env", ".env"), ("config/.env.local", ".env.*"),
                                         ("src/../.git/config", ".git/"),
                                         ("node_modules/left-pad/index.js", "node_modules/")])
def test_protected_paths_refuses_the_write_and_tells_the_user(spawn, tmp_path, path, entry):
    editor = writer(spawn)
    editor.open(["protected-paths"], tmp_path, dynamicTools=WRITE_FILE, cwd=str(tmp_path))
    result = editor.call("write_file", {"path": path, "text": "x"})
    assert result["details"]["blocked"] == {"extensionId": "protected-paths", "kind": "deny",
                                            "reason": f"path {path!r} is protected ({entry})"}
    assert editor.ui("ui/notify") == [{"threadId": editor.thread, "extensionId": "protected-paths",
                                       "level": "warning",
                                       "message": f"Blocked a write to the protected path {path} ({entry})"}]
    assert editor.ran == []


def test_protected_paths_lets_other_writes_through(spawn, tmp_path):
    editor = writer(spawn)
    editor.open(["protected-paths"], tmp_path, dynamicTools=WRITE_FILE, cwd=str(tmp_path))
    for path in ["src/env.ts", ".environment.ts", "docs/git/intro.md", str(tmp_path / "README.md")]:
        assert text(editor.call("write_file", {"path": path})) == "wrote " + path
    assert editor.ui("ui/notify") == []


def test_protected_paths_sees_through_a_link_into_a_protected_folder(spawn, tmp_path):
    project = tmp_path / "project"
    write(project / ".git" / "config", "[core]\n")
    os.symlink(project / ".git", project / "meta")
    editor = writer(spawn)
    editor.open(["protected-paths"], tmp_path, dynamicTools=WRITE_FILE, cwd=str(project))
    result = editor.call("write_file", {"path": "meta/config"})
    assert result["details"]["blocked"]["reason"] == "path 'meta/config' is protected (.git/)"


def test_protected_paths_settings_and_a_notice_on_stderr_without_notifications(spawn, tmp_path):
    editor = writer(spawn, capabilities={"confirm": True})
    editor.open(["protected-paths"], tmp_path, dynamicTools=WRITE_FILE, cwd=str(tmp_path),
                extensionSettings={"protected-paths": {"paths": ["secrets/", "*.pem"],
                                                       "tools": {"write_file": "path"}}})
    assert text(editor.call("write_file", {"path": ".env"})) == "wrote .env"  # the defaults are replaced
    assert editor.call("write_file", {"path": "deploy/secrets/db.txt"})["details"]["blocked"]["kind"] == "deny"
    assert editor.call("write_file", {"path": "tls/server.pem"})["details"]["blocked"]["kind"] == "deny"
    assert editor.ui("ui/notify") == []
    editor.sidecar.close()
    assert any(b"Blocked a write to the protected path tls/server.pem (*.pem)" in line
               for line in editor.sidecar.stderr_lines)


# -- secret-mask -----------------------------------------------------------------------------------------

FILES = {
    "config.env": "STRIPE=sk-live-4eC39HqLyjWDarjtT1zdp7dc\nDEBUG=1\n",
    "aws.txt": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\nregion = eu-west-1\n",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    "settings.py": 'API_KEY = "9f8e7d6c5b4a39281706"\nTIMEOUT = 30\n',
    "notes.md": "Nothing secret here: the token budget is 4000.\n",
}
SECRETS = ["sk-live-4eC39HqLyjWDarjtT1zdp7dc", "AKIAIOSFODNN7EXAMPLE", "b3BlbnNzaC1rZXktdjEAAAAA",
           "9f8e7d6c5b4a39281706"]
READ_FILE = [{"name": "read_file", "description": "Read a file from the workspace.", "inputSchema": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def reader(spawn, **kwargs):
    return Editor(spawn, tools={"read_file": lambda args: FILES[args["path"]]}, **kwargs)


def test_secret_mask_redacts_what_the_editor_read_before_anyone_sees_it(spawn, tmp_path):
    editor = reader(spawn)
    editor.open(["secret-mask"], tmp_path, dynamicTools=READ_FILE)
    seen = {}
    for i, path in enumerate(["config.env", "aws.txt", "id_rsa", "settings.py"]):
        raw = editor.sidecar.request("tools/call", {"threadId": editor.thread, "call": {
            "id": f"r{i}", "name": "read_file", "arguments": {"path": path}}})
        assert not any(secret in json.dumps(raw) for secret in SECRETS), raw
        seen[path] = raw["result"]["result"]
    assert text(seen["config.env"]) == "STRIPE=[REDACTED:live_key]\nDEBUG=1\n"
    assert text(seen["aws.txt"]) == "aws_access_key_id = [REDACTED:aws_access_key]\nregion = eu-west-1\n"
    assert text(seen["id_rsa"]) == "[REDACTED:private_key]\n"
    assert text(seen["settings.py"]) == 'API_KEY = "[REDACTED:assignment]"\nTIMEOUT = 30\n'
    assert all(r["details"] == {"transformedBy": ["secret-mask"]} and r["isError"] is False for r in seen.values())
    notices = editor.ui("ui/notify")
    assert [n["level"] for n in notices] == ["warning"] * 4
    assert notices[0]["message"] == "Redacted 1 secret(s) (live_key) from the result of read_file"
    assert not any(secret in json.dumps(editor.sidecar.notifications) for secret in SECRETS)


def test_secret_mask_leaves_a_clean_result_alone(spawn, tmp_path):
    editor = reader(spawn)
    editor.open(["secret-mask"], tmp_path, dynamicTools=READ_FILE)
    result = editor.call("read_file", {"path": "notes.md"})
    assert result == {"toolCallId": "c1", "toolName": "read_file", "content": [{"type": "text",
                      "text": FILES["notes.md"]}], "details": {}, "isError": False}
    assert editor.ui("ui/notify") == []


LEAKY = '''
def leak(call_id, arguments):
    return {"content": "connected", "details": {"dsn": "postgres://app@db/app", "env": [
        {"name": "STRIPE_KEY", "value": "sk_live_51HqLyjWDarjtT1zdp7dc"}]}}
def activate(api):
    api.register_tool(name="connect", description="", input_schema={}, execute=leak)
'''


def test_secret_mask_also_redacts_details_and_takes_more_patterns_from_settings(spawn, tmp_path):
    write(tmp_path / "root" / "extensions" / "leaky.py", LEAKY)
    editor = Editor(spawn, tools={"read_file": lambda args: "door PIN:4711, room 12"})
    editor.open(["secret-mask"], tmp_path, also=["leaky"], dynamicTools=READ_FILE,
                extensionSettings={"secret-mask": {"patterns": {"pin": r"PIN:(?P<secret>\d{4})"}, "notify": False}})
    result = editor.call("connect")
    assert result["details"] == {"dsn": "postgres://app@db/app", "env": [
        {"name": "STRIPE_KEY", "value": "[REDACTED:live_key]"}], "transformedBy": ["secret-mask"]}
    assert text(editor.call("read_file", {"path": "x"})) == "door PIN:[REDACTED:pin], room 12"
    assert editor.ui("ui/notify") == []


def test_secret_mask_covers_the_builtin_load_skill_too(spawn, tmp_path):
    add_skill(tmp_path / "root", "deploy", "Use when deploying.", "Deploy with the key sk_live_51HqLyjWDarjtT1z.\n")
    editor = Editor(spawn)
    editor.open(["secret-mask"], tmp_path)
    result = editor.call("load_skill", {"name": "deploy"})
    assert text(result).startswith("Deploy with the key [REDACTED:live_key].\n")
    assert "sk_live_51" not in json.dumps(result)


def test_secret_mask_with_a_broken_pattern_withholds_the_result_instead_of_leaking(spawn, tmp_path):
    editor = reader(spawn)
    editor.open(["secret-mask"], tmp_path, dynamicTools=READ_FILE,
                extensionSettings={"secret-mask": {"patterns": {"broken": "(unclosed"}}})
    raw = editor.sidecar.request("tools/call", {"threadId": editor.thread, "call": {
        "id": "w", "name": "read_file", "arguments": {"path": "config.env"}}})
    assert "sk-live" not in json.dumps(raw) and "sk-live" not in json.dumps(editor.sidecar.notifications)
    result = raw["result"]["result"]
    assert result["isError"] is True and result["details"]["withheld"]["extensionId"] == "secret-mask"
    assert result["details"]["withheld"]["kind"] == "throw"


# -- todo --------------------------------------------------------------------------------------------------


def test_todo_tool_keeps_the_list_and_the_status_bar_follows(spawn, tmp_path):
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    assert text(editor.call("todo", {"action": "list"})) == "No todos"
    assert text(editor.call("todo", {"action": "add", "text": "write the parser"})) == "Added todo #1: write the parser"
    assert text(editor.call("todo", {"action": "add", "text": "test it"})) == "Added todo #2: test it"
    toggled = editor.call("todo", {"action": "toggle", "id": 1})
    assert text(toggled) == "Todo #1 completed"
    assert toggled["details"] == {"action": "toggle", "nextId": 3, "todos": [
        {"id": 1, "text": "write the parser", "done": True}, {"id": 2, "text": "test it", "done": False}]}
    assert text(editor.call("todo", {"action": "list"})) == "[x] #1: write the parser\n[ ] #2: test it"
    missing = editor.call("todo", {"action": "toggle", "id": 9})
    assert missing["isError"] is True and text(missing) == "Todo #9 not found"
    assert text(editor.call("todo", {"action": "clear"})) == "Cleared 2 todos"
    statuses = [s["text"] for s in editor.ui("ui/status")]
    assert statuses == [None, "todos 0/1", "todos 0/2", "todos 1/2", "todos 1/2", "todos 1/2", None]
    assert {s["key"] for s in editor.ui("ui/status")} == {"todo"}


@pytest.mark.parametrize("arguments, path", [
    ({"action": "add"}, "$"), ({"action": "toggle", "id": "1"}, "$.id"), ({"action": "sort"}, "$.action"),
    ({"action": "add", "text": ""}, "$.text")])
def test_todo_arguments_are_refused_by_its_schema_before_it_runs(spawn, tmp_path, arguments, path):
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    result = editor.call("todo", arguments)
    assert result["isError"] is True and result["details"]["kind"] == "invalid_arguments"
    assert result["details"]["path"] == path
    assert editor.ui("ui/status") == []  # execute never ran


def test_todos_command_through_commands_run_and_typed_in_the_chat(spawn, tmp_path):
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    empty = editor.request("commands/run", name="todos")["result"]
    assert text(empty) == "No todos yet. Ask the agent to add some!"
    editor.call("todo", {"action": "add", "text": "a"})
    editor.call("todo", {"action": "add", "text": "b"})
    editor.call("todo", {"action": "toggle", "id": 2})
    assert text(editor.request("commands/run", name="todos")["result"]) == "1/2 completed\n[ ] #1: a\n[x] #2: b"
    typed = editor.request("input/submit", text="/todos show=open")["result"]
    assert typed["action"] == "handled" and typed["by"] == {"kind": "command", "id": "todos", "extensionId": "todo"}
    assert text(typed["result"]) == "1/2 completed\n[ ] #1: a"
    assert editor.request("input/submit", text="/todos show=later")["error"]["data"]["kind"] == "invalid_arguments"


def test_todo_state_belongs_to_its_thread(spawn, tmp_path):
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    first = editor.thread
    editor.call("todo", {"action": "add", "text": "only in the first thread"})
    editor.open(["todo"], tmp_path)
    assert text(editor.call("todo", {"action": "list"})) == "No todos"
    editor.thread = first
    assert text(editor.call("todo", {"action": "list"})) == "[ ] #1: only in the first thread"


# -- input-transform ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("typed, answer", [
    ("?quick What is TypeScript?",
     {"action": "send", "message": {"role": "user",
                                    "content": "Respond briefly in 1-2 sentences: What is TypeScript?"}}),
    ("Explain the parser", {"action": "send", "message": {"role": "user", "content": "Explain the parser"}}),
    ("ping", {"action": "handled", "by": {"kind": "extension", "id": "input-transform"},
              "reason": "answered locally: pong"}),
    ("?quick   ", {"action": "handled", "by": {"kind": "extension", "id": "input-transform"}, "reason": "usage shown"}),
])
def test_input_transform_rewrites_or_answers_what_the_user_types(spawn, tmp_path, typed, answer):
    editor = Editor(spawn)
    editor.open(["input-transform"], tmp_path)
    assert editor.request("input/submit", text=typed)["result"] == answer
    notices = [(n["level"], n["message"]) for n in editor.ui("ui/notify")]
    expected = {"ping": [("info", "pong")], "?quick   ": [("warning", "Usage: ?quick <question>")]}
    assert notices == expected.get(typed, [])


def test_input_transform_time_and_a_prefix_from_settings(spawn, tmp_path):
    editor = Editor(spawn)
    editor.open(["input-transform"], tmp_path, extensionSettings={"input-transform": {"quickPrefix": "!brief "}})
    answer = editor.request("input/submit", text="time")["result"]
    assert answer["action"] == "handled" and re.fullmatch(r"answered locally: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d.*",
                                                          answer["reason"])
    assert editor.ui("ui/notify")[0]["message"] == answer["reason"][len("answered locally: "):]
    brief = editor.request("input/submit", text="!brief why tabs?")["result"]
    assert brief["message"]["content"] == "Respond briefly in 1-2 sentences: why tabs?"
    assert editor.request("input/submit", text="?quick x")["result"]["message"]["content"] == "?quick x"


# -- claude-rules ------------------------------------------------------------------------------------------


def rules_project(tmp_path):
    project = tmp_path / "project"
    write(project / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(project / ".claude" / "rules" / "testing.md", "# Testing\n\nEvery bug fix comes with a test.\n")
    write(project / ".claude" / "rules" / "style" / "naming.md", "Name functions after what they return.\n")
    (project / "src" / "parser").mkdir(parents=True)
    return project


def test_claude_rules_found_from_cwd_enter_the_system_prompt(spawn, tmp_path):
    project = rules_project(tmp_path)
    editor = Editor(spawn)
    editor.open(["claude-rules"], tmp_path, cwd=str(project / "src" / "parser"))  # a sub-folder of the project
    rules = str(project / ".claude" / "rules")
    assert editor.ui("ui/notify") == [{"threadId": editor.thread, "extensionId": "claude-rules", "level": "info",
                                       "message": f"Found 2 rule file(s) in {rules}"}]
    prompt = editor.prompt()
    assert prompt.endswith(f"# Extension: claude-rules\n\nProject rules from {rules}:\n\n"
                           "## style/naming.md\n\nName functions after what they return.\n\n"
                           "## testing.md\n\n# Testing\n\nEvery bug fix comes with a test.\n")
    (project / ".claude" / "rules" / "testing.md").write_text("changed later\n")
    assert editor.prompt() == prompt  # read once, at thread start


def test_claude_rules_over_its_budget_lists_the_rest_by_name(spawn, tmp_path):
    project = rules_project(tmp_path)
    write(project / ".claude" / "rules" / "zz-long.md", "x" * 500 + "\n")
    editor = Editor(spawn)
    editor.open(["claude-rules"], tmp_path, cwd=str(project), extensionSettings={"claude-rules": {"maxBytes": 300}})
    prompt = editor.prompt()
    assert "Every bug fix comes with a test." in prompt and "x" * 500 not in prompt
    assert prompt.endswith("More rules, not included here (read them when a task touches their subject): zz-long.md\n")


def test_claude_rules_without_cwd_or_outside_the_repository_adds_nothing(spawn, tmp_path):
    project = rules_project(tmp_path)
    inner = tmp_path / "project" / "vendor" / "lib"
    write(inner / ".git" / "HEAD", "")  # a nested repository without rules: the search stops there
    editor = Editor(spawn)
    editor.open(["claude-rules"], tmp_path)
    assert "# Extension: claude-rules" not in editor.prompt()
    editor.open(["claude-rules"], tmp_path, cwd=str(inner))
    assert "# Extension: claude-rules" not in editor.prompt()
    editor.open(["claude-rules"], tmp_path, cwd=str(project), extensionSettings={"claude-rules": {"dir": "docs/rules"}})
    assert "# Extension: claude-rules" not in editor.prompt() and editor.ui("ui/notify") == []


def test_claude_rules_are_still_there_after_the_host_restarts(spawn, tmp_path):
    project = rules_project(tmp_path)
    write(tmp_path / "root" / "extensions" / "crasher.py", "import os\ndef activate(api):\n    api.register_tool("
          "name='crash', description='', input_schema={}, execute=lambda c, a: os._exit(1))\n")
    editor = Editor(spawn)
    editor.open(["claude-rules"], tmp_path, also=["crasher"], cwd=str(project))
    before = editor.prompt()
    assert "Every bug fix comes with a test." in before
    assert editor.call("crash")["details"]["kind"] == "crash"
    assert editor.prompt() == before  # a fresh host: thread_start did not run again, the context handler loaded
    kinds = [n["params"]["kind"] for n in editor.sidecar.notifications if n["method"] == "thread/diagnostic"]
    assert kinds == ["host_exit", "host_restarted"]


# -- hello and pirate --------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments, path", [({}, "$"), ({"name": 42}, "$.name"), ({"name": "Ada", "x": 1}, "$")])
def test_hello_greets_and_its_schema_refuses_bad_arguments(spawn, tmp_path, arguments, path):
    editor = Editor(spawn)
    editor.open(["hello"], tmp_path)
    greeting = editor.call("hello", {"name": "Ada"})
    assert text(greeting) == "Hello, Ada!" and greeting["details"] == {"greeted": "Ada"}
    refused = editor.call("hello", arguments)
    assert refused["isError"] is True and refused["details"]["kind"] == "invalid_arguments"
    assert refused["details"]["path"] == path and "KeyError" not in text(refused)


def test_pirate_command_toggles_a_section_of_the_system_prompt(spawn, tmp_path):
    editor = Editor(spawn)
    editor.open(["pirate"], tmp_path)
    assert "PIRATE MODE" not in editor.prompt()
    assert text(editor.request("commands/run", name="pirate")["result"]) == "Arrr! Pirate mode enabled!"
    assert "# Extension: pirate\n\nYou are now in PIRATE MODE." in editor.prompt()
    typed = editor.request("input/submit", text="/pirate")["result"]
    assert typed["by"] == {"kind": "command", "id": "pirate", "extensionId": "pirate"}
    assert "PIRATE MODE" not in editor.prompt()
    assert [n["message"] for n in editor.ui("ui/notify")] == ["Arrr! Pirate mode enabled!", "Pirate mode disabled"]


# -- awaiting notify and set_status (protocol.md says both styles work) ----------------------------------

AWAITS_NOTIFY = '''
async def shape(event, ctx):
    if event["text"] == "ping":
        await ctx.ui.notify("pong")
        await ctx.ui.set_status("ping", "answered")
        return {"handled": True}
def activate(api):
    api.on("input", shape)
'''


def test_an_async_handler_may_await_notify_and_set_status(spawn, tmp_path):
    write(tmp_path / "root" / "extensions" / "awaiter.py", AWAITS_NOTIFY)
    editor = Editor(spawn)
    editor.open([], tmp_path, also=["awaiter"])
    answer = editor.request("input/submit", text="ping")
    assert answer.get("result") == {"action": "handled", "by": {"kind": "extension", "id": "awaiter"}}, answer
    assert [n["message"] for n in editor.ui("ui/notify")] == ["pong"]
    assert [s["text"] for s in editor.ui("ui/status")] == ["answered"]


# -- protocol.md's examples run as written ---------------------------------------------------------------


def api_section() -> str:
    text = (REPO / "protocol.md").read_text()
    return text[text.index("## Extension API (Python)\n"):text.index("\n## LSP mode\n")]


def code_blocks(section: str, heading: str) -> list[tuple[str, str]]:
    """The code blocks between ``heading`` and the next heading: (info string, text)."""
    start = section.index(heading + "\n")
    end = section.find("\n### ", start + 1)
    found = re.findall(r"^```(\w*)\n(.*?)^```$", section[start:end if end >= 0 else None], re.S | re.M)
    return [(info, body) for info, body in found]


def test_the_documented_complete_extension_causes_the_documented_messages(spawn, tmp_path):
    section = api_section()
    heading = "### A complete extension that asks the user"
    project = tmp_path / "P"
    (python, code), (plain, wire) = code_blocks(section, heading)
    assert (python, plain) == ("python", "")
    write(project / "extensions" / "deploy.py", code)
    conversation = [line for line in wire.splitlines() if line]
    sidecar = spawn(initialize=False)
    for line in conversation:
        direction, text = line[0], line[2:].replace("$P", str(project))
        if direction == "→":
            sidecar.send(json.loads(text))
            continue
        got = sidecar.next_message(15)
        if "…" in text:  # elided in the document: the same response, at least
            assert got.get("id") == int(re.search(r'"id":(\d+)', text).group(1)) and "result" in got, got
        else:
            assert got == json.loads(text), line
    sidecar.send({"jsonrpc": "2.0", "id": 99, "method": "shutdown"})
    assert sidecar.next_message(30) == {"jsonrpc": "2.0", "id": 99, "result": None}


def test_the_documented_short_examples_work(spawn, tmp_path):
    root = tmp_path / "root"
    write(root / "extensions" / "more.py", code_blocks(api_section(), "### More, in short")[0][1])
    add_skill(root, "style", "Use when formatting code.")
    editor = Editor(spawn, tools={"echo": lambda args: "the password is hunter2"}, select=["dev"])
    editor.open([], tmp_path, also=["more"], dynamicTools=[{"name": "echo", "inputSchema": {"type": "object"}}])
    assert text(editor.call("echo")) == "the password is [REDACTED]"
    assert text(editor.request("commands/run", name="branch")["result"]) == "on dev"
    assert editor.questions("ui/select")[0]["options"] == [{"value": "main", "label": "main"},
                                                          {"value": "dev", "label": "Development"}]
    assert [n["message"] for n in editor.ui("ui/notify")] == ["switching to dev"]
    assert editor.request("input/submit", text="!!")["result"]["reason"] == "no history"
    assert "# Extension: more" not in editor.prompt()
    editor.sidecar.call("skills/activate", {"threadId": editor.thread, "name": "style"})
    assert editor.prompt().endswith("# Extension: more\n\nUse tabs.\n")


def test_the_readme_example_works(spawn, tmp_path):
    readme = (REPO / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)^```$", readme[readme.index("## Writing an extension"):], re.S | re.M)
    write(tmp_path / "root" / "extensions" / "readme-example.py", code)
    editor = Editor(spawn, confirm=[False], tools={"run_command": lambda args: "ran"})
    editor.open([], tmp_path, also=["readme-example"], dynamicTools=RUN_COMMAND)
    assert editor.call("run_command", {"command": "rm -rf x"})["details"]["blocked"]["reason"] == "the user said no"
    assert editor.ran == [] and len(editor.questions()) == 1
    assert text(editor.call("hello", {"name": "Ada"})) == "Hello, Ada!"
    assert editor.call("hello", {})["details"]["kind"] == "invalid_arguments"
    assert text(editor.request("commands/run", name="hello-all")["result"]) == "Hello, all!"
