"""Extensions as data: found under the roots (or named by the editor) and hashed, never executed.

The bytes hashed here are the bytes a trusted extension's host compiles: they travel over
the channel, and the host never reads the path again (for a package, every ``.py`` file of it).

Pins cover what is loaded: a package's hash covers every file under its folder but
``__pycache__``, ``*.pyc``/``*.pyo`` and dot-entries, all of them are sent, and the host
imports from the package only the ``.py`` files sent here (its finder refuses every other name
under the package, so bytecode, extension modules and files planted after hashing are never
executed) and serves ``importlib.resources``/``pkgutil.get_data`` from the sent bytes too.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Root
from harness_sidecar.base.names import name_problem
from harness_sidecar.resources.paths import is_within, read_contained
from harness_sidecar.resources.named_extensions import ExplicitExtension


@dataclass
class ExtensionSource:
    id: str
    root: Root | None  # None for an explicit source from thread/start.extensions
    source: str  # the .py file, or the package directory
    package: bool
    sha256: str
    code: bytes  # the bytes hashed: the module, or the package's __init__.py
    code_path: str
    files: dict[str, bytes] | None = None  # a package's hashed files by relative path (its modules and data)
    status: str = "skipped_untrusted"
    error: str | None = None
    origin: dict[str, Any] | None = None  # provenance when not its root's or the editor's (a plugin's)
    refused: str | None = None  # why a trustedExtensions entry naming its id does not load it (protocol-v4 §1)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        if self.root is not None:
            out["root"] = self.root.path
        origin = self.origin or ({"kind": "root", "root": self.root.path} if self.root is not None
                                 else {"kind": "editor"})
        out.update(path=self.source, source=origin, sha256=self.sha256, status=self.status)
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
        files: dict[str, bytes] = {}
        for relative in _package_files(path):
            _, data = read_contained(os.path.join(path, relative), boundary or real_dir, limits.max_file_bytes,
                                     "extension file")
            if relative == "__init__.py":
                code = data
            files[relative.replace(os.sep, "/")] = data  # modules and data alike: the host reads only these
            digest.update(relative.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
        return ExtensionSource(ext_id, root, path, True, digest.hexdigest(), code, init, files)
    real, data = read_contained(path, boundary or os.path.realpath(os.path.dirname(path)), limits.max_file_bytes,
                                "extension")
    return ExtensionSource(ext_id, root, path, False, hashlib.sha256(data).hexdigest(), data, path)


def discover(roots: list[Root], explicit: list[ExplicitExtension], limits: Limits,
             diagnostics: list[Diagnostic], every: list[ExtensionSource] | None = None) -> dict[str, ExtensionSource]:
    """Every extension of every root plus the explicit ones; explicit, then earlier roots, win an id.

    ``every`` gets each extension read, shadowed ones too: the candidates a grant is matched with.
    """
    found: dict[str, ExtensionSource] = {}

    def offer(source: ExtensionSource) -> None:
        if every is not None:
            every.append(source)
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


def resolve_grants(found: dict[str, ExtensionSource], every: list[ExtensionSource], trusted: list[Any],
                   diagnostics: list[Diagnostic]) -> None:
    """Match each ``trustedExtensions`` entry with its id's candidates (``resources.grants``).

    A grant loads its id's winner only when the winner is the one candidate it matches; otherwise
    the winner is marked ``refused`` (never imported) and the editor is told why: ``trust_ambiguous``
    (two or more match, or the one that matches is shadowed), ``hash_mismatch`` or
    ``extension_not_found`` (its ``path`` names none). A winner's own pin mismatch is the loader's.
    """
    if not trusted:
        return  # no grant: nothing to match (and resources.grants stays unimported, issue #32)
    from harness_sidecar.resources import grants

    by_id: dict[str, list[ExtensionSource]] = {}
    for source in every:  # one pass: thousands of trusted ids cost O(N), not O(N²)
        by_id.setdefault(source.id, []).append(source)
    for trust in trusted:
        same = by_id.get(trust.id, [])
        winner = found.get(trust.id)
        if not same or winner is None:
            continue  # found nowhere (the loader says extension_not_found), or a plugin's <plugin>:<id>
        candidates = [grants.Candidate(s.source, grants.canonical(s.source), s.root is None, s is winner,
                                       (lambda s=s: s.sha256), s) for s in same]
        resolution = grants.resolve(candidates, getattr(trust, "path", None), trust.sha256)
        if resolution.problem is None:
            continue
        if resolution.problem == "not_found":
            winner.refused = f"thread/start.trustedExtensions names '{trust.id}' at {trust.path}, where it is not found"
            diagnostics.append(Diagnostic("extension_not_found", f"trusted extension '{trust.id}' is not found at "
                                          f"{trust.path}; found at: {', '.join(c.path for c in candidates)}",
                                          trust.path, extra={"id": trust.id}))
        elif resolution.problem == "hash_mismatch":
            if any(c.winner for c in resolution.matched):
                continue  # the loader marks the winner hash_mismatch
            [other] = resolution.matched[:1]
            winner.refused = f"the grant names {other.path}, whose sha256 is not the pinned one"
            diagnostics.append(Diagnostic("hash_mismatch", f"extension '{trust.id}' at {other.path} was not imported:"
                                          f" sha256 is {other.sha256()}, the editor pinned {trust.sha256}",
                                          other.path, extra={"id": trust.id}))
        else:
            diagnostic = grants.ambiguous("trustedExtensions", "extension", trust.id, resolution, candidates,
                                          "extensions")
            winner.refused = diagnostic.message
            diagnostics.append(diagnostic)
