"""Pi's example extensions ported to the sidecar, part 2 (issue #30 item 9): summarize, confirm-destructive,
dirty-repo-guard, auto-commit-on-exit — each trusted in a thread of the real sidecar, with an editor that
answers ``ui/*`` and ``session/messages`` and reports its loop with ``loop/event``, and (for the git ones) a
real git repository in a temporary directory.

Each test's docstring says what a user of Pi's original (github:badlogic/pi-mono,
packages/coding-agent/examples/extensions; MIT licence, © Mario Zechner) sees, and what the port shows.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from helpers import REPO
from test_loop_events import EMPTY, loop_event

EXAMPLES = REPO / "client-examples" / "extensions"
UI = {"confirm": True, "select": True, "input": True, "notify": True, "status": True}

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


class Editor:
    """An editor that declares ``ui`` (and ``conversation`` when it shares one), answers ``ui/confirm`` and
    ``ui/select`` from ``confirm``/``select`` in turn (silent once they run out) and ``session/messages``
    from ``conversation``."""

    def __init__(self, spawn, ui=UI, conversation=None, confirm=(), select=(), sample=None):
        self.asked: list[dict] = []
        self.confirm, self.select, self.conversation = list(confirm), list(select), conversation
        self.sample = sample  # answers model/sample (the editor's model) from the request's params
        self.sidecar = spawn(on_request=self.on_request, initialize=False)
        capabilities = {"ui": ui} if ui else {}
        if conversation is not None:
            capabilities["conversation"] = True
        if sample is not None:
            capabilities["sampling"] = True
        self.sidecar.call("initialize", {"protocolVersion": "4", "capabilities": capabilities})

    def on_request(self, message):
        self.asked.append(message)
        method = message["method"]
        if method == "session/messages":
            return {"result": {"messages": list(self.conversation)}}
        if method == "model/sample" and self.sample is not None:
            return {"result": {"role": "assistant", "model": "editor-model",
                               "content": {"type": "text", "text": self.sample(message["params"])}}}
        if method == "ui/confirm" and self.confirm:
            return {"result": {"confirmed": self.confirm.pop(0)}}
        if method == "ui/select" and self.select:
            return {"result": {"value": self.select.pop(0)}}
        return None

    def open(self, port, cwd, **extra):
        started = self.sidecar.call("thread/start", {
            "roots": [], "cwd": str(cwd), "trustedExtensions": [port],
            "extensions": [{"id": port, "path": str(EXAMPLES / f"{port}.py")}], **extra})
        assert [e["status"] for e in started["catalog"]["extensions"]] == ["loaded"], started
        self.thread = started["threadId"]
        return started

    def event(self, event, payload=None):
        return loop_event(self.sidecar, self.thread, event, payload)

    def questions(self, method):
        return [m["params"] for m in self.asked if m["method"] == method]

    def notices(self):
        return [(n["params"]["level"], n["params"]["message"]) for n in self.sidecar.notifications
                if n["method"] == "ui/notify"]


def git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def make_repo(path, dirty=()):
    """A git repository with one commit, then ``dirty`` files changed or added."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    (path / "README.md").write_text("hello\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "first")
    for name in dirty:
        (path / name).write_text("changed\n")
    return path


# -- confirm-destructive ---------------------------------------------------------------------------------


def test_confirm_destructive_asks_before_clearing_the_session_and_a_no_cancels_it(spawn, tmp_path):
    """Pi: on /new, "Clear session?" — "This will delete all messages in the current session."; No →
    "Clear cancelled" and the session stays. Here the same question and notice, and the editor's
    ``loop/event session_before_switch {reason: "new"}`` is answered ``blocked`` (cancel); a yes lets it go."""
    editor = Editor(spawn, confirm=[False, True])
    editor.open("confirm-destructive", tmp_path)
    cancelled = editor.event("session_before_switch", {"reason": "new"})
    assert cancelled["blocked"] == {"reason": "the user did not confirm clearing the session",
                                    "by": ["extension:confirm-destructive"]}
    assert editor.notices() == [("info", "Clear cancelled")]
    assert editor.event("session_before_switch", {"reason": "new"}) == EMPTY
    questions = editor.questions("ui/confirm")
    assert [(q["title"], q["message"]) for q in questions] == [
        ("Clear session?", "This will delete all messages in the current session.")] * 2
    assert questions[0]["extensionId"] == "confirm-destructive" and questions[0]["threadId"] == editor.thread


def test_confirm_destructive_asks_before_a_switch_only_when_the_conversation_has_user_messages(spawn, tmp_path):
    """Pi: on /resume, "Switch session?" only when the session has a user message; an empty one switches
    without a question. Here the conversation is the editor's (``session/messages``): no user message →
    no question; one → the question, and silence (no answer within ``uiTimeoutMs``) cancels."""
    empty = Editor(spawn, conversation=[{"role": "assistant", "text": "Hi, what shall we do?"}])
    empty.open("confirm-destructive", tmp_path)
    assert empty.event("session_before_switch", {"reason": "resume"}) == EMPTY
    assert empty.questions("ui/confirm") == [] and len(empty.questions("session/messages")) == 1

    working = Editor(spawn, conversation=[{"role": "user", "text": "fix the parser"},
                                          {"role": "assistant", "text": "on it"}])  # and never answers
    working.open("confirm-destructive", tmp_path, limits={"uiTimeoutMs": 500})
    cancelled = working.event("session_before_switch", {"reason": "resume"})
    assert cancelled["blocked"]["by"] == ["extension:confirm-destructive"]
    assert [(q["title"], q["message"]) for q in working.questions("ui/confirm")] == [
        ("Switch session?", "You have messages in the current session. Switch anyway?")]
    assert working.notices() == [("info", "Switch cancelled")]


def test_confirm_destructive_asks_when_the_editor_does_not_share_the_conversation(spawn, tmp_path):
    """Pi always knows its session's messages. An editor without ``capabilities.conversation`` cannot say
    there is no work, so the port asks rather than switch silently; a yes switches."""
    editor = Editor(spawn, confirm=[True])
    editor.open("confirm-destructive", tmp_path)
    assert editor.event("session_before_switch", {"reason": "resume"}) == EMPTY
    assert [q["title"] for q in editor.questions("ui/confirm")] == ["Switch session?"]
    assert editor.questions("session/messages") == []


def test_confirm_destructive_asks_before_a_fork_with_pis_two_options(spawn, tmp_path):
    """Pi: /fork asks "Fork from entry …?" with "Yes, create fork" / "No, stay in current session"; anything
    but yes → "Fork cancelled". Here the same options (no entry id: the fork event carries none)."""
    editor = Editor(spawn, select=["No, stay in current session", "Yes, create fork"])
    editor.open("confirm-destructive", tmp_path)
    assert editor.event("session_before_fork")["blocked"] == {
        "reason": "the user did not confirm the fork", "by": ["extension:confirm-destructive"]}
    assert editor.notices() == [("info", "Fork cancelled")]
    assert editor.event("session_before_fork") == EMPTY
    (question, _) = editor.questions("ui/select")
    assert question["title"] == "Fork this session?" and question["options"] == [
        {"value": "Yes, create fork", "label": "Yes, create fork"},
        {"value": "No, stay in current session", "label": "No, stay in current session"}]


def test_confirm_destructive_lets_everything_through_without_a_ui_as_pi_does(spawn, tmp_path):
    """Pi: ``if (!ctx.hasUI) return;`` — in print mode nothing is asked and nothing is cancelled."""
    editor = Editor(spawn, ui=None)
    editor.open("confirm-destructive", tmp_path)
    assert editor.event("session_before_switch", {"reason": "new"}) == EMPTY
    assert editor.event("session_before_fork") == EMPTY
    assert editor.asked == []


# -- dirty-repo-guard ------------------------------------------------------------------------------------


@needs_git
def test_dirty_repo_guard_lets_a_clean_repository_switch_and_fork_without_a_question(spawn, tmp_path):
    """Pi: ``git status --porcelain`` empty → the switch or fork goes ahead, nothing asked."""
    repo = make_repo(tmp_path / "repo")
    editor = Editor(spawn)
    editor.open("dirty-repo-guard", repo)
    assert editor.event("session_before_switch", {"reason": "new"}) == EMPTY
    assert editor.event("session_before_fork") == EMPTY
    assert editor.asked == [] and editor.notices() == []


@needs_git
def test_dirty_repo_guard_counts_the_uncommitted_files_and_cancels_unless_the_user_proceeds(spawn, tmp_path):
    """Pi: "You have 2 uncommitted file(s). new session anyway?" with "Yes, proceed anyway" / "No, let me
    commit first"; No → "Commit your changes first" (a warning) and the action is cancelled. Here the
    repository is ``thread/start.cwd``; a changed and a new file count, and once committed nothing is asked."""
    repo = make_repo(tmp_path / "repo", dirty=["README.md", "notes.txt"])
    editor = Editor(spawn, select=["No, let me commit first", "Yes, proceed anyway", "No, let me commit first"])
    editor.open("dirty-repo-guard", repo)
    cancelled = editor.event("session_before_switch", {"reason": "new"})
    assert cancelled["blocked"] == {"reason": "2 uncommitted file(s): commit them first",
                                    "by": ["extension:dirty-repo-guard"]}
    assert editor.notices() == [("warning", "Commit your changes first")]
    assert editor.event("session_before_switch", {"reason": "resume"}) == EMPTY  # "proceed anyway"
    assert editor.event("session_before_fork")["blocked"]["by"] == ["extension:dirty-repo-guard"]
    questions = editor.questions("ui/select")
    assert [q["title"] for q in questions] == ["You have 2 uncommitted file(s). new session anyway?",
                                               "You have 2 uncommitted file(s). switch session anyway?",
                                               "You have 2 uncommitted file(s). fork anyway?"]
    assert [o["value"] for o in questions[0]["options"]] == ["Yes, proceed anyway", "No, let me commit first"]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    assert editor.event("session_before_fork") == EMPTY
    assert len(editor.questions("ui/select")) == 3


@needs_git
def test_dirty_repo_guard_cancels_without_a_ui_and_ignores_a_directory_that_is_no_repository(spawn, tmp_path):
    """Pi: with changes and no UI, block by default; outside a git repository (git exits non-zero), allow."""
    repo = make_repo(tmp_path / "repo", dirty=["notes.txt"])
    headless = Editor(spawn, ui=None)
    headless.open("dirty-repo-guard", repo)
    assert headless.event("session_before_fork")["blocked"] == {
        "reason": "1 uncommitted file(s) and no UI to ask", "by": ["extension:dirty-repo-guard"]}
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("not tracked by anything\n")
    elsewhere = Editor(spawn, ui=None)
    elsewhere.open("dirty-repo-guard", plain)
    assert elsewhere.event("session_before_switch", {"reason": "new"}) == EMPTY
    assert headless.asked == [] and elsewhere.asked == []


# -- auto-commit-on-exit ---------------------------------------------------------------------------------


def log(repo):
    return git(repo, "log", "--format=%s").splitlines()


@needs_git
def test_auto_commit_on_exit_commits_everything_with_the_last_assistant_message(spawn, tmp_path):
    """Pi: on exit, ``git add -A`` and ``git commit -m "[pi] <the last assistant message's first line, 50
    characters>..."``, then "Auto-committed: …". Here at ``thread/close``, the message read from the
    editor's conversation, the prefix a setting; the new file is committed too and the tree is clean."""
    repo = make_repo(tmp_path / "repo", dirty=["README.md", "parser_test.py"])
    long_line = "Added the parser test and fixed the off-by-one error in the tokenizer loop"
    editor = Editor(spawn, conversation=[{"role": "user", "text": "fix the tokenizer"},
                                         {"role": "assistant", "text": f"{long_line}\n\nDetails follow."},
                                         {"role": "user", "text": "thanks"}])
    editor.open("auto-commit-on-exit", repo, extensionSettings={"auto-commit-on-exit": {"prefix": "[pi]"}})
    editor.sidecar.call("thread/close", {"threadId": editor.thread}, timeout=60)
    message = f"[pi] {long_line[:50]}..."
    assert log(repo) == [message, "first"]
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["README.md", "parser_test.py"]
    assert editor.notices() == [("info", f"Auto-committed: {message}")]


@needs_git
def test_auto_commit_on_exit_at_eof_uses_the_message_the_editor_reported(spawn, tmp_path):
    """Pi reads its own session. An editor that does not share the conversation still reports its turns
    (``loop/event turn_end {lastAssistantMessage}``): the port keeps the last one in ``ctx.state`` and, when
    the editor goes away (EOF on the sidecar's stdin: ``thread_close`` reason ``eof``), commits with it."""
    repo = make_repo(tmp_path / "repo", dirty=["notes.txt"])
    editor = Editor(spawn)
    editor.open("auto-commit-on-exit", repo)
    assert editor.event("turn_end", {"lastAssistantMessage": "Wrote the notes"}) == EMPTY
    assert editor.event("stop", {"lastAssistantMessage": "Summed up the notes\nmore", "stopHookActive": False}) \
        == EMPTY
    editor.sidecar.close_stdin()
    assert editor.sidecar.wait(60) == 0
    assert log(repo) == ["[agent] Summed up the notes", "first"]


@needs_git
def test_auto_commit_on_exit_remembers_the_last_message_across_a_crash_and_a_resumed_session(spawn, tmp_path):
    """Pi rebuilds from its session file after a crash. Here the message the editor reported is in
    ``ctx.state``, saved under the session: the sidecar is killed (no ``thread_close`` runs, nothing is
    committed), a new one resumes the session (``thread/start {sessionId, resume: true}``), and its close
    commits with the message reported before the crash."""
    repo = make_repo(tmp_path / "repo", dirty=["notes.txt"])
    first = Editor(spawn)
    first.open("auto-commit-on-exit", repo, sessionId="work-1")
    assert first.event("turn_end", {"lastAssistantMessage": "Drafted the release notes"}) == EMPTY
    first.sidecar.proc.kill()
    first.sidecar.proc.wait()
    assert log(repo) == ["first"]
    second = Editor(spawn)
    second.open("auto-commit-on-exit", repo, sessionId="work-1", resume=True)
    second.sidecar.call("thread/close", {"threadId": second.thread}, timeout=60)
    assert log(repo) == ["[agent] Drafted the release notes", "first"]


@needs_git
def test_auto_commit_on_exit_commits_at_shutdown_and_says_when_git_refuses(spawn, tmp_path):
    """Pi commits when it exits, and says nothing when the commit fails. Here ``shutdown`` is an exit too
    (``thread_close`` reason ``shutdown``), and a refused commit (a pre-commit hook that exits 1) is told
    as a warning with git's words; the changes stay uncommitted (staged, as Pi leaves them)."""
    repo = make_repo(tmp_path / "repo", dirty=["notes.txt"])
    editor = Editor(spawn, conversation=[{"role": "assistant", "text": "Wrote the notes"}])
    editor.open("auto-commit-on-exit", repo)
    editor.sidecar.call("shutdown", timeout=60)
    assert log(repo) == ["[agent] Wrote the notes", "first"]
    assert editor.notices() == [("info", "Auto-committed: [agent] Wrote the notes")]

    refusing = make_repo(tmp_path / "refusing", dirty=["notes.txt"])
    hook = refusing / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'notes must be reviewed' >&2\nexit 1\n")
    hook.chmod(0o755)
    editor = Editor(spawn, conversation=[{"role": "assistant", "text": "Wrote the notes"}])
    editor.open("auto-commit-on-exit", refusing)
    editor.sidecar.call("thread/close", {"threadId": editor.thread}, timeout=60)
    assert log(refusing) == ["first"] and "notes.txt" in git(refusing, "status", "--porcelain")
    assert editor.notices() == [("warning", "Auto-commit failed: notes must be reviewed")]


@needs_git
def test_auto_commit_on_exit_commits_nothing_in_a_clean_repository(spawn, tmp_path):
    """Pi: no changes → no commit, no notice. Without a message at all the commit would say "Work in
    progress"; here nothing is committed, so nothing is said."""
    repo = make_repo(tmp_path / "repo")
    editor = Editor(spawn)
    editor.open("auto-commit-on-exit", repo)
    editor.sidecar.call("thread/close", {"threadId": editor.thread}, timeout=60)
    assert log(repo) == ["first"] and editor.notices() == []


@needs_git
def test_auto_commit_on_exit_says_work_in_progress_without_any_assistant_message(spawn, tmp_path):
    """Pi: no assistant message → "[pi] Work in progress"."""
    repo = make_repo(tmp_path / "repo", dirty=["notes.txt"])
    editor = Editor(spawn, conversation=[{"role": "user", "text": "start"}])
    editor.open("auto-commit-on-exit", repo)
    editor.sidecar.call("thread/close", {"threadId": editor.thread}, timeout=60)
    assert log(repo) == ["[agent] Work in progress", "first"]


# -- summarize -------------------------------------------------------------------------------------------

CONVERSATION = [
    {"role": "user", "text": "Make the tokenizer handle tabs"},
    {"role": "assistant", "text": "Reading the tokenizer first.",
     "toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "tok.py"}}]},
    {"role": "tool", "text": "def tokenize(s): ...", "toolResults": [{"id": "c1", "isError": False}]},
    {"role": "assistant", "text": "Tabs now count as whitespace. Should tabs also expand to 4 spaces?",
     "toolCalls": [{"id": "c2", "name": "edit", "arguments": {"path": "tok.py"}},
                   {"id": "c3", "name": "read", "arguments": {"path": "tok.py"}}]},
    {"role": "user", "text": "Yes, and add a test\nfor both cases"},
]


def run(editor, name, text=""):
    return editor.sidecar.call("commands/run", {"threadId": editor.thread, "name": name,
                                                "arguments": {"text": text}}, timeout=60)


def test_summarize_sums_up_the_conversation_under_pis_headings(spawn, tmp_path):
    """Pi: /summarize asks a model to sum up the branch (goals, decisions, progress, open questions, next
    steps) and shows it in a panel. An extension here reaches no model, so the port sums up itself, from
    the whole conversation (``session/messages`` without a limit) and returns it as the command's text."""
    editor = Editor(spawn, conversation=CONVERSATION)
    editor.open("summarize", tmp_path)
    result = run(editor, "summarize")
    assert result["isError"] is False and result["details"] == {"messages": 5, "summarizedBy": "summarize"}
    assert result["content"][0]["text"] == "\n".join([
        "# Conversation Summary", "",
        "## Goals", "- Make the tokenizer handle tabs", "- Yes, and add a test", "",
        "## Progress", "- Reading the tokenizer first.",
        "- Tabs now count as whitespace. Should tabs also expand to 4 spaces?", "- Tools used: read ×2, edit ×1", "",
        "## Open questions", "- Should tabs also expand to 4 spaces?", "",
        "## Next steps", "- Answer: Yes, and add a test"])
    assert [m["params"] for m in editor.asked if m["method"] == "session/messages"] == [{"threadId": editor.thread}]


def test_summarize_model_hands_pis_prompt_to_the_editors_model(spawn, tmp_path):
    """Pi sends "Summarize this conversation so I can resume it later. …" with the conversation as
    ``User: …`` / ``Assistant: …`` / ``Tool read was called with args {…}`` lines. Typed ``/summarize model``,
    the port sends that very prompt to the editor (``chat/send``) for its model; without ``ui.sendMessage``
    it falls back to its own summary."""
    editor = Editor(spawn, ui={**UI, "sendMessage": True}, conversation=CONVERSATION)
    editor.open("summarize", tmp_path)
    answer = editor.sidecar.call("input/submit", {"threadId": editor.thread, "text": "/summarize model"}, timeout=60)
    assert answer["action"] == "handled" and answer["result"]["details"]["summarizedBy"] == "model"
    (sent,) = [n["params"] for n in editor.sidecar.notifications if n["method"] == "chat/send"]
    assert sent["extensionId"] == "summarize" and sent["text"] == "\n".join([
        "Summarize this conversation so I can resume it later.",
        "Include goals, key decisions, progress, open questions, and next steps.",
        "Keep it concise and structured with headings.", "", "<conversation>",
        "User: Make the tokenizer handle tabs", "",
        'Assistant: Reading the tokenizer first.\nTool read was called with args {"path": "tok.py"}', "",
        "Assistant: Tabs now count as whitespace. Should tabs also expand to 4 spaces?\n"
        'Tool edit was called with args {"path": "tok.py"}\nTool read was called with args {"path": "tok.py"}', "",
        "User: Yes, and add a test\nfor both cases", "</conversation>"])
    assert editor.notices() == [("info", "Preparing summary...")]

    plain = Editor(spawn, conversation=CONVERSATION)  # no sendMessage
    plain.open("summarize", tmp_path)
    result = run(plain, "summarize", "model")
    assert result["details"]["summarizedBy"] == "summarize"
    assert result["content"][0]["text"].startswith("# Conversation Summary")
    assert not [n for n in plain.sidecar.notifications if n["method"] == "chat/send"]


def test_summarize_has_the_editors_model_write_the_summary_from_pis_prompt(spawn, tmp_path):
    """Pi hands its summary prompt, the conversation in it, to a model and shows the model's summary. Here the
    editor's model is asked (``model/sample`` under ``capabilities.sampling``) with that very prompt, and its
    answer is the command's result; nothing goes to the chat."""
    editor = Editor(spawn, conversation=CONVERSATION,
                    sample=lambda params: "# Summary\n- tabs: " + str("tabs" in params["messages"][0]["content"]["text"]))
    editor.open("summarize", tmp_path)
    result = run(editor, "summarize", "")
    assert result["content"][0]["text"] == "# Summary\n- tabs: True" and not result["isError"]
    assert result["details"]["summarizedBy"] == "editor-model"
    (asked,) = editor.questions("model/sample")
    assert asked["extensionId"] == "summarize" and asked["maxTokens"] == 2048
    prompt = asked["messages"][0]["content"]["text"]
    assert prompt.startswith("Summarize this conversation so I can resume it later.\n") and \
        "User: Make the tokenizer handle tabs" in prompt and prompt.endswith("</conversation>")
    assert not [n for n in editor.sidecar.notifications if n["method"] == "chat/send"]


def test_summarize_warns_when_there_is_no_conversation_text(spawn, tmp_path):
    """Pi: a branch without user or assistant text → "No conversation text found" (a warning), no summary."""
    editor = Editor(spawn, conversation=[{"role": "tool", "text": "output"}, {"role": "assistant", "text": "  "}])
    editor.open("summarize", tmp_path)
    result = run(editor, "summarize")
    assert result["content"][0]["text"] == "No conversation text found" and result["isError"] is False
    assert editor.notices() == [("warning", "No conversation text found")]


def test_summarize_without_the_conversation_capability_says_so_and_asks_nothing(spawn, tmp_path):
    """Pi always has its session. An editor that did not declare ``capabilities.conversation`` is told why
    there is no summary (a warning naming the capability, an ``isError`` result); nothing is asked."""
    editor = Editor(spawn)
    editor.open("summarize", tmp_path)
    result = run(editor, "summarize")
    assert result["isError"] is True and "capabilities.conversation" in result["content"][0]["text"]
    ((level, message),) = editor.notices()
    assert level == "warning" and "capabilities.conversation" in message
    assert editor.asked == []
