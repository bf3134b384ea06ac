"""The extensions the editor names at thread/start: the ones it trusts (``trustedExtensions``) and the ones
it points at by path (``extensions``). Plain values, checked by ``wire.params``, used by discovery
(``extension_sources``) and loading (``extensions.sidecar.loading``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrustedExtension:
    """One entry of ``thread/start.trustedExtensions``: the extension of that id (at ``path``, hashing to
    ``sha256``, when given) may be imported, if exactly one candidate matches (protocol-v4 §1)."""

    id: str
    sha256: str | None = None
    path: str | None = None


@dataclass
class ExplicitExtension:
    id: str
    path: str
