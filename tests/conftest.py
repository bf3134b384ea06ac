from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import traffic
from harness_sidecar.console import client
from harness_sidecar.console.client import SidecarProcess, child_env, sidecar_command


@pytest.fixture(autouse=True)
def _no_unbuffered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's machine does not set PYTHONUNBUFFERED: a missing flush must fail here."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)


@pytest.fixture(autouse=True)
def _own_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The sidecars a test starts keep their state (plugins' data folders) out of the user's home."""
    monkeypatch.setenv("HARNESS_SIDECAR_STATE_DIR", str(tmp_path_factory.getbasetemp() / "sidecar-state"))


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[str], Path]:
    """Make named roots under a temporary directory."""

    def make(name: str) -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        return root

    return make


@pytest.fixture
def spawn():
    """Spawn real sidecar processes and make sure they end."""
    started: list[SidecarProcess] = []

    def start(initialize: bool = True, **kwargs: Any) -> SidecarProcess:
        kwargs.setdefault("env", child_env())
        process = SidecarProcess(**kwargs)
        started.append(process)
        if initialize:
            process.initialize()
        return process

    yield start
    for process in started:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()


def _serves(args: Any) -> bool:
    """``args`` starts the sidecar serving on stdio (JSONL or --lsp), not check/demo/schema."""
    if not isinstance(args, (list, tuple)) or list(args[:3]) != sidecar_command():
        return False
    rest = [a for a in args[3:] if not str(a).startswith("--log-level")]
    return rest in ([], ["--lsp"]) or (len(rest) == 2 and rest[0] in ("debug", "info", "warning", "error"))


@pytest.fixture(autouse=True)
def _protocol_traffic(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                      tmp_path_factory: pytest.TempPathFactory):
    """Record every message the test and the sidecar exchange; fail the test on one that breaks the schema.

    See tests/traffic.py for what is validated and why. A test that talks no protocol
    records nothing and costs nothing.
    """
    conversations: list[traffic.Conversation] = []
    name = request.node.nodeid

    def record(process: SidecarProcess) -> traffic.ProcessRecorder:
        _SIDECARS.setdefault(name, []).append(process)
        recorder = traffic.ProcessRecorder(f"{name} (sidecar #{len(conversations) + 1})", "--lsp" in process.command)
        conversations.append(recorder)
        return recorder

    real_run = subprocess.run

    def run(args: Any, *pargs: Any, **kwargs: Any) -> subprocess.CompletedProcess:
        result = real_run(args, *pargs, **kwargs)
        sent = kwargs.get("input")
        if _serves(args) and sent is not None and result.stdout is not None:
            encode = (lambda v: v.encode("utf-8") if isinstance(v, str) else v)
            conversations.append(traffic.conversation_from_bytes(
                f"{name} (piped sidecar #{len(conversations) + 1})", encode(sent), encode(result.stdout),
                lsp="--lsp" in args))
        return result

    monkeypatch.setattr(client, "RECORDER", record)
    monkeypatch.setattr(subprocess, "run", run)
    logs = tmp_path_factory.mktemp("traffic")
    monkeypatch.setenv("HARNESS_TRAFFIC_DIR", str(logs))
    try:
        yield
    finally:
        _SIDECARS.pop(name, None)
    conversations += [traffic.read_log(path) for path in sorted(logs.glob("*.jsonl"))]
    problems = [problem for conversation in conversations for problem in conversation.check()]
    if problems:
        pytest.fail(f"{len(problems)} message(s) do not match protocol.schema.json:\n" + "\n".join(problems),
                    pytrace=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if sum(traffic.STATS.validated.values()):
        terminalreporter.write_line(traffic.STATS.summary(traffic.schema()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands what it validated to the controller, which prints the sum."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        stats = traffic.STATS
        output["traffic"] = {"validated": dict(stats.validated), "types": dict(stats.types),
                             "errors": dict(stats.errors), "refused_inputs": stats.refused_inputs,
                             "unchecked": stats.unchecked}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    counted = getattr(node, "workeroutput", {}).get("traffic")
    if counted:
        stats = traffic.STATS
        stats.validated.update(counted["validated"])
        stats.types.update(counted["types"])
        stats.errors.update(counted["errors"])
        stats.refused_inputs += counted["refused_inputs"]
        stats.unchecked += counted["unchecked"]


# The sidecars each running test started (through SidecarProcess), by node id: a failing test's
# report shows how each ended and the tail of its stderr, so a sidecar that died under a test is
# seen for what it is (a crash, a kill) instead of as a bare SidecarClosed or timeout.
_SIDECARS: dict[str, list[SidecarProcess]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for number, process in enumerate(_SIDECARS.get(item.nodeid, []), 1):
        code = process.proc.poll()
        status = "still running" if code is None else (f"killed by signal {-code}" if code < 0 else f"exit status {code}")
        tail = b"".join(process.stderr_lines[-60:]).decode("utf-8", "replace").rstrip()
        report.sections.append((f"sidecar #{number} ({' '.join(process.command[-3:])}): {status}; stderr tail",
                                tail or "(nothing on stderr)"))


# -- running the suite in parallel (pytest-xdist; pyproject's addopts say `-n auto`) ----------------

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Twice the cores, at least 4 and at most 16: the tests mostly wait on child processes (sidecars,
    hosts, editors), so a 2-core machine is busiest with 4 workers, not 2."""
    return min(16, max(4, 2 * (os.cpu_count() or 1)))


# The tests that take longest (tens of seconds: the editor clients' own suites) go first, so that
# the workers start them at once and the short tests fill in around them, instead of one slow
# test starting last and running alone at the end.
# (Longest first, as measured with --durations; xdist's --maxschedchunk 2 hands them out two at a time.)
_SLOW_FIRST = ("test_clients.py::test_vscode_client_and_extension_with_node",
               "test_clients.py::test_vscode_npm_test_runs_as_the_readme_says",
               "test_clients.py::test_neovim_plugin_headless[0.11-scenario",
               "test_clients.py::test_neovim_plugin_headless[0.11-live",
               "test_clients.py::test_neovim_plugin_headless[0.7-scenario",
               "test_clients.py::test_vscode_extension_packages_into_a_vsix_that_runs",
               "test_clients.py::test_neovim_plugin_headless",
               "test_frontmatter.py::test_thousands",
               "test_clients.py::test_vscode_client_type_checks_against_the_protocol",
               "test_host.py::test_p8", "test_clients.py", "test_header_cache.py", "test_bounded.py",
               "test_cli.py::test_demo", "test_extensions_e2e.py::test_a_blocking_hook", "test_check.py::test_a_reader")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        for i, prefix in enumerate(_SLOW_FIRST):
            if item.nodeid.startswith("tests/" + prefix) or item.nodeid.startswith(prefix):
                return i
        return len(_SLOW_FIRST)
    items.sort(key=rank)  # stable: the order within each rank is the collection's
