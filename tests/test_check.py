"""``harness-sidecar check`` on the corpus bugs of issue 11: what it must not let pass, and how it ends."""

from __future__ import annotations

import os
import subprocess

from harness_sidecar.client import child_env, sidecar_command
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
    assert out.stdout.startswith("1 warning(s) (served anyway):\n") and "description_too_long" in out.stdout
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
