"""The live catalog's watch: real inotify, a real event loop (the diff is in test_catalog_diff.py).

The end-to-end tests of catalog/changed, thread/refresh and stale_tool come with the wiring in
methods/live_catalog.py; these check what the wiring will rely on: one callback per settled
burst, for what can change a catalog and nothing else, through deleted roots and new links,
shared between subscribers and released by the last one.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys

import pytest
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.catalog import build_catalog
from helpers import add_skill, write

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

SETTLE = 0.4  # the debounce is 0.05 s; on a loaded machine an event may take longer to arrive


class Recorder:
    def __init__(self) -> None:
        self.changes: list = []
        self.event = asyncio.Event()

    def __call__(self, change) -> None:
        self.changes.append(change)
        self.event.set()

    async def next(self, timeout: float = 5.0):
        await asyncio.wait_for(self.event.wait(), timeout)
        self.event.clear()
        return self.changes[-1]

    async def quiet(self, seconds: float = SETTLE) -> bool:
        """True when no callback came for ``seconds``."""
        count = len(self.changes)
        await asyncio.sleep(seconds)
        self.event.clear()
        return len(self.changes) == count


@pytest.fixture
async def hub():
    from harness_sidecar.resources.watch import WatchHub

    watches = WatchHub()
    yield watches
    watches.close()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    for name in ("alpha", "beta"):
        add_skill(root, name, f"Use for {name}.")
    write(root / "skills/alpha/references/notes.md", "notes\n")
    write(root / "templates/ask.md", "Ask {{x}}\n")
    write(root / "AGENTS.md", "rules\n")
    write(root / "extensions/pkg/__init__.py", "def activate(api): pass\n")
    write(root / "extensions/pkg/sub/helper.py", "x = 1\n")
    return root


async def test_an_edited_skill_md_gives_one_callback_for_a_burst(hub, root):
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    path = root / "skills/alpha/SKILL.md"
    for i in range(20):  # an editor saving in several writes, a formatter running after it
        path.write_text(f"---\nname: alpha\ndescription: Edit {i}.\n---\n")
    change = await seen.next()
    assert str(path) in change.paths
    assert await seen.quiet()
    assert len(seen.changes) == 1


@pytest.mark.parametrize("action", ["add skill", "remove skill", "add template", "edit template",
                                    "remove template", "edit AGENTS.md", "remove AGENTS.md",
                                    "edit extension file", "add skills .md file", "rename skill"])
async def test_each_change_that_can_alter_the_catalog_is_reported(hub, root, action):
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    if action == "add skill":
        add_skill(root, "gamma")
    elif action == "remove skill":
        shutil.rmtree(root / "skills/beta")
    elif action == "add template":
        write(root / "templates/new.md", "new\n")
    elif action == "edit template":
        write(root / "templates/ask.md", "Ask {{y}}\n")
    elif action == "remove template":
        (root / "templates/ask.md").unlink()
    elif action == "edit AGENTS.md":
        write(root / "AGENTS.md", "new rules\n")
    elif action == "remove AGENTS.md":
        (root / "AGENTS.md").unlink()
    elif action == "edit extension file":
        write(root / "extensions/pkg/sub/helper.py", "x = 2\n")
    elif action == "add skills .md file":
        write(root / "skills/stray.md", "x\n")
    elif action == "rename skill":
        os.rename(root / "skills/beta", root / "skills/beta-two")
    await seen.next()


async def test_files_that_cannot_change_the_catalog_are_ignored(hub, root):
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    write(root / "skills/alpha/references/notes.md", "more notes\n")
    write(root / "skills/alpha/scripts/run.py", "print()\n")
    write(root / "README.md", "not a resource\n")
    write(root / "templates/notes.txt", "not a template\n")
    write(root / "extensions/pkg/__pycache__/x.cpython-311.pyc", b"\x00")
    assert await seen.quiet(0.6)


async def test_a_new_skill_is_watched_from_then_on(hub, root):
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    add_skill(root, "gamma")
    await seen.next()
    assert await seen.quiet()
    write(root / "skills/gamma/SKILL.md", "---\nname: gamma\ndescription: Changed.\n---\n")
    change = await seen.next()
    assert str(root / "skills/gamma/SKILL.md") in change.paths


async def test_a_root_deleted_and_created_again_is_watched_again(hub, root):
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    shutil.rmtree(root)
    await seen.next()
    assert await seen.quiet()
    add_skill(root, "reborn")
    await seen.next()
    assert await seen.quiet()
    write(root / "skills/reborn/SKILL.md", "---\nname: reborn\ndescription: Edited.\n---\n")
    change = await seen.next()
    assert str(root / "skills/reborn/SKILL.md") in change.paths


async def test_a_root_that_does_not_exist_yet_is_waited_for(hub, tmp_path):
    root = tmp_path / "later" / "deeper" / "root"
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    write(tmp_path / "unrelated.txt", "x")  # the parent's other names do not matter
    assert await seen.quiet()
    add_skill(root, "first")
    await seen.next()
    write(root / "skills/first/SKILL.md", "---\nname: first\ndescription: Edited.\n---\n")
    await seen.next()


async def test_a_link_out_of_the_root_is_reported_but_never_followed(hub, root, tmp_path):
    outside = tmp_path / "outside"
    add_skill(outside, "evil")
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    os.symlink(outside / "skills/evil", root / "skills/evil")
    change = await seen.next()  # the rescan reports path_escape
    assert str(root / "skills/evil") in change.paths
    assert await seen.quiet()
    write(outside / "skills/evil/SKILL.md", "---\nname: evil\ndescription: Changed outside.\n---\n")
    assert await seen.quiet(0.6)
    catalog = build_catalog([str(root)], Limits())
    assert "evil" not in catalog.skills
    assert [d.kind for d in catalog.diagnostics] == ["path_escape"]


async def test_a_link_inside_the_root_is_followed(hub, root):
    add_skill(root, "real", directory="store/real")  # not under skills/: only reachable through the link
    seen = Recorder()
    hub.subscribe([str(root)], seen)
    os.symlink(root / "skills/store/real", root / "skills/real")
    await seen.next()
    assert await seen.quiet()
    write(root / "skills/store/real/SKILL.md", "---\nname: real\ndescription: Edited through the link.\n---\n")
    await seen.next()


async def test_a_root_given_through_a_link_is_watched_like_its_real_folder(hub, root, tmp_path):
    link = tmp_path / "linked"
    os.symlink(root, link)
    hub.subscribe([str(root)], Recorder())
    direct = hub.watched_folders
    hub.close()
    seen = Recorder()
    hub.subscribe([str(link)], seen)
    assert hub.watched_folders == direct  # every skill folder too, not only the root and skills/
    write(link / "skills/alpha/SKILL.md", "---\nname: alpha\ndescription: Edited.\n---\n")
    change = await seen.next()
    assert str(link / "skills/alpha/SKILL.md") in change.paths


async def test_subscribers_with_the_same_roots_share_one_watch_and_the_last_one_releases_it(hub, root, tmp_path):
    first, second, other = Recorder(), Recorder(), Recorder()
    a = hub.subscribe([str(root)], first)
    folders = hub.watched_folders
    b = hub.subscribe([str(root)], second)
    assert hub.watched_folders == folders  # shared, not doubled
    elsewhere = tmp_path / "elsewhere"
    add_skill(elsewhere, "solo")
    c = hub.subscribe([str(elsewhere)], other)
    assert hub.watched_folders > folders
    write(root / "AGENTS.md", "changed\n")
    await first.next()
    await second.next()
    assert await other.quiet()
    a.close()
    a.close()  # idempotent
    write(root / "AGENTS.md", "changed again\n")
    await second.next()
    assert await first.quiet()
    b.close()
    c.close()
    assert hub.watched_folders == 0
    assert hub._inotify is None  # the last subscription closed the kernel instance


async def test_a_failing_callback_does_not_stop_the_others(hub, root):
    def broken(change):
        raise RuntimeError("subscriber bug")

    seen = Recorder()
    hub.subscribe([str(root)], broken)
    hub.subscribe([str(root)], seen)
    write(root / "AGENTS.md", "x\n")
    await seen.next()


async def test_a_coroutine_callback_is_run_on_the_loop(hub, root):
    done = asyncio.Event()

    async def callback(change):
        await asyncio.sleep(0)
        done.set()

    hub.subscribe([str(root)], callback)
    write(root / "AGENTS.md", "x\n")
    await asyncio.wait_for(done.wait(), 5)
