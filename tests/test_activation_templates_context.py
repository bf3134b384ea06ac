"""Activation, template rendering and the system prompt, on temporary trees (no process)."""

from __future__ import annotations

import os
import shutil

import pytest
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.activation import activate
from harness_sidecar.resources.catalog import build_catalog
from harness_sidecar.resources.context import build_system_prompt, skill_listing
from harness_sidecar.resources.templates import render, render_text
from helpers import add_skill, write

LIMITS = Limits()


def kind_of(fn, *args) -> str:
    with pytest.raises(DomainError) as info:
        fn(*args)
    return info.value.kind


@pytest.fixture
def review(tree):
    root = tree("project")
    add_skill(root, "review", "Use when reviewing.", "\n\n  \nFirst line of the body.\nSecond.\n")
    write(root / "skills/review/references/checklist.md", "- check one\n")
    write(root / "skills/review/notes.md", "notes\n")
    write(root / "skills/review-old/secret.md", "sibling secret\n")
    write(root / "private.md", "root secret\n")
    return root


def test_body_is_read_on_activation_without_leading_blank_lines(review):
    catalog = build_catalog([str(review)], LIMITS)
    skill = activate(catalog, "review", [], LIMITS)
    assert skill.body == "First line of the body.\nSecond.\n"
    assert (skill.name, skill.description, skill.root) == ("review", "Use when reviewing.", str(review))


def test_resources_in_request_order_deduplicated_with_canonical_sources(review):
    catalog = build_catalog([str(review)], LIMITS)
    skill = activate(catalog, "review", ["notes.md", "references/checklist.md", "notes.md",
                                         "references/../notes.md"], LIMITS)
    assert [(r.request, r.content) for r in skill.resources] == [
        ("notes.md", "notes\n"), ("references/checklist.md", "- check one\n"), ("references/../notes.md", "notes\n")]
    assert skill.resources[1].source == os.path.realpath(review / "skills/review/references/checklist.md")


@pytest.mark.parametrize("request_path", [
    "../review-old/secret.md",  # sibling with a shared prefix
    "../../private.md",
    "references/../../../private.md",
    "/etc/passwd",
])
def test_resource_escapes_are_refused(review, request_path):
    catalog = build_catalog([str(review)], LIMITS)
    assert kind_of(activate, catalog, "review", [request_path], LIMITS) == "path_escape"


def test_resource_link_out_of_the_skill_is_refused(review):
    os.symlink(review / "private.md", review / "skills/review/link.md")
    os.symlink(review / "skills/review-old", review / "skills/review/old")
    catalog = build_catalog([str(review)], LIMITS)
    assert kind_of(activate, catalog, "review", ["link.md"], LIMITS) == "path_escape"
    assert kind_of(activate, catalog, "review", ["old/secret.md"], LIMITS) == "path_escape"


def test_missing_resource_and_unknown_skill(review):
    catalog = build_catalog([str(review)], LIMITS)
    assert kind_of(activate, catalog, "review", ["nope.md"], LIMITS) == "resource_not_found"
    assert kind_of(activate, catalog, "nothing", [], LIMITS) == "skill_not_found"
    assert kind_of(activate, catalog, "../review", [], LIMITS) == "invalid_arguments"


def test_failed_activation_leaves_no_partial_state(review):
    catalog = build_catalog([str(review)], LIMITS)
    with pytest.raises(DomainError):
        activate(catalog, "review", ["notes.md", "../../private.md"], LIMITS)


def test_changes_after_the_snapshot_are_rechecked(review, tree):
    catalog = build_catalog([str(review)], LIMITS)
    skill_md = review / "skills/review/SKILL.md"
    skill_md.write_text("---\nname: renamed\ndescription: d\n---\nbody\n")
    assert kind_of(activate, catalog, "review", [], LIMITS) == "name_mismatch"
    skill_md.write_text("---\nname: review\ndescription: d\n---\nnew body\n")
    assert activate(catalog, "review", [], LIMITS).body == "new body\n"  # read afresh every time
    skill_md.write_bytes(b"---\nname: review\ndescription: d\n---\n\xff\n")
    assert kind_of(activate, catalog, "review", [], LIMITS) == "not_utf8"


def test_skill_directory_renamed_after_start(review):
    catalog = build_catalog([str(review)], LIMITS)
    os.rename(review / "skills/review", review / "skills/review-new")
    assert kind_of(activate, catalog, "review", [], LIMITS) == "skill_not_found"


def test_skill_directory_replaced_by_an_escaping_link_after_start(review, tree):
    outside = tree("outside")
    add_skill(outside, "review", body="attacker body\n")
    catalog = build_catalog([str(review)], LIMITS)
    shutil.rmtree(review / "skills/review")
    os.symlink(outside / "skills/review", review / "skills/review")
    assert kind_of(activate, catalog, "review", [], LIMITS) == "path_escape"


def test_oversized_resource(review):
    write(review / "skills/review/big.md", "x" * 2000)
    catalog = build_catalog([str(review)], LIMITS)
    assert kind_of(activate, catalog, "review", ["big.md"], Limits(max_file_bytes=1000)) == "too_large"


# -- templates ---------------------------------------------------------------------------------

def test_placeholder_grammar():
    text = "{{a}} {{ a }} {{1x}} {{a}}{{b_2}} {{{a}}} {{a-b}}"
    assert render_text(text, {"a": "A", "b_2": "B", "extra": "ignored"}) == "A {{ a }} {{1x}} AB {A} {{a-b}}"


def test_values_are_inserted_as_is_and_never_rescanned():
    assert render_text("{{a}} {{b}}", {"a": "{{b}}", "b": "$1 \\g<0>"}) == "{{b}} $1 \\g<0>"


def test_missing_and_non_string_arguments():
    with pytest.raises(DomainError) as info:
        render_text("{{path}} {{focus}}", {"path": "x"})
    assert info.value.kind == "missing_argument" and info.value.data["variable"] == "focus"
    with pytest.raises(DomainError) as info:
        render_text("{{n}}", {"n": 3})
    assert info.value.kind == "invalid_arguments"


def test_render_reads_the_template_again(tree):
    root = tree("r")
    path = write(root / "templates/ask.md", "---\ndescription: Ask.\n---\n\nAsk about {{topic}}.\n")
    catalog = build_catalog([str(root)], LIMITS)
    assert render(catalog, "ask", {"topic": "parsers"}, LIMITS) == {"role": "user", "content": "Ask about parsers.\n"}
    path.write_text("Changed {{topic}}")
    assert render(catalog, "ask", {"topic": "x"}, LIMITS)["content"] == "Changed x"
    path.unlink()
    assert kind_of(render, catalog, "ask", {}, LIMITS) == "template_not_found"
    assert kind_of(render, catalog, "nope", {}, LIMITS) == "template_not_found"


# -- context -----------------------------------------------------------------------------------

def test_listing_counts_utf8_bytes_and_stops_at_the_first_entry_that_does_not_fit():
    entries = [("a", "é" * 10), ("b", "long " * 10), ("c", "x")]
    first = len(("a: " + "é" * 10 + "\n").encode("utf-8"))  # 3 + 20 + 1 bytes, 14 characters
    assert first == 24
    listing, left_out = skill_listing(entries, first + 5)
    assert listing == "a: " + "é" * 10 + "\n" and left_out == 2  # "c: x" would fit but is never packed in
    listing, left_out = skill_listing(entries, first - 1)
    assert listing == "" and left_out == 3


def test_system_prompt_order_and_only_active_bodies(tree):
    project, user = tree("project"), tree("user")
    write(project / "AGENTS.md", "PROJECT RULES")
    write(user / "AGENTS.md", "USER RULES")
    add_skill(project, "zed", "Zed skill.", "ZED BODY\n")
    add_skill(project, "alpha", "Alpha skill.", "ALPHA BODY\n")
    add_skill(user, "inactive", "Never active.", "INACTIVE BODY\n")
    write(project / "skills/alpha/ref.md", "ALPHA REF")
    catalog = build_catalog([str(project), str(user)], LIMITS)
    activated = {"zed": activate(catalog, "zed", [], LIMITS), "alpha": activate(catalog, "alpha", ["ref.md"], LIMITS)}
    prompt = build_system_prompt(catalog, activated, 8000)
    order = [prompt.index(s) for s in ["USER RULES", "PROJECT RULES", "alpha: Alpha skill.", "inactive: Never",
                                       "zed: Zed skill.", "ALPHA BODY", "ALPHA REF", "ZED BODY"]]
    assert order == sorted(order)
    assert "INACTIVE BODY" not in prompt


def test_system_prompt_notes_left_out_skills(tree):
    root = tree("r")
    for i in range(10):
        add_skill(root, f"skill-{i}", "d" * 20)
    catalog = build_catalog([str(root)], LIMITS)
    prompt = build_system_prompt(catalog, {}, 100)
    assert prompt.count(": " + "d" * 20) == 3  # each entry is 31 bytes
    assert "7 more skills not listed" in prompt


# -- the skill's folder and files (protocol v2 §4) -------------------------------------------------

@pytest.fixture
def pdf(tree):
    """A skill as people write it: scripts, a reference in another case, a font, dot-files."""
    root = tree("pdf-root")
    add_skill(root, "pdf", "Use for PDFs.", "See REFERENCE.md, then run `python scripts/fill_form.py`.\n")
    skill = root / "skills/pdf"
    write(skill / "reference.md", "# Reference\n")
    write(skill / "scripts/fill_form.py", "print('fill')\n")
    write(skill / "scripts/Zeta.py", "z\n")
    write(skill / "fonts/Font.ttf", bytes(range(256)) * 4)
    write(skill / "a.txt", "a")
    write(skill / ".env", "SECRET=1\n")
    write(skill / ".git/config", "[core]\n")
    write(skill / "scripts/.cache/x.pyc", b"\x00")
    write(root / "outside.md", "outside the skill\n")
    os.symlink(root / "outside.md", skill / "escape.md")  # inside the root, outside the skill
    os.symlink(skill / "scripts", skill / "bin")  # inside the skill: listed under its own name
    os.symlink(skill, skill / "scripts/loop")  # leads back to an ancestor: not followed
    os.symlink(skill / "nothing", skill / "dangling.md")
    return root


def test_activation_answers_the_directory_and_its_files(pdf):
    catalog = build_catalog([str(pdf)], LIMITS)
    wire = activate(catalog, "pdf", [], LIMITS).to_wire()
    assert wire["directory"] == str(pdf / "skills/pdf")
    listed = {f["path"]: f["size"] for f in wire["files"]}
    assert list(listed) == ["SKILL.md", "a.txt", "bin/Zeta.py", "bin/fill_form.py", "fonts/Font.ttf",
                            "reference.md", "scripts/Zeta.py", "scripts/fill_form.py"]  # by code point
    assert listed["fonts/Font.ttf"] == 1024 and listed["a.txt"] == 1
    assert listed["SKILL.md"] == (pdf / "skills/pdf/SKILL.md").stat().st_size
    assert "filesOmitted" not in wire


def test_the_listing_is_capped_by_max_listed_files(pdf):
    catalog = build_catalog([str(pdf)], LIMITS)
    wire = activate(catalog, "pdf", [], Limits(max_listed_files=3)).to_wire()
    assert [f["path"] for f in wire["files"]] == ["SKILL.md", "a.txt", "bin/Zeta.py"]
    assert wire["filesOmitted"] == 5


def test_load_skill_text_ends_with_the_directory_and_the_listing(pdf):
    catalog = build_catalog([str(pdf)], LIMITS)
    text = activate(catalog, "pdf", [], Limits(max_listed_files=2)).load_skill_text()
    assert text.startswith("See REFERENCE.md, then run `python scripts/fill_form.py`.\n\n---\n")
    assert text.endswith(f"Skill directory: {pdf / 'skills/pdf'}\n"
                         "Files in it (paths relative to the skill directory; sizes in bytes):\n"
                         f"- SKILL.md ({(pdf / 'skills/pdf/SKILL.md').stat().st_size})\n- a.txt (1)\n"
                         "- … and 6 more files not listed\n"
                         "Dot-entries (names starting with '.', not listed above): "
                         ".env, .git, bin/.cache, scripts/.cache\n")


def test_a_binary_resource_comes_back_as_base64_byte_exact(pdf):
    import base64

    catalog = build_catalog([str(pdf)], LIMITS)
    skill = activate(catalog, "pdf", ["reference.md", "fonts/Font.ttf"], LIMITS)  # one binary file fails nothing
    text, font = [r.to_wire() for r in skill.resources]
    assert text == {"request": "reference.md", "path": os.path.realpath(pdf / "skills/pdf/reference.md"),
                    "source": {"kind": "root", "root": str(pdf)}, "content": "# Reference\n"}
    assert font["encoding"] == "base64" and font["mimeType"] == "font/ttf"
    assert base64.b64decode(font["content"]) == (pdf / "skills/pdf/fonts/Font.ttf").read_bytes()


@pytest.mark.parametrize("name, data, mime", [
    ("doc.pdf", b"%PDF-1.7\n\xe2\xe3\xcf\xd3\n", "application/pdf"),
    ("nul.txt", b"valid utf-8 but \x00 inside", "text/plain"),
    ("blob", b"\xff\xfe\xfd", "application/octet-stream"),
    ("archive.tar.gz", b"\x1f\x8b\x08\x00", "application/gzip"),
])
def test_binary_resources_carry_a_mime_type(pdf, name, data, mime):
    import base64

    write(pdf / "skills/pdf" / name, data)
    catalog = build_catalog([str(pdf)], LIMITS)
    (resource,) = activate(catalog, "pdf", [name], LIMITS).to_wire()["resources"]
    assert (resource["encoding"], resource["mimeType"]) == ("base64", mime)
    assert base64.b64decode(resource["content"]) == data


def test_a_missing_resource_suggests_close_matches_case_first(pdf):
    catalog = build_catalog([str(pdf)], LIMITS)
    with pytest.raises(DomainError) as info:
        activate(catalog, "pdf", ["REFERENCE.md"], LIMITS)
    assert info.value.kind == "resource_not_found"
    assert info.value.data["suggestions"][0] == "reference.md"
    assert "did you mean reference.md" in info.value.message
    with pytest.raises(DomainError) as info:
        activate(catalog, "pdf", ["fill_form.py"], LIMITS)
    assert info.value.data["suggestions"][:2] == ["bin/fill_form.py", "scripts/fill_form.py"]
    with pytest.raises(DomainError) as info:
        activate(catalog, "pdf", ["nothing-like-it.bin"], LIMITS)
    assert info.value.data["suggestions"] == []
    for hidden in (".env", "escape.md"):  # never suggested: not listed
        with pytest.raises(DomainError) as info:
            activate(catalog, "pdf", [hidden.upper()], LIMITS)
        assert hidden not in info.value.data.get("suggestions", [])


def test_a_body_that_is_not_utf8_is_reported_at_its_offset_in_the_file(tree):
    root = tree("r")
    head = b"---\nname: bad\ndescription: d\n---\nline one\n"
    path = write(root / "skills/bad/SKILL.md", head + b"caf\xe9\n")
    catalog = build_catalog([str(root)], LIMITS)
    with pytest.raises(DomainError) as info:
        activate(catalog, "bad", [], LIMITS)
    assert info.value.kind == "not_utf8"
    assert info.value.data["byte"] == len(head) + 3 == path.read_bytes().index(b"\xe9")
    assert info.value.data["line"] == 6
    assert f"byte {len(head) + 3}, line 6" in info.value.message


def test_a_binary_resource_is_named_in_the_system_prompt_not_pasted(pdf):
    catalog = build_catalog([str(pdf)], LIMITS)
    activated = {"pdf": activate(catalog, "pdf", ["fonts/Font.ttf"], LIMITS)}
    prompt = build_system_prompt(catalog, activated, 8000)
    source = os.path.realpath(pdf / "skills/pdf/fonts/Font.ttf")
    assert f"## Resource: fonts/Font.ttf\n\n(font/ttf, 1024 bytes, not text: {source})\n" in prompt


# -- find_skills ranking (the builtin is tested through the process in test_skills_as_written_e2e) ---

def test_find_skills_ranking_tiers():
    from harness_sidecar.resources.search import rank

    entries = [("pdf", "Work with PDF files."), ("pdf-forms", "Fill PDF forms."), ("forms-pdf", "Other."),
               ("docx", "Word documents; can export to pdf."), ("excel", "Spreadsheets.")]
    assert [n for n, _ in rank(entries, "pdf")] == ["pdf", "pdf-forms", "forms-pdf", "docx"]
    # the whole query as a name first, then 'pdf' (a run of the query's words), then by words
    assert [n for n, _ in rank(entries, "PDF Forms")] == ["pdf-forms", "pdf", "forms-pdf", "docx"]
    assert rank(entries, "nothing") == [] and rank(entries, "   ") == []


def test_left_out_of_listing_counts_as_the_listing_does(tree):
    from harness_sidecar.resources.context import left_out_of_listing

    root = tree("r")
    for i, description in enumerate(["é" * 10, "x" * 40, "y", "z" * 5]):
        add_skill(root, f"s{i}", description)
    catalog = build_catalog([str(root)], LIMITS)
    entries = [(s.name, s.description) for s in catalog.skills.values()]
    for budget in range(0, 120):
        assert left_out_of_listing(catalog, budget) == skill_listing(entries, budget)[1], budget
