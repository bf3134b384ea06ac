"""What catalog/changed says: the difference between two catalog snapshots, and what a rescan costs."""

from __future__ import annotations

import shutil

import pytest
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.catalog import build_catalog
from harness_sidecar.resources.diff import diff
from helpers import add_skill, write


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    for name in ("alpha", "beta"):
        add_skill(root, name, f"Use for {name}.")
    write(root / "templates/ask.md", "Ask {{x}}\n")
    write(root / "AGENTS.md", "rules\n")
    return root


class Ext:
    def __init__(self, ext_id: str, sha: str, status: str = "loaded") -> None:
        self.id, self.sha, self.status = ext_id, sha, status

    def to_wire(self) -> dict:
        return {"id": self.id, "sha256": self.sha, "status": self.status}


def test_diff_names_what_was_added_removed_and_changed(root):
    limits = Limits()
    old = build_catalog([str(root)], limits)
    add_skill(root, "gamma")
    shutil.rmtree(root / "skills/beta")
    write(root / "skills/alpha/SKILL.md", "---\nname: alpha\ndescription: New words.\n---\nbody\n")
    write(root / "templates/ask.md", "Ask {{y}}\n")
    write(root / "templates/new.md", "New\n")
    write(root / "AGENTS.md", "new rules\n")
    new = build_catalog([str(root)], limits)
    change = diff(old, new, [Ext("pkg", "1"), Ext("gone", "2")], [Ext("pkg", "3"), Ext("fresh", "4")])
    assert change.added == [{"kind": "skill", "name": "gamma"}, {"kind": "template", "name": "new"},
                            {"kind": "extension", "name": "fresh"}]
    assert change.removed == [{"kind": "skill", "name": "beta"}, {"kind": "extension", "name": "gone"}]
    assert change.changed == [{"kind": "instructions", "name": str(root / "AGENTS.md")},
                              {"kind": "skill", "name": "alpha"}, {"kind": "template", "name": "ask"},
                              {"kind": "extension", "name": "pkg"}]
    assert change and change.to_wire()["diagnostics"] == []


def test_an_edit_of_the_body_alone_is_a_changed_skill(root):
    limits = Limits()
    old = build_catalog([str(root)], limits)
    path = root / "skills/alpha/SKILL.md"
    path.write_text(path.read_text() + "one more line\n")
    change = diff(old, build_catalog([str(root)], limits))
    assert (change.added, change.removed, change.changed) == ([], [], [{"kind": "skill", "name": "alpha"}])


def test_no_change_is_an_empty_diff(root):
    limits = Limits()
    change = diff(build_catalog([str(root)], limits), build_catalog([str(root)], limits))
    assert not change and change.to_wire() == {"added": [], "removed": [], "changed": [], "diagnostics": []}


def test_diff_reports_new_and_gone_diagnostics(root):
    limits = Limits()
    old = build_catalog([str(root)], limits)
    write(root / "skills/alpha/SKILL.md", "---\nname: wrong\ndescription: d\n---\n")
    broken = build_catalog([str(root)], limits)
    change = diff(old, broken)
    assert change.removed == [{"kind": "skill", "name": "alpha"}]
    assert [d.kind for d in change.new_diagnostics] == ["name_mismatch"]
    assert [d["kind"] for d in change.to_wire()["diagnostics"]] == ["name_mismatch"]
    write(root / "skills/alpha/SKILL.md", "---\nname: alpha\ndescription: d\n---\n")
    fixed = diff(broken, build_catalog([str(root)], limits))
    assert fixed.added == [{"kind": "skill", "name": "alpha"}]
    assert [d.kind for d in fixed.gone_diagnostics] == ["name_mismatch"] and fixed.new_diagnostics == []


def test_a_rescan_reads_only_what_changed(root, monkeypatch):
    """Rescans stay cheap: unchanged SKILL.md headers come from the header cache."""
    from harness_sidecar.resources import catalog as catalog_module

    monkeypatch.setattr(catalog_module, "RACY_SECONDS", -1.0)
    monkeypatch.setattr(catalog_module, "_HEADERS", {})
    for i in range(200):
        add_skill(root, f"bulk-{i:03d}", body="x" * 20_000)
    limits = Limits()
    old = build_catalog([str(root)], limits)
    write(root / "skills/bulk-007/SKILL.md", "---\nname: bulk-007\ndescription: Edited.\n---\n")

    def rchar() -> int:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("rchar")).split()[1])

    before = rchar()
    new = build_catalog([str(root)], limits)
    assert rchar() - before < 20_000  # one header and the small files, not 200 x 4 KiB
    assert diff(old, new).changed == [{"kind": "skill", "name": "bulk-007"}]
