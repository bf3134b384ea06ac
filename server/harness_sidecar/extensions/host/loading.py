"""Loading extensions: ``init`` (the thread's settings and limits), ``load`` (import an extension's
hashed bytes and run ``activate``), ``commit`` (which registrations exist), and the in-memory import
machinery, which never reads the extension's folder."""

from __future__ import annotations

import base64
import importlib.machinery
import importlib.util
import itertools
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from harness_sidecar.extensions.host.api import Staging, make_api
from harness_sidecar.extensions.host.exchanges import Abandoned, Exchange, Outcome
from harness_sidecar.extensions.host.output import out_of_memory
from harness_sidecar.extensions.host.state import HostState
from harness_sidecar.extensions.host.running import Running, _local
from harness_sidecar.base.results import describe_exception

_module_numbers = itertools.count(1)


class _MemoryLoader:
    """Loads a module from bytes the sidecar sent (never from the path); a package's data too."""

    def __init__(self, code: bytes, path: str, package: "_PackageFiles | None" = None, folder: str = "") -> None:
        self.code = code
        self.path = path
        self.package = package  # the package's hashed files, for its data (importlib.resources, get_data)
        self.folder = folder  # this module's folder, relative to the package's

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        exec(compile(self.code, self.path, "exec", dont_inherit=True), module.__dict__)  # noqa: S102

    def get_data(self, path: str) -> bytes:  # pkgutil.get_data
        if self.package is not None:
            relative = os.path.relpath(path, self.package.directory).replace(os.sep, "/")
            if relative in self.package.files:
                return self.package.files[relative]
        raise FileNotFoundError(f"{path} is not among the extension's hashed files")

    def get_resource_reader(self, fullname: str) -> Any:  # importlib.resources.files
        return None if self.package is None else _MemoryResources(_MemoryFile(self.package, self.folder))


@dataclass
class _PackageFiles:
    directory: str
    files: dict[str, bytes]  # relative path → bytes: every file the sidecar hashed
    folders: set[str]


class _MemoryFile:
    """A file or folder of a package, as hashed: what ``importlib.resources.files`` walks (a
    ``Traversable``; not derived from it, so that the host does not import ``importlib.resources``)."""

    def __init__(self, package: _PackageFiles, relative: str) -> None:
        self.package = package
        self.relative = relative

    @property
    def name(self) -> str:
        return self.relative.rsplit("/", 1)[-1]

    def is_dir(self) -> bool:
        return self.relative == "" or self.relative in self.package.folders

    def is_file(self) -> bool:
        return self.relative in self.package.files

    def iterdir(self) -> Any:
        prefix = self.relative + "/" if self.relative else ""
        names = sorted({p[len(prefix):].split("/", 1)[0] for p in (*self.package.files, *self.package.folders)
                        if p.startswith(prefix) and len(p) > len(prefix)})
        return iter([_MemoryFile(self.package, prefix + name) for name in names])

    def joinpath(self, *descendants: str) -> "_MemoryFile":
        parts = [p for d in descendants for p in str(d).replace(os.sep, "/").split("/") if p not in ("", ".")]
        return _MemoryFile(self.package, "/".join([self.relative, *parts] if self.relative else parts))

    def __truediv__(self, child: str) -> "_MemoryFile":
        return self.joinpath(child)

    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        import io

        data = self.package.files.get(self.relative)
        if data is None:
            raise FileNotFoundError(f"{self.relative!r} is not among the extension's hashed files")
        return io.BytesIO(data) if "b" in mode else io.TextIOWrapper(io.BytesIO(data), *args, **kwargs)

    def read_bytes(self) -> bytes:
        with self.open("rb") as f:
            return f.read()

    def read_text(self, encoding: str | None = None) -> str:
        with self.open("r", encoding=encoding) as f:
            return f.read()

    def __fspath__(self) -> str:  # as_file() copies the bytes to a temporary file instead of using this
        raise TypeError("an extension's hashed file has no path of its own")


class _MemoryResources:
    def __init__(self, root: _MemoryFile) -> None:
        self.root = root

    def files(self) -> _MemoryFile:
        return self.root


class _PackageFinder:
    """The only finder of a package extension's submodules: the ``.py`` files the sidecar hashed and sent.

    Every name under the package is answered here — a module, a subpackage, or a namespace
    subpackage (a folder holding sent files) — or refused with ``ModuleNotFoundError``; it never
    falls through to the path finder, so nothing else in the folder (``.pyc``, ``__pycache__``,
    ``.so``/``.pyd`` extension modules, files added after hashing) can be imported from it.
    """

    def __init__(self, name: str, package: _PackageFiles) -> None:
        self.name = name
        self.package = package

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.name + "."):
            return None
        relative = fullname[len(self.name) + 1:].replace(".", "/")
        files = self.package.files
        for candidate, is_package in ((relative + ".py", False), (relative + "/__init__.py", True)):
            code = files.get(candidate)
            if code is not None:
                path = os.path.join(self.package.directory, candidate)
                folder = relative if is_package else relative.rpartition("/")[0]
                spec = importlib.machinery.ModuleSpec(fullname, _MemoryLoader(code, path, self.package, folder),
                                                      origin=path, is_package=is_package)
                if is_package:
                    spec.submodule_search_locations = [os.path.dirname(path)]
                spec.has_location = True
                return spec
        if relative in self.package.folders:  # a namespace subpackage: an empty module whose submodules are here
            folder = os.path.join(self.package.directory, relative)
            spec = importlib.machinery.ModuleSpec(fullname, _MemoryLoader(b"", folder, self.package, relative),
                                                  is_package=True)
            spec.submodule_search_locations = [folder]
            return spec
        raise ModuleNotFoundError(f"No module named {fullname!r}: an extension package imports only the .py files "
                                  f"the sidecar hashed (never .pyc, __pycache__ or extension modules)", name=fullname)


def import_extension(ext_id: str, code: bytes, code_path: str, directory: str | None,
                     files: dict[str, bytes] | None) -> Any:
    """Execute the hashed bytes as a fresh module with a name of its own."""
    name = f"harness_sidecar_ext_{next(_module_numbers)}_{ext_id.replace('-', '_')}"
    package = None
    if directory is not None:
        files = files or {}
        folders = {"/".join(parts[:i]) for parts in (f.split("/") for f in files) for i in range(1, len(parts))}
        package = _PackageFiles(directory, files, folders)
    spec = importlib.machinery.ModuleSpec(name, _MemoryLoader(code, code_path, package), origin=code_path,
                                          is_package=package is not None)
    spec.has_location = True
    if package is not None:
        spec.submodule_search_locations = [directory]
        sys.meta_path.insert(0, _PackageFinder(name, package))  # type: ignore[arg-type]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@dataclass
class Extension:
    id: str
    staging: Staging


class Loading:
    """``init``, ``load`` and ``commit`` frames: the thread the host serves, extensions imported from the
    bytes the sidecar hashed, and the registrations it committed."""

    def __init__(self, state: HostState, running: Running) -> None:
        self.state = state
        self.running = running

    def init_frame(self, ident: int, body: dict[str, Any]) -> None:
        self.init(body)

    def commit_frame(self, ident: int, body: dict[str, Any]) -> None:
        self.commit(body["ids"])

    def init(self, body: dict[str, Any]) -> None:
        self.state.thread_id = body["threadId"]
        self.state.cwd = body.get("cwd")
        self.state.roots = body.get("roots", [])
        self.state.ui = body.get("ui", {})
        self.state.conversation = body.get("conversation") is True
        self.state.sampling = body.get("sampling") is True
        self.state.settings = body.get("settings", {})
        self.state.max_result_bytes = body.get("maxResultBytes", self.state.max_result_bytes)
        self.state.max_tools = body.get("maxTools")
        # (its stateLines, each extension's ctx.state, are kept by serving as they are read: state.states)
        self.state.state_bytes = body.get("stateBytes", self.state.state_bytes)
        memory_mb = body.get("memoryMb")
        if memory_mb:
            import resource

            limit = memory_mb * 1024 * 1024
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))

    def load(self, exchange: Exchange, body: dict[str, Any]) -> None:
        ext_id = body["id"]
        api, staging = make_api(ext_id, self.state.max_tools, self.state.listeners)
        _local.extension = ext_id
        timings: dict[str, float] = {}  # the load sequence's steps, for the sidecar's --log-level debug
        try:
            exchange.begin(0, body["timeout"])
            began = time.perf_counter()
            code = base64.b64decode(body["code"])
            files = {k: base64.b64decode(v) for k, v in body.get("files", {}).items()}
            module = import_extension(ext_id, code, body["codePath"], body.get("directory"), files)
            imported = time.perf_counter()
            timings["importMs"] = round((imported - began) * 1000, 3)
            activate = getattr(module, "activate", None)
            if not callable(activate):
                raise TypeError(f"{body['codePath']} defines no activate(api) function")
            outcome = self.running.invoke(exchange, activate, (api,))
            timings["activateMs"] = round((time.perf_counter() - imported) * 1000, 3)
        except MemoryError:
            out_of_memory()
        except Abandoned:
            staging.open = False
            exchange.end()
            return
        except BaseException as exc:  # noqa: BLE001 - the import itself failed
            outcome = Outcome(error=exc)
        finally:
            _local.extension = None
        staging.open = False
        if outcome.timed_out:
            report: dict[str, Any] = {"ok": False, "timedOut": True}
        elif outcome.error is not None:
            report = {"ok": False, "error": describe_exception(outcome.error)}
        else:
            self.state.loaded[ext_id] = Extension(ext_id, staging)
            report = {"ok": True, **staging.report()}
        report["timings"] = timings
        exchange.finish(report, urgent=True)
        self.state.exchanges.pop(exchange.id, None)
        exchange.end()

    def commit(self, ids: list[str]) -> None:
        """The extensions the sidecar committed, in load order: only their registrations exist."""
        self.state.handlers.clear()
        self.state.tools.clear()
        self.state.plans.clear()
        self.state.commands.clear()
        self.state.listeners.clear()  # the same dict every extension's api.events reads
        for ext_id in ids:
            if ext_id not in self.state.loaded:  # the sidecar gives a host like that up; never serve half a policy
                continue
            staging = self.state.loaded[ext_id].staging
            for handler in staging.handlers:
                self.state.handlers[handler.event].append(handler)
            for tool in staging.tools:
                self.state.tools[tool.name] = tool
            for command in staging.commands:
                self.state.commands[command.name] = command
            for listener in staging.listeners:
                self.state.listeners.setdefault(listener.name, []).append(listener)
        for ext_id in set(self.state.loaded) - set(ids):
            del self.state.loaded[ext_id]
        for tool in self.state.tools.values():
            self.state.schemas[tool.name] = tool.input_schema
