"""Command templates (commands/*.md of plugins and roots): placeholders, templates/render {text},
``/name text`` in input/submit, and ``!`…``` / ``@file`` kept verbatim — on real plugins where they
have them (commit-commands, debugging-toolkit, example-plugin, build-macos-apps; SOURCE.md beside each)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import REPO, error_kind, write

from harness_sidecar.errors import DomainError
from harness_sidecar.resources.command_templates import features_of, render_body

FIXTURES = REPO / "tests" / "fixtures" / "plugins"


def test_arguments_positions_and_named_values_fill_in_one_pass():
    body = "All: $ARGUMENTS\nFirst: $1\nSecond: $2\nTenth-ish: $9\nEnv: $ENV\nUnknown: $HOME\nCost: $$5\n"
    out = render_body(body, '  web "two words" ENV=prod  ')
    assert out == ('All: web "two words" ENV=prod\nFirst: web\nSecond: two words\nTenth-ish: \nEnv: prod\n'
                   "Unknown: $HOME\nCost: $5\n")


def test_values_are_never_scanned_again():
    assert render_body("$1 and $2", "'$2' x") == "$2 and x"
    assert render_body("$ARGUMENTS", "$ARGUMENTS $1") == "$ARGUMENTS $1"


def test_text_is_split_as_a_posix_shell_would():
    assert render_body("[$1][$2][$3]", r"a\ b 'c d' \"e") == '[a b][c d]["e]'
    with pytest.raises(DomainError) as raised:
        render_body("$1", "'unclosed")
    assert raised.value.kind == "invalid_arguments"


def test_a_body_without_placeholders_still_gets_what_the_user_typed():
    assert render_body("Do the thing.\n", "quickly please") == "Do the thing.\n\nARGUMENTS: quickly please\n"
    assert render_body("Do the thing.\n", "") == "Do the thing.\n"


def test_shell_lines_and_file_references_are_found_not_emails_or_decorators():
    body = "Status: !`git status`\nRead @src/app.py and @README.md\nMail support@example.com\n@main\n`@main`\n"
    assert features_of(body) == [{"kind": "shell", "text": "!`git status`"},
                                 {"kind": "file", "text": "@src/app.py"}, {"kind": "file", "text": "@README.md"}]


def _thread(spawn, tree, plugins=("commit-commands", "debugging-toolkit", "example-plugin", "build-macos-apps")):
    root = tree("project")
    for name in plugins:
        shutil.copytree(FIXTURES / name, root / "plugins" / name)
    write(root / "commands/deploy.md", "---\ndescription: Deploy one service\nargument-hint: <service> ENV=<env>\n"
                                       "---\nDeploy $1 to $ENV; read @deploy/notes.md first.\n")
    write(root / "templates/note.md", "Note about {{what}}\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    return sidecar, result["threadId"], root, result


def test_templates_render_text_fills_a_real_plugins_command(spawn, tree):
    sidecar, thread, root, _ = _thread(spawn, tree)
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "debugging-toolkit:smart-debug",
                                                 "text": "login fails after upgrade"})
    real = (root / "plugins/debugging-toolkit/commands/smart-debug.md").read_text()
    assert rendered["message"]["role"] == "user"
    content = rendered["message"]["content"]
    assert "Process issue from: login fails after upgrade" in content
    assert "Issue to debug: login fails after upgrade" in content
    assert "$ARGUMENTS" not in content and content.count("login fails after upgrade") == real.count("$ARGUMENTS")
    assert "diagnostics" not in rendered


def test_shell_lines_of_a_real_command_are_kept_verbatim_and_reported_once(spawn, tree):
    sidecar, thread, root, result = _thread(spawn, tree)
    listed = {c["name"]: c for c in result["catalog"]["commandTemplates"]}
    assert listed["commit-commands:commit"]["allowedTools"] == \
        "Bash(git add:*), Bash(git status:*), Bash(git commit:*)"
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "commit-commands:commit", "text": ""})
    assert "Current git status: !`git status`" in rendered["message"]["content"]
    [diagnostic] = rendered["diagnostics"]
    assert diagnostic["kind"] == "template_feature_unsupported"
    assert diagnostic["path"] == str(root / "plugins/commit-commands/commands/commit.md")
    assert [f["text"] for f in diagnostic["features"]] == ["!`git status`", "!`git diff HEAD`",
                                                           "!`git branch --show-current`", "!`git log --oneline -10`"]


def test_input_submit_expands_slash_commands_of_plugins_and_roots(spawn, tree):
    sidecar, thread, root, _ = _thread(spawn, tree)
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/deploy api ENV=staging"})
    assert answer["action"] == "send"
    assert answer["message"]["content"] == "Deploy api to staging; read @deploy/notes.md first.\n"
    assert [d["kind"] for d in answer["diagnostics"]] == ["template_feature_unsupported"]
    answer = sidecar.call("input/submit", {"threadId": thread,
                                           "text": "/example-plugin:example-command first second"})
    assert "The user invoked this command with: first second" in answer["message"]["content"]
    # no placeholder in the real body: the text is appended, not dropped
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/build-macos-apps:test-macos-app MyScheme"})
    assert answer["message"]["content"].endswith("\n\nARGUMENTS: MyScheme\n")
    # a {{variable}} template still takes key=value words; unknown names are sent as typed
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/note what=lunch"})
    assert answer["message"]["content"] == "Note about lunch\n"
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/nope:nothing here"})
    assert answer == {"action": "send", "message": {"role": "user", "content": "/nope:nothing here"}}


def test_render_errors_are_json_rpc_errors_and_the_sidecar_keeps_serving(spawn, tree):
    sidecar, thread, root, _ = _thread(spawn, tree, plugins=("debugging-toolkit",))
    response = sidecar.request("templates/render", {"threadId": thread, "name": "debugging-toolkit:smart-debug",
                                                    "text": "it's broken"})
    assert error_kind(response) == "invalid_arguments"
    (root / "plugins/debugging-toolkit/commands/smart-debug.md").unlink()
    response = sidecar.request("templates/render", {"threadId": thread, "name": "debugging-toolkit:smart-debug",
                                                    "text": "x"})
    assert error_kind(response) == "template_not_found"
    assert sidecar.call("templates/render", {"threadId": thread, "name": "deploy", "text": "web"})["message"]


def test_a_root_command_is_shadowed_by_a_template_of_the_same_name_with_a_diagnostic(spawn, tree):
    root = tree("project")
    write(root / "templates/same.md", "template {{x}}\n")
    write(root / "commands/same.md", "command $1\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    assert result["catalog"]["commandTemplates"] == []
    shadowed = [d for d in result["diagnostics"] if d["kind"] == "shadowed"]
    assert shadowed and shadowed[0]["path"] == str(Path(root / "commands/same.md"))


def test_an_argument_hint_written_as_a_yaml_list_is_shown_as_written(spawn, tree):
    # agent-sdk-dev's and cloudflare's commands write `argument-hint: [project-name]`
    root = tree("project")
    write(root / "commands/new-app.md", "---\ndescription: Make an app\nargument-hint: [project-name]\n---\nMake $1\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    [entry] = result["catalog"]["commandTemplates"]
    assert entry["argumentHint"] == "[project-name]" and entry["description"] == "Make an app"
