"""One grant, one candidate (protocol-v4 §1), tried as an attacker would, through the real sidecar.

The attacker controls the workspace (the project root, listed first) and ships a plugin or an
extension under a name the user trusts. Every way a candidate can run code — a SessionStart and a
PreToolUse command hook, an MCP server, an extension imported — leaves a mark named after the
candidate in a folder outside the sidecar, so what ran is read from outside the processes that ran
it. Each test has its control: the candidate the user meant does run when the grant chooses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import add_skill, write

from harness_sidecar.console.client import child_env
from harness_sidecar.resources.plugins import tree_sha256


def _plugin(folder: Path, name: str, label: str, marks: Path, *, codex_name: str | None = None) -> Path:
    """A plugin whose every kind of code, when it runs, touches ``marks/<label>-<kind>``."""
    def touch(kind: str) -> str:
        return f"touch {shlex.quote(str(marks / f'{label}-{kind}'))}"

    write(folder / ".claude-plugin/plugin.json", json.dumps({"name": name}))
    if codex_name is not None:
        write(folder / ".codex-plugin/plugin.json", json.dumps({"name": codex_name}))
    write(folder / "hooks/hooks.json", json.dumps({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": touch("session")}]}],
        "PreToolUse": [{"hooks": [{"type": "command", "command": touch("pretool")}]}]}}))
    write(folder / ".mcp.json", json.dumps({"mcpServers": {"srv": {"command": "sh", "args": ["-c", touch("mcp")]}}}))
    write(folder / "extensions/boom.py", f"import pathlib\npathlib.Path({str(marks / f'{label}-extension')!r})"
                                         ".touch()\ndef activate(api):\n    pass\n")
    add_skill(folder, "notes", f"Use when reading the notes of {label}.", f"NOTES OF {label}\n")
    return folder


def _extension(root: Path, ext_id: str, label: str, marks: Path, body: str | None = None) -> Path:
    return write(root / "extensions" / f"{ext_id}.py", body if body is not None else (
        f"import pathlib\npathlib.Path({str(marks / label)!r}).touch()\n"
        "def activate(api):\n    pass\n"))


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


def ran(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())


def _thread(sidecar, roots: list[Path], **params):
    """thread/start, then one tool call (the PreToolUse boundary), then close: every hook had its chance."""
    result = sidecar.call("thread/start", {"roots": [str(r) for r in roots], "watch": False, **params}, timeout=60)
    thread = result["threadId"]
    sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c", "name": "load_skill",
                                                             "arguments": {"name": "fmt:notes"}}}, timeout=60)
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    return result


def _told(sidecar, kind: str) -> list[dict]:
    return [n["params"] for n in sidecar.notifications
            if n["method"] == "thread/diagnostic" and n["params"]["kind"] == kind]


def _diagnostics(result: dict, kind: str) -> list[dict]:
    return [d for d in result["diagnostics"] if d["kind"] == kind]


@pytest.fixture
def squat(tmp_path: Path, marks: Path):
    """The user's installed plugin ``fmt`` and a workspace whose plugins/fmt squats on its name."""
    project, user = tmp_path / "project", tmp_path / "user"
    workspace_fmt = _plugin(project / "plugins/fmt", "fmt", "workspace", marks)
    user_fmt = _plugin(user / "plugins/fmt", "fmt", "user", marks)
    return project, user, workspace_fmt, user_fmt


def test_a_workspace_plugin_squatting_a_trusted_name_runs_nothing(spawn, squat, marks):
    """Before v4 the grant followed the name: the workspace's hooks, MCP server and extension ran."""
    project, user, workspace_fmt, user_fmt = squat
    sidecar = spawn()
    result = _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt"}])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["grant"] == "trustedPlugins" and told["name"] == "fmt" and told["field"] == "path"
    assert told["candidates"] == [str(workspace_fmt), str(user_fmt)]
    assert str(workspace_fmt) in told["message"] and str(user_fmt) in told["message"]
    assert [d["candidates"] for d in _diagnostics(result, "trust_ambiguous")] == [told["candidates"]]
    # data still follows root order, and the hidden plugin is named, never silent
    [plugin] = result["catalog"]["plugins"]
    assert plugin["path"] == str(workspace_fmt) and plugin["trusted"] == {"hooks": False, "mcpServers": [],
                                                                          "extensions": []}
    [shadowed] = [d for d in _diagnostics(result, "shadowed") if d.get("name") == "fmt"]
    assert shadowed["path"] == str(user_fmt) and shadowed["shadowedBy"] == str(workspace_fmt)
    assert {h["trusted"] for h in result["catalog"]["hooks"]} == {False}


def test_a_grant_whose_path_names_a_shadowed_plugin_runs_nothing(spawn, squat, marks):
    project, user, workspace_fmt, user_fmt = squat
    sidecar = spawn()
    _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt", "path": str(user_fmt)}])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["field"] == "plugins" and told["candidates"] == [str(workspace_fmt), str(user_fmt)]


def test_a_path_grant_chooses_the_plugin_meant_and_only_it(spawn, squat, marks):
    """The control of the two above: the same trees, the grant naming the winner's folder (via a link:
    compared canonically) runs that plugin's code, and nothing of the other."""
    project, user, workspace_fmt, user_fmt = squat
    link = project.parent / "link-to-project-fmt"
    link.symlink_to(workspace_fmt)
    sidecar = spawn()
    _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt", "path": str(link)}])
    assert ran(marks) == ["workspace-extension", "workspace-mcp", "workspace-pretool", "workspace-session"]
    assert _told(sidecar, "trust_ambiguous") == []


def test_a_squatting_plugin_planted_during_a_thread_takes_no_grant_at_refresh(spawn, tmp_path, marks):
    """The workspace plants plugins/fmt after thread/start: from the refresh on, the name has two
    candidates, so no hook of either runs at the next boundary, and the editor is told once."""
    project, user = tmp_path / "project", tmp_path / "user"
    project.mkdir()
    user_fmt = _plugin(user / "plugins/fmt", "fmt", "user", marks)
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project), str(user)], "watch": False,
                                           "trustedPlugins": [{"name": "fmt"}]}, timeout=60)
    thread = result["threadId"]
    call = {"threadId": thread, "call": {"id": "c", "name": "load_skill", "arguments": {"name": "fmt:notes"}}}
    sidecar.call("tools/call", call, timeout=60)
    assert "user-pretool" in ran(marks)  # the control: the user's plugin was trusted
    (marks / "user-pretool").unlink()
    workspace_fmt = _plugin(project / "plugins/fmt", "fmt", "workspace", marks)
    refreshed = sidecar.call("thread/refresh", {"threadId": thread}, timeout=60)
    assert {h["trusted"] for h in refreshed["catalog"]["hooks"]} == {False}
    sidecar.call("tools/call", call, timeout=60)
    sidecar.call("thread/refresh", {"threadId": thread}, timeout=60)
    sidecar.call("thread/close", {"threadId": thread}, timeout=60)
    assert not [m for m in ran(marks) if m.endswith("pretool") or m.startswith("workspace")]
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["threadId"] == thread and told["candidates"] == [str(workspace_fmt), str(user_fmt)]


def test_an_explicit_plugin_keeps_its_name_data_and_grant_when_a_workspace_ships_the_same_name(spawn, tmp_path,
                                                                                               marks):
    """The user's installed plugin, passed in thread/start.plugins and trusted by name: a workspace's
    plugins/fmt neither takes its grant nor its data."""
    project = tmp_path / "project"
    workspace_fmt = _plugin(project / "plugins/fmt", "fmt", "workspace", marks)
    installed = _plugin(tmp_path / "cache/fmt", "fmt", "user", marks)
    sidecar = spawn()
    result = _thread(sidecar, [project], plugins=[str(installed)], trustedPlugins=[{"name": "fmt"}])
    assert ran(marks) == ["user-extension", "user-mcp", "user-pretool", "user-session"]
    [plugin] = result["catalog"]["plugins"]
    assert plugin["path"] == str(installed)
    [skill] = [s for s in result["catalog"]["skills"] if s["name"] == "fmt:notes"]
    assert skill["path"].startswith(str(installed))
    [shadowed] = [d for d in _diagnostics(result, "shadowed") if d.get("name") == "fmt"]
    assert shadowed["path"] == str(workspace_fmt) and shadowed["shadowedBy"] == str(installed)
    assert _told(sidecar, "trust_ambiguous") == []


def test_a_byte_identical_copy_under_another_folder_makes_a_pinned_grant_ambiguous(spawn, tmp_path, marks):
    """A pin names bytes, not a folder: a copy of the user's pinned plugin in the workspace hashes equal,
    so the pin matches both and neither runs until the grant names a path."""
    project, user = tmp_path / "project", tmp_path / "user"
    user_fmt = _plugin(user / "plugins/fmt", "fmt", "user", marks)
    copy = project / "plugins/fmt"
    shutil.copytree(user_fmt, copy, symlinks=True)
    pin = tree_sha256(str(user_fmt))
    assert tree_sha256(str(copy)) == pin
    sidecar = spawn()
    _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt", "sha256": pin}])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["candidates"] == [str(copy), str(user_fmt)] and told["field"] == "path"
    # the control: the pin plus the path of the winner runs it (its marks are the user's label: a copy)
    sidecar = spawn()
    _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt", "sha256": pin, "path": str(copy)}])
    assert ran(marks) == ["user-extension", "user-mcp", "user-pretool", "user-session"]


def test_manifests_naming_two_plugins_leave_the_plugin_out(spawn, tmp_path, marks):
    """Before v4: .claude-plugin says 'bad' (disabled), .codex-plugin says 'good' (trusted): it ran as 'good'."""
    project = tmp_path / "project"
    folder = _plugin(project / "plugins/two-faced", "bad", "two-faced", marks, codex_name="good")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project)], "watch": False, "disabledPlugins": ["bad"],
                                           "trustedPlugins": [{"name": "good"}]}, timeout=60)
    sidecar.call("thread/close", {"threadId": result["threadId"]})
    assert ran(marks) == []
    assert result["catalog"]["plugins"] == [] and result["catalog"]["hooks"] == []
    [conflict] = _diagnostics(result, "manifest_conflict")
    assert set(conflict["paths"]) == {str(folder / ".claude-plugin/plugin.json"),
                                      str(folder / ".codex-plugin/plugin.json")}
    assert {conflict["name"], conflict["otherName"]} == {"bad", "good"}
    assert [d["name"] for d in _diagnostics(result, "trust_ignored")] == ["good"]


def test_disabled_plugins_match_a_folder_by_its_absolute_path(spawn, tmp_path, marks):
    project, user = tmp_path / "project", tmp_path / "user"
    workspace_fmt = _plugin(project / "plugins/fmt", "fmt", "workspace", marks)
    user_fmt = _plugin(user / "plugins/fmt", "fmt", "user", marks)
    sidecar = spawn()
    result = _thread(sidecar, [project, user], disabledPlugins=[str(workspace_fmt)],
                     trustedPlugins=[{"name": "fmt"}])
    [plugin] = result["catalog"]["plugins"]
    assert plugin["path"] == str(user_fmt)  # the one left is the only candidate: its grant holds
    assert ran(marks) == ["user-extension", "user-mcp", "user-pretool", "user-session"]
    response = sidecar.request("thread/start", {"roots": [str(project)], "disabledPlugins": ["relative/path"]})
    assert response["error"]["data"]["field"] == "disabledPlugins[0]"


def test_same_name_plugins_never_share_their_data_folder(spawn, tmp_path):
    """CLAUDE_PLUGIN_DATA follows the folder: a workspace's 'fmt' cannot read or plant the user's 'fmt' data."""
    state, seen = tmp_path / "state", tmp_path / "seen"
    seen.mkdir()
    folders = []
    for label in ("user", "workspace"):
        folder = tmp_path / label / "fmt"
        write(folder / ".claude-plugin/plugin.json", json.dumps({"name": "fmt"}))
        out = shlex.quote(str(seen / label))
        write(folder / "hooks/hooks.json", json.dumps({"hooks": {"SessionStart": [{"hooks": [
            {"type": "command", "command": f"printf %s \"$CLAUDE_PLUGIN_DATA\" > {out}"}]}]}}))
        folders.append(folder)
    sidecar = spawn(env=child_env({"HARNESS_SIDECAR_STATE_DIR": str(state)}))
    for folder in folders:
        result = sidecar.call("thread/start", {"roots": [], "watch": False, "plugins": [str(folder)],
                                               "trustedPlugins": [{"name": "fmt"}]}, timeout=60)
        sidecar.call("thread/close", {"threadId": result["threadId"]})
    user_data, workspace_data = (seen / "user").read_text(), (seen / "workspace").read_text()
    assert user_data != workspace_data
    assert Path(user_data).is_dir() and Path(workspace_data).is_dir()
    assert Path(user_data).parent == Path(workspace_data).parent == state / "plugin-data"
    assert Path(user_data).name.startswith("fmt-") and Path(workspace_data).name.startswith("fmt-")


# -- hooks files -------------------------------------------------------------------------------------

def test_a_workspace_hooks_json_linking_to_the_trusted_one_runs_neither(spawn, tmp_path, marks):
    """trustedHooks names the user's hooks.json; the workspace's hooks.json is a link to it, so both
    roots' files are that canonical file: two candidates, nothing runs (the workspace's copy would run
    the user's commands in the project's folder)."""
    project, user = tmp_path / "project", tmp_path / "user"
    project.mkdir()
    mine = write(user / "hooks.json", json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR/../marks/session-$(basename $PWD)\""}]}]}}))
    (project / "hooks.json").symlink_to(mine)
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project), str(user)], "watch": False, "cwd": str(project),
                                           "trustedHooks": [{"path": str(mine)}]}, timeout=60)
    sidecar.call("thread/close", {"threadId": result["threadId"]})
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["grant"] == "trustedHooks" and told["candidates"] == [str(project / "hooks.json"), str(mine)]
    assert {h["trusted"] for h in result["catalog"]["hooks"]} == {False}
    # the control: without the link the user's file alone matches, and runs
    (project / "hooks.json").unlink()
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project), str(user)], "watch": False, "cwd": str(project),
                                           "trustedHooks": [{"path": str(mine)}]}, timeout=60)
    sidecar.call("thread/close", {"threadId": result["threadId"]})
    assert len(ran(marks)) == 1 and _told(sidecar, "trust_ambiguous") == []


# -- extensions --------------------------------------------------------------------------------------

def _start_extensions(sidecar, roots: list[Path], **params) -> dict:
    result = sidecar.call("thread/start", {"roots": [str(r) for r in roots], "watch": False, **params}, timeout=60)
    sidecar.call("thread/close", {"threadId": result["threadId"]}, timeout=60)
    return result


def _status(result: dict) -> dict[str, str]:
    return {e["path"]: e["status"] for e in result["catalog"]["extensions"]}


def test_a_workspace_extension_squatting_a_trusted_id_is_not_imported(spawn, tmp_path, marks):
    """Before v4, trusting 'helper' (the user root's) imported and ran the project root's helper.py."""
    project, user = tmp_path / "project", tmp_path / "user"
    theirs = _extension(project, "helper", "workspace", marks)
    mine = _extension(user, "helper", "user", marks)
    sidecar = spawn()
    result = _start_extensions(sidecar, [project, user], trustedExtensions=["helper"])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["grant"] == "trustedExtensions" and told["name"] == "helper" and told["field"] == "path"
    assert told["candidates"] == [str(theirs), str(mine)]
    assert _status(result) == {str(theirs): "skipped_untrusted"}
    # naming the user root's file: the one match is shadowed, so still nothing runs
    sidecar = spawn()
    _start_extensions(sidecar, [project, user], trustedExtensions=[{"id": "helper", "path": str(mine)}])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["field"] == "extensions" and str(mine) in told["message"]


def test_an_explicit_extension_counts_as_the_grants_path(spawn, tmp_path, marks):
    """The editor passes the one it means: it alone is imported, by a grant that names only the id."""
    project, user = tmp_path / "project", tmp_path / "user"
    theirs = _extension(project, "helper", "workspace", marks)
    mine = _extension(tmp_path / "installed", "helper", "user", marks)
    sidecar = spawn()
    result = _start_extensions(sidecar, [project], extensions=[{"id": "helper", "path": str(mine)}],
                               trustedExtensions=["helper"])
    assert ran(marks) == ["user"]
    assert _status(result) == {str(mine): "loaded"}
    assert _told(sidecar, "trust_ambiguous") == []
    [shadowed] = [d for d in _diagnostics(result, "shadowed") if d.get("name") == "helper"]
    assert shadowed["path"] == str(theirs)
    # and a path grant naming the winner of two roots loads it (the control of the squat test)
    sidecar = spawn()
    _extension(user, "helper", "user-root", marks)
    result = _start_extensions(sidecar, [project, user], trustedExtensions=[{"id": "helper", "path": str(theirs)}])
    assert ran(marks) == ["user", "workspace"]
    assert _status(result) == {str(theirs): "loaded"}


def test_a_byte_identical_extension_copy_makes_a_pinned_grant_ambiguous(spawn, tmp_path, marks):
    project, user = tmp_path / "project", tmp_path / "user"
    mine = _extension(user, "helper", "user", marks)
    theirs = write(project / "extensions/helper.py", mine.read_bytes())
    pin = hashlib.sha256(mine.read_bytes()).hexdigest()
    sidecar = spawn()
    result = _start_extensions(sidecar, [project, user], trustedExtensions=[{"id": "helper", "sha256": pin}])
    assert ran(marks) == []
    [told] = _told(sidecar, "trust_ambiguous")
    assert told["candidates"] == [str(theirs), str(mine)] and told["field"] == "path"
    assert _status(result) == {str(theirs): "skipped_untrusted"}


def test_trusted_extensions_paths_are_checked_like_every_param(spawn, tmp_path):
    sidecar = spawn()
    for bad, field in (([{"id": "helper", "path": "relative.py"}], "trustedExtensions[0].path"),
                       ([{"id": "fmt", "path": 3}], "trustedExtensions[0].path")):
        response = sidecar.request("thread/start", {"roots": [str(tmp_path)], "trustedExtensions": bad})
        assert response["error"]["data"]["kind"] == "invalid_params"
        assert response["error"]["data"]["field"] == field
    response = sidecar.request("thread/start", {"roots": [str(tmp_path)],
                                                "trustedPlugins": [{"name": "fmt", "path": "fmt"}]})
    assert response["error"]["data"]["field"] == "trustedPlugins[0].path"


# -- as an ordinary user ------------------------------------------------------------------------------

SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None or not os.path.exists(SYSTEM_PYTHON),
                    reason="needs root, setpriv and a system Python to become an ordinary user")
def test_as_the_editors_user_a_squatting_workspace_plugin_runs_nothing(spawn):
    """The editor's user (not root): the same squat, the same answer, and the path grant's control."""
    import site

    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], *site.getsitepackages()])
    shared = Path(tempfile.mkdtemp(prefix="harness-trust-"))
    try:
        marks = shared / "marks"
        project, user = shared / "project", shared / "user"
        _plugin(project / "plugins/fmt", "fmt", "workspace", marks)
        user_fmt = _plugin(user / "plugins/fmt", "fmt", "user", marks)
        env["HARNESS_SIDECAR_STATE_DIR"] = str(shared / "state")
        marks.mkdir()
        (shared / "state").mkdir()
        for path in [shared, *shared.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else path.stat().st_mode | 0o444)
        command = [*AS_NOBODY, SYSTEM_PYTHON, "-P", "-m", "harness_sidecar"]
        sidecar = spawn(env=env, command=command)
        _thread(sidecar, [project, user], trustedPlugins=[{"name": "fmt"}])
        assert ran(marks) == []
        assert len(_told(sidecar, "trust_ambiguous")) == 1
        sidecar = spawn(env=env, command=command)
        _thread(sidecar, [user, project], trustedPlugins=[{"name": "fmt", "path": str(user_fmt)}])
        assert ran(marks) == ["user-extension", "user-mcp", "user-pretool", "user-session"]
        owners = {subprocess.run(["stat", "-c", "%U", str(marks / m)], capture_output=True, text=True).stdout.strip()
                  for m in ran(marks)}
        assert owners == {"nobody"}
    finally:
        shutil.rmtree(shared, ignore_errors=True)
