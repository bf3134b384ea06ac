"""The sidecar's state directory: what it keeps for the user between runs (protocol.md § Plugins).

``$HARNESS_SIDECAR_STATE_DIR``, else ``$XDG_STATE_HOME/harness-sidecar``, else
``~/.local/state/harness-sidecar`` (the XDG Base Directory default). Today it holds one thing:
each plugin's data folder, ``plugin-data/<plugin>-<16 hex digits>`` (the digits: the start of the
sha256 of the plugin's canonical folder, so two plugins of one name never share data), which a
plugin's command hooks get as ``CLAUDE_PLUGIN_DATA``/``PLUGIN_DATA`` (Claude Code's persistent
per-plugin folder) and which is created (0700) when a hook of that plugin first runs — never by
finding the plugin.

Nothing is created here: this module only names paths.
"""

from __future__ import annotations

import hashlib
import os

ENV = "HARNESS_SIDECAR_STATE_DIR"


def state_dir() -> str:
    given = os.environ.get(ENV)
    if given:
        return given
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "harness-sidecar")


def plugin_data_dir(plugin: str, folder: str) -> str:
    """The data folder of the plugin named ``plugin`` (a resource name: no ``/``, no ``..``) found at
    ``folder``: keyed by the folder's canonical path plus the name (protocol-v4 §1), so a same-name
    plugin elsewhere (a workspace's copy) never reads or writes this one's data."""
    real = os.path.realpath(folder)
    key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return os.path.join(state_dir(), "plugin-data", f"{plugin}-{key}")
