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


def test_a_resource_outside_every_root_is_explained_with_its_root(tree, tmp_path):
    root = tree("r")
    elsewhere = tmp_path / "repo"
    skill = write(elsewhere / "skills/x/SKILL.md", "---\nname: y\n---\n")
    finding = lint.outside_roots(str(skill), [str(root)])
    assert finding.kind == "outside_roots" and finding.severity == "information"
    assert f"the root {elsewhere}" in finding.message and str(root) in finding.message
    template = write(elsewhere / "templates/ask.md", "x\n")
    assert lint.outside_roots(str(template), [str(root)]).kind == "outside_roots"
    assert lint.outside_roots(str(write(elsewhere / "notes.md", "x\n")), [str(root)]) is None
    assert lint.outside_roots(str(add_skill(root, "inside")), [str(root)]) is None  # under a root: lint() speaks


def test_hover_text_follows_the_clients_format_and_skips_the_frontmatter(tree):
    root = tree("r")
    skill = add_skill(root, "review", "Use when reviewing.")
    markdown = lint.hover(str(skill), skill.read_text(), 1, 7, [str(root)])[0]
    plain = lint.hover(str(skill), skill.read_text(), 1, 7, [str(root)], markdown=False)[0]
    assert "**review**" in markdown and "`" in markdown
    assert plain.startswith("review — Use when reviewing.") and "*" not in plain and "`" not in plain
    template = write(root / "templates/ask.md", "---\ndescription: Fill {{x}}.\n---\n{{x}} and {{y}}\n")
    text = template.read_text()
    assert lint.hover(str(template), text, 1, 15, [str(root)]) is None  # {{x}} in the frontmatter
    assert lint.hover(str(template), text, 3, 1, [str(root)])[1:] == (0, 5)  # {{x}} in the body


def test_a_long_description_is_a_warning_while_typing(tree):
    root = tree("r")
    path = add_skill(root, "long", "d" * 1100)
    findings = lint.lint(str(path), path.read_text(), [str(root)], set())
    assert [(f.kind, f.severity, f.line) for f in findings] == [("description_too_long", "warning", 2)]
