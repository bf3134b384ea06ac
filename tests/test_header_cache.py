"""SKILL.md headers remembered across sidecar processes (resources/header_cache.py): a fresh
sidecar answers from what a previous one parsed, and never serves a stale or forged entry."""

from __future__ import annotations

import json
import os
import time

from harness_sidecar.console.client import child_env
from helpers import add_skill, write


def started(spawn, root, cache):
    sidecar = spawn(env=child_env({"HARNESS_SIDECAR_CACHE_DIR": str(cache)}))
    result = sidecar.call("thread/start", {"roots": [str(root)]})
    return {s["name"]: s["description"] for s in result["catalog"]["skills"]}, result["diagnostics"]


def test_a_fresh_sidecar_serves_what_a_previous_one_parsed_and_sees_every_edit(spawn, tmp_path):
    root, cache = tmp_path / "root", tmp_path / "cache"
    add_skill(root, "review", "Use when reviewing.")
    write(root / "skills/broken/SKILL.md", "---\nname: other\ndescription: d\n---\n")
    time.sleep(2.1)  # only files untouched for a while are remembered
    first = started(spawn, root, cache)
    saved = json.loads((cache / "headers-v1.json").read_text())
    assert len(saved["headers"]) == 2 and oct((cache).stat().st_mode & 0o777) == "0o700"
    assert started(spawn, root, cache) == first  # the same catalog and diagnostics from the cache
    assert first[0] == {"review": "Use when reviewing."}
    assert [d["kind"] for d in first[1]] == ["name_mismatch"]
    # an edit of the same size changes the ctime: the entry is not hit
    write(root / "skills/review/SKILL.md", "---\nname: review\ndescription: Use when REVIEWING.\n---\n")
    assert started(spawn, root, cache)[0] == {"review": "Use when REVIEWING."}


def test_a_cache_that_is_garbage_or_forged_for_other_files_changes_nothing(spawn, tmp_path):
    root, cache = tmp_path / "root", tmp_path / "cache"
    add_skill(root, "review", "Use when reviewing.")
    cache.mkdir()
    (cache / "headers-v1.json").write_bytes(b"\x00not json{")
    assert started(spawn, root, cache)[0] == {"review": "Use when reviewing."}
    st = os.stat(root / "skills/review/SKILL.md")
    forged = [[st.st_dev, st.st_ino, st.st_size + 1, st.st_mtime_ns, st.st_ctime_ns, "review", 65536],
              "Forged.", []]
    (cache / "headers-v1.json").write_text(json.dumps({"version": 1, "headers": [forged, ["bad"], 3]}))
    assert started(spawn, root, cache)[0] == {"review": "Use when reviewing."}


def test_off_writes_nothing(spawn, tmp_path):
    root = tmp_path / "root"
    add_skill(root, "review", "Use when reviewing.")
    sidecar = spawn(env=child_env({"HARNESS_SIDECAR_CACHE_DIR": "off", "XDG_CACHE_HOME": str(tmp_path / "xdg"),
                                   "HOME": str(tmp_path / "home")}))
    sidecar.call("thread/start", {"roots": [str(root)]})
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_two_sidecars_on_different_roots_keep_both_in_the_cache(spawn, tmp_path):
    one, two, cache = tmp_path / "one", tmp_path / "two", tmp_path / "cache"
    add_skill(one, "alpha", "Use for alpha.")
    add_skill(two, "beta", "Use for beta.")
    time.sleep(2.1)
    first = spawn(env=child_env({"HARNESS_SIDECAR_CACHE_DIR": str(cache)}))
    second = spawn(env=child_env({"HARNESS_SIDECAR_CACHE_DIR": str(cache)}))
    (tmp_path / "empty").mkdir()
    second.call("thread/start", {"roots": [str(tmp_path / "empty")]})  # the second read the cache: empty
    first.call("thread/start", {"roots": [str(one)]})  # the first writes alpha
    second.call("thread/start", {"roots": [str(two)]})  # the second writes beta, keeping alpha
    saved = json.loads((cache / "headers-v1.json").read_text())
    assert sorted(row[1] for row in saved["headers"]) == ["Use for alpha.", "Use for beta."]
