"""What a Python host the sidecar starts may find ahead of the standard library.

Hosts start with ``-P`` (``python -m`` would otherwise put the working directory — the workspace
— first on ``sys.path``). ``PYTHONPATH`` entries also go ahead of the standard library, and an
empty or relative entry means the working directory again; so a host's ``PYTHONPATH`` keeps only
absolute entries outside the working directory, plus the folder this package itself was loaded
from (the sidecar's own code, e.g. when it runs from a source tree).
"""

from __future__ import annotations

import os

import harness_sidecar


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


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
        if _inside(real, cwd) and real != os.path.realpath(ours):
            continue
        kept.append(entry)
    return os.pathsep.join(kept) or None
