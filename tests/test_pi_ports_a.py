"""Pi's example extensions ported to client-examples/extensions/, part 1 — todo (with resume), plan-mode,
preset and tools — each used as a Pi user would: trusted in a thread of the real sidecar, through an editor
that runs Pi's own tool names (read, bash, edit, write) as its dynamic tools and answers ui/* questions.
Each test's docstring says what Pi's original does and what the port does instead."""

from __future__ import annotations

import os
import signal
import time

from helpers import REPO, write

EXAMPLES = REPO / "client-examples" / "extensions"
UI = {"confirm": True, "select": True, "input": True, "notify": True, "status": True, "sendMessage": True}
PI_TOOLS = ["read", "bash", "edit", "write"]
DYNAMIC = [{"name": name, "description": f"Pi's {name} tool, run by the editor.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}},
                            "additionalProperties": False}} for name in PI_TOOLS]
PID = "import os\ndef activate(api):\n    api.register_command('host-pid', '', lambda arguments: str(os.getpid()))\n"


class Editor:
    """An editor with Pi's tools as dynamic tools: it runs them (``ran``), answers ``ui/select`` and
    ``ui/input`` from ``answers`` in turn (``{"value": null}`` once they run out: the user dismissed it)."""

    def __init__(self, spawn, answers=(), ui=UI):
        self.answers = list(answers)
        self.asked: list[dict] = []
        self.ran: list[dict] = []
        self.sidecar = spawn(on_request=self.on_request, initialize=False)
        self.sidecar.call("initialize", {"protocolVersion": "4", "capabilities": {"ui": ui}})

    def on_request(self, message):
        method, params = message["method"], message["params"]
        if method == "item/tool/call":
            self.ran.append(params)
            return {"result": {"contentItems": [{"type": "inputText", "text": f"{params['tool']} ran"}],
                               "success": True}}
        self.asked.append(message)
        if method in ("ui/select", "ui/input"):
            return {"result": {"value": self.answers.pop(0) if self.answers else None}}
        return {"result": {"confirmed": False}}

    def open(self, ids, tmp_path, **extra):
        """thread/start trusting the example extensions ``ids`` and ``host-pid`` (from the root), with Pi's tools."""
        root = tmp_path / "root"
        write(root / "extensions" / "host-pid.py", PID)
        started = self.sidecar.call("thread/start", {
            "roots": [str(root)], "cwd": str(tmp_path), "trustedExtensions": ["host-pid", *ids],
            "dynamicTools": DYNAMIC, "watch": False,
            "extensions": [{"id": i, "path": str(EXAMPLES / f"{i}.py")} for i in ids], **extra}, timeout=60)
        assert [e["status"] for e in started["catalog"]["extensions"]] == ["loaded"] * (len(ids) + 1), started
        self.thread = started["threadId"]
        return started

    def fork(self, **extra):
        forked = self.sidecar.call("thread/fork", {"threadId": self.thread, **extra}, timeout=60)
        return forked["threadId"]

    def call(self, name, arguments=None, call_id="c1", thread=None):
        return self.sidecar.call("tools/call", {"threadId": thread or self.thread, "call": {
            "id": call_id, "name": name, "arguments": arguments or {}}}, timeout=60)["result"]

    def command(self, line, thread=None):
        """The user types ``line`` (``/plan``) in the chat; the command's result."""
        typed = self.sidecar.call("input/submit", {"threadId": thread or self.thread, "text": line}, timeout=60)
        assert typed["action"] == "handled", typed
        return typed["result"]

    def loop(self, event, thread=None, **payload):
        return self.sidecar.call("loop/event", {"threadId": thread or self.thread, "event": event,
                                                "payload": payload}, timeout=60)

    def tools(self, thread=None):
        """The tools the model sees (tools/list)."""
        return [t["name"] for t in self.sidecar.call("tools/list", {"threadId": thread or self.thread})["tools"]]

    def prompt(self, thread=None):
        return self.sidecar.call("context/build", {"threadId": thread or self.thread})["systemPrompt"]

    def close(self, thread=None):
        return self.sidecar.call("thread/close", {"threadId": thread or self.thread}, timeout=60)["state"]

    def seen(self, method, thread=None):
        """The ``method`` notifications (ui/notify, ui/status, chat/send) of the thread so far, as their params."""
        return [n["params"] for n in self.sidecar.notifications
                if n["method"] == method and n["params"]["threadId"] == (thread or self.thread)]

    def status(self, key, thread=None):
        """The status item ``key`` as the editor shows it now (the last ui/status for it)."""
        texts = [s["text"] for s in self.seen("ui/status", thread) if s["key"] == key]
        return texts[-1] if texts else None

    def notices(self, thread=None):
        return [n["message"] for n in self.seen("ui/notify", thread)]

    def questions(self, method="ui/select"):
        return [m["params"] for m in self.asked if m["method"] == method]

    def restart_host(self):
        """Kill the thread's extension host; wait until the sidecar noticed (the next request starts a new one)."""
        pid = self.host_pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not any(n["method"] == "thread/diagnostic" and n["params"]["kind"] == "host_exit"
                      for n in self.sidecar.notifications):
            assert time.monotonic() < deadline, "the sidecar did not notice the host's exit"
            try:
                self.sidecar._dispatch(self.sidecar.next_message(0.2))
            except Exception:  # noqa: BLE001 - nothing arrived yet
                pass
        assert self.host_pid() != pid

    def host_pid(self):
        """The thread's host process (a command: commands are the user's, whatever tools are active)."""
        return int(text(self.sidecar.call("commands/run", {"threadId": self.thread, "name": "host-pid"}, timeout=60)))


def text(result):
    return "".join(item["text"] for item in result["content"])


def session(tmp_path, name):
    return f"{name}:{tmp_path.name}"  # the state folder is shared by the run's tests


# -- todo --------------------------------------------------------------------------------------------------


def test_todo_list_comes_back_when_the_session_resumes_in_a_new_sidecar(spawn, tmp_path):
    """Pi rebuilds the todo list from the session's last ``todo`` result when the session is opened again
    (``session_start``), so ``/todos`` and the next id go on where they stopped. Here the list is the
    extension's ``ctx.state``: a new sidecar process resuming the session has the same list, the status item,
    and the ids go on."""
    sid = session(tmp_path, "todo")
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path, sessionId=sid)
    editor.call("todo", {"action": "add", "text": "write the parser"})
    editor.call("todo", {"action": "add", "text": "test it"}, "c2")
    editor.call("todo", {"action": "toggle", "id": 1}, "c3")
    assert editor.close()["todo"]["nextId"] == 3
    editor.sidecar.close()

    again = Editor(spawn)
    again.open(["todo"], tmp_path, sessionId=sid, resume=True)
    assert again.status("todo") == "todos 1/2"  # shown as soon as the thread is back
    assert text(again.command("/todos")) == "1/2 completed\n[x] #1: write the parser\n[ ] #2: test it"
    assert text(again.call("todo", {"action": "add", "text": "ship"})) == "Added todo #3: ship"

    fresh = Editor(spawn)  # without resume the session starts empty, as a new Pi session does
    fresh.open(["todo"], tmp_path, sessionId=sid)
    assert text(fresh.call("todo", {"action": "list"})) == "No todos"


def test_todo_a_fork_has_the_list_and_then_the_two_diverge(spawn, tmp_path):
    """Pi's todo state lives in the session's branch: after ``/fork`` the new branch has the todos of that
    point and changes on one branch do not show on the other. Here ``thread/fork`` copies ``ctx.state``."""
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    editor.call("todo", {"action": "add", "text": "shared"})
    fork = editor.fork()
    assert editor.status("todo", fork) == "todos 0/1"
    assert text(editor.call("todo", {"action": "add", "text": "only in the fork"}, thread=fork)) == \
        "Added todo #2: only in the fork"
    editor.call("todo", {"action": "toggle", "id": 1}, "c2")
    assert text(editor.call("todo", {"action": "list"}, "c3")) == "[x] #1: shared"
    assert text(editor.call("todo", {"action": "list"}, "c4", thread=fork)) == "[ ] #1: shared\n[ ] #2: only in the fork"


def test_todo_list_survives_a_host_restart(spawn, tmp_path):
    """In Pi the list is in the agent's process for the session's life. Here the extension runs in a host
    process that can die; the restarted host gets ``ctx.state`` back, so the list is not lost."""
    editor = Editor(spawn)
    editor.open(["todo"], tmp_path)
    editor.call("todo", {"action": "add", "text": "kept"})
    editor.restart_host()
    assert text(editor.call("todo", {"action": "add", "text": "after"}, "c2")) == "Added todo #2: after"
    assert text(editor.command("/todos show=open")) == "0/2 completed\n[ ] #1: kept\n[ ] #2: after"


# -- plan-mode ---------------------------------------------------------------------------------------------


def test_plan_mode_shows_only_read_only_tools_and_blocks_writing_commands(spawn, tmp_path):
    """Pi's ``/plan`` switches to read, bash, grep, find, ls (of the tools it has), lets bash run only
    allowlisted read-only commands and tells the model it is planning; ``/plan`` again restores full
    access. Here the same, through ``tools/list``, a before hook and a system prompt section; a call of a
    hidden tool is refused by the sidecar."""
    editor = Editor(spawn)
    editor.open(["plan-mode"], tmp_path)
    assert editor.tools() == ["load_skill", *PI_TOOLS]
    assert text(editor.command("/plan")) == "Plan mode enabled. Tools: read, bash"
    assert editor.notices() == ["Plan mode enabled. Tools: read, bash"] and editor.status("plan-mode") == "⏸ plan"
    assert editor.tools() == ["load_skill", "read", "bash"]
    assert "[PLAN MODE ACTIVE]" in editor.prompt() and "You can only use: read, bash" in editor.prompt()

    written = editor.call("write", {"path": "a.txt"})
    assert written["isError"] and written["details"]["kind"] == "tool_inactive"
    removed = editor.call("bash", {"command": "rm -rf build"}, "c2")
    assert removed["isError"] and removed["details"]["blocked"]["extensionId"] == "plan-mode"
    assert "Plan mode: command blocked (not allowlisted)" in text(removed) and "rm -rf build" in text(removed)
    assert not editor.call("bash", {"command": "git log --oneline"}, "c3")["isError"]
    assert not editor.call("read", {"path": "a.txt"}, "c4")["isError"]
    assert [r["tool"] for r in editor.ran] == ["bash", "read"]  # what was blocked never reached the editor

    assert text(editor.command("/plan")) == "Plan mode disabled. Full access restored."
    assert editor.tools() == ["load_skill", *PI_TOOLS] and editor.status("plan-mode") is None
    assert "PLAN MODE" not in editor.prompt()
    assert not editor.call("bash", {"command": "rm -rf build"}, "c5")["isError"]


def test_plan_mode_turns_the_plan_into_steps_executes_them_and_tracks_done(spawn, tmp_path):
    """Pi, at the end of a plan-mode answer with a numbered ``Plan:``, lists the steps and asks "what
    next?"; "Execute" restores the tools and sends "Execute the plan. Start with: …"; ``[DONE:n]`` in later
    answers ticks steps off (footer ``📋 done/total``) and the last one ends with "Plan Complete!". Here the
    editor reports the answers (``loop/event`` ``turn_end`` / ``stop``), the list is a notice and the message
    goes through ``chat/send``."""
    editor = Editor(spawn, answers=["Execute the plan (track progress)"])
    editor.open(["plan-mode"], tmp_path)
    editor.command("/plan")
    answer = "I looked at the code.\n\nPlan:\n1. Parse the config file in a new module\n2. Cover the parser with tests\n"
    assert editor.loop("stop", lastAssistantMessage=answer, stopHookActive=False)["blocked"] is None
    assert "**Plan Steps (2):**\n\n1. ☐ Parse the config file in a new module\n2. ☐ Cover the parser with tests" in \
        editor.notices()
    (question,) = editor.questions()
    assert question["title"] == "Plan mode - what next?" and [o["value"] for o in question["options"]] == [
        "Execute the plan (track progress)", "Stay in plan mode", "Refine the plan"]
    assert [m["text"] for m in editor.seen("chat/send")] == ["Execute the plan. Start with: Parse the config file in a new module"]
    assert editor.tools() == ["load_skill", *PI_TOOLS] and editor.status("plan-mode") == "📋 0/2"
    assert "Remaining steps:\n1. Parse the config file in a new module\n2. Cover the parser with tests" in editor.prompt()

    editor.loop("turn_end", lastAssistantMessage="Parser added. [DONE:1]")
    assert editor.status("plan-mode") == "📋 1/2" and "1. Parse the config" not in editor.prompt()
    assert text(editor.command("/plan-todos")) == "Plan Progress:\n1. ✓ Parse the config file in a new module\n" \
                                                  "2. ○ Cover the parser with tests"
    editor.loop("stop", lastAssistantMessage="Tests written. [DONE:2]", stopHookActive=False)
    assert editor.notices()[-1].startswith("**Plan Complete!** ✓")
    assert editor.status("plan-mode") is None and "EXECUTING PLAN" not in editor.prompt()
    assert editor.tools() == ["load_skill", *PI_TOOLS]


def test_plan_mode_blocks_a_writing_tool_that_another_extension_made_active(spawn, tmp_path):
    """In Pi, plan mode's ``setActiveTools`` is the last word until ``/plan`` is run again. Here a tool can
    become active again while in plan mode (another extension's ``set_active``, a new MCP server's tool), so
    plan-mode's before hook refuses any tool outside the read-only ones: the write never reaches the editor."""
    editor = Editor(spawn)
    editor.open(["plan-mode", "tools"], tmp_path)
    editor.command("/plan")
    editor.command("/tools enable write")
    assert editor.tools() == ["load_skill", "read", "bash", "write"]
    written = editor.call("write", {"path": "a.txt"})
    assert written["isError"] and written["details"]["blocked"]["extensionId"] == "plan-mode"
    assert text(written).endswith("Plan mode: write is not a read-only tool. Use /plan to disable plan mode first.")
    assert editor.ran == []


def test_plan_mode_refine_sends_the_users_words_and_stays_in_plan_mode(spawn, tmp_path):
    """Pi's "Refine the plan" opens an editor and sends what the user wrote, still in plan mode."""
    editor = Editor(spawn, answers=["Refine the plan", "Also cover the CLI."])
    editor.open(["plan-mode"], tmp_path)
    editor.command("/plan")
    editor.loop("stop", lastAssistantMessage="Plan:\n1. Look at the parser module\n", stopHookActive=False)
    assert editor.questions("ui/input")[0]["title"] == "Refine the plan:"
    assert [m["text"] for m in editor.seen("chat/send")] == ["Also cover the CLI."]
    assert editor.tools() == ["load_skill", "read", "bash"]


def test_plan_mode_survives_resume_fork_and_a_host_restart(spawn, tmp_path):
    """Pi restores plan mode from the session's ``plan-mode`` entry when the session is resumed
    (``session_start``): the read-only tools again. Here the mode is ``ctx.state``: a resumed session in a new
    sidecar, a fork and a restarted host are all still in plan mode, and writes are still refused."""
    sid = session(tmp_path, "plan")
    editor = Editor(spawn)
    editor.open(["plan-mode"], tmp_path, sessionId=sid)
    editor.command("/plan")
    editor.restart_host()
    assert editor.tools() == ["load_skill", "read", "bash"]
    assert editor.call("bash", {"command": "touch x"}, "c1")["isError"]
    fork = editor.fork()
    assert editor.tools(fork) == ["load_skill", "read", "bash"] and editor.status("plan-mode", fork) == "⏸ plan"
    assert editor.close()["plan-mode"]["enabled"] is True
    editor.sidecar.close()

    again = Editor(spawn)
    again.open(["plan-mode"], tmp_path, sessionId=sid, resume=True)
    assert again.tools() == ["load_skill", "read", "bash"] and again.status("plan-mode") == "⏸ plan"
    assert again.call("bash", {"command": "echo hi > x"})["isError"]
    assert text(again.command("/plan")) == "Plan mode disabled. Full access restored."
    assert again.tools() == ["load_skill", *PI_TOOLS]


def test_plan_mode_setting_starts_in_plan_mode(spawn, tmp_path):
    """Pi's ``--plan`` flag starts in plan mode; here the ``plan`` setting does."""
    editor = Editor(spawn)
    editor.open(["plan-mode"], tmp_path, extensionSettings={"plan-mode": {"plan": True, "tools": ["read"]}})
    assert editor.tools() == ["load_skill", "read"] and editor.status("plan-mode") == "⏸ plan"


# -- preset ------------------------------------------------------------------------------------------------


PRESETS = {"plan": {"provider": "openai-codex", "model": "gpt-5.2-codex", "tools": ["read", "grep", "bash"],
                    "instructions": "You are in PLANNING MODE. DO NOT make any changes."},
           "implement": {"tools": ["read", "bash", "edit", "write"],
                         "instructions": "You are in IMPLEMENTATION MODE. Keep scope tight."}}


def test_preset_chooses_the_tools_and_the_instructions_and_none_restores(spawn, tmp_path):
    """Pi's ``/preset plan`` sets the preset's tools (warning about unknown ones), appends its instructions
    to the system prompt and shows ``preset:plan``; ``/preset`` alone offers the presets with their
    descriptions and ``(none)``, which restores the defaults. Here the same from the ``presets`` setting;
    Pi switches to the preset's model; here the editor is asked to (``chat/model``), and one that does not take
    switches is warned about, as Pi warns when the model is not found."""
    editor = Editor(spawn, answers=["(none)"], ui={**UI, "model": True})
    editor.open(["preset"], tmp_path, extensionSettings={"preset": {"presets": PRESETS}})
    applied = editor.command("/preset plan")
    assert text(applied) == 'Preset "plan" activated' and applied["details"]["preset"]["model"] == "gpt-5.2-codex"
    assert editor.notices() == ['Preset "plan": Unknown tools: grep', 'Preset "plan" activated']
    assert [n["params"] for n in editor.sidecar.notifications if n["method"] == "chat/model"] == [
        {"threadId": editor.thread, "extensionId": "preset", "model": "openai-codex/gpt-5.2-codex"}]
    assert editor.tools() == ["load_skill", "read", "bash"] and editor.status("preset") == "preset:plan"
    assert "# Extension: preset\n\nYou are in PLANNING MODE." in editor.prompt()

    assert text(editor.command("/preset")) == "Preset cleared, defaults restored"
    (question,) = editor.questions()
    assert question["title"] == "Select Preset" and [(o["label"], o.get("description")) for o in question["options"]] == [
        ("plan (active)", 'openai-codex/gpt-5.2-codex | tools:read,grep,bash | "You are in PLANNING MODE. D..."'),
        ("implement", 'tools:read,bash,edit,write | "You are in IMPLEMENTATION M..."'),
        ("(none)", "Clear active preset, restore defaults")]
    assert editor.tools() == ["load_skill", *PI_TOOLS] and editor.status("preset") is None
    assert "PLANNING MODE" not in editor.prompt()

    plain = Editor(spawn)  # an editor that does not switch models: told, the rest applied
    plain.open(["preset"], tmp_path, extensionSettings={"preset": {"presets": PRESETS}})
    assert text(plain.command("/preset plan")) == 'Preset "plan" activated'
    assert plain.notices()[0] == 'Preset "plan": the editor does not switch models (openai-codex/gpt-5.2-codex)'
    assert not [n for n in plain.sidecar.notifications if n["method"] == "chat/model"]

    unknown = editor.command("/preset review")
    assert unknown["isError"] and text(unknown) == 'Unknown preset "review". Available: plan, implement'
    assert [text(editor.command("/preset next")) for _ in range(3)] == [
        'Preset "implement" activated', 'Preset "plan" activated', "Preset cleared, defaults restored"]


def test_preset_comes_back_on_resume_and_fork_and_the_setting_starts_one(spawn, tmp_path):
    """Pi saves the active preset's name in the session and restores it (its instructions) when the session
    is resumed; ``--preset`` starts with one. Here the preset is ``ctx.state``: a resumed session in a new
    sidecar and a fork have its instructions and its tools; the ``preset`` setting starts with one."""
    sid = session(tmp_path, "preset")
    editor = Editor(spawn)
    editor.open(["preset"], tmp_path, sessionId=sid, extensionSettings={"preset": {"presets": PRESETS}})
    editor.command("/preset implement")
    editor.command("/preset plan")
    fork = editor.fork()
    assert editor.tools(fork) == ["load_skill", "read", "bash"] and "PLANNING MODE" in editor.prompt(fork)
    editor.close()
    editor.sidecar.close()

    again = Editor(spawn)
    again.open(["preset"], tmp_path, sessionId=sid, resume=True, extensionSettings={"preset": {"presets": PRESETS}})
    assert again.tools() == ["load_skill", "read", "bash"] and again.status("preset") == "preset:plan"
    assert "PLANNING MODE" in again.prompt()
    again.restart_host()
    assert text(again.command("/preset (none)")) == "Preset cleared, defaults restored"
    assert again.tools() == ["load_skill", *PI_TOOLS]  # the tools from before the first preset

    flagged = Editor(spawn)
    flagged.open(["preset"], tmp_path, extensionSettings={"preset": {"presets": PRESETS, "preset": "implement"}})
    assert flagged.tools() == ["load_skill", *PI_TOOLS] and "IMPLEMENTATION MODE" in flagged.prompt()
    assert flagged.notices() == ['Preset "implement" activated']


# -- tools -------------------------------------------------------------------------------------------------


def test_tools_command_toggles_tools_the_model_sees(spawn, tmp_path):
    """Pi's ``/tools`` opens a list of every tool, enabled or disabled; each change applies at once, Escape
    closes it. Here ``/tools`` asks ``ui/select`` (each tool with its state), toggles the chosen one and
    asks again until the user dismisses the question; ``/tools disable <name>`` does it without asking."""
    editor = Editor(spawn, answers=["write", "edit", "write"])
    editor.open(["tools"], tmp_path)
    listed = editor.command("/tools")
    assert editor.tools() == ["load_skill", "read", "bash", "write"]
    labels = [[o["label"] for o in q["options"]] for q in editor.questions()]
    assert labels[0] == ["read: enabled", "bash: enabled", "edit: enabled", "write: enabled"]
    assert labels[1][3] == "write: disabled" and labels[2][2:4] == ["edit: disabled", "write: disabled"]
    assert len(labels) == 4 and labels[3][2:4] == ["edit: disabled", "write: enabled"]
    assert listed["details"]["enabledTools"] == ["read", "bash", "write"]

    assert text(editor.command("/tools disable bash write")) == \
        "read: enabled\nbash: disabled\nedit: disabled\nwrite: disabled"
    assert editor.tools() == ["load_skill", "read"]
    assert editor.call("bash", {"command": "ls"})["details"]["kind"] == "tool_inactive"
    wrong = editor.command("/tools enable grep")
    assert wrong["isError"] and text(wrong) == "Unknown tools: grep"
    editor.command("/tools enable bash")
    assert editor.tools() == ["load_skill", "read", "bash"]


def test_tools_choice_survives_resume_fork_and_a_host_restart(spawn, tmp_path):
    """Pi keeps the tool selection in the session ("persists across session reloads and respects branch
    navigation"). Here it is ``ctx.state``: a fork, a restarted host and a resumed session in a new sidecar
    show the model the same tools; a saved name that is no longer a tool is left out, as in Pi."""
    sid = session(tmp_path, "tools")
    editor = Editor(spawn)
    editor.open(["tools"], tmp_path, sessionId=sid)
    editor.command("/tools disable edit write")
    fork = editor.fork()
    assert editor.tools(fork) == ["load_skill", "read", "bash"]
    editor.command("/tools enable write", thread=fork)  # the fork diverges
    assert editor.tools() == ["load_skill", "read", "bash"]
    editor.restart_host()
    assert editor.tools() == ["load_skill", "read", "bash"]
    editor.close()
    editor.sidecar.close()

    again = Editor(spawn)
    again.open(["tools"], tmp_path, sessionId=sid, resume=True)
    assert again.tools() == ["load_skill", "read", "bash"]
    assert text(again.command("/tools list")) == "read: enabled\nbash: enabled\nedit: disabled\nwrite: disabled"
