"""Sessions (protocol-v4 §5) through the real sidecar: a turn's frozen view (context/build), activations that
end (skills/deactivate, thread/refresh), same-name candidates chosen by path, threads that resume and fork
with their extensions' ctx.state, and Codex's namespaced dynamic tools."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from helpers import TraceWorkspace, add_skill, error_kind, write


def _start(sidecar, roots, **extra):
    return sidecar.call("thread/start", {"roots": [str(r) for r in roots], "watch": False, **extra}, timeout=60)


def _load(sidecar, thread, name, call_id="c1", **arguments):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": "load_skill",
                                                                     "arguments": {"name": name, **arguments}}},
                        timeout=60)["result"]


# -- a turn's view, frozen and named -------------------------------------------------------------------


def test_context_build_names_its_revision_and_skills_and_does_not_paste_a_loaded_body_again(spawn, tree):
    root = tree("project")
    add_skill(root, "pasted", "Use when pasting.", "PASTED BODY\n")
    add_skill(root, "loaded", "Use when loading.", "LOADED BODY\n")
    sidecar = spawn()
    thread = _start(sidecar, [root])["threadId"]
    before = sidecar.call("context/build", {"threadId": thread})
    assert before["activeSkills"] == [] and before["revision"] == 1
    tools = sidecar.call("tools/list", {"threadId": thread})
    assert before["toolsRevision"] == tools["revision"]

    sidecar.call("skills/activate", {"threadId": thread, "name": "pasted"})
    result = _load(sidecar, thread, "loaded")
    assert "LOADED BODY" in result["content"][0]["text"]  # the body reaches the model once: as the tool result
    built = sidecar.call("context/build", {"threadId": thread})
    assert "PASTED BODY" in built["systemPrompt"]
    assert "LOADED BODY" not in built["systemPrompt"]
    assert built["activeSkills"] == [
        {"name": "loaded", "path": str(root / "skills/loaded/SKILL.md"), "via": "load_skill"},
        {"name": "pasted", "path": str(root / "skills/pasted/SKILL.md"), "via": "activate"}]
    # the cached prefix stays: what was in the prompt before load_skill still starts it
    assert built["systemPrompt"].startswith(sidecar.call("context/build", {"threadId": thread})["systemPrompt"])


def test_load_skill_of_a_pasted_skill_keeps_the_prompt_as_it_was(spawn, tree):
    root = tree("project")
    add_skill(root, "pasted", "Use when pasting.", "PASTED BODY\n")
    sidecar = spawn()
    thread = _start(sidecar, [root])["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "pasted"})
    prompt = sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    _load(sidecar, thread, "pasted")
    built = sidecar.call("context/build", {"threadId": thread})
    assert built["systemPrompt"] == prompt and built["activeSkills"][0]["via"] == "activate"


def test_skills_deactivate_ends_an_activation_and_an_inactive_one_is_an_error(spawn, tree):
    root = tree("project")
    add_skill(root, "pasted", "Use when pasting.", "PASTED BODY\n")
    sidecar = spawn()
    thread = _start(sidecar, [root])["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "pasted"})
    assert sidecar.call("skills/deactivate", {"threadId": thread, "name": "pasted"}) == {"activeSkills": []}
    built = sidecar.call("context/build", {"threadId": thread})
    assert "PASTED BODY" not in built["systemPrompt"] and built["activeSkills"] == []
    again = sidecar.request("skills/deactivate", {"threadId": thread, "name": "pasted"})
    assert error_kind(again) == "skill_not_active" and again["error"]["data"]["name"] == "pasted"
    assert error_kind(sidecar.request("skills/deactivate", {"threadId": thread, "name": "../x"})) == \
        "invalid_arguments"
    assert sidecar.call("tools/list", {"threadId": thread})["revision"] == 1  # the sidecar keeps serving


def test_refresh_drops_a_deleted_and_a_newly_shadowed_activation(spawn, tree):
    """Issue 30's case: activate gone and s1 (user root), delete gone, add a project s1 in the earlier root."""
    project, user = tree("project"), tree("user")
    add_skill(user, "gone", "Use when gone.", "GONE BODY\n")
    add_skill(user, "s1", "Use when s1.", "USER S1 BODY\n")
    sidecar = spawn()
    thread = _start(sidecar, [project, user])["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "gone"})
    sidecar.call("skills/activate", {"threadId": thread, "name": "s1"})
    for path in (user / "skills/gone").iterdir():
        path.unlink()
    (user / "skills/gone").rmdir()
    add_skill(project, "s1", "Use when project s1.", "PROJECT S1 BODY\n")
    refreshed = sidecar.call("thread/refresh", {"threadId": thread})
    dropped = {d["name"]: d for d in refreshed["diagnostics"] if d["kind"] == "activation_dropped"}
    assert set(dropped) == {"gone", "s1"}, refreshed["diagnostics"]
    assert dropped["s1"]["path"] == str(user / "skills/s1/SKILL.md") and "shadowed" in dropped["s1"]["message"]
    built = sidecar.call("context/build", {"threadId": thread})
    assert built["activeSkills"] == []
    for body in ("GONE BODY", "USER S1 BODY", "PROJECT S1 BODY"):  # the winner is not activated in its place
        assert body not in built["systemPrompt"]
    assert "s1: Use when project s1." in built["systemPrompt"]
    said_again = sidecar.call("thread/refresh", {"threadId": thread})["diagnostics"]
    assert not [d for d in said_again if d["kind"] == "activation_dropped"]  # said once


def test_a_path_locator_chooses_a_shadowed_candidate_and_a_wrong_one_is_never_the_winner(spawn, tree):
    project, user = tree("project"), tree("user")
    add_skill(project, "deploy", "Use when deploying (project).", "PROJECT DEPLOY\n")
    add_skill(user, "deploy", "Use when deploying (user).", "USER DEPLOY\n")
    sidecar = spawn()
    thread = _start(sidecar, [project, user])["threadId"]
    shadowed = str(user / "skills/deploy/SKILL.md")
    skill = sidecar.call("skills/activate", {"threadId": thread, "name": "deploy", "path": shadowed})["skill"]
    assert skill["path"] == shadowed and "USER DEPLOY" in skill["body"]
    built = sidecar.call("context/build", {"threadId": thread})
    assert "USER DEPLOY" in built["systemPrompt"] and "PROJECT DEPLOY" not in built["systemPrompt"]
    assert built["activeSkills"] == [{"name": "deploy", "path": shadowed, "via": "activate"}]
    # a chosen shadowed candidate stays through a refresh while it is still there
    sidecar.call("thread/refresh", {"threadId": thread})
    assert sidecar.call("context/build", {"threadId": thread})["activeSkills"][0]["path"] == shadowed

    wrong = str(tree("elsewhere") / "skills/deploy/SKILL.md")
    refused = sidecar.request("skills/activate", {"threadId": thread, "name": "deploy", "path": wrong})
    assert error_kind(refused) == "skill_not_found" and refused["error"]["data"]["path"] == wrong
    assert wrong in refused["error"]["message"]
    result = _load(sidecar, thread, "deploy", path=wrong)
    assert result["isError"] and result["details"]["kind"] == "skill_not_found"
    assert result["details"]["path"] == wrong
    result = _load(sidecar, thread, "deploy", "c2", path=str(project / "skills/deploy/SKILL.md"))
    assert "PROJECT DEPLOY" in result["content"][0]["text"]


# -- threads that resume ---------------------------------------------------------------------------


STATEFUL = """
import os
def remember(call_id, arguments, ctx):
    before = ctx.state.get()
    if arguments.get("big"):
        try:
            ctx.state.set({"pad": "x" * arguments["big"]})
        except ValueError as exc:
            return "refused: " + str(exc) + " kept: " + json.dumps(ctx.state.get())
    else:
        ctx.state.set({"items": (before or {}).get("items", []) + [arguments["item"]]})
    return json.dumps(ctx.state.get())
def pid(call_id, arguments, ctx):
    return str(os.getpid())
def started(event, ctx):
    trace("start", event["reason"], ctx.state.get())
def closing(event, ctx):
    state = ctx.state.get() or {}
    ctx.state.set({**state, "closed": True})
def activate(api):
    api.register_tool(name="remember", description="", input_schema={}, execute=remember)
    api.register_tool(name="pid", description="", input_schema={}, execute=pid)
    api.on("thread_start", started)
    api.on("thread_close", closing)
"""


@pytest.fixture
def ws(tmp_path):
    ws = TraceWorkspace.make(tmp_path)
    ws.extension("todo", STATEFUL)
    return ws


def _text(sidecar, thread, name, arguments, call_id="c1"):
    result = sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                       "arguments": arguments}}, timeout=60)["result"]
    assert not result.get("isError"), result
    return result["content"][0]["text"]


def _session(sidecar, ws, **extra):
    return sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": ["todo"], "watch": False,
                                         **extra}, timeout=60)


def test_state_survives_close_and_a_new_sidecar_and_comes_back_on_resume(spawn, ws):
    sidecar = spawn()
    thread = _session(sidecar, ws, sessionId="conv:1")["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "review"})
    _text(sidecar, thread, "remember", {"item": "a"})
    assert json.loads(_text(sidecar, thread, "remember", {"item": "b"}, "c2")) == {"items": ["a", "b"]}
    closed = sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    assert closed == {"state": {"todo": {"items": ["a", "b"], "closed": True}}}
    sidecar.close()

    again = spawn()  # another process: the state is on disk
    resumed = _session(again, ws, sessionId="conv:1", resume=True)
    assert ["start", "resume", {"items": ["a", "b"], "closed": True}] in ws.events()
    built = again.call("context/build", {"threadId": resumed["threadId"]})
    assert built["activeSkills"] == [{"name": "review", "path": str(ws.root / "skills/review/SKILL.md"),
                                      "via": "activate"}] and "REVIEW BODY" in built["systemPrompt"]
    assert json.loads(_text(again, resumed["threadId"], "remember", {"item": "c"})) == \
        {"items": ["a", "b", "c"]}


def test_the_resources_requested_with_an_activation_come_back_on_resume_and_fork(spawn, ws):
    write(ws.root / "skills/review/checklist.md", "CHECKLIST BODY\n")
    sidecar = spawn()
    thread = _session(sidecar, ws, sessionId="with-resources")["threadId"]
    sidecar.call("skills/activate", {"threadId": thread, "name": "review", "resources": ["checklist.md"]})
    assert "CHECKLIST BODY" in sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    fork = sidecar.call("thread/fork", {"threadId": thread, "sessionId": "forked"}, timeout=60)["threadId"]
    assert "CHECKLIST BODY" in sidecar.call("context/build", {"threadId": fork})["systemPrompt"]
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    sidecar.close()
    again = spawn()
    resumed = _session(again, ws, sessionId="with-resources", resume=True)["threadId"]
    built = again.call("context/build", {"threadId": resumed})
    assert "REVIEW BODY" in built["systemPrompt"] and "CHECKLIST BODY" in built["systemPrompt"]


def test_without_resume_a_session_starts_fresh_and_another_session_never_sees_the_state(spawn, ws):
    sidecar = spawn()
    thread = _session(sidecar, ws, sessionId="mine")["threadId"]
    _text(sidecar, thread, "remember", {"item": "secret"})
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    other = _session(sidecar, ws, sessionId="theirs", resume=True)["threadId"]
    assert json.loads(_text(sidecar, other, "remember", {"item": "x"})) == {"items": ["x"]}
    for session in ("mine/..", "mine/../theirs", "", "x" * 129):  # the shape refuses '/' and the lengths
        refused = sidecar.request("thread/start", {"roots": [str(ws.root)], "sessionId": session, "resume": True})
        assert error_kind(refused) == "invalid_params" and refused["error"]["data"]["field"] == "sessionId"
    dots = _session(sidecar, ws, sessionId="..", resume=True)["threadId"]  # legal, and never a path component
    assert json.loads(_text(sidecar, dots, "remember", {"item": "dots"})) == {"items": ["dots"]}
    fresh = _session(sidecar, ws, sessionId="mine")["threadId"]  # startup: what was saved is forgotten
    assert ["start", "startup", None] in ws.events()
    assert json.loads(_text(sidecar, fresh, "remember", {"item": "y"})) == {"items": ["y"]}
    sidecar.call("thread/close", {"threadId": fresh}, timeout=60)
    resumed = _session(sidecar, ws, sessionId="mine", resume=True)["threadId"]
    assert json.loads(_text(sidecar, resumed, "remember", {"item": "z"})) == {"items": ["y", "z"]}


def test_the_state_files_never_name_the_session_and_a_corrupt_one_is_a_diagnostic(spawn, ws, tmp_path):
    state_dir = tmp_path / "state"
    sidecar = spawn(env={**os.environ, "HARNESS_SIDECAR_STATE_DIR": str(state_dir)})
    thread = _session(sidecar, ws, sessionId="a..b:c")["threadId"]
    _text(sidecar, thread, "remember", {"item": "a"})
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    files = [p for p in state_dir.rglob("*") if p.is_file()]
    assert files and not any("a..b" in part for p in files for part in p.parts)
    for path in files:
        if path.name.startswith("state-"):
            path.write_text("{not json")
    resumed = _session(sidecar, ws, sessionId="a..b:c", resume=True)
    unreadable = [d for d in resumed["diagnostics"] if d["kind"] == "session_state_unreadable"]
    assert unreadable and ["start", "resume", None] in ws.events()
    assert json.loads(_text(sidecar, resumed["threadId"], "remember", {"item": "b"})) == {"items": ["b"]}


def test_a_state_file_copied_from_another_session_is_not_read(spawn, ws, tmp_path):
    """An attacker who can write the state folder copies the victim's file under another session's key: the
    file names the victim's session id, so the other session does not take it."""
    state_dir = tmp_path / "state"
    sidecar = spawn(env={**os.environ, "HARNESS_SIDECAR_STATE_DIR": str(state_dir)})
    victim = _session(sidecar, ws, sessionId="victim")["threadId"]
    _text(sidecar, victim, "remember", {"item": "secret"})
    sidecar.call("thread/close", {"threadId": victim}, timeout=60)
    attacker = _session(sidecar, ws, sessionId="attacker")["threadId"]
    _text(sidecar, attacker, "remember", {"item": "mine"})
    sidecar.call("thread/close", {"threadId": attacker}, timeout=60)
    folders = {p.name: p for p in (state_dir / "sessions").iterdir()}
    assert len(folders) == 2
    victim_file = next(p for f in folders.values() for p in f.iterdir()
                       if p.name.startswith("state-") and "secret" in p.read_text())
    attacker_file = next(p for f in folders.values() for p in f.iterdir()
                         if p.name.startswith("state-") and "mine" in p.read_text())
    attacker_file.write_bytes(victim_file.read_bytes())
    resumed = _session(sidecar, ws, sessionId="attacker", resume=True)
    assert any(d["kind"] == "session_state_unreadable" for d in resumed["diagnostics"])
    assert "secret" not in _text(sidecar, resumed["threadId"], "remember", {"item": "x"})


def test_a_state_file_laid_out_by_another_writer_resumes_and_a_state_set_unchanged_is_not_written(spawn, ws,
                                                                                                      tmp_path):
    """The host is handed each state as a raw line after init: a file written pretty-printed (newlines
    between tokens, keys in another order) still resumes whole, with strings holding newlines and
    integers past 64 bits exact; a thread_close that sets the state it got leaves the file alone."""
    state_dir = tmp_path / "state"
    sidecar = spawn(env={**os.environ, "HARNESS_SIDECAR_STATE_DIR": str(state_dir)})
    thread = _session(sidecar, ws, sessionId="pretty")["threadId"]
    _text(sidecar, thread, "remember", {"item": "a"})
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    path = next(p for p in state_dir.rglob("state-*.json"))
    kept = {"items": ["line one\nline two", 2 ** 70], "closed": True}
    path.write_text(json.dumps({"state": kept, "extensionId": "todo", "sessionId": "pretty"}, indent=2))
    resumed = _session(sidecar, ws, sessionId="pretty", resume=True)
    assert not [d for d in resumed["diagnostics"] if d["kind"] == "session_state_unreadable"]
    assert ["start", "resume", kept] in ws.events()
    closed = sidecar.call("thread/close", {"threadId": resumed["threadId"]}, timeout=60)
    assert closed["state"]["todo"] == kept  # thread_close set what it got: {**state, "closed": True}
    assert path.read_text().startswith("{\n")  # not written again
    again = _session(sidecar, ws, sessionId="pretty", resume=True)["threadId"]
    assert json.loads(_text(sidecar, again, "remember", {"item": "b"}))["items"] == ["line one\nline two", 2 ** 70, "b"]


def test_a_state_over_the_limit_raises_and_keeps_the_old_one(spawn, ws):
    sidecar = spawn()
    thread = _session(sidecar, ws, sessionId="big", limits={"extensionStateBytes": 1000})["threadId"]
    _text(sidecar, thread, "remember", {"item": "a"})
    answer = _text(sidecar, thread, "remember", {"big": 2000}, "c2")
    assert answer.startswith("refused: ") and "limits.extensionStateBytes" in answer
    assert answer.endswith('kept: {"items": ["a"]}')
    closed = sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    assert closed["state"]["todo"]["items"] == ["a"]
    too_big = sidecar.request("thread/start", {"roots": [str(ws.root)], "limits": {"extensionStateBytes": 10},
                                               "state": {"todo": {"pad": "x" * 20}}})
    assert error_kind(too_big) == "invalid_params" and too_big["error"]["data"]["field"] == "state.todo"


def test_thread_start_state_overrides_what_is_saved(spawn, ws):
    sidecar = spawn()
    thread = _session(sidecar, ws, sessionId="held")["threadId"]
    _text(sidecar, thread, "remember", {"item": "disk"})
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    resumed = _session(sidecar, ws, sessionId="held", resume=True, state={"todo": {"items": ["editor"]}})
    assert json.loads(_text(sidecar, resumed["threadId"], "remember", {"item": "x"})) == {"items": ["editor", "x"]}
    no_session = _session(sidecar, ws, state={"todo": {"items": ["held by the editor"]}})["threadId"]
    assert ["start", "startup", {"items": ["held by the editor"]}] in ws.events()
    assert sidecar.call("thread/close", {"threadId": no_session}, timeout=60)["state"]["todo"]["items"] == \
        ["held by the editor"]


def test_fork_copies_state_and_activations_and_the_two_threads_then_diverge(spawn, ws):
    sidecar = spawn()
    source = _session(sidecar, ws, sessionId="trunk")["threadId"]
    sidecar.call("skills/activate", {"threadId": source, "name": "review"})
    _text(sidecar, source, "remember", {"item": "shared"})
    fork = sidecar.call("thread/fork", {"threadId": source, "sessionId": "branch"}, timeout=60)
    assert fork["threadId"] != source
    assert ["start", "fork", {"items": ["shared"]}] in ws.events()
    assert sidecar.call("context/build", {"threadId": fork["threadId"]})["activeSkills"][0]["name"] == "review"
    assert json.loads(_text(sidecar, fork["threadId"], "remember", {"item": "branch"})) == \
        {"items": ["shared", "branch"]}
    assert json.loads(_text(sidecar, source, "remember", {"item": "trunk"}, "c2")) == {"items": ["shared", "trunk"]}
    sidecar.call("thread/close", {"threadId": fork["threadId"]}, timeout=60)
    resumed = _session(sidecar, ws, sessionId="branch", resume=True)["threadId"]
    assert json.loads(_text(sidecar, resumed, "remember", {"item": "later"}))["items"][:2] == ["shared", "branch"]
    missing = sidecar.request("thread/fork", {"threadId": "thread-999"})
    assert error_kind(missing) == "thread_not_found"


def test_a_host_that_dies_is_restarted_with_its_state(spawn, ws):
    sidecar = spawn()
    thread = _session(sidecar, ws)["threadId"]  # no session: the host restart alone hands the state back
    _text(sidecar, thread, "remember", {"item": "kept"})
    pid = int(_text(sidecar, thread, "pid", {}, "c2"))
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not any(n["method"] == "thread/diagnostic" and n["params"]["kind"] == "host_exit"
                  for n in sidecar.notifications):
        assert time.monotonic() < deadline, "the sidecar did not notice the host's exit"
        try:
            sidecar._dispatch(sidecar.next_message(0.2))
        except Exception:  # noqa: BLE001 - nothing arrived yet
            pass
    assert json.loads(_text(sidecar, thread, "remember", {"item": "after"}, "c3")) == {"items": ["kept", "after"]}
    assert int(_text(sidecar, thread, "pid", {}, "c4")) != pid


# -- Codex's namespaced dynamic tools ------------------------------------------------------------------


def test_a_codex_namespace_is_flattened_and_called_by_its_flat_name(spawn, tree):
    root = tree("project")
    asked = []

    def on_request(message):
        asked.append(message["params"])
        return {"result": {"contentItems": [{"type": "inputText", "text": "ran " + message["params"]["tool"]}],
                           "success": True}}

    sidecar = spawn(on_request=on_request)
    started = _start(sidecar, [root], dynamicTools=[
        {"type": "function", "name": "flat", "description": "A flat tool.", "inputSchema": {"type": "object"}},
        {"type": "namespace", "name": "github", "description": "GitHub tools.", "tools": [
            {"type": "function", "name": "search", "description": "Search issues.",
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
            {"type": "function", "name": "open", "description": "Open an issue.", "inputSchema": {"type": "object"}}]}])
    names = [t["name"] for t in started["tools"]]
    assert {"flat", "github__search", "github__open"} <= set(names) and "github" not in names
    spec = next(t for t in started["tools"] if t["name"] == "github__search")
    assert spec["description"] == "Search issues." and spec["inputSchema"]["required"] == ["q"]
    result = sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": "c1", "name": "github__search", "arguments": {"q": "bug"}}}, timeout=60)["result"]
    assert result["content"][0]["text"] == "ran github__search"
    assert asked[-1]["tool"] == "github__search" and asked[-1]["namespace"] == "github"
    bad = sidecar.call("tools/call", {"threadId": started["threadId"], "call": {
        "id": "c2", "name": "github__search", "arguments": {}}}, timeout=60)["result"]
    assert bad["isError"] and len(asked) == 1  # the nested schema is checked like any tool's


@pytest.mark.parametrize("entries, field", [
    ([{"name": "a__b"}, {"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b"}]}],
     "dynamicTools[1].tools[0].name"),
    ([{"type": "namespace", "name": "n" * 40, "tools": [{"type": "function", "name": "t" * 30}]}],
     "dynamicTools[0].tools[0].name"),
    ([{"type": "namespace", "name": "a", "tools": []}], "dynamicTools[0].tools"),
    ([{"type": "namespace", "name": "a__b", "tools": [{"type": "function", "name": "t"}]}], "dynamicTools[0].name"),
    ([{"type": "namespace", "name": "a", "tools": [{"type": "custom", "name": "t"}]}], "dynamicTools[0].tools[0].type"),
])
def test_a_namespace_that_cannot_be_flattened_is_refused_never_dropped(spawn, tree, entries, field):
    sidecar = spawn()
    refused = sidecar.request("thread/start", {"roots": [str(tree("project"))], "dynamicTools": entries})
    assert error_kind(refused) == "invalid_params" and refused["error"]["data"]["field"] == field, refused


def test_a_resumed_activation_whose_skill_is_gone_or_now_shadowed_is_dropped_not_replaced(spawn, ws, tree):
    user = tree("user")
    add_skill(user, "notes", "Use when noting (user).", "USER NOTES\n")
    add_skill(user, "chosen", "Use when choosing (user).", "USER CHOSEN\n")
    add_skill(ws.root, "chosen", "Use when choosing (project).", "PROJECT CHOSEN\n")
    sidecar = spawn()
    roots = [str(ws.root), str(user)]
    thread = _session(sidecar, ws, sessionId="gone", roots=roots)["threadId"]
    _load(sidecar, thread, "review")
    sidecar.call("skills/activate", {"threadId": thread, "name": "notes"})
    chosen = str(user / "skills/chosen/SKILL.md")  # a shadowed candidate chosen by path stays chosen
    sidecar.call("skills/activate", {"threadId": thread, "name": "chosen", "path": chosen})
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    (ws.root / "skills/review/SKILL.md").unlink()
    add_skill(ws.root, "notes", "Use when noting (project).", "PROJECT NOTES\n")  # now shadows the user's
    resumed = _session(sidecar, ws, sessionId="gone", resume=True, roots=roots)
    dropped = {d["name"]: d["path"] for d in resumed["diagnostics"] if d["kind"] == "activation_dropped"}
    assert dropped == {"review": str(ws.root / "skills/review/SKILL.md"),
                       "notes": str(user / "skills/notes/SKILL.md")}, resumed["diagnostics"]
    built = sidecar.call("context/build", {"threadId": resumed["threadId"]})
    assert built["activeSkills"] == [{"name": "chosen", "path": chosen, "via": "activate"}]
    assert "USER CHOSEN" in built["systemPrompt"]
    for body in ("USER NOTES", "PROJECT NOTES", "PROJECT CHOSEN"):  # never a winner in a dropped one's place
        assert body not in built["systemPrompt"]
