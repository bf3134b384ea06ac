"""One grant, one candidate (protocol-v4 §1): which found thing a ``trusted*`` entry applies to.

A *candidate* is one extension (by id), plugin (by manifest name) or hooks source found in the
thread: in a root, at ``thread/start.plugins`` or at ``thread/start.extensions``. Same-name
candidates are all candidates, shadowed ones included. A grant applies to the candidates that
match everything it names: ``path`` (the candidate's canonical folder or file), ``sha256`` (its
pin); with no ``path``, an explicit source of that name counts as the grant's path. The grant takes
effect only when exactly one candidate matches and that candidate wins its name (it is the one
whose data the thread serves); otherwise nothing it names runs, and the editor is told
``trust_ambiguous`` with every candidate's path and the field that would choose one.

Nothing here reads or runs a candidate: ``pin`` is called only when a grant pins one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.base.diagnostics import Diagnostic


@dataclass
class Candidate:
    """One thing a grant may name."""

    path: str  # as found (what the editor is shown)
    real: str  # its canonical folder or file: what a grant's ``path`` is compared with
    explicit: bool  # an explicit source (thread/start.plugins / .extensions), not found in a root
    winner: bool  # it wins its name: its data is served, and only it may run code
    pin: Callable[[], str]  # its sha256, computed only when a grant pins it
    item: Any = None  # the plugin or extension source it stands for
    _sha256: str | None = field(default=None, repr=False)

    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = self.pin()
        return self._sha256


@dataclass
class Resolution:
    """What one grant applies to."""

    chosen: Candidate | None = None  # the one candidate the grant trusts (it wins its name)
    matched: list[Candidate] = field(default_factory=list)  # every candidate matching what the grant names
    problem: str | None = None  # None | "not_found" | "hash_mismatch" | "ambiguous" | "shadowed"


def canonical(path: str) -> str:
    return os.path.realpath(os.path.normpath(path))


def resolve(candidates: list[Candidate], path: str | None, sha256: str | None) -> Resolution:
    """The candidates one grant (``path?``, ``sha256?``) applies to, among its name's ``candidates``."""
    if not candidates:
        return Resolution(problem="not_found")
    if path is not None:
        want = canonical(path)
        matched = [c for c in candidates if c.real == want]
        if not matched:
            return Resolution(problem="not_found")
    else:
        matched = [c for c in candidates if c.explicit] or list(candidates)
    if sha256 is not None:
        pinned = [c for c in matched if c.sha256() == sha256]
        if not pinned:
            return Resolution(matched=matched, problem="hash_mismatch")
        matched = pinned
    # one folder found twice (a root listed under two paths, an explicit path given twice) is one thing
    distinct: dict[str, Candidate] = {}
    for c in matched:
        if c.real not in distinct or c.winner:
            distinct[c.real] = c
    matched = list(distinct.values())
    if len(matched) > 1:
        return Resolution(matched=matched, problem="ambiguous")
    [one] = matched
    if not one.winner:
        return Resolution(matched=matched, problem="shadowed")
    return Resolution(chosen=one, matched=matched)


def ambiguous(grant: str, what: str, name: str, resolution: Resolution, candidates: list[Candidate],
              explicit_field: str) -> Diagnostic:
    """The ``trust_ambiguous`` diagnostic of a grant that chose no runnable candidate.

    ``grant``: ``trustedPlugins`` | ``trustedExtensions``; ``what``: "plugin" | "extension";
    ``explicit_field``: the thread/start field that makes a candidate an explicit source.
    """
    paths = [c.path for c in candidates]
    if resolution.problem == "shadowed":
        [one] = resolution.matched
        winner = next((c for c in candidates if c.winner), None)
        chooser = explicit_field
        shadowing = winner.path if winner is not None else "another candidate"
        message = (f"{grant} grants {what} '{name}' at {one.path}, which is shadowed by {shadowing} (the "
                   f"candidate whose data the thread serves): nothing of either runs; pass {one.path} in "
                   f"thread/start.{explicit_field} to run the one you trust")
    else:
        matched = [c.path for c in resolution.matched]
        chooser = "path"
        message = (f"{grant} entry for {what} '{name}' matches {len(matched)} candidates ({', '.join(matched)}): "
                   f"none of them runs any code; name the one you trust with 'path' (or pass it in "
                   f"thread/start.{explicit_field})")
    return Diagnostic("trust_ambiguous", message, extra={"grant": grant, "name": name, "candidates": paths,
                                                          "field": chooser})
