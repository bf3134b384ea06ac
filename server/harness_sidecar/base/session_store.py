"""The session store: ``<state dir>/sessions/<key>/``, one folder per ``sessionId`` (protocol-v4 §5).

``<key>`` is the first 32 hex digits of the sha256 of the session id: an editor's id never becomes a
path component (``..``, ``:`` and ``.`` are legal in it). The folder holds ``state-<16 hex>.json``
per extension (the digits: the sha256 of its id) — ``{"sessionId":…,"extensionId":…,"state":…}``,
compact, in that order — and ``skills.json`` — ``{sessionId, activeSkills: [{name, path, via, located,
resources?}]}`` (``resources``: the files skills/activate requested with the skill). A file is read only when the ids it names are the ones asked for, so one session's thread never takes
another's state, even on a hash collision or a copied folder.

A state is kept and moved as its compact JSON text (``bytes``), never parsed and encoded again on the
way: read, its envelope compared byte for byte and the text between checked to be JSON (orjson's
parse; the standard library's verdict where orjson refuses, nesting bounded like every message),
handed to the extension host as that text (which parses it at ``ctx.state.get()``), written back as
``envelope + text + "}"``. A file another writer laid out differently is parsed whole and its state
encoded again (as is one with a newline byte between its tokens: the text goes to the host as one line);
one that does not parse is a diagnostic (``session_state_unreadable``) and an empty
state, never a failed thread.

Writes are atomic (a temporary file in the same folder, then ``os.replace``) and not fsynced one by one:
``sync()`` fsyncs every file written since the last sync and the folder, run off the event loop when a
thread closes (fsync of 5 files and the folder took 7–21 ms here; on each ``ctx.state.set`` it would
hold the loop that long). A crash between a write and its thread's close may lose that write (the file
is then the previous state, or unreadable: an empty state). Bounded: a state larger than
``limits.extensionStateBytes`` is never written, a file larger than that (plus its envelope) is not
read, and at most ``MAX_SESSIONS`` folders are kept (the least recently written go first).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

import orjson

from harness_sidecar.base import jsondepth, jsonio, stdjson
from harness_sidecar.base.state_dir import state_dir

MAX_SESSIONS = 1000
ENVELOPE_BYTES = 4096  # the ids and keys around a state in its file
SKILLS_FILE = "skills.json"
MAX_SKILLS_BYTES = 1 << 20


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:digits]


def session_dir(session_id: str) -> str:
    return os.path.join(state_dir(), "sessions", _digest(session_id, 32))


def encode_state(value: Any) -> bytes:
    """A state's compact JSON text, as it is kept, saved and handed to a host."""
    return jsonio.dumps(value)


def state_value(text: bytes) -> Any:
    """The value of a kept state (every integer exact): what thread/close answers."""
    return jsonio.loads(text)


WALKED_VALUES = 10_000  # a state of more values than this has its brackets counted (jsondepth)


def check_state_text(text: bytes | memoryview) -> None:
    """Raise ``ValueError`` unless ``text`` is one JSON value nested at most ``jsondepth.MAX_DEPTH`` levels.

    orjson parses (C speed); what it refuses (a lone surrogate, an integer past 64 bits, malformed
    text) the standard library decides. The value is thrown away: the text is what is kept."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = stdjson.loads(bytes(text))
        except RecursionError:
            raise ValueError(f"JSON nested deeper than {jsondepth.MAX_DEPTH} levels") from None
    if type(value) is dict or type(value) is list:
        deep = jsondepth.deeper_than_limit(value, WALKED_VALUES)
        if deep is None:
            deep = jsondepth.could_be_too_deep(bytes(text)) and jsondepth.deeper_than_limit(value)
        if deep:
            raise ValueError(f"JSON nested deeper than {jsondepth.MAX_DEPTH} levels")


@dataclass
class Saved:
    """What a session folder held: each extension's state, the activated skills, and what could not be read
    (catalog-style diagnostics, kind ``session_state_unreadable``)."""

    states: dict[str, bytes] = field(default_factory=dict)  # extension id → its state's compact JSON text
    active_skills: list[dict[str, str]] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)


class SessionStore:
    """One session's folder. Nothing is created until the first write."""

    def __init__(self, session_id: str, state_bytes: int) -> None:
        self.session_id = session_id
        self.state_bytes = state_bytes
        self.directory = session_dir(session_id)
        self._made = False
        self._unsynced: set[str] = set()  # files written since the last sync()

    def _state_path(self, extension_id: str) -> str:
        return os.path.join(self.directory, f"state-{_digest(extension_id, 16)}.json")

    # -- reading

    def load(self, extension_ids: list[str]) -> Saved:
        saved = Saved()
        for ext_id in extension_ids:
            path = self._state_path(ext_id)
            raw = self._read_bytes(path, self.state_bytes + ENVELOPE_BYTES, saved)
            if raw is None:
                continue
            envelope = self._envelope(ext_id)
            # as this store writes it: the text between, which goes to the host as a line (no newline in it)
            if raw.startswith(envelope) and raw.endswith(b"}") and b"\n" not in raw:
                text = memoryview(raw)[len(envelope):-1]
                try:
                    check_state_text(text)
                except ValueError:
                    pass  # parsed whole below (a duplicate "state" key, say), or found unreadable
                else:
                    saved.states[ext_id] = bytes(text)
                    continue
            data = self._parse(path, raw, saved)
            if data is None:
                continue
            if data.get("sessionId") != self.session_id or data.get("extensionId") != ext_id or "state" not in data:
                self._unreadable(saved, path, "it names another session or extension, or holds no state")
                continue
            try:
                saved.states[ext_id] = encode_state(data["state"])
            except (TypeError, ValueError) as exc:
                self._unreadable(saved, path, f"its state cannot be written as JSON ({exc})")
        data = self._read(os.path.join(self.directory, SKILLS_FILE), MAX_SKILLS_BYTES, saved)
        if data is not None:
            skills = data.get("activeSkills")
            if data.get("sessionId") != self.session_id or type(skills) is not list or not all(
                    type(s) is dict and type(s.get("name")) is str and type(s.get("path")) is str
                    and s.get("via") in ("activate", "load_skill") and _strings(s.get("resources", []))
                    for s in skills):
                self._unreadable(saved, os.path.join(self.directory, SKILLS_FILE),
                                 "it names another session or is not a list of {name, path, via, resources?}")
            else:
                saved.active_skills = skills
        return saved

    def _read(self, path: str, limit: int, saved: Saved) -> dict[str, Any] | None:
        raw = self._read_bytes(path, limit, saved)
        return None if raw is None else self._parse(path, raw, saved)

    def _read_bytes(self, path: str, limit: int, saved: Saved) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._unreadable(saved, path, exc.strerror or str(exc))
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                # as much as the file says it holds (a buffer of limit + 1 bytes each would be mapped and unmapped)
                size = min(os.fstat(f.fileno()).st_size, limit)
                raw = f.read(size + 1)
                if len(raw) > size:  # it holds more than it said (it grows): on, up to the limit
                    raw += f.read(limit + 1 - len(raw))
        except OSError as exc:
            self._unreadable(saved, path, exc.strerror or str(exc))
            return None
        if len(raw) > limit:
            self._unreadable(saved, path, f"it is larger than {limit} bytes")
            return None
        return raw

    def _parse(self, path: str, raw: bytes, saved: Saved) -> dict[str, Any] | None:
        try:
            data = jsondepth.bounded_loads(jsonio.loads, raw)
        except (ValueError, UnicodeDecodeError) as exc:  # TooDeep is a ValueError
            self._unreadable(saved, path, f"it is not JSON ({exc})")
            return None
        if type(data) is not dict:
            self._unreadable(saved, path, "it is not a JSON object")
            return None
        return data

    def _envelope(self, extension_id: str) -> bytes:
        """What a state file holds before its state's text (and ``}`` after it)."""
        return b'{"sessionId":%s,"extensionId":%s,"state":' % (jsonio.dumps(self.session_id),
                                                              jsonio.dumps(extension_id))

    def _unreadable(self, saved: Saved, path: str, why: str) -> None:
        saved.diagnostics.append({"kind": "session_state_unreadable", "path": path, "sessionId": self.session_id,
                                  "message": f"the saved session state {path} is not used: {why}; that "
                                             f"extension (or the skill list) starts empty"})

    # -- writing

    def clear(self) -> None:
        """A session started afresh (no ``resume``): what was saved under its id is gone."""
        shutil.rmtree(self.directory, ignore_errors=True)
        self._made = False
        self._unsynced.clear()

    def save_state(self, extension_id: str, text: bytes) -> None:
        """Save a state given as its compact JSON text (``encode_state``)."""
        self._write_bytes(self._state_path(extension_id), b"".join((self._envelope(extension_id), text, b"}")))

    def save_skills(self, active_skills: list[dict[str, str]]) -> None:
        self._write_bytes(os.path.join(self.directory, SKILLS_FILE),
                          jsonio.dumps({"sessionId": self.session_id, "activeSkills": active_skills}))

    def _write_bytes(self, path: str, text: bytes) -> None:
        if not self._made:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            self._made = True
            _prune(os.path.dirname(self.directory), keep=self.directory)
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
        self._unsynced.add(path)

    @property
    def unsynced(self) -> bool:
        """Whether a file was written since the last ``sync()``."""
        return bool(self._unsynced)

    def sync(self) -> None:
        """fsync every file written since the last sync, then the folder (their names): what was saved
        survives a crash of the machine. Blocks on the disk: run it off the event loop."""
        paths, self._unsynced = self._unsynced, set()
        if not paths:
            return
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:  # removed since (a fresh start of the session, a prune)
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


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
