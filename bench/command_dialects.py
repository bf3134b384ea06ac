"""How the v4 command-template rules change renders and ``@``/``!`` flags on the public corpus.

    .venv/bin/python -m bench.command_dialects [CORPUS] [--old FILE] [--list]

CORPUS defaults to ~/.cache/harness-sidecar-corpus/repos (laid out by ``bench.corpus_peers.fetch``).
Every ``commands/*.md`` of a plugin folder (one with ``.claude-plugin/`` or ``.codex-plugin/``
``plugin.json``) and every other ``commands/*.md`` (a root's, Claude Code's) is read; its dialect
is the one ``command_templates`` gives it. Each body is rendered by the v3 rule (FILE: the v3
module, e.g. ``git show 2d22397:server/harness_sidecar/resources/command_templates.py``) and the
v4 rule with the text ``alpha "beta gamma" delta``; a *positional render* is a body with a
positional placeholder (``$0``-``$9``, ``$ARGUMENTS[N]``). Nothing here reads the network.

Measured 2026-12-01 on the 14 repositories of the corpus (664 ``commands/*.md``: 622 Claude,
42 Codex), v3 = 2d22397, v4 = this branch:
- positional renders: 23; all 23 change (v3 read ``$1`` as the first word in Claude commands);
  19 Claude commands get ``positional_shift`` (``$1`` … but never ``$0``; prices excluded);
- ``$$``: 1 file (wshobson database-migrations ``DO $$``): v3 kept 0 of its ``$$``, v4 all;
- ``@`` file references: v3 153 (every one a decorator, npm scope, handle or e-mail domain:
  ``@example.com`` 20, ``@veritasacta/verify`` 11, ``@click.option`` 8, ``@playwright/test`` 7, …),
  v4 0 (the corpus' commands hold no ``@path``);
- shell expansions: v3 23, v4 22: 3 ``\`\`\`!`` blocks found (ralph-loop ×2, skill-improver), 4 v3
  false ones dropped (``unwrap!`` in inline code ×3, a Codex command ×1).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys

from harness_sidecar.resources import command_templates as T
from harness_sidecar.resources.catalog import Root

TEXT = 'alpha "beta gamma" delta'
POSITIONAL = re.compile(r"\$(?:\d(?!\w)|ARGUMENTS\[\d+\])")


def commands(corpus: str):
    for dirpath, dirnames, filenames in os.walk(corpus):
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
        if os.path.basename(dirpath) != "commands":
            continue
        owner = os.path.dirname(dirpath)
        is_plugin = any(os.path.isfile(os.path.join(owner, m, "plugin.json"))
                        for m in (".claude-plugin", ".codex-plugin"))
        dialect = T.plugin_dialect(Root(owner, os.path.realpath(owner), -1)) if is_plugin else T.CLAUDE
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield os.path.join(dirpath, name), dialect


def body_of(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            text = text[text.index("\n", end + 1) + 1:] if "\n" in text[end + 1:] else ""
    return text.lstrip("\r\n")


def main(argv: list[str]) -> int:
    corpus = os.path.expanduser("~/.cache/harness-sidecar-corpus/repos")
    old_file, listing = None, "--list" in argv
    args = [a for a in argv if a != "--list"]
    if "--old" in args:
        i = args.index("--old")
        old_file = args[i + 1]
        del args[i:i + 2]
    if args:
        corpus = args[0]
    old = None
    if old_file:
        spec = importlib.util.spec_from_file_location("old_command_templates", old_file)
        assert spec and spec.loader
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    n = {"files": 0, "claude": 0, "codex": 0, "positional": 0, "positional_changed": 0, "render_changed": 0,
         "dollar_dollar": 0, "dollar_dollar_kept": 0, "old_dollar_dollar_kept": 0,
         "old_file_flags": 0, "new_file_flags": 0,
         "old_shell_flags": 0, "new_shell_flags": 0, "positional_shift": 0, "old_errors": 0, "new_errors": 0}
    dropped: dict[str, int] = {}
    added: dict[str, int] = {}
    for path, dialect in commands(corpus):
        body = body_of(path)
        n["files"] += 1
        n[dialect] += 1
        new_features = T.features_of(body, dialect)
        n["new_file_flags"] += sum(f["kind"] == "file" for f in new_features)
        n["new_shell_flags"] += sum(f["kind"] == "shell" for f in new_features)
        if T.positional_shift("x", path, body, dialect):
            n["positional_shift"] += 1
            if listing:
                print("positional_shift", path)
        try:
            new = T.render_body(body, TEXT, dialect)
        except Exception:
            new = None
            n["new_errors"] += 1
        if "$$" in body:
            n["dollar_dollar"] += 1
            n["dollar_dollar_kept"] += new is not None and new.count("$$") >= body.count("$$")
        if old is None:
            continue
        old_features = old.features_of(body)
        old_files = [f["text"] for f in old_features if f["kind"] == "file"]
        new_files = [f["text"] for f in new_features if f["kind"] == "file"]
        n["old_file_flags"] += len(old_files)
        n["old_shell_flags"] += sum(f["kind"] == "shell" for f in old_features)
        for word in old_files:
            if word not in new_files:
                dropped[word] = dropped.get(word, 0) + 1
        for word in new_files:
            if word not in old_files:
                added[word] = added.get(word, 0) + 1
        try:
            before = old.render_body(body, TEXT)
        except Exception:
            before = None
            n["old_errors"] += 1
        if before != new:
            n["render_changed"] += 1
        if "$$" in body:
            n["old_dollar_dollar_kept"] += before is not None and before.count("$$") >= body.count("$$")
        old_shell = [f["text"] for f in old_features if f["kind"] == "shell"]
        new_shell = [f["text"] for f in new_features if f["kind"] == "shell"]
        if listing and old_shell != new_shell:
            print("shell flags changed", path, old_shell, new_shell)
        if POSITIONAL.search(body):
            n["positional"] += 1
            if before != new:
                n["positional_changed"] += 1
                if listing:
                    print("positional render changed", dialect, path)
    for key, value in n.items():
        print(f"{key:22} {value}")
    if old is not None:
        print("@ flags dropped (word: count):", ", ".join(f"{w}: {c}" for w, c in sorted(dropped.items(),
                                                         key=lambda p: -p[1])[:40]))
        print("@ flags added:", ", ".join(f"{w}: {c}" for w, c in sorted(added.items(), key=lambda p: -p[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
