"""The author-facing rules (lint.py) without a process: classification, shadowing, cost per keystroke."""

from __future__ import annotations

from harness_sidecar.resources import lint
from helpers import add_skill, write


def rchar() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar")).split()[1])


def test_classify_only_resources_under_a_root(tree, tmp_path):
    root = tree("r")
    roots = lint.resolve_roots([str(root)], [])
    kinds = {
        "AGENTS.md": ("instructions", ""),
        "skills/x/SKILL.md": ("skill", "x"),
        "templates/ask.md": ("template", "ask"),
        "extensions/tool.py": ("extension", "tool"),
        "extensions/pkg/sub/mod.py": ("extension", "pkg"),
    }
    for relative, expected in kinds.items():
        found = lint.classify(str(root / relative), roots)
        assert (found.kind, found.name) == expected, relative
    for relative in ("skills/x/notes.md", "skills/SKILL.md", "templates/a/b.md", "README.md"):
        assert lint.classify(str(root / relative), roots) is None, relative
    assert lint.classify(str(tmp_path / "elsewhere/AGENTS.md"), roots) is None


def test_each_keystroke_looks_up_one_name_not_whole_roots(tree):
    project, user = tree("project"), tree("user")
    for i in range(300):
        add_skill(user, f"other-{i:03d}", body="x" * 10_000)
    path = add_skill(project, "review")
    add_skill(user, "review")
    text = path.read_text()
    lint.lint(str(path), text, [str(project), str(user)], set())  # warm imports and the header cache
    before = rchar()
    findings = lint.lint(str(path), text, [str(project), str(user)], set())
    assert rchar() - before < 20_000  # the 300 other skills (3 MB of bodies) are not read
    assert [f.kind for f in findings] == ["shadows"]


def test_brace_hints_and_their_suggestions(tree):
    root = tree("r")
    path = write(root / "templates/ask.md", "{{ topic }} {{1x}} {{ok}} {{a-b}}\n")
    findings = lint.lint(str(path), path.read_text(), [str(root)], set())
    assert [(f.start, f.end, f.severity) for f in findings] == [(0, 11, "hint"), (12, 18, "hint"), (26, 33, "hint")]
    assert "write {{topic}}" in findings[0].message
    assert "write" not in findings[1].message  # {{1x}} cannot become a placeholder


def test_a_long_description_is_a_warning_while_typing(tree):
    root = tree("r")
    path = add_skill(root, "long", "d" * 1100)
    findings = lint.lint(str(path), path.read_text(), [str(root)], set())
    assert [(f.kind, f.severity, f.line) for f in findings] == [("description_too_long", "warning", 2)]
