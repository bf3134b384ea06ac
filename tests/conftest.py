from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
from harness_sidecar.client import SidecarProcess, child_env


@pytest.fixture(autouse=True)
def _no_unbuffered(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's machine does not set PYTHONUNBUFFERED: a missing flush must fail here."""
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)


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
