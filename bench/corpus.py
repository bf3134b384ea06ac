"""Compare the YAML-free frontmatter reading with YAML's on a corpus of real skills.

    python -m bench.corpus DIR [DIR ...]

DIR: clones of public skill repositories (e.g. anthropics/skills, openai/skills, obra/superpowers;
they are not part of this repository). For every ``*.md`` with a frontmatter, the fast reading
(``frontmatter.plain_mapping``), when it takes the text at all, must give what
``yaml.safe_load`` gives with both safe loaders (types included), and the same line for every key. Prints how
many were compared and how many the fast path read; exits 1 on the first difference. The test
suite checks the same property on generated cases (tests/test_frontmatter.py); this is the check
against what people actually write.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

import yaml  # noqa: E402
from harness_sidecar.resources import frontmatter  # noqa: E402
from harness_sidecar.resources.frontmatter import FrontmatterError, plain_mapping  # noqa: E402

LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])


def yaml_reading(text: str, loader: type) -> object:
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - only the safe loaders are passed
    except Exception as exc:  # noqa: BLE001
        return type(exc)


def yaml_key_lines(text: str) -> dict[str, int]:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: dict[str, int] = {}
    for key, _ in node.value:
        lines.setdefault(key.value, key.start_mark.line)
    return lines


def same(a: object, b: object) -> bool:
    """Equal and of the same types all the way down, keys in the same order (``True == 1`` and
    ``1 == 1.0`` are differences here: a bool read as an int is a different answer)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    return a == b


def difference(text: str) -> str | None:
    """Why the fast reading of ``text`` differs from YAML's, or ``None`` (also when it declines): the
    mapping (types included), each key's line, and the written text of top-level plain scalars (what
    a hint quotes)."""
    fast = plain_mapping(text)
    if fast is None:
        return None
    for loader in LOADERS:
        expected = yaml_reading(text, loader)
        if not same(expected, fast[0] or None):
            return f"{loader.__name__} reads {expected!r}, the fast path {fast[0]!r}"
    if fast[0] and yaml_key_lines(text) != fast[1]:
        return f"key lines {yaml_key_lines(text)} vs {fast[1]}"
    if fast[0] and frontmatter._load_with_yaml(text, 0)[2] != frontmatter._plain(text, 0)[2]:
        return f"written scalars {frontmatter._load_with_yaml(text, 0)[2]} vs {frontmatter._plain(text, 0)[2]}"
    return None


def main(args: list[str]) -> int:
    if not args:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    compared = fast = 0
    for directory in args:
        for path in sorted(p for p in Path(directory).rglob("*.md") if p.is_file()):
            try:
                text, _, _ = frontmatter.split(path.read_bytes(), True, 1 << 20, required=True)
            except FrontmatterError:
                continue
            if text is None:
                continue
            compared += 1
            why = difference(text)
            if why:
                print(f"{path}: {why}")
                return 1
            fast += plain_mapping(text) is not None
    print(f"{compared} frontmatters compared, {fast} read without YAML, no difference")
    return 0 if compared else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
