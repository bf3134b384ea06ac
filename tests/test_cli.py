"""The command line a person uses: check, demo, and their exit statuses."""

from __future__ import annotations

import json
import subprocess

from harness_sidecar.console.client import child_env, sidecar_command
from helpers import REPO, WORKSPACE


def run(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(sidecar_command() + list(args), capture_output=True, text=True, env=child_env(),
                          timeout=120, cwd=cwd, stdin=subprocess.DEVNULL)


def test_check_explains_every_excluded_skill_with_a_fix():
    out = run("check", str(WORKSPACE / "broken"))
    assert out.returncode == 1
    for directory, reason in [("Review-Old", "invalid_name"), ("deploy", "is blank"),
                              ("notes", "not valid YAML"), ("wrong-name", "differs from its directory")]:
        assert f"skills/{directory}/SKILL.md" in out.stdout and reason in out.stdout, directory
    assert out.stdout.count("    fix: ") >= 5
    assert "notes/SKILL.md:3:20" in out.stdout  # line and column of the YAML error
    assert "template      ask [topic]" in out.stdout


def test_check_passes_a_clean_root_and_reports_shadowing_across_roots():
    clean = run("check", str(WORKSPACE / "project"))
    assert clean.returncode == 0 and clean.stdout.startswith("no problems")
    assert "extension     review-extension" in clean.stdout and "imported only when trusted" in clean.stdout
    both = run("check", "--json", str(WORKSPACE / "project"), str(WORKSPACE / "user"))
    assert both.returncode == 0  # v3: shadowing is a warning (it fails only with --strict)
    report = json.loads(both.stdout)
    assert {d["kind"] for d in report["diagnostics"]} == {"shadowed", "shadows"}  # as the editor shows them
    assert [s["name"] for s in report["catalog"]["skills"]] == ["commit-message", "review"]


def test_check_without_roots_is_a_usage_error():
    out = run("check")
    assert out.returncode == 2 and "usage" in out.stderr


def test_demo_shows_the_review_scenario_end_to_end(tmp_path):
    out = run("demo", cwd=tmp_path)  # found next to the package when not run from the repository
    assert out.returncode == 0, out.stderr
    for step in ["initialize", "thread/start", "skills/activate", "templates/render", "context/build",
                 "item/tool/call", "shutdown"]:
        assert f'"method": "{step}"' in out.stdout, step
    assert "Review src/parser.ts with the review skill. Focus on error handling." in out.stdout
    assert "call_2 was blocked by review-extension (deny): review notes must not contain secrets" in out.stdout
    assert "sidecar exited with status 0" in out.stdout


def test_demo_has_a_hook_ask_the_user_who_allows_once_and_refuses_once(tmp_path):
    out = run("demo", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    scene = out.stdout[out.stdout.index("## Open a second thread trusting the permission-gate example"):]
    assert scene.count('"method": "ui/confirm"') == 2
    assert scene.index("the simulated user clicks Allow") < scene.index("the simulated user clicks Deny")
    assert '"result": {"confirmed": true}' in scene and '"result": {"confirmed": false}' in scene
    assert scene.count('"method": "item/tool/call"') == 1  # only the allowed command reaches the editor
    assert "# call_4 (rm -rf build): the user allowed it; the editor ran it" in out.stdout
    assert "# call_5 (sudo reboot): blocked by permission-gate (deny): the user did not allow it (sudo)" in out.stdout


def test_demo_shows_an_mcp_server_behind_the_same_hooks(tmp_path):
    out = run("demo", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    scene = out.stdout[out.stdout.index("## Open a third thread with the project's MCP issue tracker"):]
    assert '"mcpServers"' in scene and '"name": "mcp__tracker__post_comment"' in scene
    assert "# call_6 (mcp__tracker__get_issue): the server answered: #1 parse() drops the last token [open]" \
        in out.stdout
    assert "# call_7 (mcp__tracker__post_comment): blocked by review-extension (deny): comments must not contain " \
           "secrets" in out.stdout
    assert "# call_8 (mcp__tracker__post_comment): the server answered: comment 1 posted on #1" in out.stdout
    assert "never retrieved" not in out.stderr and "Traceback" not in out.stderr


def test_demo_into_a_reader_that_goes_away_ends_quietly(tmp_path):
    shell = subprocess.run(f"{' '.join(sidecar_command())} demo | head -1", shell=True, text=True,
                           capture_output=True, env=child_env(), timeout=120, cwd=REPO)
    assert shell.stdout.startswith("# harness-sidecar demo")
    assert "Traceback" not in shell.stderr and "BrokenPipeError" not in shell.stderr
