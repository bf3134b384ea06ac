"""Frontmatter read without YAML gives exactly what the safe YAML loader gives, or defers to it.

``plain_mapping`` reads the common ``key: text`` frontmatter without importing YAML. It must
never answer differently from ``yaml.safe_load`` (PyYAML's pure loader) nor from libyaml's
``CSafeLoader`` (what the YAML path uses): either the same mapping and key lines, or
``None`` (YAML reads it). Checked on hand-written edge cases, on thousands of generated
ones, and, when ``HARNESS_SKILL_CORPUS`` names a directory of real skills, on each of them.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness_sidecar.console.client import child_env
from harness_sidecar.resources import frontmatter
from harness_sidecar.resources.frontmatter import (
    FrontmatterError,
    load_yaml,
    plain_mapping,
)

from bench.corpus import LOADERS, difference, same, yaml_key_lines, yaml_reading  # noqa: E402 - one comparison


def assert_same_as_yaml(text: str) -> bool:
    """Assert the fast reading (if any) equals YAML's; return whether the fast path took it."""
    fast = plain_mapping(text)
    if fast is None:
        return False
    for loader in LOADERS:
        assert same(yaml_reading(text, loader), fast[0] or None), (loader.__name__, text)  # types too
    if fast[0]:
        assert yaml_key_lines(text) == fast[1], text
    assert difference(text) is None, text  # and the written text a hint quotes
    return True


def test_the_resolver_patterns_are_the_installed_yaml_resolver_patterns():
    """If PyYAML ever resolves a plain scalar differently, the fast path must learn it first."""
    from yaml.resolver import Resolver

    installed = {(regexp.pattern, regexp.flags) for resolvers in Resolver.yaml_implicit_resolvers.values()
                 for _, regexp in resolvers}
    ours = {(pattern, re.compile(pattern, flags).flags) for pattern, flags in frontmatter.IMPLICIT_RESOLVER_PATTERNS}
    assert installed == ours


def test_outside_numbers_only_the_listed_words_resolve_to_something_else():
    """A value not starting like a number is text unless it is one of WORDS_NOT_TEXT (no regex run)."""
    from yaml.resolver import Resolver

    non_numeric = [(tag, regexp) for first, resolvers in Resolver.yaml_implicit_resolvers.items()
                   if first not in frontmatter.NUMERIC_START for tag, regexp in resolvers]
    assert {tag for tag, _ in non_numeric} == {"tag:yaml.org,2002:" + t for t in ("bool", "merge", "null", "value",
                                                                                  "yaml")}
    for word in frontmatter.WORDS_NOT_TEXT:
        assert any(regexp.match(word) for _, regexp in non_numeric), word
    # each of those patterns is an alternation of literal words: every word it names is listed
    for _, regexp in non_numeric:
        body = re.sub(r"\s+", "", regexp.pattern)[len("^(?:"):-len(")$")]
        for word in body.split("|"):
            assert word.replace("\\", "") in frontmatter.WORDS_NOT_TEXT, (regexp.pattern, word)


EDGE_CASES = [
    "name: x\ndescription: plain text\n",
    "name: x\ndescription: 'it''s quoted'\n",
    'name: x\ndescription: "double quoted: with a colon"\n',
    "name: x\ndescription: trailing spaces   \n",
    "name: x\ndescription:    leading spaces\n",
    "name: x\ndescription: inner  spaces  kept\n",
    "name: x\ndescription: brackets [a] {b}, c\n",
    "name: x\ndescription: a#b is not a comment\n",
    "name: x\ndescription: a # is a comment\n",
    "name: x\ndescription: url http://example.com/a:b\n",
    "name: x\ndescription: ends with a colon:\n",
    "name: x\ndescription: a: b\n",
    "name: x\ndescription: é 😀 \u3000 ideographic space kept\u3000\n",
    "name: x\ndescription: zero\u200bwidth\n",
    "name: x\ndescription: line\u2028separator\n",
    "name: x\ndescription: next\x85line\n",
    "name: x\ndescription: tab\there\n",
    "name: x\ndescription: bom\ufeffinside\n",
    "name: x\ndescription: del\x7f\n",
    "name: x\r\ndescription: windows line ends\r\n",
    "name: x\rdescription: old mac\r",
    "name: on\ndescription: d\n",
    "name: yes\ndescription: d\n",
    "name: 1234\ndescription: d\n",
    "name: 1_000\ndescription: 0x1f\n",
    "name: x\ndescription: 12:30\n",
    "name: x\ndescription: 2024-01-02\n",
    "name: x\ndescription: ~\n",
    "name: x\ndescription: null\n",
    "name: x\ndescription: =\n",
    "name: x\ndescription:\n",
    "name: x\ndescription: \n",
    "name: x\ndescription: .5\n",
    "name: x\ndescription: .inf\n",
    "name: x\ndescription: y\n",
    "name: x\ndescription: n\n",
    "name: x\ndescription: -dash start\n",
    "name: x\ndescription: - a list item\n",
    "name: x\ndescription: ? complex\n",
    "name: x\ndescription: *alias\n",
    "name: x\ndescription: &anchor d\n",
    "name: x\ndescription: !tag d\n",
    "name: x\ndescription: |\n  block\n",
    "name: x\ndescription: >\n  folded\n",
    "name: x\ndescription: %percent\n",
    "name: x\ndescription: @at\n",
    "name: x\ndescription: `tick\n",
    "name: x\ndescription: 'unterminated\n",
    "name: x\ndescription: 'a' b'\n",
    "name: x\ndescription: 'a''\n",
    "name: x\ndescription: ''\n",
    'name: x\ndescription: ""\n',
    'name: x\ndescription: "escape \\n inside"\n',
    "name: x\ndescription: 'quoted' # comment\n",
    "name: x\ndescription: continued\n  on the next line\n",
    "name: x\ndescription: continued\nat column zero\n",
    "name: x\n\n# a comment line\ndescription: d\n",
    "  name: x\n",
    "name : x\n",
    "name:x\n",
    "name: x\nname: y\ndescription: d\n",
    "on: x\n",
    "Name: x\nNULL: y\n",
    "k_1: v\na-b: w\nA9: z\n",
    "x" * 64 + ": long key\n",
    "x" * 65 + ": longer key\n",
    "metadata:\n  author: me\n",
    "metadata:\n  author: vercel\n  version: \"1.0.0\"\n  argument-hint: <file-or-pattern>\n",
    "requires:\n  mcp: [rube]\n",
    "requires:\n  mcp: [ a , b.c,d-e ]\n  none: []\n",
    "tags: [1, 2]\n",
    "tags: [yes]\n",
    "tags: [a b]\n",
    "tags: [a,]\n",
    "metadata:\n  a: x\n    b: deeper\n",
    "metadata:\n    a: x\n  b: shallower\n",
    "metadata:\n  a: x\n    continued\n",
    "metadata:\n  a: x\n# comment\n\n  b: y\nname: z\n",
    "metadata:\n  # indented comment\n  a: x\n",
    "metadata:\nname: x\n",
    "metadata:\n  a:\n    b: c\n",
    # what real SKILL.md files hold beyond text (the corpus of issue 29): read without YAML, as YAML reads it
    "name: x\ndescription: >\n  folded\n  across lines\n\n  a paragraph\nlicense: MIT\n",
    "name: x\ndescription: >-\n  folded, stripped\n  end\n",
    "name: x\ndescription: |\n  literal\n  lines\n\n\n  kept\n\nlicense: MIT\n",
    "name: x\ndescription: |-\n  literal, stripped\n",
    "name: x\ndescription: |\n  at the very end",
    "name: x\ndescription: >\n  a: b # not a comment 'in' a \"block\"\n",
    "name: x\ndescription: >+\n  kept\n\n",
    "name: x\ndescription: |2\n   indicated\n",
    "name: x\ndescription: >\n\n  leading blank\n",
    "name: x\ndescription: >\n    more\n  less\n",
    "name: x\ndescription: >\n  less\n    more indented\n",
    "name: x\ndescription: >\n  a\n   \n  spaces past the indentation\n",
    "name: x\ndescription: >\n  a\n \n  fewer spaces\n",
    "name: x\ndescription: >\n  a\n b\n",
    "name: x\ndescription: >\n  a\n# comment\n  b\n",
    "name: x\ndescription: >\nname: y\n",
    "name: x\ndescription: > # c\n  a\n",
    "name: x\nallowed-tools:\n  - Read\n  - Bash(git:*)\n# c\n  - 'q'\nlicense: MIT\n",
    "name: x\nallowed-tools:\n- Read\n- Write\nlicense: MIT\n",
    "name: x\nallowed-tools:\n  - Read\n    - deeper\n",
    "name: x\nallowed-tools:\n  - Read\n- shallower\n",
    "name: x\nallowed-tools:\n  - Read\n  other: y\n",
    "name: x\nallowed-tools:\n  - key: value\n",
    "name: x\nallowed-tools:\n  -\n",
    "name: x\nallowed-tools:\n  - - nested\n",
    "name: x\nallowed-tools:\n  - Read\n    continued\n",
    "name: x\nlist:\n  - 1\n  - yes\n  - ~\n  - [a, 'b']\n",
    "metadata:\n  author: a\n  clawdbot:\n    emoji: \"\"\n    tags: [a]\n  after: b\nname: x\n",
    "metadata:\n  tags:\n  - a\n  - b\n  other: c\n",
    "metadata:\n  tags:\n    - a\n  other: c\n",
    "metadata:\n  tags:\n    - a\n    other: c\n",
    "metadata:\n  empty:\n  other: c\n",
    "metadata:\n  a:\n    b:\n      c: d\n",
    "metadata:\n  a:\n   b: odd\n",
    "user-invocable: true\ndisable-model-invocation: False\nflags: [on, OFF, y]\n",
    "name: x\nversion: 1\nlevel: -3\nplus: +4\nzero: 0\noctal: 012\nunder: 1_000\nhex: 0x1f\n",
    "name: x\nversion: 1.0\nneg: -0.5\nexp: 1.0e+3\nsexa: 1:30\ndot: 1.\n",
    "name: x\ncreated: 2025-12-16\nbad: 2025-13-45\n",
    "name: x\ncreated: 2025-12-16\n",
    "name: x\nwhen: 2025-12-16T10:00:00Z\n",
    "name: x\nshort: 2025-1-2\n",
    "name: on\ndescription: d\n",
    "name: ~\ndescription: null\nlicense:\n",
    'name: x\ntools: ["Read", "Write", "Bash(git add:*)", \'it\'\'s\', plain, 1, yes]\n',
    'name: x\ntools: ["a", "b",]\n',
    'name: x\ntools: ["a" "b"]\n',
    'name: x\ntools: ["a\\"b"]\n',
    'name: x\ntools: ["a"] # c\n',
    'name: x\ntools: ["a"]x\n',
    'name: x\ntools: [ "a" , \'b\' ]\n',
    'name: x\ntools: ["a, b", "[c]", "d: e", "# f"]\n',
    "name: x\ntools: [2025-01-02, 1.5, -1, ~, null]\n",
    "name: x\ntools: [<<]\n",
    "metadata:\n  - a\n",
    "description: text\n  sub: x\n",
    "allowed-tools: Bash(git:*) Read\n",
    "...\n",
    "--- x\n",
    "",
    "\n\n",
    "# only a comment\n",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_read_as_yaml_reads_them(text):
    assert_same_as_yaml(text)
    # The YAML path uses libyaml when present; PyYAML's pure loader differs from it on some of
    # these (a tab inside a plain scalar), which is why the fast path leaves them to YAML.
    expected = yaml_reading(text, LOADERS[-1])
    try:
        got: object = load_yaml(text, 1)[0]
    except FrontmatterError:
        got = "error"
    if isinstance(expected, type):
        assert got == "error", text
    elif isinstance(expected, dict) or expected is None:
        assert got == (expected or {}), text


def test_the_common_frontmatters_take_the_fast_path():
    """A regression that sends every file to YAML would keep results right and lose the speed."""
    for text in ["name: review\ndescription: Use when reviewing code; not for deploys.\n",
                 "name: pdf\ndescription: 'Work with PDFs: fill forms, extract text.'\nlicense: Proprietary\n",
                 'name: x\ndescription: "Use when: the user asks."\n',
                 "name: x\r\ndescription: Windows line ends.\r\n",
                 # what sent 890 of the corpus's 2,508 frontmatters to YAML (issue 32): block scalars, lists,
                 # booleans, numbers, dates, quoted list items, nested maps
                 "name: x\ndescription: >\n  Folded across\n  lines.\nlicense: MIT\n",
                 "name: x\ndescription: |-\n  Literal\n\n  lines.\n",
                 "name: x\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git:*)\n",
                 'name: x\ndescription: d\nallowed-tools: ["Read", "Write"]\nuser-invocable: false\n',
                 "name: x\ndescription: d\nmetadata:\n  version: 2\n  updated: 2025-12-16\n  ui:\n    icon: x\n"]:
        assert plain_mapping(text) is not None, text
        assert assert_same_as_yaml(text)


FRAGMENTS = ["true", "False", "2025-12-16", "2025-13-45", "-7", "3.25", "a", "word", "two words", "é", "😀", " ", "  ", "'", '"', "''", "#", " #", ": ", ":", "-", "- ", "?",
             "[", "]", "{", "}", ",", "&", "*", "!", "|", ">", "%", "@", "`", "~", "null", "yes", "on", "Off", "1",
             "1.5", "-2", "+3", "0x1f", "0o7", "0b1", "1_0", "2024-01-02", "12:30", "=", "<<", "\\", "\\n", "\t",
             "\u2028", "\u2029", "\x85", "\ufeff", "\u00a0", "\x7f", "\x01", "\r", ".", "..", ".nan", "e3", "0"]
WORDS = ["use", " when", " the", " user", " asks", "-", "/", ".", " x:y", "(a)", " 42"]
KEYS = ["name", "description", "license", "on", "yes", "a-b", "k_1", "Null", "x" * 70, "1a", "-k", "'q'", "", "y"]
SEPARATORS = [": ", ":", ":  ", " : ", ":\t", ": '", ': "']


def generated_value(rng: random.Random) -> str:
    # mostly words with a few tricky fragments, so that both paths are exercised often
    value = "".join(rng.choice(FRAGMENTS) if rng.random() < 0.25 else rng.choice(WORDS)
                    for _ in range(rng.randint(0, 5)))
    roll = rng.random()
    if roll < 0.25:
        quote = rng.choice("'\"")
        value = quote + value + quote
    elif roll < 0.35:
        value = rng.choice(["[rube]", "[a, b]", "[ a ,b ]", "[]", "[a b]", "[1, 2]", "[yes]", "[a,]", "[a.b, c/d]",
                            "[x]  ", "[x] # c", "[[x]]", "['x']"])
    return value


def generated_text(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.08:
            lines.append(rng.choice(["", "# comment", "  indented: x", "- item", "...", " ", "  # comment",
                                     "    deeper: y", "\tindented: z", "  - item", "  continued"]))
            continue
        if roll < 0.14:  # a block scalar, or a list, below a key
            head = rng.choice(["description: >", "description: |", "description: >-", "description: |-",
                               "description: >+", "description: |2", "allowed-tools:", "tags:", "metadata:"])
            lines.append(head)
            indent = rng.choice(["  ", "  ", "    ", " "])
            for _ in range(rng.randint(0, 4)):
                if rng.random() < 0.15:
                    indent = rng.choice(["  ", "    ", " ", "", "\t"])
                item = rng.choice(["- ", "- ", "", "key: ", "-"]) if head.endswith(":") else ""
                lines.append(rng.choice(["", indent]) if rng.random() < 0.12 else indent + item + generated_value(rng))
            continue
        key = rng.choice(KEYS) if rng.random() < 0.2 else rng.choice(["name", "description", "license"])
        separator = rng.choice(SEPARATORS) if rng.random() < 0.2 else ": "
        if roll < 0.3:  # a nested block
            lines.append(rng.choice(["metadata:", "requires:", "metadata:  ", "on:", "metadata: # c", key + ":"]))
            indent = rng.choice(["  ", "  ", "    ", " "])
            for _ in range(rng.randint(0, 3)):
                if rng.random() < 0.1:
                    indent = rng.choice(["  ", "    ", " ", "\t", ""])
                child = rng.choice(["author", "version", "mcp", "on", "argument-hint", "1"]) if rng.random() < 0.3 \
                    else rng.choice(["author", "version"])
                lines.append(indent + child + (": " if rng.random() < 0.9 else rng.choice(SEPARATORS))
                             + generated_value(rng))
            continue
        lines.append(key + separator + generated_value(rng))
    return "\n".join(lines) + rng.choice(["", "\n", "\r\n"])


def test_thousands_of_generated_frontmatters_read_as_yaml_reads_them():
    rng = random.Random(20261130)
    fast = nested = blocks = 0
    for _ in range(30000):
        text = generated_text(rng)
        if assert_same_as_yaml(text):
            fast += 1
            nested += any(isinstance(v, (dict, list)) for v in plain_mapping(text)[0].values())
            blocks += ("description: >" in text or "description: |" in text) and "\n " in text
    # enough of them took the fast path (flat, nested, block scalars) for the comparison to mean something
    assert fast > 3000 and nested > 300 and blocks > 100, (fast, nested, blocks)


def test_a_thread_of_ordinary_skills_never_imports_yaml(tmp_path):
    for i in range(20):
        directory = tmp_path / "skills" / f"s{i}"
        directory.mkdir(parents=True)
        (directory / "SKILL.md").write_text(f"---\nname: s{i}\ndescription: 'Use when: task {i}.'\n---\nbody\n")
    code = ("import sys; from harness_sidecar.resources.catalog import build_catalog; "
            "from harness_sidecar.base.limits import Limits; "
            f"c = build_catalog([{str(tmp_path)!r}], Limits()); assert len(c.skills) == 20, c.diagnostics; "
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# -- real skills' frontmatter (v3 §3: descriptions across lines) -----------------------------------

REAL_SKILLS = sorted((Path(__file__).parent / "fixtures" / "real-skills").glob("*/skills/*/SKILL.md"))


@pytest.mark.parametrize("path", REAL_SKILLS, ids=lambda p: p.parent.name)
def test_real_frontmatters_pass_the_rules_and_read_as_yaml_reads_them(path):
    data = path.read_bytes()
    fm = frontmatter.parse(data, True, 1 << 16, required=True)
    text = frontmatter.split(data, True, 1 << 16, required=True)[0]
    for loader in LOADERS:
        assert fm.data == yaml_reading(text, loader)
    assert frontmatter.check_skill(fm, path.parent.name) == []  # only the spec's rules reject
    description = fm.data["description"]
    assert frontmatter.one_line(description) == " ".join(description.split())


@pytest.mark.parametrize("name, written", [
    ("debugger", "Debugging specialist for errors, test failures, and unexpected\nbehavior. Use proactively when "
                 "encountering any issues.\n"),  # single-quoted across lines, with blank lines
    ("coverage", 'Analyze test coverage gaps. Use when user says "test coverage", "what\'s not tested", "coverage '
                 'gaps", "missing tests", "coverage report", or "what needs testing".'),  # >- folded
])
def test_a_real_description_across_lines_is_read_as_written(name, written):
    (path,) = [p for p in REAL_SKILLS if p.parent.name == name]
    fm = frontmatter.parse(path.read_bytes(), True, 1 << 16, required=True)
    assert fm.data["description"] == written
    assert "\n" not in frontmatter.one_line(written) and frontmatter.one_line(written) == written.strip().replace(
        "\n", " ")


@pytest.mark.parametrize("text", [
    "name: x\ndescription: d\nallowed-tools:\n  - Read\n  - Write\nmetadata:\n  author: a\n  tags: [a, b]\n",
    "name: x\ndescription: |\n  one\n\n  two\nlicense:\nrequires:\n  mcp:\n    - rube\n",
    "name: x\ndescription: d\nversion: 1.0\n",  # a number: the safe constructor
    "name: x\ndescription: d\ncreated: 2024-01-02\n",  # a date
    "name: x\ndescription: d\nflag: yes\n",  # a boolean
    "name: x\ndescription: d\nbase: &b {k: v}\nmore:\n  <<: *b\n  j: w\n",  # a merge key
    "name: x\ndescription: d\na: &a [x, y]\nb: *a\n",  # an alias met twice
    "name: x\ndescription: d\n? [complex]\n: key\n",
    "name: x\ndescription: d\nnull: v\n~: w\n",
    "name: x\ndescription: d\ns: !!set {a, b}\n",
    "name: x\ndescription: !!str 123\nlist: [1, two]\n",
])
def test_mappings_of_lists_strings_and_nulls_read_as_the_safe_constructor_reads_them(text):
    """The frontmatters real skills write (lists, nested maps, nulls) are built from YAML's nodes
    without the constructor; everything else still goes to it. Both give what yaml.safe_load gives."""
    for loader in LOADERS:
        expected = yaml_reading(text, loader)
        if isinstance(expected, type):  # an error: ours is an error too
            with pytest.raises(FrontmatterError):
                frontmatter.load_yaml(text, 2)
        else:
            assert frontmatter.load_yaml(text, 2)[0] == expected
            assert type(frontmatter.load_yaml(text, 2)[0]) is type(expected)
