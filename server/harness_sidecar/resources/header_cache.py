"""SKILL.md headers remembered across processes: an editor spawns a fresh sidecar every time it
opens, and parsing thousands of frontmatters is most of a large catalog's first ``thread/start``.

The file (``headers-v1.json`` in ``$HARNESS_SIDECAR_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or
``~/.cache`` + ``/harness-sidecar``; ``HARNESS_SIDECAR_CACHE_DIR=off`` turns it off) holds what the
in-process cache holds: for a SKILL.md identified by device, inode, size, mtime and ctime (in ns),
its directory name and the frontmatter limit, the description found or the problems that
rejected it. An edit changes the ctime, so a stale entry is never hit; only files untouched for
a while are remembered (catalog.RACY_SECONDS). Nothing in it is code: it is data the user's own
files gave, in the user's own cache directory (made 0700), and a file that is not what this
module writes is ignored. It is read once per process and written (atomically) after a scan
that parsed something new.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from harness_sidecar.resources.frontmatter import Problem

logger = logging.getLogger(__name__)

VERSION = 1
FILE_NAME = f"headers-v{VERSION}.json"
ENV = "HARNESS_SIDECAR_CACHE_DIR"
MAX_HEADERS = 50_000  # as many as the in-process cache holds; beyond, the file starts again

_loaded = False
_saved_count = 0


def cache_dir() -> str | None:
    """Where the cache lives, or ``None`` when turned off."""
    given = os.environ.get(ENV)
    if given is not None:
        return None if given in ("", "off", "0") else given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "harness-sidecar")


def _encode(key: tuple, value: tuple[str | None, tuple[Problem, ...]]) -> list[Any]:
    description, problems = value[0], value[1]
    row = [list(key), description, [[p.kind, p.message, p.hint, p.line, p.column] for p in problems]]
    return row + [value[2]] if len(value) > 2 else row  # a plugin's skill served under another name


def _decode(row: Any) -> tuple[tuple, tuple[str | None, tuple[Problem, ...]]] | None:
    try:
        key, description, problems, *served = row
        if len(served) > 1 or not all(isinstance(n, str) for n in served):
            return None
        dev, ino, size, mtime, ctime, name, limit = key
        if not (all(isinstance(n, int) for n in (dev, ino, size, mtime, ctime, limit)) and isinstance(name, str)
                and (description is None or isinstance(description, str))):
            return None
        decoded = tuple(Problem(str(kind), str(message), hint, line, column)
                        for kind, message, hint, line, column in problems)
        return (dev, ino, size, mtime, ctime, name, limit), (description, decoded, *served)
    except (TypeError, ValueError):
        return None


def _loads(data: bytes) -> Any:
    """JSON, with orjson (the sidecar's own JSON library, already loaded) when it is there: a
    few ms for thousands of headers instead of a dozen."""
    try:
        import orjson
    except ImportError:
        return json.loads(data)
    return orjson.loads(data)


def _dumps(value: Any) -> bytes:
    try:
        import orjson
    except ImportError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return orjson.dumps(value)


def load(headers: dict[tuple, Any]) -> None:
    """Add the remembered headers to ``headers`` (once per process; quietly nothing on any error)."""
    global _loaded, _saved_count
    if _loaded:
        return
    _loaded = True
    directory = cache_dir()
    if directory is None:
        return
    _read_into(directory, headers)
    _saved_count = len(headers)


def _read_into(directory: str, headers: dict[tuple, Any]) -> None:
    try:
        with open(os.path.join(directory, FILE_NAME), "rb") as f:
            data = _loads(f.read())
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return
        rows = data.get("headers", [])
    except (OSError, ValueError):
        return
    for row in rows if isinstance(rows, list) else []:
        decoded = _decode(row)
        if decoded is not None:
            headers.setdefault(decoded[0], decoded[1])


def save(headers: dict[tuple, Any]) -> None:
    """Write ``headers`` when they hold more than was read or last written."""
    global _saved_count
    directory = cache_dir()
    if directory is None or not _loaded or len(headers) == _saved_count:
        return
    merged = dict(headers)
    _read_into(directory, merged)  # what another sidecar wrote since is kept (several editors at once)
    if len(merged) > MAX_HEADERS:
        merged = dict(headers) if len(headers) <= MAX_HEADERS else {}
    try:
        import tempfile  # only here: with random and shutil it is ~1 ms of every fresh process's first scan

        os.makedirs(directory, mode=0o700, exist_ok=True)
        data = _dumps({"version": VERSION, "headers": [_encode(k, v) for k, v in merged.items()]})
        fd, temporary = tempfile.mkstemp(prefix=".headers-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(temporary, os.path.join(directory, FILE_NAME))
        except BaseException:
            os.unlink(temporary)
            raise
        _saved_count = len(headers)
    except OSError as exc:
        logger.debug("the header cache in %s cannot be written: %s", directory, exc)
