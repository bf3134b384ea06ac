"""Extensions: found as data, hashed, and imported only when the editor trusts them.

Order is fixed: trust decision → import → ``activate(api)`` → commit. Discovery reads an
extension's bytes to hash them and never executes them; a trusted single-file extension
is compiled from those very bytes (no second read of the path). Registrations made in
``activate`` are staged and committed together, or not at all.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import logging
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

from harness_sidecar.errors import DomainError
from harness_sidecar.extensions import workers
from harness_sidecar.extensions.hooks import EVENTS, Hook
from harness_sidecar.limits import Limits
from harness_sidecar.resources.catalog import Diagnostic, Root
from harness_sidecar.resources.names import name_problem
from harness_sidecar.resources.paths import is_within, read_contained
from harness_sidecar.tools import Tool, ToolRegistry
from harness_sidecar.wire.params import TOOL_NAME, ExplicitExtension, TrustedExtension

logger = logging.getLogger(__name__)

_module_numbers = itertools.count(1)


@dataclass
class ExtensionSource:
    id: str
    root: Root | None  # None for an explicit source from thread/start.extensions
    source: str  # the .py file, or the package directory
    package: bool
    sha256: str
    code: bytes  # the bytes hashed: the module, or the package's __init__.py
    code_path: str
    status: str = "skipped_untrusted"
    error: str | None = None
    module_name: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.root is not None:
            out["root"] = self.root.path
        out.update(source=self.source, sha256=self.sha256, status=self.status)
        if self.error is not None:
            out["error"] = self.error
        return out


def _package_files(directory: str) -> list[str]:
    """The relative path of every file of a package, sorted (read_contained checks each one's links)."""
    found = []
    for current, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        found += [os.path.relpath(os.path.join(current, name), directory) for name in files
                  if not name.startswith(".") and not name.endswith((".pyc", ".pyo"))]
    return sorted(found)


def read_source(ext_id: str, path: str, root: Root | None, limits: Limits) -> ExtensionSource:
    """Read and hash an extension (a ``.py`` file or a package directory). Raises ``DomainError``.

    A package's sha256 covers every file under it (``__pycache__`` and dot-files aside) in
    sorted order of relative path, each as ``path NUL size NUL bytes``.
    """
    boundary = root.real if root is not None else None
    if os.path.isdir(path):
        init = os.path.join(path, "__init__.py")
        real_dir = os.path.realpath(path)
        if boundary is not None and not is_within(real_dir, boundary):
            raise DomainError("path_escape", f"{path} resolves to {real_dir}, outside the root {root.path}",
                              path=path)
        if not os.path.isfile(init):
            raise DomainError("resource_not_found", f"extension package {path} has no __init__.py", path=path)
        digest = hashlib.sha256()
        code = b""
        for relative in _package_files(path):
            _, data = read_contained(os.path.join(path, relative), boundary or real_dir, limits.max_file_bytes,
                                     "extension file")
            if relative == "__init__.py":
                code = data
            digest.update(relative.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
        return ExtensionSource(ext_id, root, path, True, digest.hexdigest(), code, init)
    real, data = read_contained(path, boundary or os.path.realpath(os.path.dirname(path)), limits.max_file_bytes,
                                "extension")
    return ExtensionSource(ext_id, root, path, False, hashlib.sha256(data).hexdigest(), data, path)


def discover(roots: list[Root], explicit: list[ExplicitExtension], limits: Limits,
             diagnostics: list[Diagnostic]) -> dict[str, ExtensionSource]:
    """Every extension of every root plus the explicit ones; explicit, then earlier roots, win an id."""
    found: dict[str, ExtensionSource] = {}

    def offer(source: ExtensionSource) -> None:
        winner = found.get(source.id)
        if winner is None:
            found[source.id] = source
        else:
            diagnostics.append(Diagnostic("shadowed", f"extension '{source.id}' at {source.source} is shadowed by "
                                          f"{winner.source}", source.source,
                                          extra={"name": source.id, "shadowedBy": winner.source}))

    for item in explicit:
        if not os.path.exists(item.path):
            diagnostics.append(Diagnostic("extension_not_found", f"extension '{item.id}': {item.path} does not exist",
                                          item.path))
            continue
        try:
            offer(read_source(item.id, item.path, None, limits))
        except DomainError as exc:
            diagnostics.append(Diagnostic.from_error(exc, item.path))
        except OSError as exc:
            diagnostics.append(Diagnostic.unreadable(exc, item.path))
    for root in roots:
        directory = os.path.join(root.path, "extensions")
        try:
            with os.scandir(os.path.join(root.real, "extensions")) as it:
                entries = sorted((e.name, e.is_dir()) for e in it
                                 if not e.name.startswith((".", "_")))
        except FileNotFoundError:
            continue
        except OSError as exc:
            diagnostics.append(Diagnostic("unreadable", f"{directory} cannot be listed: {exc.strerror}", directory))
            continue
        names = {name for name, _ in entries}
        for name, is_dir in entries:
            if is_dir:
                ext_id = name
            elif name.endswith(".py"):
                ext_id = name[:-3]
            else:
                continue
            path = os.path.join(directory, name)
            why = name_problem(ext_id)
            if why:
                diagnostics.append(Diagnostic("invalid_name", f"extension id '{ext_id}' {why}", path,
                                              "name extensions/<id>.py or extensions/<id>/ with a lower-case, "
                                              "hyphenated id"))
                continue
            if not is_dir and ext_id in names:
                diagnostics.append(Diagnostic("shadowed", f"extension '{ext_id}' at {path} is shadowed by the package "
                                              f"{os.path.join(directory, ext_id)}", path,
                                              extra={"name": ext_id}))
                continue
            try:
                offer(read_source(ext_id, path, root, limits))
            except DomainError as exc:
                diagnostics.append(Diagnostic.from_error(exc, path))
            except OSError as exc:
                diagnostics.append(Diagnostic.unreadable(exc, path))
    return dict(sorted(found.items()))


class RegistrationClosed(RuntimeError):
    pass


class _Staging:
    def __init__(self) -> None:
        self.tools: list[tuple[str, str, dict[str, Any], Callable[..., Any]]] = []
        self.hooks: list[tuple[str, Callable[..., Any]]] = []
        self.open = True

    def check_open(self) -> None:
        if not self.open:
            raise RegistrationClosed("registration is only possible while activate(api) runs")


def _make_api(extension_id: str) -> tuple[Any, _Staging]:
    """The ``api`` object handed to ``activate``: registration only, nothing else reachable."""
    staging = _Staging()
    ext_logger = logging.getLogger(f"harness_sidecar.extension.{extension_id}")

    def register_tool(name: str, description: str, input_schema: dict[str, Any],
                      execute: Callable[..., Any]) -> None:
        staging.check_open()
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise ValueError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if not isinstance(description, str):
            raise TypeError("description must be a str")
        if not isinstance(input_schema, dict):
            raise TypeError("input_schema must be a dict (a JSON Schema object)")
        if not callable(execute):
            raise TypeError("execute must be callable")
        staging.tools.append((name, description, json.loads(json.dumps(input_schema)), execute))

    def on(event: str, fn: Callable[..., Any]) -> None:
        staging.check_open()
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; use one of {', '.join(EVENTS)}")
        if not callable(fn):
            raise TypeError("a hook must be callable")
        staging.hooks.append((event, fn))

    api = types.SimpleNamespace(id=extension_id, logger=ext_logger, register_tool=register_tool, on=on)
    return api, staging


def _import(source: ExtensionSource) -> types.ModuleType:
    """Execute the hashed bytes as a fresh module with a name of its own."""
    name = f"harness_sidecar_ext_{next(_module_numbers)}_{source.id.replace('-', '_')}"
    if source.package:
        spec = importlib.util.spec_from_file_location(name, source.code_path,
                                                      submodule_search_locations=[source.source])
    else:
        spec = importlib.util.spec_from_file_location(name, source.code_path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    source.module_name = name
    sys.modules[name] = module
    code = compile(source.code, source.code_path, "exec", dont_inherit=True)
    exec(code, module.__dict__)  # noqa: S102 - the editor trusted exactly these bytes
    return module


def _import_and_activate(source: ExtensionSource, api: Any) -> Any:
    module = _import(source)
    activate = getattr(module, "activate", None)
    if not callable(activate):
        raise TypeError(f"{source.code_path} defines no activate(api) function")
    return activate(api)


def unload(source: ExtensionSource) -> None:
    if source.module_name:
        prefix = source.module_name + "."
        for name in [n for n in sys.modules if n == source.module_name or n.startswith(prefix)]:
            sys.modules.pop(name, None)


async def load(source: ExtensionSource, registry: ToolRegistry, limits: Limits) -> None:
    """Import and activate one trusted extension, then commit its registrations all at once.

    On any failure nothing of it is registered, ``source.status`` is ``failed`` and
    ``source.error`` says why. Never raises for what the extension does.
    """
    api, staging = _make_api(source.id)
    outcome = await workers.call(_import_and_activate, (source, api), limits.extension_timeout_ms / 1000)
    staging.open = False
    if not outcome.ok:
        unload(source)
        source.status = "failed"
        if outcome.timed_out:
            source.error = f"import and activate(api) did not finish within {limits.extension_timeout_ms} ms"
        else:
            source.error = workers.describe_exception(outcome.error)  # type: ignore[arg-type]
        return
    names = [t[0] for t in staging.tools]
    clash = next((n for n in names if names.count(n) > 1), None)
    if clash:
        reason = f"registers the tool '{clash}' twice"
    else:
        clash = next((n for n in names if n in registry.tools), None)
        owner = registry.tools[clash] if clash else None
        reason = (f"tool '{clash}' is already registered by "
                  f"{owner.origin_kind + (' ' + repr(owner.origin_id) if owner.origin_id else '')}") if owner else ""
    if clash:
        unload(source)
        source.status, source.error = "failed", reason
        return
    timeout_s = limits.tool_timeout_ms / 1000
    for name, description, schema, execute in staging.tools:
        registry.tools[name] = Tool(name, description, schema, "extension", source.id, execute=execute,
                                    timeout_s=timeout_s)
    for event, fn in staging.hooks:
        (registry.before if event == "tool_call" else registry.after).append(Hook(source.id, event, fn))
    source.status = "loaded"


async def load_trusted(found: dict[str, ExtensionSource], trusted: list[TrustedExtension], registry: ToolRegistry,
                       limits: Limits, diagnostics: list[Diagnostic]) -> list[ExtensionSource]:
    """Load the trusted extensions in the editor's order; return them in load order."""
    loaded = []
    for trust in trusted:
        source = found.get(trust.id)
        if source is None:
            diagnostics.append(Diagnostic("extension_not_found",
                                          f"trusted extension '{trust.id}' was not found in any root or in "
                                          f"thread/start.extensions", extra={"id": trust.id}))
            continue
        if trust.sha256 is not None and trust.sha256 != source.sha256:
            source.status = "hash_mismatch"
            source.error = f"sha256 is {source.sha256}, the editor pinned {trust.sha256}"
            diagnostics.append(Diagnostic("hash_mismatch", f"extension '{trust.id}' was not imported: {source.error}",
                                          source.source, extra={"id": trust.id}))
            continue
        await load(source, registry, limits)
        if source.status == "failed":
            diagnostics.append(Diagnostic("extension_failed", f"extension '{trust.id}' failed: {source.error}",
                                          source.source, extra={"id": trust.id}))
        loaded.append(source)
    return loaded

