"""Helpers shared by the tests: building resource trees and reading responses."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORKSPACE = REPO / "client-examples" / "workspace"


# Extension code (as hostile code in a host could write it) that finds its own exchange on the stack: the
# channel it answers on, its id and its step. Needs ``sys`` imported by the code it is pasted into.
FIND_EXCHANGE = """
def here():
    frame = sys._getframe(1)
    while frame is not None:
        exchange = frame.f_locals.get("exchange")
        if exchange is not None and hasattr(exchange, "host"):
            return exchange
        frame = frame.f_back
    raise RuntimeError("no exchange on the stack")
"""


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, description: str = "Use when testing.", body: str = "Body of the skill.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def add_skill(root: Path, name: str, description: str = "Use when testing.", body: str = "Body of the skill.\n",
              directory: str | None = None) -> Path:
    return write(root / "skills" / (directory or name) / "SKILL.md", skill_text(name, description, body))


def error_kind(response: dict[str, Any]) -> str:
    assert "error" in response, response
    return response["error"]["data"]["kind"]


def kinds_by_path(diagnostics: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in diagnostics:
        out.setdefault(d.get("path", ""), set()).add(d["kind"])
    return out


def trace_prelude(trace: Path, imports: tuple[str, ...] = ()) -> str:
    """Python source that defines ``trace(*event)``: each call appends one JSON line to ``trace``.

    Extensions and planted files start with it, so what ran (and in what order) is observed
    from outside the processes that ran it.
    """
    return (f"import {', '.join(('json', *imports))}\n"
            f"TRACE = {str(trace)!r}\n"
            "def trace(*event):\n"
            '    with open(TRACE, "a") as f:\n'
            '        f.write(json.dumps(list(event)) + "\\n")\n')


@dataclass
class TraceWorkspace:
    """A project root holding the skill ``review``, and extensions that trace into one file.

    ``imports`` are the modules the prelude imports besides json; with ``trace_import`` each
    extension first traces ``['import', its id]``.
    """

    root: Path
    trace: Path
    tmp: Path
    imports: tuple[str, ...] = ()
    trace_import: bool = False

    @classmethod
    def make(cls, tmp: Path, imports: tuple[str, ...] = (), trace_import: bool = False) -> TraceWorkspace:
        root = tmp / "project"
        add_skill(root, "review", "Use when reviewing.", "REVIEW BODY\n")
        return cls(root, tmp / "trace.jsonl", tmp, imports, trace_import)

    def header(self) -> str:
        return trace_prelude(self.trace, self.imports)

    def extension(self, ext_id: str, code: str, root: Path | None = None) -> Path:
        announce = f"trace('import', {ext_id!r})\n" if self.trace_import else ""
        return write((root or self.root) / "extensions" / f"{ext_id}.py", self.header() + announce + code)

    def events(self) -> list[list]:
        if not self.trace.exists():
            return []
        return [json.loads(line) for line in self.trace.read_text().splitlines()]


def changes_until(sidecar: Any, predicate: Any, timeout: float = 20.0) -> list[dict]:
    """catalog/changed notifications, read until one satisfies ``predicate`` (a bounded poll)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [n["params"] for n in sidecar.notifications if n["method"] == "catalog/changed"]
        if any(predicate(c) for c in found):
            return found
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"no matching catalog/changed: {found}")
        try:
            sidecar._dispatch(sidecar.next_message(min(remaining, 0.2)))
        except Exception:  # noqa: BLE001 - nothing arrived yet
            pass


def end_deciding_call(sidecar: Any, thread: str, call: int, how: str) -> None:
    """End a tools/call whose PreToolUse hook is still deciding, by ``thread/close`` or ``$/cancelRequest``:
    close answers it blocked ``closed`` (and answers the close with the v4 state), cancel answers it ``cancelled``."""
    if how == "thread/close":
        closing = sidecar.request_async("thread/close", {"threadId": thread})
        answer = sidecar.wait_for(call, 20)
        assert answer["result"]["result"]["details"]["blocked"]["kind"] == "closed", answer
        assert sidecar.wait_for(closing, 20)["result"] == {"state": {}}  # v4 §5: thread/close answers the state
    else:
        sidecar.notify("$/cancelRequest", {"id": call})
        answer = sidecar.wait_for(call, 20)
        assert answer["error"]["data"]["kind"] == "cancelled", answer
