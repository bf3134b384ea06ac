"""``python -m harness_sidecar``: serve as the console script does, with no workspace code.

``python -m`` puts the working directory (the workspace an editor opened) first on ``sys.path``,
so any standard-library module imported later (``dataclasses``, ``asyncio``, ``json``…) would be
the workspace's file. The entry is dropped here, before anything else is imported (this package's
``__init__`` imports nothing). What ``runpy`` imported before this file runs (``types``,
``functools``, ``collections``, ``contextlib``, ``warnings``, ``keyword``, ``operator``,
``reprlib``) cannot be protected from inside the package — nor can a workspace folder named
``harness_sidecar`` — so the documented commands are ``harness-sidecar`` and
``python -P -m harness_sidecar``, never a plain ``python -m``.
"""

import sys

if not sys.flags.safe_path and sys.path:
    import os

    if sys.path[0] in (os.getcwd(), ""):
        sys.path_importer_cache.pop(sys.path.pop(0), None)

from harness_sidecar.cli import main  # noqa: E402

raise SystemExit(main())
