"""How a command hook's process starts (protocol-v3 §5 "Running"), through the real sidecar and its zygote.

- A shell-form hook that is one simple command (``python3 ${CLAUDE_PLUGIN_ROOT}/x.py``) is started
  without ``/bin/sh`` where that changes nothing the hook can see: the same argv, environment (with the
  ``PWD`` the shell exports), working directory and signal dispositions as the same command through the
  shell (a ``#`` comment keeps it there) and as the launcher starts it (the zygote switched off).
- Every hook starts with every signal at its default action: the zygote ignores SIGINT and Python
  ignores SIGPIPE and SIGXFSZ, and a hook inherited that (``yes | head -1``: "Broken pipe", not SIGPIPE).
- A simple command whose program is not found, or cannot be exec'd (a script without ``#!``), is what
  the shell makes of it: "not found" exit 127, and the script run by the shell.
"""

from __future__ import annotations

import json
from pathlib import Path
import sys

from harness_sidecar.console.client import child_env
from helpers import add_skill, write

PROBE = r'''
import json, os, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
with open(sys.argv[1], "w") as f:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
               "ignored": status["SigIgn"].strip(), "blocked": status["SigBlk"].strip(),
               "stdin": json.loads(sys.stdin.read())["hook_event_name"]}, f)
'''


def _own_ignored() -> int:
    """The signals this test process ignores (SigIgn): what the sidecar it starts inherits."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return int(line.split()[1], 16)
    return 0


def _thread(spawn, tmp_path, commands: list[str], zygote: bool = True):
    root = tmp_path / "project"
    add_skill(root, "demo", "Use when testing.")
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "load_skill", "hooks": [{"type": "command", "command": c} for c in commands]}]}}))
    env = child_env(None if zygote else {"HARNESS_SIDECAR_ZYGOTE": "off"})
    sidecar = spawn(env=env)
    thread = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "watch": False,
                                           "trustedHooks": [{"path": str(root / "hooks.json")}]})["threadId"]
    return sidecar, thread


def _call(sidecar, thread) -> dict:
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": "c1", "name": "load_skill",
                                                                    "arguments": {"name": "demo"}}})["result"]


def _seen(path) -> dict:
    seen = json.loads(path.read_text())
    seen["argv"] = seen["argv"][1:]  # without the output file's name
    return seen


def test_a_simple_command_sees_what_it_would_through_the_shell(spawn, tmp_path):
    probe = write(tmp_path / "probe.py", PROBE)
    outs = [tmp_path / f"seen-{n}.json" for n in range(3)]
    command = sys.executable + " ${CLAUDE_PROJECT_DIR}/../probe.py OUT --flag=1 $CLAUDE_PROJECT_DIR"
    direct = command.replace("OUT", str(outs[0]))
    shell = command.replace("OUT", str(outs[1])) + " # through the shell"
    sidecar, thread = _thread(spawn, tmp_path, [direct, shell])
    result = _call(sidecar, thread)
    assert not result["isError"], result
    sidecar.close()
    launched, launched_thread = _thread(spawn, tmp_path / "off", [command.replace("OUT", str(outs[2])).replace(
        "${CLAUDE_PROJECT_DIR}/../probe.py", str(probe))], zygote=False)
    assert not _call(launched, launched_thread)["isError"]
    seen = [_seen(path) for path in outs]
    assert seen[0] == seen[1], "started without the shell, the hook saw something else"
    project = str(tmp_path / "project")
    assert seen[0]["argv"] == ["--flag=1", project]
    assert seen[0]["cwd"] == project and seen[0]["env"]["PWD"] == project
    assert seen[0]["stdin"] == "PreToolUse"
    # as the launcher starts a process (no zygote): nothing ignored but what Python itself ignores (SIGPIPE,
    # SIGXFSZ: the probe is Python) and glibc's posix_spawn leaves ignored (its internal signals 32 and 33,
    # which no setsigdef can reset: the C library re-installs its handlers for them), nothing blocked
    internal = 0b11 << 31
    python_own = 0x1001000
    # the launcher's Popen restores only SIGPIPE and SIGXFSZ: what the editor ignored when it started the
    # sidecar (a nohup'd or backgrounded editor: SIGHUP, SIGINT, SIGQUIT) it inherits; the zygote resets all
    inherited = _own_ignored() & ~python_own
    assert int(seen[0]["ignored"], 16) & ~internal == python_own
    assert int(seen[2]["ignored"], 16) & ~inherited == python_own
    assert seen[0]["blocked"] == seen[2]["blocked"] == "0000000000000000"
    assert {k: v for k, v in seen[0]["env"].items() if k not in ("PWD", "CLAUDE_PROJECT_DIR")} == \
        {k: v for k, v in seen[2]["env"].items() if k not in ("PWD", "CLAUDE_PROJECT_DIR", "HARNESS_SIDECAR_ZYGOTE")}


def test_a_hook_gets_sigpipe_at_its_default_action(spawn, tmp_path):
    out = tmp_path / "pipe.txt"
    # 'yes' ends by SIGPIPE when head is done; with SIGPIPE ignored it would print "Broken pipe" and exit 1
    sidecar, thread = _thread(spawn, tmp_path, [f"yes 2>{out} | head -1 >/dev/null; echo $? >>{out}"])
    assert not _call(sidecar, thread)["isError"]
    assert out.read_text() == "0\n"


def test_a_simple_command_not_found_or_not_executable_is_what_the_shell_makes_of_it(spawn, tmp_path):
    script = write(tmp_path / "no-shebang", f"echo ran-by-the-shell > {tmp_path / 'ran.txt'}\n")
    script.chmod(0o755)
    missing = "no-such-program-anywhere --x"
    write(tmp_path / "project" / ".keep", "")
    root = tmp_path / "project"
    add_skill(root, "demo", "Use when testing.")
    write(root / "hooks.json", json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "load_skill", "hooks": [{"type": "command", "command": str(script)}]},
        {"matcher": "load_skill", "hooks": [{"type": "command", "command": missing}]}]}}))
    sidecar = spawn()
    thread = sidecar.call("thread/start", {"roots": [str(root)], "cwd": str(root), "watch": False,
                                           "trustedHooks": [{"path": str(root / "hooks.json")}]})["threadId"]
    result = _call(sidecar, thread)
    assert (tmp_path / "ran.txt").read_text() == "ran-by-the-shell\n"
    failures = [d for d in sidecar.notifications if d.get("method") == "thread/diagnostic"]
    text = json.dumps(failures) + json.dumps(result)
    assert "exited with code 127" in text, text
