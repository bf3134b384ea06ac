"""Pins and bounds, attacked from outside: what a pinned extension may load, and how much anything may send.

Every test drives the real sidecar, which runs extensions in real host processes. Planted
files write to a trace file when executed, so what ran (and what never ran) is observed from
outside, as the user who planted them would see it.
"""

from __future__ import annotations

import json
import py_compile
import sys
import time
from pathlib import Path

import pytest
from helpers import add_skill, write

TRACE_HEADER = """\
import json
def trace(*event):
    with open({trace!r}, "a") as f:
        f.write(json.dumps(list(event)) + "\\n")
"""


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    add_skill(root, "review", "Use when reviewing.", "REVIEW BODY\n")
    trace = tmp_path / "trace.jsonl"

    class Workspace:
        def __init__(self) -> None:
            self.root = root
            self.trace = trace
            self.tmp = tmp_path

        def header(self) -> str:
            return TRACE_HEADER.format(trace=str(trace))

        def events(self) -> list[list]:
            if not trace.exists():
                return []
            return [json.loads(line) for line in trace.read_text().splitlines()]

    return Workspace()


def start(sidecar, ws, trusted, **extra):
    return sidecar.call("thread/start", {"roots": [str(ws.root)], "trustedExtensions": trusted, **extra})


def status_of(result, ext_id):
    return next(e for e in result["catalog"]["extensions"] if e["id"] == ext_id)


def call(sidecar, thread, name, arguments=None, call_id="c1", timeout=60):
    return sidecar.call("tools/call", {"threadId": thread, "call": {"id": call_id, "name": name,
                                                                     "arguments": arguments or {}}},
                        timeout=timeout)["result"]


def compiled(source: str, target: Path, tmp: Path) -> Path:
    """``source`` compiled by this interpreter (the hosts' own) into the bytecode file ``target``."""
    src = tmp / f"planted_{target.stem}.py"
    src.write_text(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    py_compile.compile(str(src), cfile=str(target), doraise=True)
    src.unlink()
    return target


# -- pins cover what is loaded -------------------------------------------------------------------------


def _pinned_package(ws) -> Path:
    package = ws.root / "extensions" / "pinned"
    write(package / "__init__.py", ws.header() + """
trace('init', 'hashed')
import importlib
from . import real
def activate(api):
    try:
        helper = importlib.import_module(__name__ + '.helper')
        trace('helper', helper.WHO)
    except ImportError as exc:
        trace('helper_refused', str(exc))
    try:
        from . import native
        trace('native', 'imported')
    except ImportError as exc:
        trace('native_refused', str(exc))
    api.register_tool(name='who', description='', input_schema={}, execute=lambda c, a: real.WHO)
""")
    write(package / "real.py", ws.header() + "trace('real', 'hashed')\nWHO = 'hashed real.py'\n")
    return package


def test_planted_bytecode_beside_a_pinned_package_is_never_executed(spawn, ws):
    package = _pinned_package(ws)
    sidecar = spawn()
    digest = status_of(start(sidecar, ws, []), "pinned")["sha256"]
    planted = ws.header() + "trace('PLANTED', __name__)\nWHO = 'planted'\n"
    tag = sys.implementation.cache_tag
    compiled(planted, package / "helper.pyc", ws.tmp)  # sourceless bytecode beside the package's files
    compiled(planted, package / "__pycache__" / f"real.{tag}.pyc", ws.tmp)  # a cache for real.py, other source
    compiled(planted, package / "__pycache__" / f"__init__.{tag}.pyc", ws.tmp)
    compiled(planted, package / "__pycache__" / f"native.{tag}.pyc", ws.tmp)

    result = start(sidecar, ws, [{"id": "pinned", "sha256": digest}])
    assert status_of(result, "pinned")["status"] == "loaded"  # bytecode is outside the pin, and never loaded
    assert call(sidecar, result["threadId"], "who")["content"][0]["text"] == "hashed real.py"
    events = ws.events()
    assert not [e for e in events if e[0] == "PLANTED"], events
    assert ["init", "hashed"] in events and ["real", "hashed"] in events
    refused = dict((e[0], e[1]) for e in events)
    assert "helper" not in refused and "native" not in refused
    assert "imports only the .py files the sidecar hashed" in refused["helper_refused"]


def test_a_planted_module_or_extension_module_breaks_the_pin(spawn, ws):
    package = _pinned_package(ws)
    sidecar = spawn()
    digest = status_of(start(sidecar, ws, []), "pinned")["sha256"]
    for planted in ("helper.py", f"native{_so_suffix()}"):
        write(package / planted, ws.header() + "trace('PLANTED', __name__)\nWHO = 'planted'\n")
        result = start(sidecar, ws, [{"id": "pinned", "sha256": digest}])
        entry = status_of(result, "pinned")
        assert entry["status"] == "hash_mismatch", (planted, entry)
        assert any(d["kind"] == "hash_mismatch" for d in result["diagnostics"])
        (package / planted).unlink()
    assert ws.events() == []  # nothing of the package ran, planted or not
    assert status_of(start(sidecar, ws, [{"id": "pinned", "sha256": digest}]), "pinned")["status"] == "loaded"


def _so_suffix() -> str:
    import importlib.machinery

    return importlib.machinery.EXTENSION_SUFFIXES[0]


def test_a_package_imports_its_namespace_subpackages_from_hashed_bytes_and_writes_no_bytecode(spawn, ws):
    package = ws.root / "extensions" / "layered"
    write(package / "__init__.py", ws.header() + """
from .parts import inner
from .parts.deeper import leaf
import importlib
def activate(api):
    try:
        importlib.import_module(__name__ + '.parts.missing')
    except ModuleNotFoundError as exc:
        trace('missing', exc.name)
    api.register_tool(name='layers', description='', input_schema={},
                      execute=lambda c, a: inner.WHO + '+' + leaf.WHO)
""")
    write(package / "parts" / "inner.py", "WHO = 'inner'\n")
    write(package / "parts" / "deeper" / "leaf.py", "WHO = 'leaf'\n")
    sidecar = spawn()
    result = start(sidecar, ws, ["layered"])
    assert status_of(result, "layered")["status"] == "loaded", status_of(result, "layered")
    # the files change on disk after hashing: the host runs what was hashed, not what is there now
    write(package / "parts" / "inner.py", ws.header() + "trace('PLANTED', 'inner')\nWHO = 'changed'\n")
    assert call(sidecar, result["threadId"], "layers")["content"][0]["text"] == "inner+leaf"
    events = ws.events()
    assert [e[0] for e in events] == ["missing"] and events[0][1].endswith(".parts.missing"), events
    assert not list(package.rglob("*.pyc")) and not list(package.rglob("__pycache__"))
