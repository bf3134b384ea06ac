"""What a Python host the sidecar starts may find ahead of the standard library.

Hosts start with ``-P`` (``python -m`` would otherwise put the working directory — the workspace
— first on ``sys.path``). ``PYTHONPATH`` entries also go ahead of the standard library, and an
empty or relative entry means the working directory again; so a host's ``PYTHONPATH`` keeps only
absolute entries other than the working directory itself (the sidecar's own package folder always
stays). An absolute entry *inside* the workspace is kept: it was configured on purpose (a
dependency folder, ``direnv``'s ``$PWD/src``) and the sidecar itself already imports from it.
"""

from __future__ import annotations

import os

import harness_sidecar


def host_pythonpath(value: str | None, cwd: str) -> str | None:
    """``value`` (a ``PYTHONPATH``) without what could be workspace code; ``None`` when nothing is left."""
    if not value:
        return None
    ours = os.path.dirname(os.path.dirname(os.path.abspath(harness_sidecar.__file__)))
    cwd = os.path.realpath(cwd)
    kept = []
    for entry in value.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == cwd and real != os.path.realpath(ours):
            continue
        kept.append(entry)
    return os.pathsep.join(kept) or None
