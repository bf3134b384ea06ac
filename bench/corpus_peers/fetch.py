"""Lay out the real-plugin corpus from the lock file: ``python -m bench.corpus_peers.fetch``.

Each repository of ``corpus.lock.json`` is read from its bare mirror
(``$HARNESS_CORPUS_MIRRORS/<owner>+<name>/repo``, default ``/work/.mirror``) at the locked commit and
written, unchanged, to ``<cache>/repos/<owner>+<name>/`` (``<cache>`` is ``$HARNESS_CORPUS_CACHE``,
default ``~/.cache/harness-sidecar-corpus``; never inside this repository). A mirror that is
missing, or lacks the locked commit, is printed and that repository is skipped; blobs the mirror
does not hold (its snapshots leave out files of 4 MiB and more) are printed as a count and left out.

Then the plugins are found (``plugins.json`` in the cache): every folder holding
``.claude-plugin/plugin.json`` or ``.codex-plugin/plugin.json``, and every entry of a marketplace
(``.claude-plugin/marketplace.json``, ``.agents/plugins/marketplace.json``) whose source is a local
path inside the repository — marketplace entries with a remote source (``github``, ``url``, ``npm``,
``git-subdir``) are counted and not laid out, and folders under a ``test``/``tests``/``fixtures``
folder (a repository's own test fixtures) are left out. ``--lock-from-mirrors`` writes the lock from the
mirrors' current HEADs (for the repositories already in the lock, plus any ``--add owner/name``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "corpus.lock.json"
MANIFESTS = {"claude": ".claude-plugin/plugin.json", "codex": ".codex-plugin/plugin.json"}
MARKETPLACES = {"claude": ".claude-plugin/marketplace.json", "codex": ".agents/plugins/marketplace.json"}
SKIP_DIRS = {".git", "node_modules"}
# a repository's own test fixtures are not plugins anyone installs
FIXTURE_DIRS = {"test", "tests", "fixtures", "__fixtures__", "testdata"}


def cache_dir() -> Path:
    return Path(os.environ.get("HARNESS_CORPUS_CACHE", "~/.cache/harness-sidecar-corpus")).expanduser()


def peers_dir() -> Path:
    """Where the peers (Claude Code, Codex) are installed from npm for the corpus benches: ``$HARNESS_CORPUS_PEERS``."""
    return Path(os.environ.get("HARNESS_CORPUS_PEERS", str(cache_dir() / "peers"))).expanduser()


def mirrors_dir() -> Path:
    return Path(os.environ.get("HARNESS_CORPUS_MIRRORS", "/work/.mirror"))


def mirror_of(repo: str) -> Path:
    return mirrors_dir() / repo.replace("/", "+") / "repo"


@dataclass
class Plugin:
    """One plugin of the corpus: a folder, and (for a marketplace entry) the entry that names it."""
    id: str                     # "<owner>+<name>/<path>[#<entry>]"
    repo: str
    path: str                   # relative to the repository ("." for its top)
    manifests: list[str]        # dialects whose manifest the folder holds
    dialect: str                # the peer it was written for: "claude" | "codex"
    name: str | None            # the manifest's name (Codex's first), else the marketplace entry's
    marketplaces: list[dict] = field(default_factory=list)  # [{kind, file, entry}] naming this folder


def _git(mirror: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={mirror}", *args], capture_output=True, **kw)


def extract(repo: str, commit: str, target: Path) -> tuple[bool, str]:
    """Write the tree of ``commit`` to ``target``; (ok, what happened)."""
    mirror = mirror_of(repo)
    if not mirror.is_dir():
        return False, f"no mirror at {mirror}"
    if _git(mirror, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return False, f"mirror {mirror} lacks the locked commit {commit}"
    stamp = target / ".corpus-commit"
    if stamp.is_file() and stamp.read_text().strip() == commit:
        return True, "already laid out"
    if target.exists():
        shutil.rmtree(target)
    listing = _git(mirror, "ls-tree", "-r", "-z", commit, check=True).stdout.split(b"\0")
    entries = []
    for raw in listing:
        if not raw:
            continue
        meta, path = raw.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind != b"blob":
            continue  # submodules are not part of the snapshot
        entries.append((mode.decode(), sha.decode(), os.fsdecode(path)))
    batch = subprocess.Popen(["git", f"--git-dir={mirror}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    assert batch.stdin and batch.stdout
    missing = 0
    for mode, sha, path in entries:
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if len(header) < 3:  # "<sha> missing"
            missing += 1
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        dest = target / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(os.fsdecode(data), dest)
        else:
            dest.write_bytes(data)
            if mode == "100755":
                dest.chmod(0o755)
    batch.stdin.close()
    batch.wait()
    stamp.write_text(commit + "\n")
    note = f"{len(entries) - missing} files"
    if missing:
        note += f", {missing} not in the mirror (left out)"
    return True, note


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _local_source(kind: str, mkt_root: Path, entry: dict, plugin_root: str | None) -> Path | None:
    source = entry.get("source")
    if kind == "codex" and isinstance(source, dict) and source.get("source") == "local":
        source = source.get("path")
    if not isinstance(source, str):
        return None  # {source: github|url|npm|git-subdir, ...}: remote
    if source.startswith(("http:", "https:", "git@")):
        return None
    base = mkt_root
    if plugin_root and not source.startswith(("./", "../")):
        base = mkt_root / plugin_root
    return (base / source).resolve()


def find_plugins(repo: str, tree: Path) -> tuple[list[Plugin], int]:
    """The plugins of one laid-out repository, and how many marketplace entries are remote."""
    tree = tree.resolve()
    by_key: dict[tuple[str, str | None], Plugin] = {}
    remote = 0

    def rel(folder: Path) -> str:
        r = folder.relative_to(tree).as_posix()
        return r or "."

    def manifest_info(folder: Path) -> tuple[list[str], str | None]:
        have = [d for d, m in MANIFESTS.items() if (folder / m).is_file()]
        name = None
        for d in ("codex", "claude"):
            if d in have:
                data = _read_json(folder / MANIFESTS[d])
                if isinstance(data, dict) and isinstance(data.get("name"), str):
                    name = data["name"]
                    break
        return have, name

    for directory, subdirs, files in os.walk(tree):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
        folder = Path(directory)
        have, name = manifest_info(folder)
        if have:
            key = (rel(folder), None)
            dialect = "codex" if have == ["codex"] else "claude" if have == ["claude"] else "both"
            by_key[key] = Plugin(id=f"{repo.replace('/', '+')}/{key[0]}", repo=repo, path=key[0], manifests=have,
                                 dialect=dialect, name=name)
    for directory, subdirs, files in os.walk(tree):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIP_DIRS)
        folder = Path(directory)
        for kind, rel_file in MARKETPLACES.items():
            mfile = folder / rel_file
            if not mfile.is_file():
                continue
            data = _read_json(mfile)
            if not isinstance(data, dict) or not isinstance(data.get("plugins"), list):
                continue
            plugin_root = (data.get("metadata") or {}).get("pluginRoot") if isinstance(data.get("metadata"), dict) else None
            for entry in data["plugins"]:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                target = _local_source(kind, folder, entry, plugin_root)
                if target is None:
                    remote += 1
                    continue
                if not target.is_dir() or not (target == tree or tree in target.parents):
                    continue
                path = rel(target)
                ref = {"kind": kind, "file": rel(mfile.parent.parent) + "/" + rel_file if rel(mfile.parent.parent) != "." else rel_file,
                       "entry": entry["name"]}
                key = (path, None)
                if key not in by_key:
                    have, name = manifest_info(target)
                    if have:
                        continue  # found above
                    # no manifest: the marketplace entry defines it (Claude's strict: false); one plugin per entry
                    key = (path, entry["name"])
                    if key not in by_key:
                        by_key[key] = Plugin(id=f"{repo.replace('/', '+')}/{path}#{entry['name']}", repo=repo,
                                             path=path, manifests=[], dialect=kind, name=entry["name"])
                by_key[key].marketplaces.append(ref)
    found = [p for p in by_key.values() if not FIXTURE_DIRS & set(Path(p.path).parts)]
    return sorted(found, key=lambda p: p.id), remote


def write_lock(add: list[str], lock_path: Path = LOCK) -> None:
    lock = json.loads(lock_path.read_text()) if lock_path.exists() else {"repositories": []}
    names = [r["repo"] for r in lock["repositories"]] + [a for a in add]
    out = []
    for repo in dict.fromkeys(names):
        mirror = mirror_of(repo)
        head = _git(mirror, "rev-parse", "HEAD", text=True)
        if head.returncode != 0:
            print(f"lock: {repo}: no mirror at {mirror}; kept as it was" if repo in [r["repo"] for r in lock["repositories"]]
                  else f"lock: {repo}: no mirror at {mirror}; not added", file=sys.stderr)
            out.extend(r for r in lock["repositories"] if r["repo"] == repo)
            continue
        out.append({"repo": repo, "commit": head.stdout.strip()})
    lock_path.write_text(json.dumps({"repositories": out}, indent=2) + "\n")
    print(f"wrote {lock_path} ({len(out)} repositories)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lock-from-mirrors", action="store_true", help="rewrite the lock from the mirrors' HEADs")
    ap.add_argument("--add", action="append", default=[], metavar="OWNER/NAME", help="with --lock-from-mirrors")
    ap.add_argument("--lock", type=Path, default=LOCK, help="the lock file (default: the committed one)")
    args = ap.parse_args(argv)
    if args.lock_from_mirrors:
        write_lock(args.add, args.lock)
    lock = json.loads(args.lock.read_text())
    cache = cache_dir()
    (cache / "repos").mkdir(parents=True, exist_ok=True)
    plugins: list[Plugin] = []
    skipped, summary = [], []
    for item in lock["repositories"]:
        repo, commit = item["repo"], item["commit"]
        target = cache / "repos" / repo.replace("/", "+")
        ok, note = extract(repo, commit, target)
        if not ok:
            print(f"SKIPPED {repo}@{commit[:12]}: {note}", file=sys.stderr)
            skipped.append({"repo": repo, "commit": commit, "why": note})
            continue
        found, remote = find_plugins(repo, target)
        plugins.extend(found)
        summary.append({"repo": repo, "commit": commit, "plugins": len(found), "remoteEntries": remote, "note": note})
        print(f"{repo}@{commit[:12]}: {len(found)} plugins ({remote} remote marketplace entries not laid out; {note})")
    index = {"cache": str(cache), "repositories": summary, "skipped": skipped,
             "plugins": [asdict(p) for p in plugins]}
    (cache / "plugins.json").write_text(json.dumps(index, indent=1) + "\n")
    print(f"{len(plugins)} plugins from {len(summary)} repositories -> {cache / 'plugins.json'}"
          + (f"; {len(skipped)} repositories SKIPPED (above)" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
