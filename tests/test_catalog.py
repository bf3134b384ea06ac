"""The catalog as a skill author meets it: what loads, what is left out, and why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.catalog import build_catalog
from helpers import add_skill, kinds_by_path, write


def catalog_of(*roots: Path, limits: Limits | None = None):
    return build_catalog([str(r) for r in roots], limits or Limits())


def only_problem(catalog, path: Path) -> str:
    found = kinds_by_path([d.to_wire() for d in catalog.diagnostics])
    assert str(path) in found, catalog.diagnostics
    return ",".join(sorted(found[str(path)]))


def test_valid_skill_is_listed_with_metadata_only(tree):
    root = tree("project")
    add_skill(root, "review", "Use when reviewing code.", "SECRET BODY\n")
    catalog = catalog_of(root)
    assert catalog.to_wire()["skills"] == [{
        "name": "review", "description": "Use when reviewing code.", "root": str(root),
        "path": str(root / "skills/review/SKILL.md"), "source": {"kind": "root", "root": str(root)},
    }]
    assert "SECRET BODY" not in repr(catalog.to_wire())
    assert catalog.diagnostics == []


def test_earlier_root_wins_and_the_loser_is_reported(tree):
    project, user = tree("project"), tree("user")
    add_skill(project, "review", "Project review.")
    add_skill(user, "review", "User review.")
    add_skill(user, "commit", "User commit.")
    write(project / "templates/review.md", "Project {{path}}")
    write(user / "templates/review.md", "User {{path}}")
    catalog = catalog_of(project, user)
    assert [(s.name, s.description) for s in catalog.skills.values()] == [("commit", "User commit."),
                                                                          ("review", "Project review.")]
    assert catalog.templates["review"].root.path == str(project)
    shadowed = [d.to_wire() for d in catalog.diagnostics if d.kind == "shadowed"]
    assert {d["path"] for d in shadowed} == {str(user / "skills/review/SKILL.md"), str(user / "templates/review.md")}
    assert all(d["shadowedBy"].startswith(str(project)) for d in shadowed)


def test_skills_are_sorted_by_name_across_roots(tree):
    a, b = tree("a"), tree("b")
    for name in ["zeta", "alpha"]:
        add_skill(a, name)
    for name in ["mid", "beta"]:
        add_skill(b, name)
    assert list(catalog_of(a, b).skills) == ["alpha", "beta", "mid", "zeta"]


@pytest.mark.parametrize("content, kind", [
    ("no frontmatter at all\n", "invalid_frontmatter"),
    ("---\nname: x\ndescription: never closed\n", "invalid_frontmatter"),
    ("---\nname: other\ndescription: d\n---\n", "name_mismatch"),
    ("---\nname: Upper\ndescription: d\n---\n", "invalid_name"),
    ("---\nname: under_score\ndescription: d\n---\n", "invalid_name"),
    ("---\nname: 123\ndescription: d\n---\n", "invalid_frontmatter"),
    ("---\nname: x\ndescription: [a, b]\n---\n", "invalid_frontmatter"),
    ("---\nname: x\ndescription: '   '\n---\n", "invalid_frontmatter"),
    ("---\nname: x\n---\n", "invalid_frontmatter"),
    ("---\n- a list\n---\n", "invalid_frontmatter"),
    ("---\nname: x\ndescription: bad: colon\n---\n", "invalid_frontmatter"),
    (b"---\nname: x\ndescription: caf\xe9\n---\n", "not_utf8"),
    ("---\nname: x\ndescription: d\ncreated: 2024-13-45\n---\n", "invalid_frontmatter"),  # ValueError in YAML
    ("---\nname: x\ndescription: !!int zz\n---\n", "invalid_frontmatter"),
    ("---\nname: x\ndescription: &d [*d]\n---\n", "invalid_frontmatter"),
])
def test_each_rule_excludes_the_skill_with_a_reason(tree, content, kind):
    root = tree("r")
    # the directory is named after what the valid name would be
    name = "x"
    if isinstance(content, str) and "name: Upper" in content:
        name = "Upper"
    elif isinstance(content, str) and "under_score" in content:
        name = "under_score"
    path = write(root / "skills" / name / "SKILL.md", content)
    catalog = catalog_of(root)
    assert catalog.skills == {}
    assert kind in only_problem(catalog, path)


@pytest.mark.parametrize("name", ["a" * 65, "nul", "com1", "lpt9", "double--hyphen", "-lead", "trail-"])
def test_reserved_and_malformed_names(tree, name):
    root = tree("r")
    path = add_skill(root, name)
    catalog = catalog_of(root)
    assert catalog.skills == {}
    assert only_problem(catalog, path) == "invalid_name"


def test_a_64_character_name_is_fine(tree):
    root = tree("r")
    add_skill(root, "a" * 64)
    assert list(catalog_of(root).skills) == ["a" * 64]


def test_yaml_never_constructs_objects(tree, tmp_path):
    root = tree("r")
    marker = tmp_path / "constructed"
    path = write(root / "skills/x/SKILL.md",
                 f"---\nname: x\ndescription: !!python/object/apply:os.system ['touch {marker}']\n---\n")
    write(root / "skills/y/SKILL.md", "---\nname: y\ndescription: !!python/name:os.system\n---\n")
    catalog = catalog_of(root)
    assert not marker.exists()
    assert catalog.skills == {}
    assert only_problem(catalog, path) == "invalid_frontmatter"


def test_yaml_error_reports_line_and_column(tree):
    root = tree("r")
    path = write(root / "skills/x/SKILL.md", "---\nname: x\ndescription: a: b\n---\n")
    (diag,) = catalog_of(root).diagnostics
    assert diag.path == str(path) and diag.line == 3 and diag.column is not None


def test_skill_directory_linked_out_of_the_root_is_rejected(tree):
    root, outside = tree("r"), tree("outside")
    add_skill(outside, "evil")
    (root / "skills").mkdir()
    os.symlink(outside / "skills/evil", root / "skills/evil")
    catalog = catalog_of(root)
    assert catalog.skills == {}
    assert only_problem(catalog, root / "skills/evil") == "path_escape"


def test_skill_file_linked_out_of_the_root_is_rejected(tree):
    root, outside = tree("r"), tree("outside")
    target = write(outside / "SKILL.md", "---\nname: x\ndescription: d\n---\n")
    (root / "skills/x").mkdir(parents=True)
    os.symlink(target, root / "skills/x/SKILL.md")
    catalog = catalog_of(root)
    assert catalog.skills == {}
    assert only_problem(catalog, root / "skills/x/SKILL.md") == "path_escape"


def test_skills_folder_linked_out_of_the_root_is_rejected(tree):
    root, outside = tree("r"), tree("outside")
    add_skill(outside, "x")
    os.symlink(outside / "skills", root / "skills")
    catalog = catalog_of(root)
    assert catalog.skills == {}
    assert only_problem(catalog, root / "skills/x") == "path_escape"


def test_links_inside_the_root_are_followed(tree):
    root = tree("r")
    add_skill(root, "x", directory="real-x")
    os.symlink(root / "skills/real-x", root / "skills/x")
    catalog = catalog_of(root)
    assert "x" in catalog.skills  # the link's name is the skill's name; real-x mismatches and is reported
    assert only_problem(catalog, root / "skills/real-x/SKILL.md") == "name_mismatch"


def test_missing_root_and_missing_skill_file_are_reported(tree, tmp_path):
    root = tree("r")
    (root / "skills/empty").mkdir(parents=True)
    catalog = catalog_of(tmp_path / "nope", root)
    found = kinds_by_path([d.to_wire() for d in catalog.diagnostics])
    assert found[str(tmp_path / "nope")] == {"root_missing"}
    (missing,) = [d.to_wire() for d in catalog.diagnostics if d.path == str(tmp_path / "nope")]
    assert missing["severity"] == "info"  # a root not made yet is no problem
    assert found[str(root / "skills/empty")] == {"missing_skill_file"}


def test_limits_leave_out_and_report(tree):
    root = tree("r")
    for i in range(5):
        add_skill(root, f"s{i}")
    big = add_skill(root, "big", body="x" * 5000)
    long_fm = write(root / "skills/long/SKILL.md", "---\nname: long\ndescription: " + "d" * 300 + "\n---\n")
    catalog = catalog_of(root, limits=Limits(max_skills_per_root=100, max_file_bytes=4000,
                                             max_frontmatter_bytes=200))
    assert only_problem(catalog, big) == "too_large"
    assert only_problem(catalog, long_fm) == "too_large"
    catalog = catalog_of(root, limits=Limits(max_skills_per_root=3))
    assert list(catalog.skills) == ["big", "long", "s0"]
    left_out = [d for d in catalog.diagnostics if d.kind == "too_many_skills"]
    assert [Path(d.path).name for d in left_out] == ["s1", "s2", "s3", "s4"]


def test_discovery_reads_a_bounded_prefix_not_the_body(tree):
    """A catalog of skills with 100 KiB bodies reads a few KiB per skill (counted by the kernel)."""
    root = tree("r")
    for i in range(100):
        add_skill(root, f"skill-{i:03d}", body="x" * 100 * 1024)

    def rchar() -> int:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("rchar")).split()[1])

    before = rchar()
    catalog = catalog_of(root)
    read = rchar() - before
    assert len(catalog.skills) == 100
    assert read / 100 < 8 * 1024, f"{read / 100:.0f} bytes read per skill"


def test_instructions_from_every_root_in_order(tree):
    project, user = tree("project"), tree("user")
    write(project / "AGENTS.md", "project rules")
    write(user / "AGENTS.md", "user rules")
    catalog = catalog_of(project, user)
    assert [(i.source, i.text) for i in catalog.instructions] == [
        (str(project / "AGENTS.md"), "project rules"), (str(user / "AGENTS.md"), "user rules")]


def test_instructions_linked_out_of_the_root_are_rejected(tree):
    root, outside = tree("r"), tree("o")
    os.symlink(write(outside / "AGENTS.md", "outside"), root / "AGENTS.md")
    catalog = catalog_of(root)
    assert catalog.instructions == []
    assert only_problem(catalog, root / "AGENTS.md") == "path_escape"


def test_templates_list_variables_in_order_and_validate_names(tree):
    root = tree("r")
    write(root / "templates/review.md", "---\ndescription: Review a file.\n---\n{{path}} {{ focus }} {{path}} {{b_2}}")
    write(root / "templates/plain.md", "no frontmatter {{x}}")
    bad = write(root / "templates/Bad_Name.md", "x")
    unclosed = write(root / "templates/broken.md", "---\ndescription: x\n")
    catalog = catalog_of(root)
    wire = {t["name"]: t for t in catalog.to_wire()["templates"]}
    assert wire["review"]["variables"] == ["path", "b_2"]
    assert wire["review"]["description"] == "Review a file."
    assert "description" not in wire["plain"] and wire["plain"]["variables"] == ["x"]
    assert only_problem(catalog, bad) == "invalid_name"
    assert only_problem(catalog, unclosed) == "invalid_frontmatter"


def test_repeated_discovery_reuses_parsed_headers_until_the_file_changes(tree, monkeypatch):
    from harness_sidecar.resources import catalog as catalog_module

    monkeypatch.setattr(catalog_module, "RACY_SECONDS", -1.0)  # trust even brand-new files
    monkeypatch.setattr(catalog_module, "_HEADERS", {})
    root = tree("r")
    for i in range(50):
        add_skill(root, f"s{i}", "Old description.", body="x" * 10000)

    def rchar() -> int:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("rchar")).split()[1])

    catalog_of(root)
    before = rchar()
    again = catalog_of(root)
    assert rchar() - before < 50 * 100  # no frontmatter read again
    assert again.skills["s7"].description == "Old description."
    # same size, new content: the file's identity (ctime, mtime) changes, so it is parsed again
    path = root / "skills/s7/SKILL.md"
    path.write_text(path.read_text().replace("Old description.", "New description."))
    assert catalog_of(root).skills["s7"].description == "New description."
    path.write_text(path.read_text().replace("name: s7", "name: zz"))
    assert "s7" not in catalog_of(root).skills


def test_a_file_that_cannot_be_read_is_left_out_not_fatal(tree, monkeypatch):
    from harness_sidecar.resources import frontmatter as frontmatter_module

    root = tree("r")
    add_skill(root, "fine")
    bad = add_skill(root, "broken-disk")
    real_read_prefix = frontmatter_module.read_prefix

    def failing_read_prefix(fd, limit):
        if os.readlink(f"/proc/self/fd/{fd}") == str(bad):
            raise OSError(5, "Input/output error")
        return real_read_prefix(fd, limit)

    monkeypatch.setattr(frontmatter_module, "read_prefix", failing_read_prefix)
    catalog = catalog_of(root)
    assert list(catalog.skills) == ["fine"]
    assert only_problem(catalog, bad) == "unreadable"


@pytest.mark.parametrize("text", [
    "name: x\ndescription: plain\n",
    "name: 'x'\ndescription: \"quoted: with colon\"\n",
    "name: x\nname: y\ndescription: d\n",  # duplicate key: the last wins, as in safe_load
    "name: &n x\ndescription: *n\n",
    "name: x\ndescription: >\n  folded\n  text\n",
    "name: x\ndescription: |\n  literal\n",
    "name: !!str 123\ndescription: !!str yes\n",
    "name: 123\ndescription: yes\n",
    "name: x\ndescription:\n",
    "name: x\ndescription: ~\nversion: 1.5\n",
    "name: x\nmetadata: {a: [1, 2], b: {c: d}}\n",
    "<<: {name: x}\ndescription: d\n",
    "name: x\ndescription: 2024-01-02\n",
    "",
])
def test_frontmatter_values_are_exactly_what_safe_load_gives(text):
    import yaml
    from harness_sidecar.resources.frontmatter import load_yaml

    assert load_yaml(text, 2)[0] == (yaml.safe_load(text) or {})


# -- nothing silent: the corpus bugs of issue 11 ------------------------------------------------

def test_a_line_starting_with_dashes_cut_by_the_first_read_is_not_the_closing_line(tree):
    """The 4 KiB discovery read ended right after '---' of '---x: y': that was taken as the end."""
    from harness_sidecar.resources.frontmatter import FIRST_CHUNK

    root = tree("r")
    head = "---\nname: cut\n"
    padding = "# " + "p" * 60 + "\n"
    text = head
    while len(text) + len(padding) < FIRST_CHUNK - 3:
        text += padding
    text += "#" * (FIRST_CHUNK - 3 - len(text) - 1) + "\n"
    assert len(text) == FIRST_CHUNK - 3
    text += "---x: a key that starts with three dashes\ndescription: Use when the read is cut.\n---\nbody\n"
    assert text.encode()[:FIRST_CHUNK].endswith(b"\n---")
    write(root / "skills/cut/SKILL.md", text)
    catalog = catalog_of(root)
    assert catalog.diagnostics == []
    assert catalog.skills["cut"].description == "Use when the read is cut."


def test_a_skill_folder_in_a_dot_folder_is_reported_not_ignored(tree):
    """openai/skills keeps its skills in skills/.curated/<name>: 'check' said 'no problems', empty catalog."""
    root = tree("r")
    for name in ["gh-fix-ci", "notion-research"]:
        add_skill(root, name, directory=f".curated/{name}")
    add_skill(root, "hidden", directory=".hidden")
    write(root / "skills/.git/HEAD", "ref: refs/heads/main\n")  # a dot-folder without skills stays quiet
    write(root / "skills/.DS_Store", "x")
    catalog = catalog_of(root)
    assert catalog.skills == {}
    found = {d.path: d for d in catalog.diagnostics}
    assert set(found) == {str(root / "skills/.curated"), str(root / "skills/.hidden")}
    curated = found[str(root / "skills/.curated")]
    assert curated.kind == "hidden_folder" and curated.extra["skills"] == ["gh-fix-ci", "notion-research"]
    assert "starts with a dot" in curated.message and curated.hint
    assert found[str(root / "skills/.hidden")].hint == "rename it to skills/hidden"


def test_dangling_and_looping_links_under_skills_are_reported(tree):
    root = tree("r")
    add_skill(root, "fine")
    os.symlink(root / "nowhere", root / "skills/dangling")
    os.symlink(root / "skills/loop-b", root / "skills/loop-a")
    os.symlink(root / "skills/loop-a", root / "skills/loop-b")
    (root / "skills/file-link").mkdir()
    os.symlink("missing.md", root / "skills/file-link/SKILL.md")
    catalog = catalog_of(root)
    assert list(catalog.skills) == ["fine"]
    found = {d.path: d for d in catalog.diagnostics}
    assert {k: d.kind for k, d in found.items()} == {
        str(root / "skills/dangling"): "broken_link", str(root / "skills/loop-a"): "broken_link",
        str(root / "skills/loop-b"): "broken_link", str(root / "skills/file-link/SKILL.md"): "broken_link"}
    assert "does not exist" in found[str(root / "skills/dangling")].message
    assert "loops" in found[str(root / "skills/loop-a")].message
    assert found[str(root / "skills/file-link/SKILL.md")].extra["target"] == "missing.md"


def test_a_skills_folder_that_is_a_dangling_link_is_reported(tree):
    root = tree("r")
    os.symlink(root / "gone", root / "skills")
    catalog = catalog_of(root)
    assert [(d.kind, d.path) for d in catalog.diagnostics] == [("broken_link", str(root / "skills"))]


def test_skill_md_in_the_wrong_case_is_named_in_the_diagnostic(tree):
    root = tree("r")
    write(root / "skills/lower/skill.md", "---\nname: lower\ndescription: d\n---\n")
    (root / "skills/empty").mkdir()
    catalog = catalog_of(root)
    found = {d.path: d for d in catalog.diagnostics}
    if os.path.exists(root / "skills/lower/SKILL.md"):  # a case-insensitive file system finds it anyway
        assert "lower" in catalog.skills
        return
    lower = found[str(root / "skills/lower/skill.md")]
    assert lower.kind == "missing_skill_file" and "case-sensitive" in lower.message
    assert lower.hint == "rename skill.md to SKILL.md"
    assert found[str(root / "skills/empty")].message.endswith("has no SKILL.md")


@pytest.mark.parametrize("value, written", [("on", "on"), ("yes", "yes"), ("1234", "1234"), ("~", "~"),
                                            ("1.5", "1.5")])
def test_a_name_yaml_reads_as_no_text_says_to_quote_it(tree, value, written):
    """'name: on' was rejected with the hint "write 'name: on'" — the very line that failed."""
    root = tree("r")
    path = write(root / f"skills/{value if value[0].isalnum() and '.' not in value else 'x'}/SKILL.md",
                 f"---\nname: {value}\ndescription: d\n---\n")
    (diag,) = catalog_of(root).diagnostics
    assert diag.path == str(path) and diag.kind == "invalid_frontmatter" and diag.line == 2
    assert f'name: "{written}"' in diag.hint and "quote" in diag.hint
    assert f"YAML reads {written} as" in diag.message


def test_a_description_yaml_reads_as_a_boolean_says_to_quote_it(tree):
    root = tree("r")
    write(root / "skills/x/SKILL.md", "---\nname: x\ndescription: yes\n---\n")
    (diag,) = catalog_of(root).diagnostics
    assert diag.hint == 'quote the value so YAML reads it as text: description: "yes"'


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_a_description_with_a_unicode_line_break_is_served_on_one_line(tree, char):
    """v3: a line break in a description is no rule of the spec; the catalog joins it into a space."""
    root = tree("r")
    write(root / "skills/x/SKILL.md", f'---\nname: x\ndescription: "first\\u{ord(char):04x}second"\n---\n')
    catalog = catalog_of(root)
    assert catalog.diagnostics == []
    assert catalog.skills["x"].description == "first second"


@pytest.mark.parametrize("char", ["\u2028", "\u0085"])
def test_a_raw_unicode_line_break_never_reaches_the_listing(tree, char):
    root = tree("r")
    write(root / "skills/x/SKILL.md", f"---\nname: x\ndescription: first{char}second\n---\n")
    catalog = catalog_of(root)
    assert all(char not in s.description for s in catalog.skills.values())


def test_a_description_over_1024_characters_is_served_with_a_warning(tree):
    root = tree("r")
    add_skill(root, "long", "é" * 1025)
    add_skill(root, "limit", "é" * 1024)
    catalog = catalog_of(root)
    assert list(catalog.skills) == ["limit", "long"]
    (diag,) = catalog.diagnostics
    wire = diag.to_wire()
    assert wire["kind"] == "description_too_long" and wire["severity"] == "warning"
    assert wire["path"] == str(root / "skills/long/SKILL.md") and "1025 characters" in wire["message"]


def test_the_warning_survives_the_header_cache(tree, monkeypatch):
    from harness_sidecar.resources import catalog as catalog_module

    monkeypatch.setattr(catalog_module, "RACY_SECONDS", -1.0)
    monkeypatch.setattr(catalog_module, "_HEADERS", {})
    root = tree("r")
    add_skill(root, "long", "d" * 2000)
    first, second = catalog_of(root), catalog_of(root)
    assert len(catalog_module._HEADERS) == 1
    assert [d.kind for d in first.diagnostics] == [d.kind for d in second.diagnostics] == ["description_too_long"]
    assert "long" in second.skills


def test_a_fifo_named_like_a_resource_is_reported_and_never_waited_on(spawn, tree):
    """A cloned repository whose SKILL.md, AGENTS.md or template is a FIFO: opening one for reading
    would wait for a writer forever, and the thread/start (the sidecar's helper too) with it."""
    root = tree("project")
    add_skill(root, "review", "Use when reviewing.")
    (root / "skills/trap").mkdir(parents=True)
    os.mkfifo(root / "skills/trap/SKILL.md")
    os.mkfifo(root / "AGENTS.md")
    (root / "templates").mkdir()
    os.mkfifo(root / "templates/trap.md")
    sidecar = spawn()
    result = sidecar.call("thread/start", {"roots": [str(root)]}, timeout=30)
    assert [s["name"] for s in result["catalog"]["skills"]] == ["review"]
    found = kinds_by_path(result["diagnostics"])
    assert found[str(root / "skills/trap/SKILL.md")] == {"unreadable"}
    assert found[str(root / "AGENTS.md")] and found[str(root / "templates/trap.md")]
    assert sidecar.call("thread/start", {"roots": [str(root)]}, timeout=30)["catalog"]["skills"]  # and again


def test_a_tree_read_off_a_cold_disk_gives_the_catalog_it_gives_from_memory(spawn, tree, tmp_path):
    """Cold file data (dropped from the page cache) takes the read-ahead path (resources/readahead.py):
    the same catalog and diagnostics, linked, hidden, broken and refused skills included."""
    root, outside = tree("project"), tree("outside")
    for i in range(40):
        add_skill(root, f"skill-{i:02d}", f"Use when {i}.", "body " * 2000)
    write(root / "skills/broken/SKILL.md", "---\nname: other\ndescription: d\n---\n")
    add_skill(root, "inner", directory=".hidden/inner")
    add_skill(outside, "linked")
    (root / "skills/linked").symlink_to(outside / "skills/linked")
    (root / "skills/dangling").symlink_to(tmp_path / "nowhere")

    def cold_start() -> dict:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                fd = os.open(path, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
        return spawn().call("thread/start", {"roots": [str(root)]})

    cold, warm = cold_start(), spawn().call("thread/start", {"roots": [str(root)]})
    assert cold["catalog"] == warm["catalog"] and cold["diagnostics"] == warm["diagnostics"]
    assert len(cold["catalog"]["skills"]) == 40 and kinds_by_path(cold["diagnostics"])
