"""``harness-sidecar check`` on the corpus bugs of issue 11: what it must not let pass, and how it ends."""

from __future__ import annotations

import json
import os
import subprocess

from harness_sidecar.console.client import child_env, sidecar_command
from helpers import add_skill, write


def check(*args: str, **kwargs) -> subprocess.CompletedProcess:
    if "stdout" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run(sidecar_command() + ["check", *args], text=True, env=child_env(), timeout=120,
                          stdin=subprocess.DEVNULL, **kwargs)


def test_a_body_that_is_not_utf8_fails_check_with_its_line(tmp_path):
    """It passed check (discovery reads only the frontmatter) and then failed activation."""
    root = tmp_path / "r"
    path = write(root / "skills/latin1/SKILL.md", b"---\nname: latin1\ndescription: d\n---\nline\ncaf\xe9\n")
    add_skill(root, "fine")
    out = check(str(root))
    assert out.returncode == 1
    assert f"{path}:6\n    not_utf8: skill 'latin1' is listed but cannot be activated" in out.stdout
    offset = path.read_bytes().index(b"\xe9")
    assert f"(byte {offset}, line 6)" in out.stdout and "fix: save the file as UTF-8" in out.stdout


def test_skills_in_a_dot_folder_are_not_no_problems(tmp_path):
    root = tmp_path / "openai-skills"
    add_skill(root, "gh-fix-ci", directory=".curated/gh-fix-ci")
    out = check(str(root))
    assert out.returncode == 1 and not out.stdout.startswith("no problems")
    assert "hidden_folder" in out.stdout and "(empty: nothing was found" in out.stdout


def test_warnings_alone_pass(tmp_path):
    root = tmp_path / "r"
    add_skill(root, "long", "d" * 1100)
    out = check(str(root))
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith("1 warning(s) (served anyway; --strict fails on them):\n") and "description_too_long" in out.stdout
    assert "skill         long:" in out.stdout


def test_a_reader_that_goes_away_ends_check_quietly(tmp_path):
    """`check … | head -1` printed a BrokenPipeError traceback."""
    root = tmp_path / "r"
    for i in range(2000):  # far more output than a pipe holds
        write(root / f"skills/bad-{i:04d}/SKILL.md", "no frontmatter\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails
    try:
        out = check(str(root), stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert out.returncode == 1
    assert out.stderr == ""
    shell = subprocess.run(f"{' '.join(sidecar_command())} check {root} | head -1", shell=True, text=True,
                           capture_output=True, env=child_env(), timeout=120)
    assert shell.stdout == "2000 problem(s):\n"
    assert shell.stderr == ""


# -- v3 §3: `check` equals the editor ----------------------------------------------------------------

def authored_tree(tmp_path):
    """Two roots with what an author gets wrong in files the LSP mode lints."""
    project, user = tmp_path / "project", tmp_path / "user"
    add_skill(project, "review", "Use when reviewing.")
    add_skill(user, "review", "The user's review.")  # shadowed on purpose
    write(project / "templates/ask.md", "---\ndescription: Ask about a path.\n---\nAbout {{ path }} and {{topic}}.\n")
    marker = tmp_path / "ran"
    write(project / "extensions/broken.py", f"open({str(marker)!r}, 'w').write('x')\ndef activate(api)\n    pass\n")
    write(project / "extensions/fine.py", f"open({str(marker)!r}, 'w').write('x')\ndef activate(api):\n    pass\n")
    write(project / "extensions/pkg/__init__.py", "def activate(api):\n    pass\n")
    write(project / "extensions/pkg/helper.py", "def f(:\n")
    return project, user, marker


def test_check_reports_an_extension_syntax_error_without_running_it(tmp_path):
    project, _, marker = authored_tree(tmp_path)
    out = check("--json", str(project))
    assert out.returncode == 1
    found = {(d["path"], d["kind"]): d for d in json.loads(out.stdout)["diagnostics"]}
    broken = found[(str(project / "extensions/broken.py"), "syntax_error")]
    assert broken["line"] == 2 and "SyntaxError" in broken["message"]
    assert (str(project / "extensions/pkg/helper.py"), "syntax_error") in found  # a module of a package too
    assert (str(project / "extensions/fine.py"), "syntax_error") not in found
    assert not marker.exists()  # compiled, never run


def test_check_reports_text_that_is_no_placeholder(tmp_path):
    project, _, _ = authored_tree(tmp_path)
    out = check(str(project))
    assert f"{project / 'templates/ask.md'}:4:7" in out.stdout
    assert "not_a_placeholder: {{ path }} is not a placeholder" in out.stdout and "write {{path}}" in out.stdout


def test_shadowing_warns_and_fails_only_with_strict(tmp_path):
    project, user = tmp_path / "project", tmp_path / "user"
    add_skill(project, "review", "Use when reviewing.")
    add_skill(user, "review", "The user's review.")
    out = check(str(project), str(user))
    assert out.returncode == 0, out.stdout
    assert "1 warning(s)" in out.stdout and "shadowed:" in out.stdout
    strict = check("--strict", str(project), str(user))
    assert strict.returncode == 1 and "shadowed:" in strict.stdout
    assert check("--strict", str(project)).returncode == 0  # nothing to warn about: strict passes
    (shadowed,) = json.loads(check("--json", str(project), str(user)).stdout)["diagnostics"][:1]
    assert (shadowed["kind"], shadowed["severity"]) == ("shadowed", "warning")


def test_a_root_named_on_the_command_line_that_does_not_exist_fails_check(tmp_path):
    """v4 §3: `check /nonexistent` exited 0 ("root_missing" as a note), so a typo passed as no problems.
    (Until v4 this test asserted the note and exit 0.) The roots that exist are still checked."""
    root = tmp_path / "root"
    add_skill(root, "review", "Use when reviewing.")
    write(root / "skills/broken/SKILL.md", "no frontmatter\n")
    missing = tmp_path / "not-made"
    out = check(str(root), str(missing))
    assert out.returncode == 1, out.stdout
    assert out.stdout.startswith("2 problem(s):\n"), out.stdout
    assert f"  {missing}\n    root_missing: root {missing} does not exist (it was named on the command line)" in out.stdout
    assert "note(s)" not in out.stdout
    assert out.stderr == f"harness-sidecar check: root {missing} does not exist\n"
    assert f"{root}/skills/broken/SKILL.md" in out.stdout  # the root that exists is still checked
    assert "skill         review: Use when reviewing." in out.stdout

    alone = check(str(missing))
    assert alone.returncode == 1 and "root_missing" in alone.stdout and "no problems" not in alone.stdout
    as_json = check("--json", str(missing))
    assert as_json.returncode == 1
    (d,) = json.loads(as_json.stdout)["diagnostics"]
    assert d["kind"] == "root_missing" and d["path"] == str(missing) and "severity" not in d
    fine = tmp_path / "fine"
    add_skill(fine, "review", "Use when reviewing.")
    assert check(str(fine)).returncode == 0  # existing roots without problems pass as before
