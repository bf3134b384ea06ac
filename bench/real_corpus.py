"""A large corpus of real skills laid out as sidecar roots, for ``bench.find`` and ``bench.spawn``.

The corpus is not part of this repository: it is a directory of public skill repositories, one
folder each (e.g. ``git --git-dir=<bare clone> archive HEAD | tar -x -C <corpus>/<owner>+<name>``
for anthropics/skills, openai/skills, openai/plugins, obra/superpowers, trailofbits/skills,
K-Dense-AI/claude-scientific-skills, ComposioHQ/awesome-claude-skills, wshobson/agents,
alirezarezvani/claude-skills, github/awesome-copilot, davila7/claude-code-templates,
affaan-m/everything-claude-code, vercel-labs/agent-skills). Give it as an argument or in
``HARNESS_BENCH_CORPUS``.

Repositories keep their skills in many layouts (``skills/<name>/``, ``plugins/*/skills/<name>/``,
``<category>/<name>/``, ``<name>/``). The sidecar reads ``<root>/skills/<name>/SKILL.md``, so each
repository becomes roots under ``<corpus>/.harness-roots/``: every folder holding a ``SKILL.md``
is hard-linked, unchanged, to
``<repository>/skills/<folder name>``; a folder name met again in the same repository goes to the
next root of that repository (``<repository>+2``, …). Links inside the skills are kept as they are.
The layout is made once and reused while the corpus is unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ENV = "HARNESS_BENCH_CORPUS"
LAYOUT = ".harness-roots"
LAYOUT_VERSION = 2
SKIP = {".git", "node_modules", LAYOUT}


def corpus_dir(given: str | None) -> Path:
    """The corpus directory from the argument or ``HARNESS_BENCH_CORPUS``; exits with a clear
    message when it is missing."""
    value = given or os.environ.get(ENV)
    if not value:
        sys.exit(f"no corpus: give a directory of public skill repositories as an argument or in {ENV} "
                 f"(see bench/real_corpus.py for how to make one)")
    path = Path(value).expanduser().resolve()
    if not path.is_dir() or not any(p.is_dir() and not p.name.startswith(".") for p in path.iterdir()):
        sys.exit(f"no corpus at {path}: it must be a directory holding one folder per skill repository "
                 f"(see bench/real_corpus.py)")
    return path


def _skill_folders(repository: Path) -> list[Path]:
    found = []
    for directory, subdirectories, files in os.walk(repository):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIP)
        if "SKILL.md" in files and Path(directory) != repository:
            found.append(Path(directory))
    return found


def _link_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True, copy_function=os.link)


def roots(corpus: Path) -> list[str]:
    """The roots of the corpus's layout, in repository order (made on first use)."""
    layout = corpus / LAYOUT
    manifest = layout / "roots.json"
    repositories = sorted(p for p in corpus.iterdir() if p.is_dir() and not p.name.startswith("."))
    stamp = [LAYOUT_VERSION] + [[p.name, p.stat().st_mtime_ns] for p in repositories]
    if manifest.exists():
        saved = json.loads(manifest.read_text())
        if saved["stamp"] == stamp:
            return saved["roots"]
        shutil.rmtree(layout)
    made: list[str] = []
    for repository in repositories:
        taken: dict[str, int] = {}
        for folder in _skill_folders(repository):
            n = taken.get(folder.name, 0) + 1
            taken[folder.name] = n
            root = layout / (repository.name if n == 1 else f"{repository.name}+{n}")
            if str(root) not in made:
                made.append(str(root))
            _link_tree(folder, root / "skills" / folder.name)
    # repository order, then the second roots of each
    made.sort(key=lambda r: (Path(r).name.split("+")[0:2], Path(r).name))
    manifest.write_text(json.dumps({"stamp": stamp, "roots": made}, indent=1))
    return made


def describe(corpus: Path, root_list: list[str]) -> str:
    skills = sum(len(os.listdir(os.path.join(r, "skills"))) for r in root_list)
    repositories = sorted({"+".join(Path(r).name.split("+")[:2]) for r in root_list})
    return f"{skills} skill folders in {len(root_list)} roots from {len(repositories)} repositories ({corpus})"


if __name__ == "__main__":
    where = corpus_dir(sys.argv[1] if len(sys.argv) > 1 else None)
    print(describe(where, roots(where)))
