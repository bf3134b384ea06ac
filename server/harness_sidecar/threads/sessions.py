"""Sessions (protocol-v4 §5): what a thread started with a ``sessionId`` keeps — each extension's
``ctx.state`` and the activated skills — opened at thread/start (``reason`` startup, resume or fork),
saved as they change (``base.session_store``), answered by thread/close; and activations that end (a
deleted or newly shadowed skill is dropped at a rescan or a resume, never replaced by the winner).

Functions of a ``Thread``, called by the parts that change what it holds: ``lifecycle`` (start, fork,
close), ``resources`` and ``tools`` (skills/activate, load_skill, skills/deactivate), ``extensions``
(a host's ``ctx.state.set``) and ``live_catalog`` (a rescan).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.records import Record
from harness_sidecar.resources.activation import ActivatedSkill, activate, candidate
from harness_sidecar.threads.thread import Thread

logger = logging.getLogger("harness_sidecar.threads")


class Seed(Record):
    """What a thread starts from besides its params: ``thread/fork``'s copies of the source thread's state
    and activations (``reason`` "fork"); thread/start's own is read from the store. (Written out, not a
    dataclass: a first thread/start imports this module; same repr and equality, issue #32.)"""

    __slots__ = ("reason", "states", "active_skills")

    def __init__(self, reason: str = "startup", states: dict[str, bytes] | None = None,
                 active_skills: list[dict[str, Any]] | None = None) -> None:
        self.reason = reason
        self.states = {} if states is None else states  # extension id → its state's compact JSON text
        self.active_skills = [] if active_skills is None else active_skills


def fork_seed(source: Thread) -> Seed:
    return Seed("fork", dict(source.states), saved_skills(source))  # texts: nothing the two threads share changes


def open_session(thread: Thread, seed: Seed | None) -> list[dict[str, Any]]:
    """Set the thread's ``reason``, its store and its extensions' starting state; the activations to
    restore. A session started afresh (no resume) forgets what was saved under its id."""
    start = thread.start
    thread.reason = seed.reason if seed is not None else "resume" if start.resume else "startup"
    states: dict[str, bytes] = dict(seed.states) if seed is not None else {}
    skills = list(seed.active_skills) if seed is not None else []
    if start.session_id is not None:
        from harness_sidecar.base.session_store import SessionStore

        store = SessionStore(start.session_id, thread.limits.extension_state_bytes)
        thread.session = store
        if thread.reason == "resume":
            saved = store.load([t.id for t in start.trusted_extensions])
            states, skills = saved.states, saved.active_skills
            thread.notes.extend(saved.diagnostics)
        else:
            _store(thread, store.clear)
    if start.state:  # the editor's copy wins over what is saved
        from harness_sidecar.base.session_store import encode_state

        states.update((ext_id, encode_state(value)) for ext_id, value in start.state.items())
    thread.states = states
    if thread.session is not None:
        for ext_id, text in states.items():
            if thread.reason != "resume" or ext_id in (start.state or {}):
                _store(thread, thread.session.save_state, ext_id, text)
    return skills


def restore_skills(thread: Thread, skills: list[dict[str, Any]]) -> None:
    """Activate again what the session had active, each by its path: one that is gone, no longer a
    candidate of its name, or (activated as the winner, not chosen by path) now shadowed is
    ``activation_dropped`` in the answer, never replaced by the winner — as a rescan would."""
    for entry in skills:
        winner = thread.catalog.skills.get(entry["name"])
        located = entry.get("located") is True
        if not located and winner is not None and os.path.normpath(winner.source) != os.path.normpath(entry["path"]):
            _dropped(thread, entry["name"], entry["path"], f"it is now shadowed by {winner.source}")
            continue
        try:  # with the resource files it was activated with (skills/activate's ``resources``)
            skill = activate(thread.catalog, entry["name"], entry.get("resources", []), thread.limits,
                             path=entry["path"])
        except DomainError as exc:
            _dropped(thread, entry["name"], entry["path"], exc.message)
            continue
        skill.via, skill.located = entry["via"], located
        thread.activated[skill.name] = skill
    if skills:
        skills_changed(thread)


def state_set(thread: Thread, extension_id: str, text: bytes) -> None:
    """An extension's ``ctx.state.set`` (its compact JSON text): kept for thread/close and a fork, saved
    under the session — unless it is the state already kept (a handler that sets what it got, at every
    ``thread_close`` say, writes nothing)."""
    if thread.states.get(extension_id) == text:
        return
    thread.states[extension_id] = text
    if thread.session is not None:
        _store(thread, thread.session.save_state, extension_id, text)


def states_to_wire(thread: Thread) -> dict[str, Any]:
    """thread/close's ``state``: each extension's last state, as a JSON value."""
    from harness_sidecar.base.session_store import state_value

    return {ext_id: state_value(text) for ext_id, text in thread.states.items()}


async def sync(thread: Thread) -> None:
    """At the thread's end: what its session saved is fsynced (``SessionStore.sync``), off the event loop."""
    if thread.session is not None and thread.session.unsynced:
        import asyncio

        await asyncio.to_thread(_store, thread, thread.session.sync)


def record_activation(thread: Thread, skill: ActivatedSkill, via: str) -> None:
    """An activation (skills/activate, load_skill). ``load_skill`` of a skill skills/activate already put in
    the prompt keeps it there: the cached prefix stays as it was."""
    before = thread.activated.get(skill.name)
    winner = thread.catalog.skills.get(skill.name)
    skill.located = winner is None or winner.source != skill.source
    skill.via = "activate" if via == "load_skill" and before is not None and before.via == "activate" \
        and before.source == skill.source else via
    thread.activated[skill.name] = skill
    skills_changed(thread)


def deactivate(thread: Thread, name: str) -> None:
    if thread.activated.pop(name, None) is None:
        raise DomainError("skill_not_active", f"skill '{name}' is not active in this thread "
                                              f"(active: {', '.join(sorted(thread.activated)) or 'none'})", name=name)
    skills_changed(thread)


def active_skills(thread: Thread) -> list[dict[str, str]]:
    return [thread.activated[n].active_to_wire() for n in sorted(thread.activated)]


def drop_stale_activations(thread: Thread) -> None:
    """After a rescan: an activated skill whose SKILL.md is gone, or that another candidate now shadows,
    ends (``activation_dropped``); one chosen by locator stays while it is still a candidate."""
    dropped = False
    for name, skill in list(thread.activated.items()):
        winner = thread.catalog.skills.get(name)
        why = None
        if not os.path.isfile(skill.source):
            why = "its SKILL.md was deleted"
        elif not skill.located:
            if winner is None:
                why = "it is no longer in the catalog"
            elif os.path.normpath(winner.source) != os.path.normpath(skill.source):
                why = f"it is now shadowed by {winner.source}"
        else:
            try:
                candidate(thread.catalog, name, skill.source, thread.limits)
            except DomainError:
                why = "it is no longer a candidate of its name"
        if why is not None:
            del thread.activated[name]
            _dropped(thread, name, skill.source, why)
            dropped = True
    if dropped:
        skills_changed(thread)


def skills_changed(thread: Thread) -> None:
    if thread.session is not None:
        _store(thread, thread.session.save_skills, saved_skills(thread))


def saved_skills(thread: Thread) -> list[dict[str, Any]]:
    """The activations as saved and forked: context/build's entries, whether a path locator chose each, and
    the resource files requested with it (pasted with its body: a resume brings them back)."""
    saved = []
    for name in sorted(thread.activated):
        skill = thread.activated[name]
        entry = {**skill.active_to_wire(), "located": skill.located}
        if skill.resources:
            entry["resources"] = [r.request for r in skill.resources]
        saved.append(entry)
    return saved


def _store(thread: Thread, write: Callable[..., Any], *args: Any) -> None:
    try:
        write(*args)
    except OSError as exc:
        logger.warning("%s: the session state could not be saved (%s); it is kept in memory", thread.id, exc)


def _dropped(thread: Thread, name: str, path: str, why: str) -> None:
    thread.notes.append({"kind": "activation_dropped", "name": name, "path": path,
                         "message": f"skill '{name}' ({path}) is no longer active: {why}"})
