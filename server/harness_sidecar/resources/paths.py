"""Containment: a path is accepted only if it stays inside its base, lexically and after links."""

from __future__ import annotations

import os
import stat

from harness_sidecar.base.errors import DomainError


def is_within(path: str, base: str) -> bool:
    """True when ``path`` is ``base`` or below it (both already normalised)."""
    if path == base:
        return True
    prefix = base if base.endswith(os.sep) else base + os.sep
    return path.startswith(prefix)


def join_within(base: str, relative: str) -> str:
    """Join a relative request to ``base`` and refuse anything that leaves it lexically.

    ``base`` must be absolute and normalised. Absolute requests, ``..`` escapes and
    sibling-prefix tricks (``skills/review-old`` is not inside ``skills/review``) raise
    ``path_escape``.
    """
    if "\x00" in relative:
        raise DomainError("invalid_arguments", "a path must not contain NUL", request=relative)
    if os.path.isabs(relative):
        raise DomainError("path_escape", f"absolute paths are refused: {relative!r}", request=relative)
    joined = os.path.normpath(os.path.join(base, relative))
    if not is_within(joined, base) or joined == base:
        raise DomainError("path_escape", f"{relative!r} leaves {base}", request=relative, path=joined)
    return joined


def realpath_within(path: str, base_real: str, what: str = "path") -> str:
    """Resolve links in ``path``; raise ``path_escape`` if the result leaves ``base_real``."""
    real = os.path.realpath(path)
    if not is_within(real, base_real):
        if not os.path.exists(path) and os.path.lexists(path):
            raise broken_link_error(path, what)
        raise DomainError(
            "path_escape", f"{what} {path} resolves to {real}, outside {base_real}", path=path, resolved=real
        )
    return real


def broken_link_error(path: str, what: str = "path") -> DomainError:
    """A link (``path`` itself or a directory on its way) whose target does not exist: ``broken_link``,
    wherever the target would have been (a dangling link is never a ``path_escape``)."""
    try:
        target = os.readlink(path)
    except OSError:
        target = None
    data = {"path": path} if target is None else {"path": path, "target": target}
    return DomainError("broken_link", f"{what} {path} is a link whose target does not exist"
                       + (f" ({target})" if target is not None else ""), **data)


def read_contained(path: str, base_real: str, max_bytes: int, what: str = "file") -> tuple[str, bytes]:
    """Read a whole regular file that resolves inside ``base_real`` and is at most ``max_bytes``.

    The file opened is checked to be the file that was resolved (same device and inode),
    so a link swapped in between the check and the read is refused rather than followed.
    Returns ``(canonical path, bytes)``.
    """
    real = realpath_within(path, base_real, what)
    try:
        # O_NONBLOCK: a FIFO is refused below (not a regular file), never waited on
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            raise broken_link_error(path, what) from None
        raise DomainError("resource_not_found", f"{what} {path} does not exist", path=path) from None
    except OSError as exc:
        raise DomainError("resource_not_found", f"{what} {path} cannot be opened: {exc.strerror}", path=path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DomainError("resource_not_found", f"{what} {path} is not a regular file", path=path)
        if st.st_size > max_bytes:
            raise DomainError(
                "too_large", f"{what} {path} is {st.st_size} bytes; the limit is {max_bytes}",
                path=path, size=st.st_size, limit=max_bytes,
            )
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise DomainError("too_large", f"{what} {path} grew past the limit of {max_bytes} bytes", path=path,
                              limit=max_bytes)
        return real, data
    finally:
        os.close(fd)


def decode_utf8(data: bytes, path: str, what: str = "file", start: int = 0, keep_bom: bool = False) -> str:
    """``data[start:]`` as text; a bad byte is reported by its offset and line in the whole file.

    A leading byte-order mark is dropped unless ``keep_bom`` (a skill's resource files are
    served byte-exact: their ``content`` keeps it as U+FEFF)."""
    try:
        text = (data[start:] if start else data).decode("utf-8")
    except UnicodeDecodeError as exc:
        at = start + exc.start
        line = data.count(b"\n", 0, at) + 1
        raise DomainError("not_utf8", f"{what} {path} is not valid UTF-8 (byte {at}, line {line})", path=path,
                          byte=at, line=line) from None
    return text[1:] if not keep_bom and text.startswith("\ufeff") else text
