"""Sessions (protocol-v4 §5): ``thread/fork``, ``skills/deactivate``, and what a thread keeps under its
``sessionId`` — each extension's ``ctx.state`` and the activated skills — opened at thread/start
(``reason`` startup, resume or fork), saved as they change (``sessions.store``), answered by
thread/close; and activations that end (a deleted or newly shadowed skill is dropped at a rescan).
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness_sidecar.errors import DomainError
from harness_sidecar.resources.activation import ActivatedSkill, activate, check_skill_name
from harness_sidecar.wire import params as P

if TYPE_CHECKING:
    from harness_sidecar.methods.thread import Thread

logger = logging.getLogger("harness_sidecar.threads")


@dataclass
class Seed:
    """What a thread starts from besides its params: ``thread/fork``'s copies of the source thread's state
    and activations (``reason`` "fork"); thread/start's own is read from the store."""

    reason: str = "startup"
    states: dict[str, Any] = field(default_factory=dict)
    active_skills: list[dict[str, str]] = field(default_factory=list)


class SessionMethods:
    """A thread's session: state and activations kept, handed back, forked; skills deactivated."""

    async def thread_fork(self, params: dict[str, Any]) -> dict[str, Any]:
        request = P.parse_thread_fork(params)
        source = await self.thread(params)
        start = copy.copy(source.start)  # the same roots, grants, tools and limits
        start.session_id, start.resume, start.state = request.session_id, False, None
        seed = Seed("fork", copy.deepcopy(source.states), _saved_skills(source))
        return await self._start_thread(start, seed)

    async def skills_deactivate(self, params: dict[str, Any]) -> dict[str, Any]:
        thread = await self.thread(params)
        request = P.parse_skills_deactivate(params)
        name = check_skill_name(request.name)
        if thread.activated.pop(name, None) is None:
            raise DomainError("skill_not_active", f"skill '{name}' is not active in this thread "
                                                  f"(active: {', '.join(sorted(thread.activated)) or 'none'})",
                              name=name)
        self._skills_changed(thread)
        return {"activeSkills": [thread.activated[n].active_to_wire() for n in sorted(thread.activated)]}

    # -- opening a session at thread/start

    def _open_session(self, thread: Thread, seed: Seed | None) -> list[dict[str, str]]:
        """Set the thread's ``reason``, its store and its extensions' starting state; the activations to
        restore. A session started afresh (no resume) forgets what was saved under its id."""
        start = thread.start
        thread.reason = seed.reason if seed is not None else "resume" if start.resume else "startup"
        states: dict[str, Any] = dict(seed.states) if seed is not None else {}
        skills = list(seed.active_skills) if seed is not None else []
        if start.session_id is not None:
            from harness_sidecar.sessions.store import SessionStore

            store = SessionStore(start.session_id, thread.limits.extension_state_bytes)
            thread.session = store
            if thread.reason == "resume":
                saved = store.load([t.id for t in start.trusted_extensions])
                states, skills = saved.states, saved.active_skills
                thread.notes.extend(saved.diagnostics)
            else:
                self._store(thread, store.clear)
        states.update(start.state or {})  # the editor's copy wins over what is saved
        thread.states = states
        if thread.session is not None:
            for ext_id, value in states.items():
                if thread.reason != "resume" or ext_id in (start.state or {}):
                    self._store(thread, thread.session.save_state, ext_id, value)
        return skills

    def _restore_skills(self, thread: Thread, skills: list[dict[str, str]]) -> None:
        """Activate again what the session had active, each by its path: one that is gone, no longer a
        candidate of its name, or (activated as the winner, not chosen by path) now shadowed is
        ``activation_dropped`` in the answer, never replaced by the winner — as a rescan would."""
        for entry in skills:
            winner = thread.catalog.skills.get(entry["name"])
            located = entry.get("located") is True
            if not located and winner is not None and os.path.normpath(winner.source) != os.path.normpath(entry["path"]):
                self._dropped(thread, entry["name"], entry["path"], f"it is now shadowed by {winner.source}")
                continue
            try:
                skill = activate(thread.catalog, entry["name"], [], thread.limits, path=entry["path"])
            except DomainError as exc:
                self._dropped(thread, entry["name"], entry["path"], exc.message)
                continue
            skill.via, skill.located = entry["via"], located
            thread.activated[skill.name] = skill
        if skills:
            self._skills_changed(thread)

    # -- changes

    def _state_set(self, thread: Thread, extension_id: str, value: Any) -> None:
        """An extension's ``ctx.state.set``: kept for thread/close and a fork, saved under the session."""
        thread.states[extension_id] = value
        if thread.session is not None:
            self._store(thread, thread.session.save_state, extension_id, value)

    def _skills_changed(self, thread: Thread) -> None:
        if thread.session is not None:
            self._store(thread, thread.session.save_skills, _saved_skills(thread))

    @staticmethod
    def _store(thread: Thread, write: Any, *args: Any) -> None:
        try:
            write(*args)
        except OSError as exc:
            logger.warning("%s: the session state could not be saved (%s); it is kept in memory", thread.id, exc)

    def _dropped(self, thread: Thread, name: str, path: str, why: str) -> None:
        thread.notes.append({"kind": "activation_dropped", "name": name, "path": path,
                             "message": f"skill '{name}' ({path}) is no longer active: {why}"})

    def _drop_stale_activations(self, thread: Thread) -> None:
        """After a rescan: an activated skill whose SKILL.md is gone, or that another candidate now shadows,
        ends (``activation_dropped``); one chosen by locator stays while it is still a candidate."""
        from harness_sidecar.resources.activation import candidate

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
                self._dropped(thread, name, skill.source, why)
                dropped = True
        if dropped:
            self._skills_changed(thread)

    def _activated(self, thread: Thread, skill: ActivatedSkill, via: str) -> None:
        """Record an activation (skills/activate, load_skill). ``load_skill`` of a skill that skills/activate
        already put in the prompt keeps it there: the cached prefix stays as it was."""
        before = thread.activated.get(skill.name)
        winner = thread.catalog.skills.get(skill.name)
        skill.located = winner is None or winner.source != skill.source
        skill.via = "activate" if via == "load_skill" and before is not None and before.via == "activate" \
            and before.source == skill.source else via
        thread.activated[skill.name] = skill
        self._skills_changed(thread)


def _saved_skills(thread: Thread) -> list[dict[str, Any]]:
    """The activations as saved and forked: context/build's entries, and whether a path locator chose each."""
    return [{**thread.activated[n].active_to_wire(), "located": thread.activated[n].located}
            for n in sorted(thread.activated)]
