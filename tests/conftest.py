from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import traffic
from harness_sidecar import client
from harness_sidecar.client import SidecarProcess, child_env, sidecar_command


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
