"""Where a folder keeps a plugin marketplace (``FILES``) and which it has: a ``stat`` per file, without reading
them. Kept apart from ``resources.marketplaces`` (which reads them into ``Marketplace``/``Entry``) so that a
thread whose roots have none and that names none never imports it (issue #32: a plain first thread/start).
"""

from __future__ import annotations

import os

FILES = (("claude", os.path.join(".claude-plugin", "marketplace.json")),
         ("codex", os.path.join(".agents", "plugins", "marketplace.json")))


def files_of(folder: str) -> list[tuple[str, str]]:
    return [(dialect, os.path.join(folder, rel)) for dialect, rel in FILES if os.path.isfile(os.path.join(folder, rel))]
