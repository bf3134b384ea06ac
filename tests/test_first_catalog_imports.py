"""What a fresh sidecar loads to answer a plain first thread/start (issue #32: spawn → first catalog).

A thread with no extension, no MCP server and no command hook must not pay for their machinery:
the extension host's supervisor, the MCP client, the command-hook runner. The sidecar is driven
from outside with ``PYTHONPROFILEIMPORTTIME=1``, so the interpreter itself names on stderr every
module the process imports, whoever imports it and whenever.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from harness_sidecar.console.client import child_env
from helpers import add_skill

# What a plain thread never needs (a spare extension host may still be started when idle: that
# is another process; its launcher is imported here, its supervisor is not).
NOT_FOR_A_PLAIN_THREAD = (
    "harness_sidecar.extensions.sidecar.supervisor",
    "harness_sidecar.extensions.sidecar.loading",
    "harness_sidecar.mcp.servers",
    "harness_sidecar.mcp.session",
    "harness_sidecar.hooks.command",
    "harness_sidecar.hooks.boundaries",
    "harness_sidecar.hooks.handler_types",  # what reads a hooks file (http, mcp_tool, prompt, agent handlers)
    "harness_sidecar.hooks.matcher",
)


def imported_by_a_session(spawn, params: dict) -> tuple[dict, set[str]]:
    sidecar = spawn(env=child_env({"PYTHONPROFILEIMPORTTIME": "1", "HARNESS_SIDECAR_EARLY_SCAN": "off"}))
    started = sidecar.call("thread/start", params)
    sidecar.call("tools/list", {"threadId": started["threadId"]})
    sidecar.call("thread/close", {"threadId": started["threadId"]})
    assert sidecar.close() == 0
    assert sidecar._stderr_done.wait(20), "the sidecar's stderr did not end"
    modules = set()
    for line in sidecar.stderr_lines:
        found = re.match(rb"import time:\s+-?\d+ \|\s+\d+ \| *(\S+)", line)
        if found:
            modules.add(found[1].decode())
    return started, modules


def test_a_plain_thread_loads_no_extension_mcp_or_hook_machinery(spawn, tmp_path: Path) -> None:
    add_skill(tmp_path, "review", "Use when reviewing.")
    started, modules = imported_by_a_session(spawn, {"roots": [str(tmp_path)]})
    assert [s["name"] for s in started["catalog"]["skills"]] == ["review"]
    assert "harness_sidecar.resources.catalog" in modules  # the interpreter did name what was imported
    assert sorted(set(NOT_FOR_A_PLAIN_THREAD) & modules) == []


def test_a_thread_with_an_extension_still_loads_its_host(spawn, tmp_path: Path) -> None:
    add_skill(tmp_path, "review", "Use when reviewing.")
    extension = tmp_path / "extensions" / "hello.py"
    extension.parent.mkdir()
    extension.write_text("def activate(api):\n    api.register_tool(name='hello', description='Say hello.', "
                         "input_schema={'type': 'object'}, execute=lambda call_id, arguments: 'hello')\n")
    started, modules = imported_by_a_session(spawn, {"roots": [str(tmp_path)], "trustedExtensions": ["hello"]})
    assert "hello" in [t["name"] for t in started["tools"]]
    assert "harness_sidecar.extensions.sidecar.supervisor" in modules


# What the first answer does without, imported once the editor is idle (``Sidecar.warm``), so that the
# first call needing one does not pay for it either.
WARMED_AFTER_THE_FIRST_ANSWER = (
    "harness_sidecar.resources.search",  # find_skills' and tool_search's ranking (the schema is on the path)
    "harness_sidecar.tools.pipeline",  # made at a thread's first tools/call
    "harness_sidecar.tools.observers",
    "harness_sidecar.extensions.sidecar.steps",  # a call's steps (StepPlan), planned at its first call
    "harness_sidecar.hooks.python",  # what a Python hook's answer means (the event names: hooks.stages)
    "harness_sidecar.hooks.loop",
    "harness_sidecar.hooks.decision",
    "harness_sidecar.hooks.declared",  # reads hooks files (hooks.root_files says whether a root has any)
    "harness_sidecar.resources.grants",  # resolves a trustedPlugins/trustedExtensions grant
    "harness_sidecar.resources.marketplaces",  # reads marketplace files (resources.marketplace_files finds them)
    "harness_sidecar.resources.pins",  # a trustedPlugins pin's tree hash
)
WARM_MARKER = "harness_sidecar.threads.resources"  # the warm-up's first import (else only skills/activate …)


def import_tree(lines: list[bytes]) -> list[tuple[str, bool]]:
    """Each import the interpreter named, in the order it finished, and whether it was a top-level one (not
    made while another module was being imported): an import's own imports finish before it does."""
    order = []
    for line in lines:
        found = re.match(rb"import time:\s+-?\d+ \|\s+\d+ \|( *)(\S+)", line)
        if found:
            order.append((found[2].decode(), len(found[1]) == 1))
    return order


def imported_by_the_warm_up(tree: list[tuple[str, bool]], module: str) -> bool:
    """Whether ``module`` was imported within a top-level import that began once the warm-up did: the
    top-level import around it finished no earlier than the warm-up's first (``WARM_MARKER``)."""
    names = [name for name, _ in tree]
    at = names.index(module)
    around = next(i for i in range(at, len(tree)) if tree[i][1])
    return around >= names.index(WARM_MARKER)


def test_the_first_answer_leaves_to_the_warm_up_what_it_does_not_need(spawn, tmp_path: Path) -> None:
    add_skill(tmp_path, "review", "Use when reviewing.")
    sidecar = spawn(env=child_env({"PYTHONPROFILEIMPORTTIME": "1", "HARNESS_SIDECAR_EARLY_SCAN": "off"}))
    started = sidecar.call("thread/start", {"roots": [str(tmp_path)]})
    assert [t["name"] for t in started["tools"]][:1] == ["load_skill"]
    deadline = time.monotonic() + 30
    while WARM_MARKER not in [name for name, _ in import_tree(list(sidecar.stderr_lines))]:  # the idle warm-up ran
        assert time.monotonic() < deadline, "the sidecar never warmed up while idle"
        time.sleep(0.05)
    sidecar.call("thread/close", {"threadId": started["threadId"]})
    assert sidecar.close() == 0
    assert sidecar._stderr_done.wait(20), "the sidecar's stderr did not end"
    tree = import_tree(sidecar.stderr_lines)
    assert tree[[name for name, _ in tree].index(WARM_MARKER)][1], "the warm-up's first import is a top-level one"
    for module in WARMED_AFTER_THE_FIRST_ANSWER:
        assert module in [name for name, _ in tree], f"{module} was not warmed up"
        assert imported_by_the_warm_up(tree, module), f"{module} was imported before the first answer"

