"""The first catalog scanned by the sidecar's forked helper (wire/early_scan.py), driven from outside:
the answer is the one an in-process scan gives, the sidecar itself reads no SKILL.md for it, changes
made while it was scanned are caught up, and the helper leaves no process and holds no pipe behind."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from harness_sidecar.console.client import child_env, sidecar_command
from helpers import add_skill, changes_until, write

OFF = {"HARNESS_SIDECAR_EARLY_SCAN": "off"}
ON = {"HARNESS_SIDECAR_EARLY_SCAN": "on"}  # forked even when no core is free (the default waits for one)


def children_of(pid: int) -> list[int]:
    """``pid``'s live helpers: children running the sidecar's own command line (a fork, not an exec; the
    spare extension host the sidecar starts when idle is another program)."""
    found = []
    command = Path(f"/proc/{pid}/cmdline").read_bytes()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
                if int(fields[1]) == pid and fields[0] != b"Z" and \
                        Path(f"/proc/{entry}/cmdline").read_bytes() == command:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def helper_of(pid: int) -> int:
    """The helper, forked just after the initialize answer was written (a bounded poll)."""
    assert wait_until(lambda: len(children_of(pid)) == 1), children_of(pid)
    return children_of(pid)[0]


def wait_until(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def varied_roots(tmp_path: Path) -> list[str]:
    """Two roots with what a catalog reports: valid, invalid and shadowed skills, templates,
    instructions, a link that escapes, a file where a folder belongs, a hidden folder."""
    project, user, outside = tmp_path / "project", tmp_path / "user", tmp_path / "outside"
    add_skill(project, "review", "Use when reviewing.")
    add_skill(project, "deploy", "Use when deploying:\n  in two lines.")
    write(project / "skills/broken/SKILL.md", "---\nname: other\ndescription: d\n---\n")
    write(project / "skills/nofront/SKILL.md", "no frontmatter here\n")
    write(project / "skills/quoted/SKILL.md", "---\nname: quoted\ndescription: 'Use when: quoting'\n"
                                              "metadata:\n  tags: [a, b]\n---\nbody\n")
    write(project / "skills/loose.md", "---\nname: loose\n---\n")
    add_skill(project, "inner", directory=".hidden/inner")
    add_skill(outside, "escape")
    (project / "skills/escape").symlink_to(outside / "skills/escape")
    write(project / "templates/summary.md", "---\ndescription: Summarise.\n---\nSummarise {{topic}} for {{who}}.\n")
    write(project / "AGENTS.md", "Be brief.\n")
    add_skill(user, "review", "Use when the user reviews.")
    add_skill(user, "triage", "Use when triaging.")
    return [str(project), str(user), str(tmp_path / "missing")]


def first_thread_start(spawn, params: dict, env: dict | None = None) -> tuple[dict, str]:
    """The first thread/start answer of a fresh sidecar, and what it said about it on stderr."""
    sidecar = spawn(command=[*sidecar_command(), "--log-level", "debug"], env=child_env(env or ON))
    result = sidecar.call("thread/start", params)
    sidecar.close()
    return result, b"".join(sidecar.stderr_lines).decode()


needs_proc_io = pytest.mark.skipif(
    os.geteuid() != 0, reason="a non-dumpable process's /proc/<pid>/fd is root's to read")


def test_the_first_catalog_is_the_one_a_scan_in_the_sidecar_gives(spawn, tmp_path):
    roots = varied_roots(tmp_path)
    for i in range(300):
        add_skill(tmp_path / "project", f"bulk-{i:03d}", "Use when bulk " + "x" * 200 + ".")
    params = {"roots": roots, "limits": {"maxSkillsPerRoot": 1000}}
    (early, said), (plain, said_off) = first_thread_start(spawn, params), first_thread_start(spawn, params, OFF)
    assert early == plain  # catalog, diagnostics, tools, thread id: every byte of the answer
    assert "the first catalog was scanned by the helper: 303 skills" in said  # not a scan here after all
    assert "helper" not in said_off
    kinds = {d["kind"] for d in early["diagnostics"]}
    assert {"shadowed", "name_mismatch", "path_escape", "not_a_skill", "hidden_folder", "root_missing"} <= kinds
    names = {s["name"] for s in early["catalog"]["skills"]}
    assert {"review", "quoted", "triage", "bulk-299"} <= names and len(names) == 303
    assert early["catalog"]["templates"][0]["variables"] == ["topic", "who"] and early["catalog"]["instructions"]


def test_thread_starts_after_the_first_and_other_params_are_scanned_as_asked(spawn, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    add_skill(one, "alpha", "Use for alpha.")
    add_skill(two, "beta", "Use for beta.")
    sidecar = spawn(env=child_env(ON))
    # three pipelined: the helper scans the first; a second with other roots, a third with other limits
    ids = [sidecar.request_async("thread/start", {"roots": [str(one)]}),
           sidecar.request_async("thread/start", {"roots": [str(two)]}),
           sidecar.request_async("thread/start", {"roots": [str(one), str(two)], "limits": {"maxSkillsPerRoot": 1}})]
    answers = [sidecar.wait_for(i)["result"] for i in ids]
    assert [[s["name"] for s in a["catalog"]["skills"]] for a in answers] == [["alpha"], ["beta"], ["alpha", "beta"]]


def test_a_first_thread_start_with_bad_params_is_answered_and_the_next_one_scans(spawn, tmp_path):
    root = tmp_path / "root"
    add_skill(root, "alpha", "Use for alpha.")
    sidecar = spawn(env=child_env(ON))
    bad = sidecar.request("thread/start", {"roots": "not a list"})
    assert bad["error"]["data"]["kind"] == "invalid_params"
    assert [s["name"] for s in sidecar.call("thread/start", {"roots": [str(root)]})["catalog"]["skills"]] == ["alpha"]


def test_a_skill_written_while_the_first_catalog_was_scanned_is_caught_up(spawn, tmp_path):
    """The helper scans as soon as the request arrives, well before the sidecar's thread exists: a skill
    written in between must still reach the editor (the watch catches up from when the reading began)."""
    root = tmp_path / "root"
    for i in range(200):
        add_skill(root, f"skill-{i:03d}")
    time.sleep(0.1)
    sidecar = spawn(env=child_env(ON))
    helper = [helper_of(sidecar.proc.pid)]
    request = sidecar.request_async("thread/start", {"roots": [str(root)], "limits": {"maxSkillsPerRoot": 1000}})
    assert wait_until(lambda: not any(pid in children_of(sidecar.proc.pid) for pid in helper))  # it scanned
    add_skill(root, "late", "Use when late.")
    names = {s["name"] for s in sidecar.wait_for(request)["result"]["catalog"]["skills"]}
    if "late" not in names:  # scanned before it was written: a catalog/changed must bring it
        changes_until(sidecar, lambda c: {"kind": "skill", "name": "late"} in c["added"], timeout=30)


def test_the_helper_ends_after_the_first_scan_or_with_the_sidecar(spawn, tmp_path):
    root = tmp_path / "root"
    add_skill(root, "alpha", "Use for alpha.")
    sidecar = spawn(env=child_env(ON))
    helper_of(sidecar.proc.pid)  # forked once initialize was answered
    sidecar.call("thread/start", {"roots": [str(root)]})
    assert wait_until(lambda: not children_of(sidecar.proc.pid))  # gone, and reaped

    idle = spawn(env=child_env(ON))  # no thread/start ever: the helper waits, and goes when the sidecar goes
    helper = [helper_of(idle.proc.pid)]
    idle.proc.send_signal(signal.SIGKILL)  # not even a clean exit
    idle.proc.wait()
    assert wait_until(lambda: not os.path.exists(f"/proc/{helper[0]}") or
                      Path(f"/proc/{helper[0]}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z")


@needs_proc_io
def test_the_helper_holds_none_of_the_editors_pipes(spawn):
    """Its fds 0-2 are /dev/null: an editor waiting for EOF on the sidecar's stdout or stderr never
    waits for the helper."""
    sidecar = spawn(env=child_env(ON))
    helper = [helper_of(sidecar.proc.pid)]
    fds = {fd: os.readlink(f"/proc/{helper[0]}/fd/{fd}") for fd in os.listdir(f"/proc/{helper[0]}/fd")}
    assert [fds[str(fd)] for fd in (0, 1, 2)] == ["/dev/null"] * 3
    assert all(not target.startswith("pipe:") or fd not in ("0", "1", "2") for fd, target in fds.items())
    assert len(fds) == 5, fds  # 0-2, its request and its answer: no copy of the protocol's pipes


def test_off_forks_no_helper(spawn):
    sidecar = spawn(env=child_env(OFF))
    sidecar.call("thread/start", {"roots": []})  # the helper would have been forked by now
    assert children_of(sidecar.proc.pid) == []
