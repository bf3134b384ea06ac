"""The session store: ``<state dir>/sessions/<key>/``, one folder per ``sessionId`` (protocol-v4 §5).

``<key>`` is the first 32 hex digits of the sha256 of the session id: an editor's id never becomes a
path component (``..``, ``:`` and ``.`` are legal in it). The folder holds ``state-<16 hex>.json``
per extension (the digits: the sha256 of its id) — ``{sessionId, extensionId, state}`` — and
``skills.json`` — ``{sessionId, activeSkills: [{name, path, via}]}``. A file is read only when the
ids it names are the ones asked for, so one session's thread never takes another's state, even
on a hash collision or a copied folder. Writes are atomic (a temporary file in the same folder,
then ``os.replace``), never fsynced: a crash loses at most the last write, and a file that does not
parse is a diagnostic and an empty state, never a failed thread. Bounded: a state larger than
``limits.extensionStateBytes`` is never written, a file larger than that (plus its envelope) is
not read, and at most ``MAX_SESSIONS`` folders are kept (the least recently written go first).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.base.state_dir import state_dir

MAX_SESSIONS = 1000
ENVELOPE_BYTES = 4096  # the ids and keys around a state in its file
SKILLS_FILE = "skills.json"
MAX_SKILLS_BYTES = 1 << 20


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def session_dir(session_id: str) -> str:
    return os.path.join(state_dir(), "sessions", _digest(session_id, 32))


@dataclass
class Saved:
    """What a session folder held: each extension's state, the activated skills, and what could not be read
    (catalog-style diagnostics, kind ``session_state_unreadable``)."""

    states: dict[str, Any] = field(default_factory=dict)
    active_skills: list[dict[str, str]] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)


class SessionStore:
    """One session's folder. Nothing is created until the first write."""

    def __init__(self, session_id: str, state_bytes: int) -> None:
        self.session_id = session_id
        self.state_bytes = state_bytes
        self.directory = session_dir(session_id)
        self._made = False

    def _state_path(self, extension_id: str) -> str:
        return os.path.join(self.directory, f"state-{_digest(extension_id, 16)}.json")

    # -- reading

    def load(self, extension_ids: list[str]) -> Saved:
        saved = Saved()
        for ext_id in extension_ids:
            path = self._state_path(ext_id)
            data = self._read(path, self.state_bytes + ENVELOPE_BYTES, saved)
            if data is None:
                continue
            if data.get("sessionId") != self.session_id or data.get("extensionId") != ext_id or "state" not in data:
                self._unreadable(saved, path, "it names another session or extension, or holds no state")
                continue
            saved.states[ext_id] = data["state"]
        data = self._read(os.path.join(self.directory, SKILLS_FILE), MAX_SKILLS_BYTES, saved)
        if data is not None:
            skills = data.get("activeSkills")
            if data.get("sessionId") != self.session_id or type(skills) is not list or not all(
                    type(s) is dict and type(s.get("name")) is str and type(s.get("path")) is str
                    and s.get("via") in ("activate", "load_skill") for s in skills):
                self._unreadable(saved, os.path.join(self.directory, SKILLS_FILE),
                                 "it names another session or is not a list of {name, path, via}")
            else:
                saved.active_skills = skills
        return saved

    def _read(self, path: str, limit: int, saved: Saved) -> dict[str, Any] | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._unreadable(saved, path, exc.strerror or str(exc))
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                raw = f.read(limit + 1)
        except OSError as exc:
            self._unreadable(saved, path, exc.strerror or str(exc))
            return None
        if len(raw) > limit:
            self._unreadable(saved, path, f"it is larger than {limit} bytes")
            return None
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            self._unreadable(saved, path, f"it is not JSON ({exc})")
            return None
        if type(data) is not dict:
            self._unreadable(saved, path, "it is not a JSON object")
            return None
        return data

    def _unreadable(self, saved: Saved, path: str, why: str) -> None:
        saved.diagnostics.append({"kind": "session_state_unreadable", "path": path, "sessionId": self.session_id,
                                  "message": f"the saved session state {path} is not used: {why}; that "
                                             f"extension (or the skill list) starts empty"})

    # -- writing

    def clear(self) -> None:
        """A session started afresh (no ``resume``): what was saved under its id is gone."""
        shutil.rmtree(self.directory, ignore_errors=True)
        self._made = False

    def save_state(self, extension_id: str, value: Any) -> None:
        self._write(self._state_path(extension_id),
                    {"sessionId": self.session_id, "extensionId": extension_id, "state": value})

    def save_skills(self, active_skills: list[dict[str, str]]) -> None:
        self._write(os.path.join(self.directory, SKILLS_FILE),
                    {"sessionId": self.session_id, "activeSkills": active_skills})

    def _write(self, path: str, data: dict[str, Any]) -> None:
        if not self._made:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            self._made = True
            _prune(os.path.dirname(self.directory), keep=self.directory)
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        temporary = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text)
            os.replace(temporary, path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise


def _prune(parent: str, keep: str) -> None:
    """At most ``MAX_SESSIONS`` session folders: the least recently written beyond that are removed."""
    try:
        entries = [e for e in os.scandir(parent) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    if len(entries) <= MAX_SESSIONS:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime)
    for entry in entries[:len(entries) - MAX_SESSIONS]:
        if entry.path != keep:
            shutil.rmtree(entry.path, ignore_errors=True)
