"""A live catalog, end to end: files change on disk while a thread is open.

Each change that changes the thread's catalog is one new revision and one ``catalog/changed``
(a burst is one); a request already running answers from the snapshot it started with;
calls carry the revision the model saw and a tool changed since is ``stale_tool``.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from helpers import add_skill, changes_until, skill_text, write


def changes(sidecar):
    return [n["params"] for n in sidecar.notifications if n["method"] == "catalog/changed"]


def wait_changes(sidecar, count, timeout=30.0):
    """Read messages until ``count`` catalog/changed notifications arrived; return them.

    A bounded wait, not a latency check: inotify wakes the watch at once, and a loaded 2-core machine may still
    take seconds to run the rescan."""
    deadline = time.monotonic() + timeout
    while len(changes(sidecar)) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"expected {count} catalog/changed, got {changes(sidecar)}")
        try:
            sidecar._dispatch(sidecar.next_message(min(remaining, 0.2)))
        except Exception:  # noqa: BLE001 - nothing arrived yet
            pass
    return changes(sidecar)


def quiet(sidecar, seconds=0.6):
    """Read whatever arrives for ``seconds`` (to prove nothing more does)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            sidecar._dispatch(sidecar.next_message(0.05))
        except Exception:  # noqa: BLE001
            pass


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "alpha", "Use for alpha.", "ALPHA BODY\n")
    add_skill(root, "beta", "Use for beta.", "BETA BODY\n")
    write(root / "templates/ask.md", "Ask about {{topic}}.\n")
    write(root / "AGENTS.md", "Be brief.\n")
    return root


def start(sidecar, root, **extra):
    result = sidecar.call("thread/start", {"roots": [str(root)], **extra})
    assert result["revision"] == 1
    quiet(sidecar, 0.3)  # the watch starts after the answer
    return result["threadId"]


def test_adding_changing_and_removing_a_skill_are_one_revision_each(spawn, root):
    sidecar = spawn()
    thread = start(sidecar, root)
    add_skill(root, "gamma", "Use for gamma.")
    (first,) = wait_changes(sidecar, 1)
    assert first["threadId"] == thread and first["revision"] == 2
    assert first["added"] == [{"kind": "skill", "name": "gamma"}] and first["removed"] == first["changed"] == []
    write(root / "skills/alpha/SKILL.md", skill_text("alpha", "Use for alpha, now better."))
    second = wait_changes(sidecar, 2)[1]
    assert second["revision"] == 3 and second["changed"] == [{"kind": "skill", "name": "alpha"}]
    shutil.rmtree(root / "skills/beta")
    third = wait_changes(sidecar, 3)[2]
    assert third["revision"] == 4 and third["removed"] == [{"kind": "skill", "name": "beta"}]
    listing = sidecar.call("tools/list", {"threadId": thread})
    assert listing["revision"] == 4
    skills = sidecar.call("thread/refresh", {"threadId": thread})["catalog"]["skills"]
    assert [(s["name"], s["description"]) for s in skills] == [("alpha", "Use for alpha, now better."),
                                                                 ("gamma", "Use for gamma.")]
    prompt = sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    assert "gamma: Use for gamma." in prompt and "beta:" not in prompt


def test_templates_and_instructions_are_watched_too_and_a_burst_is_one_change(spawn, root):
    sidecar = spawn()
    thread = start(sidecar, root)
    write(root / "templates/ask.md", "Ask about {{topic}} in {{place}}.\n")
    write(root / "templates/new.md", "New {{x}}.\n")
    write(root / "AGENTS.md", "Be very brief.\n")
    (change,) = wait_changes(sidecar, 1)
    quiet(sidecar)
    assert len(changes(sidecar)) == 1  # one burst, one revision
    assert change["added"] == [{"kind": "template", "name": "new"}]
    assert {"kind": "template", "name": "ask"} in change["changed"]
    assert {"kind": "instructions", "name": str(root / "AGENTS.md")} in change["changed"]
    assert sidecar.call("templates/render", {"threadId": thread, "name": "ask", "arguments": {
        "topic": "tests", "place": "CI"}})["message"]["content"] == "Ask about tests in CI.\n"
    os.remove(root / "AGENTS.md")
    removed = wait_changes(sidecar, 2)[1]
    assert removed["removed"] == [{"kind": "instructions", "name": str(root / "AGENTS.md")}]


def test_a_broken_skill_is_a_change_with_its_diagnostic(spawn, root):
    sidecar = spawn()
    start(sidecar, root)
    write(root / "skills/alpha/SKILL.md", "---\nname: alpha\n---\nno description\n")
    (change,) = wait_changes(sidecar, 1)
    assert change["removed"] == [{"kind": "skill", "name": "alpha"}]
    assert any(d["path"].endswith("skills/alpha/SKILL.md") and d["kind"] == "invalid_frontmatter"
               for d in change["diagnostics"])


def test_a_link_that_leaves_the_root_after_start_is_reported_not_followed(spawn, root, tmp_path):
    outside = tmp_path / "outside"
    add_skill(outside, "evil", "Outside the root.", "OUTSIDE BODY\n")
    sidecar = spawn()
    thread = start(sidecar, root)
    os.symlink(outside / "skills/evil", root / "skills/evil")
    (change,) = wait_changes(sidecar, 1)
    assert change["added"] == []
    assert any(d["kind"] == "path_escape" and d["path"].endswith("skills/evil") for d in change["diagnostics"])
    assert "OUTSIDE BODY" not in sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    response = sidecar.request("skills/activate", {"threadId": thread, "name": "evil"})
    assert response["error"]["data"]["kind"] == "skill_not_found"


def test_a_root_given_through_a_link_is_watched_down_to_its_skill_files(spawn, root, tmp_path):
    link = tmp_path / "linked"  # as ~/.agents -> ~/dotfiles/agents
    os.symlink(root, link)
    sidecar = spawn()
    thread = start(sidecar, link)
    write(link / "skills/alpha/SKILL.md", skill_text("alpha", "Use for alpha, edited through the link."))
    (change,) = wait_changes(sidecar, 1)
    assert change["threadId"] == thread and change["changed"] == [{"kind": "skill", "name": "alpha"}]
    write(root / "skills/beta/SKILL.md", skill_text("beta", "Use for beta, edited at its real path."))
    second = wait_changes(sidecar, 2)[1]
    assert second["changed"] == [{"kind": "skill", "name": "beta"}]


def test_the_watch_survives_a_root_deleted_and_recreated(spawn, root):
    sidecar = spawn()
    thread = start(sidecar, root)
    shutil.rmtree(root)
    gone = wait_changes(sidecar, 1)[0]
    assert {"kind": "skill", "name": "alpha"} in gone["removed"]
    add_skill(root, "reborn", "Use after a rebirth.")
    back = wait_changes(sidecar, 2)[1]
    assert back["added"] == [{"kind": "skill", "name": "reborn"}]
    assert sidecar.call("tools/list", {"threadId": thread})["revision"] == 3


def test_watch_false_and_thread_refresh(spawn, root):
    sidecar = spawn()
    thread = start(sidecar, root, watch=False)
    add_skill(root, "gamma", "Use for gamma.")
    quiet(sidecar)
    assert changes(sidecar) == []
    refreshed = sidecar.call("thread/refresh", {"threadId": thread})
    assert refreshed["threadId"] == thread and refreshed["revision"] == 2
    assert "gamma" in [s["name"] for s in refreshed["catalog"]["skills"]]
    assert changes(sidecar)[0]["added"] == [{"kind": "skill", "name": "gamma"}]
    assert sidecar.call("thread/refresh", {"threadId": thread})["revision"] == 2  # nothing changed since


def test_closing_the_thread_releases_the_watch(spawn, root):
    sidecar = spawn()
    thread = start(sidecar, root)
    assert sidecar.call("thread/close", {"threadId": thread}) == {"state": {}}  # v4 §5: the extensions' state
    add_skill(root, "gamma", "Use for gamma.")
    quiet(sidecar)
    assert changes(sidecar) == []


SLOW_GATE = """
import time
ENTERED = {entered!r}
def gate(event):
    if event["call"]["name"] == "find_skills":
        open(ENTERED, "w").close()  # the test changes the files now, while the call is in its hook
        time.sleep(1.0)
def activate(api):
    api.on("tool_call", gate)
"""


def test_a_call_already_running_answers_from_its_snapshot_and_stale_calls_are_refused(spawn, root):
    for i in range(40):  # more skills than the catalog budget lists: find_skills is offered
        add_skill(root, f"extra-{i:02d}", "A skill that only exists to fill the listing up to its budget.")
    entered = root.parent / "gate-entered"
    write(root / "extensions/slow-gate.py", SLOW_GATE.format(entered=str(entered)))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["slow-gate"],
                                           "limits": {"catalogBytes": 1000}})
    thread = result["threadId"]
    assert [t["name"] for t in result["tools"]][:2] == ["load_skill", "find_skills"]
    quiet(sidecar, 0.3)
    pending = sidecar.request_async("tools/call", {"threadId": thread, "revision": 1, "call": {
        "id": "f", "name": "find_skills", "arguments": {"query": "beta"}}})
    deadline = time.monotonic() + 30
    while not entered.exists() and time.monotonic() < deadline:  # the call is in its before hook
        time.sleep(0.01)
    assert entered.exists(), "the call never reached its before hook"
    shutil.rmtree(root / "skills/beta")
    for i in range(40):
        shutil.rmtree(root / f"skills/extra-{i:02d}")  # the listing fits again: find_skills goes away
    answer = sidecar.wait_for(pending, 30)["result"]["result"]
    assert "beta" in answer["content"][0]["text"]  # the snapshot it started with
    # 41 folders deleted: on a loaded machine that can take longer than a burst, so it may come as more
    # than one catalog/changed; the one that makes the listing fit removes find_skills
    changes_until(sidecar, lambda c: {"kind": "tool", "name": "find_skills"} in c["removed"], timeout=30)
    stale = sidecar.call("tools/call", {"threadId": thread, "revision": 1, "call": {
        "id": "s", "name": "find_skills", "arguments": {"query": "alpha"}}})["result"]
    assert stale["toolCallId"] == "s" and stale["isError"] and stale["details"]["kind"] == "stale_tool"
    unchanged = sidecar.call("tools/call", {"threadId": thread, "revision": 1, "call": {
        "id": "l", "name": "load_skill", "arguments": {"name": "alpha"}}})["result"]
    assert unchanged["isError"] is False  # load_skill did not change since revision 1
    current = sidecar.call("tools/list", {"threadId": thread})
    gone = sidecar.call("tools/call", {"threadId": thread, "revision": current["revision"], "call": {
        "id": "g", "name": "find_skills", "arguments": {"query": "alpha"}}})["result"]
    assert gone["details"]["kind"] == "tool_not_found"


EXT = """
def which(call_id, arguments):
    return "VERSION-ONE"
def activate(api):
    api.register_tool(name="which", description="", input_schema={}, execute=which)
"""


def test_a_changed_extension_is_reported_and_keeps_running_as_loaded(spawn, root):
    path = write(root / "extensions/versioned.py", EXT)
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["versioned"]})["threadId"]
    quiet(sidecar, 0.3)
    write(path, EXT.replace("VERSION-ONE", "VERSION-TWO"))
    write(root / "extensions/late.py", EXT)
    deadline = time.monotonic() + 5
    while not any(n["params"].get("kind") == "extension_changed" for n in sidecar.notifications
                  if n["method"] == "thread/diagnostic") and time.monotonic() < deadline:
        quiet(sidecar, 0.1)
    (diag,) = [n["params"] for n in sidecar.notifications if n["method"] == "thread/diagnostic"
               and n["params"]["kind"] == "extension_changed"]
    assert diag["extensionId"] == "versioned" and "new thread" in diag["message"]
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": "w", "name": "which"}})["result"]
    assert result["content"][0]["text"] == "VERSION-ONE"
    entries = {e["id"]: e for e in sidecar.call("thread/refresh", {"threadId": thread})["catalog"]["extensions"]}
    assert entries["versioned"]["status"] == "loaded"
    assert entries["late"]["status"] == "skipped_untrusted"
    fresh = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["versioned"]})["threadId"]
    assert sidecar.call("tools/call", {"threadId": fresh, "call": {"id": "w", "name": "which"}})["result"][
        "content"][0]["text"] == "VERSION-TWO"


WRITER = """
import os
SKILL = {skill!r}
def started(event):
    # after the roots were read and before the answer: the watch of the roots does not exist yet
    os.makedirs(os.path.dirname(SKILL), exist_ok=True)
    with open(SKILL, "w") as f:
        f.write("---\\nname: late\\ndescription: Use when late.\\n---\\nLATE\\n")
def activate(api):
    api.on("thread_start", started)
"""


def test_a_change_between_the_first_read_and_the_watch_is_not_lost(spawn, root):
    """The watch of the roots starts after thread/start's answer; a skill written while the thread
    started (here by a thread_start handler, after the scan) still becomes a catalog/changed."""
    write(root / "extensions/writer.py", WRITER.format(skill=str(root / "skills/late/SKILL.md")))
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["writer"]})
    assert "late" not in [s["name"] for s in result["catalog"]["skills"]]  # written after the read
    change = wait_changes(sidecar, 1, timeout=30)[0]
    assert {"kind": "skill", "name": "late"} in change["added"], change
    listed = sidecar.call("thread/refresh", {"threadId": result["threadId"]})
    assert "late" in [s["name"] for s in listed["catalog"]["skills"]]


def test_a_codex_homes_prompts_and_a_roots_commands_are_watched(spawn, tmp_path):
    # Codex's custom prompts live in ~/.codex/prompts/<name>.md (served as /prompts:<name>); a user
    # writing one while the editor is open sees it without restarting, as with commands/ and skills/
    codex_home = tmp_path / "home/.codex"
    write(codex_home / "prompts/draftpr.md", "---\ndescription: Prep a branch\n---\nBranch $1\n")
    project = tmp_path / "project"
    write(project / "commands/review.md", "---\ndescription: Review\n---\nReview $ARGUMENTS\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project), str(codex_home)]})
    thread = result["threadId"]
    assert {c["name"] for c in result["catalog"]["commandTemplates"]} == {"prompts:draftpr", "review"}
    quiet(sidecar, 0.3)  # the watch starts after the answer
    write(codex_home / "prompts/ship.md", "---\ndescription: Ship it\n---\nShip $1 now\n")
    (added,) = wait_changes(sidecar, 1)
    assert added["threadId"] == thread and added["revision"] == 2
    assert added["added"] == [{"kind": "commandTemplate", "name": "prompts:ship"}]
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/prompts:ship v4"})
    assert answer["message"]["content"] == "Ship v4 now\n"
    write(codex_home / "prompts/draftpr.md", "---\ndescription: Prep a branch, better\n---\nBranch $1\n")
    changed = wait_changes(sidecar, 2)[1]
    assert changed["changed"] == [{"kind": "commandTemplate", "name": "prompts:draftpr"}]
    os.remove(project / "commands/review.md")
    removed = wait_changes(sidecar, 3)[2]
    assert removed["removed"] == [{"kind": "commandTemplate", "name": "review"}]
    # a prompts/ folder that appears later in the Codex home is watched from then on
    shutil.rmtree(codex_home / "prompts")
    gone = wait_changes(sidecar, 4)[3]
    assert sorted(item["name"] for item in gone["removed"]) == ["prompts:draftpr", "prompts:ship"]
    write(codex_home / "prompts/again.md", "Again $1\n")
    back = wait_changes(sidecar, 5)[4]
    assert back["added"] == [{"kind": "commandTemplate", "name": "prompts:again"}]
