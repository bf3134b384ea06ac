"""What changed between two catalog snapshots: the entries of ``catalog/changed`` (protocol v2 §3).

A rescan builds a new ``Catalog`` (cheap: unchanged SKILL.md headers come from the header
cache); ``diff`` compares it with the thread's current one. Entries are ``{kind, name}``
with kind ``skill``, ``template``, ``instructions`` (named by the file's path) or
``extension`` (by id). A skill or template is *changed* when its catalog entry differs or
its file changed (a body edit included: the model may have loaded the old one); an
extension when its entry differs (its bytes' hash, status, source). Diagnostics are
compared whole: ``new_diagnostics`` are those the old snapshot did not have.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.resources.catalog import Catalog

KINDS = ("instructions", "skill", "template", "extension", "plugin", "commandTemplate")


@dataclass
class CatalogChange:
    added: list[dict[str, str]] = field(default_factory=list)
    removed: list[dict[str, str]] = field(default_factory=list)
    changed: list[dict[str, str]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)  # all of the new snapshot
    new_diagnostics: list[Diagnostic] = field(default_factory=list)  # those the old one did not have
    gone_diagnostics: list[Diagnostic] = field(default_factory=list)  # those the new one no longer has

    def __bool__(self) -> bool:
        """Whether anything changed (a new revision is due)."""
        return bool(self.added or self.removed or self.changed or self.new_diagnostics or self.gone_diagnostics)

    def to_wire(self) -> dict[str, Any]:
        """The ``catalog/changed`` fields decided here (the caller adds threadId and revision)."""
        return {"added": self.added, "removed": self.removed, "changed": self.changed,
                "diagnostics": [d.to_wire() for d in self.diagnostics]}


def _entries(catalog: Catalog, extensions: Iterable[Any]) -> dict[tuple[str, str], Any]:
    """``(kind, name) -> what identifies its version``."""
    out: dict[tuple[str, str], Any] = {}
    for instructions in catalog.instructions:
        out[("instructions", instructions.source)] = instructions.text
    for skill in catalog.skills.values():
        out[("skill", skill.name)] = (skill.to_wire(), skill.stamp)
    for template in catalog.templates.values():
        out[("template", template.name)] = (template.to_wire(), template.stamp)
    for extension in extensions:
        out[("extension", extension.id)] = extension.to_wire()
    if catalog.plugins is not None:  # resources.plugins: a plugin (its parts, trust) and command templates
        for plugin in catalog.plugins.plugins:
            out[("plugin", plugin.name)] = (plugin.to_wire(), [h.to_wire() for h in plugin.hooks],
                                            [m.to_wire() for m in plugin.mcp_servers], [a.to_wire() for a in plugin.agents])
        for command in catalog.plugins.command_templates.values():
            out[("commandTemplate", command.name)] = (command.to_wire(), command.stamp)
    return out


def _listed(keys: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    """``{kind, name}`` entries in kind order (instructions, skill, template, extension), then name."""
    return [{"kind": kind, "name": name} for kind, name in sorted(keys, key=lambda k: (KINDS.index(k[0]), k[1]))]


def _key(diagnostic: Diagnostic) -> str:
    return json.dumps(diagnostic.to_wire(), sort_keys=True)


def diff(old: Catalog, new: Catalog, old_extensions: Iterable[Any] = (),
         new_extensions: Iterable[Any] = ()) -> CatalogChange:
    """The difference from ``old`` to ``new``, each with its extensions (objects with ``id`` and
    ``to_wire()``, as the extension loader gives them)."""
    before, after = _entries(old, old_extensions), _entries(new, new_extensions)
    old_keys = [_key(d) for d in old.diagnostics]  # each serialised once: for the sets and for the lists
    new_keys = [_key(d) for d in new.diagnostics]
    old_set, new_set = set(old_keys), set(new_keys)
    return CatalogChange(
        _listed(after.keys() - before.keys()), _listed(before.keys() - after.keys()),
        _listed(k for k in before.keys() & after.keys() if before[k] != after[k]),
        list(new.diagnostics), [d for d, k in zip(new.diagnostics, new_keys) if k not in old_set],
        [d for d, k in zip(old.diagnostics, old_keys) if k not in new_set])
