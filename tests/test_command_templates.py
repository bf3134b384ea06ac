"""Command templates (commands/*.md of plugins and roots): placeholders, templates/render {text},
``/name text`` in input/submit, and ``!`…``` / ``@file`` kept verbatim — on real plugins where they
have them (commit-commands, debugging-toolkit, example-plugin, build-macos-apps; SOURCE.md beside each)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, error_kind, write

from harness_sidecar.console.client import child_env, sidecar_command
from harness_sidecar.base.errors import DomainError
from harness_sidecar.resources.command_templates import features_of, render_body

FIXTURES = REPO / "tests" / "fixtures" / "plugins"


def test_claude_reads_words_from_zero_and_leaves_what_is_no_placeholder():
    # Claude Code >= 2.1 (argumentSubstitution.ts; changelog 2.1.19 and 2.1.210)
    body = "0:$0 1:$1 a1:$ARGUMENTS[1] all:$ARGUMENTS past:$7 cost:$$5 env:$HOME sql:DO $$ end\n"
    assert render_body(body, '  web "two words" ENV=prod  ') == (
        '0:web 1:two words a1:two words all:web "two words" ENV=prod past:$7 cost:$$5 env:$HOME sql:DO $$ end\n')


def test_codex_reads_words_from_one_and_fills_named_values():
    # codex-rs/tui/src/bottom_pane/prompt_args.rs
    body = "1:$1 2:$2 9:$9 all:$ARGUMENTS env:$ENV unknown:$HOME lit:$$USER sql:DO $$\n"
    assert render_body(body, 'web "two words" ENV=prod', "codex") == (
        "1:web 2:two words 9: all:web two words ENV=prod env:prod unknown:$HOME lit:$$USER sql:DO $$\n")


def test_values_are_never_scanned_again():
    assert render_body("$0 and $1", "'$1' x") == "$1 and x"
    assert render_body("$1 and $2", "'$2' x", "codex") == "$2 and x"
    assert render_body("$ARGUMENTS", "$ARGUMENTS $1") == "$ARGUMENTS $1"


def test_text_is_split_as_a_posix_shell_would():
    assert render_body("[$0][$1][$2]", r"a\ b 'c d' \"e") == '[a b][c d]["e]'
    assert render_body("[$1][$2][$3]", r"a\ b 'c d' \"e", "codex") == '[a b][c d]["e]'
    # Claude Code falls back to splitting on whitespace; Codex's words cannot be had
    assert render_body("[$0][$1]", "it's broken") == "[it's][broken]"
    with pytest.raises(DomainError) as raised:
        render_body("$1", "'unclosed", "codex")
    assert raised.value.kind == "invalid_arguments"


def test_frontmatter_argument_names_are_positions():
    assert render_body("to $env from $branch, not $envx", "prod main", names=["env", "branch"]) == \
        "to prod from main, not $envx"


def test_a_body_that_nothing_changed_still_gets_what_the_user_typed():
    assert render_body("Do the thing.\n", "quickly please") == "Do the thing.\n\nARGUMENTS: quickly please\n"
    assert render_body("Do the thing.\n", "") == "Do the thing.\n"
    # a $N past the last word changes nothing, so Claude Code appends the text
    assert render_body("Look at $1.\n", "billing") == "Look at $1.\n\nARGUMENTS: billing\n"
    assert render_body("Do the thing.\n", "now", "codex") == "Do the thing.\n\nARGUMENTS: now\n"


def test_shell_and_file_references_are_found_only_where_they_are_syntax():
    body = ("Status: !`git status`\nRead @src/app.py and @README.md, @./x and @\"my notes.md\"\n"
            "Mail support@example.com\n@main\n`@main`\nUse @pytest.fixture and @app.route('/x')\n"
            "npm i @types/node @anthropic-ai/claude-agent-sdk@latest @sitespeed.io/sitespeed.io\n"
            "see @jane.smith, not!`this` nor `!`that``\n```!\ngit log -1\n```\n")
    assert features_of(body) == [
        {"kind": "shell", "text": "!`git status`"}, {"kind": "file", "text": "@src/app.py"},
        {"kind": "file", "text": "@README.md"}, {"kind": "file", "text": "@./x"},
        {"kind": "file", "text": '@"my notes.md"'}, {"kind": "shell", "text": "```!\ngit log -1\n```"}]
    assert features_of(body, "codex") == []  # Codex runs and reads neither: its text is sent as written


def _thread(spawn, tree, plugins=("commit-commands", "debugging-toolkit", "example-plugin", "build-macos-apps"),
            extra=()):
    root = tree("project")
    for name in (*plugins, *extra):
        shutil.copytree(FIXTURES / name, root / "plugins" / name)
    write(root / "commands/deploy.md", "---\ndescription: Deploy one service\nargument-hint: <service> <env>\n"
                                       "---\nDeploy $0 to $1; read @deploy/notes.md first.\n")
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
    # a root's commands/ is Claude Code's: $0 the first word (v3 read $1 and $ENV, Codex's rule)
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/deploy api staging"})
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
    # a Claude command takes an apostrophe as Claude Code does (v3 refused it as invalid_arguments)
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "debugging-toolkit:smart-debug",
                                                 "text": "it's broken"})
    assert "Issue to debug: it's broken" in rendered["message"]["content"]
    codex_home = tree("home/.codex")
    write(codex_home / "prompts/fix.md", "Fix $1 in $2\n")
    started = sidecar.call("thread/start", {"roots": [str(codex_home)], "watch": False})
    response = sidecar.request("templates/render", {"threadId": started["threadId"], "name": "prompts:fix",
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


# -- v4: each command in its dialect, on real commands -------------------------------------------

DIALECT_PLUGINS = ("code-modernization", "database-migrations", "unit-testing", "javascript-typescript", "vercel")


def _diagnostics(result, kind):
    return {d["name"]: d for d in result["diagnostics"] if d["kind"] == kind}


def test_a_claude_plugins_command_reads_dollar_one_as_the_second_word(spawn, tree):
    # code-modernization's modernize-status was written for $1 = the first word
    sidecar, thread, root, _ = _thread(spawn, tree, plugins=(), extra=("code-modernization",))
    name = "code-modernization:modernize-status"
    content = sidecar.call("templates/render", {"threadId": thread, "name": name,
                                                "text": "legacy billing"})["message"]["content"]
    assert "Check `analysis/billing/` and `modernized/billing*/`" in content
    assert "$1" not in content and "ARGUMENTS:" not in content
    # one word: $1 is past the last word, stays as written, and the text is appended (Claude Code >= 2.1.210)
    answer = sidecar.call("input/submit", {"threadId": thread, "text": f"/{name} billing"})
    content = answer["message"]["content"]
    assert "Check `analysis/$1/` and `modernized/$1*/`" in content
    assert content.endswith("\n\nARGUMENTS: billing\n")


def test_positional_shift_is_a_warning_in_the_catalog_and_in_check(spawn, tree):
    sidecar, thread, root, result = _thread(spawn, tree, extra=DIALECT_PLUGINS)
    shifted = _diagnostics(result, "positional_shift")
    # v4: clean_gone is served now, and its awk '{print $1}' is a $1 to Claude Code >= 2.1 (the second word)
    assert set(shifted) == {"code-modernization:modernize-status", "database-migrations:sql-migrations",
                            "commit-commands:clean_gone"}
    assert shifted["commit-commands:clean_gone"]["placeholders"] == ["$1"]
    warning = shifted["code-modernization:modernize-status"]
    assert warning["path"] == str(root / "plugins/code-modernization/commands/modernize-status.md")
    assert warning["placeholders"] == ["$1"] and "$0" in warning["message"] and "second word" in warning["message"]
    assert warning["severity"] == "warning"
    # the commands are still served
    names = {c["name"] for c in result["catalog"]["commandTemplates"]}
    assert {"code-modernization:modernize-status", "database-migrations:sql-migrations"} <= names
    done = subprocess.run(sidecar_command() + ["check", str(root)], text=True, env=child_env(), timeout=120,
                          stdin=subprocess.DEVNULL, capture_output=True)
    assert "positional_shift: command template 'code-modernization:modernize-status' uses $1 but never $0" \
        in done.stdout
    assert "sql-migrations' uses $1, $2 but never $0" in done.stdout


def test_dollar_dollar_in_sql_stays_as_written(spawn, tree):
    # database-migrations has both manifests: Codex serves no plugin commands, so Claude Code's rule
    sidecar, thread, root, _ = _thread(spawn, tree, plugins=(), extra=("database-migrations",))
    real = (root / "plugins/database-migrations/commands/sql-migrations.md").read_text()
    content = sidecar.call("templates/render", {"threadId": thread, "name": "database-migrations:sql-migrations",
                                                "text": "v42 orders"})["message"]["content"]
    assert content.count("DO $$") == real.count("DO $$") > 0
    assert content.count("$$ LANGUAGE plpgsql;") == real.count("$$ LANGUAGE plpgsql;") == 1
    assert "MIGRATION_VERSION=orders\nDATABASE=$2\n" in content  # $1 the second word; $2 past the last
    assert "\nv42 orders\n" in content  # its $ARGUMENTS line


def test_a_codex_plugins_command_renders_by_codex_rule(spawn, tree):
    sidecar, thread, root, result = _thread(spawn, tree, plugins=(), extra=("vercel",))
    content = sidecar.call("input/submit", {"threadId": thread,
                                            "text": '/vercel:deploy prod "my app"'})["message"]["content"]
    assert 'If "prod my app" contains "prod" or "production":' in content  # $ARGUMENTS: the words, one space
    # its shell variables are $NAME placeholders that no NAME= word fills: kept as written
    answer = sidecar.call("input/submit", {"threadId": thread, "text": "/vercel:status"})
    assert 'curl -s -H "Authorization: Bearer $VERCEL_TOKEN"' in answer["message"]["content"]
    assert "teamId=$TEAM_ID" in answer["message"]["content"]
    assert "diagnostics" not in answer
    content = sidecar.call("input/submit", {"threadId": thread,
                                            "text": "/vercel:status TEAM_ID=team_1"})["message"]["content"]
    assert "teamId=team_1" in content and "$VERCEL_TOKEN" in content
    assert not _diagnostics(result, "positional_shift")


def test_a_codex_homes_prompts_are_codex_prompts(spawn, tree):
    codex_home = tree("home/.codex")
    write(codex_home / "prompts/draftpr.md", "---\ndescription: Prep a branch\n---\n"
                                             "Branch $1, files $FILES, all: $ARGUMENTS, cost $$5\n")
    project = tree("project")
    write(project / "prompts/notes.md", "not a Codex home: $1\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(project), str(codex_home)], "watch": False})
    [entry] = result["catalog"]["commandTemplates"]
    assert entry["name"] == "prompts:draftpr" and entry["description"] == "Prep a branch"
    answer = sidecar.call("input/submit", {"threadId": result["threadId"],
                                           "text": "/prompts:draftpr dev/x FILES=a.py"})
    assert answer["message"]["content"] == "Branch dev/x, files a.py, all: dev/x FILES=a.py, cost $$5\n"


def test_at_words_that_are_no_paths_are_not_file_references(spawn, tree):
    # unit-testing's test-generate writes @pytest.fixture; javascript-typescript's typescript-scaffold
    # writes npm scopes (@types/node): v3 reported both as files it never reads
    sidecar, thread, root, result = _thread(spawn, tree, plugins=(),
                                            extra=("unit-testing", "javascript-typescript"))
    generate = (root / "plugins/unit-testing/commands/test-generate.md").read_text()
    scaffold = (root / "plugins/javascript-typescript/commands/typescript-scaffold.md").read_text()
    assert "@pytest.fixture" in generate and "@types/node" in scaffold
    listed = {c["name"]: c for c in result["catalog"]["commandTemplates"]}
    assert "unsupported" not in listed["unit-testing:test-generate"]
    assert "unsupported" not in listed["javascript-typescript:typescript-scaffold"]
    assert {"unit-testing:test-generate", "javascript-typescript:typescript-scaffold"}.isdisjoint(
        _diagnostics(result, "template_feature_unsupported"))
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "unit-testing:test-generate",
                                                 "text": "src/app.py"})
    assert "diagnostics" not in rendered and "@pytest.fixture" in rendered["message"]["content"]
    # a path-like word is still one: the root's command reads @deploy/notes.md
    assert "deploy" in _diagnostics(result, "template_feature_unsupported")


def test_a_command_named_with_an_underscore_is_served_and_renders_but_a_skill_so_named_is_not(spawn, tree):
    """v4 §3: Claude Code serves commit-commands' clean_gone.md as /clean_gone; v3 refused it (invalid_name).
    The fixture is the real file (tests/fixtures/plugins/commit-commands/SOURCE.md: repository, commit, licence).
    Skills keep the Agent Skills name rule (lower-case letters, digits, hyphens)."""
    root = tree("project")
    shutil.copytree(FIXTURES / "commit-commands", root / "plugins/commit-commands")
    real = root / "plugins/commit-commands/commands/clean_gone.md"
    shutil.copy(real, write(root / "commands/clean_gone.md", ""))  # the same file as a root's command
    write(root / "skills/clean_gone/SKILL.md", "---\nname: clean_gone\ndescription: Use when testing.\n---\nBody\n")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)], "watch": False})
    thread = result["threadId"]
    listed = {c["name"]: c for c in result["catalog"]["commandTemplates"]}
    assert listed["commit-commands:clean_gone"]["path"] == str(real)
    assert listed["commit-commands:clean_gone"]["description"].startswith("Cleans up all git branches marked as [gone]")
    assert listed["clean_gone"]["path"] == str(root / "commands/clean_gone.md")
    invalid = [d["path"] for d in result["diagnostics"] if d["kind"] == "invalid_name"]
    assert invalid == [str(root / "skills/clean_gone/SKILL.md")], result["diagnostics"]
    assert "clean_gone" not in {s["name"] for s in result["catalog"]["skills"]}

    body = real.read_text().split("---\n", 2)[2].lstrip("\n")
    rendered = sidecar.call("templates/render", {"threadId": thread, "name": "commit-commands:clean_gone", "text": ""})
    assert rendered["message"] == {"role": "user", "content": body}
    assert "awk '{print $1}'" in rendered["message"]["content"]  # past the last word: stays as written
    for typed in ("/commit-commands:clean_gone", "/clean_gone"):
        answer = sidecar.call("input/submit", {"threadId": thread, "text": typed})
        assert answer["action"] == "send" and answer["message"]["content"] == body, (typed, answer)
    refused = sidecar.request("skills/activate", {"threadId": thread, "name": "clean_gone"})
    assert error_kind(refused) == "invalid_arguments"
    assert sidecar.call("templates/render", {"threadId": thread, "name": "commit-commands:commit", "text": ""})
