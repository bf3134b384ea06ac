"""The start requests a zygote is sent: one JSON object per hook, the same bytes each time for the same hook.

``StartRequests`` owns the cache of start objects a zygote's hooks were started with (by ``Launch``: the
zygote keeps what it read by these bytes, so a thread's repeated hook costs no new parse there). It only
makes bytes: when they are sent, and with which pipes, is ``zygote.Zygote``'s business; it never touches
the control socket, the queue or a process.
"""

from __future__ import annotations

import json

from harness_sidecar.containment import spawning as launcher


class StartRequests:
    """The start objects made, by launch (at most 64 kept; then they are made again)."""

    def __init__(self) -> None:
        self.made: dict[int, tuple[launcher.Launch, list[str], bytes]] = {}

    def of(self, launch: launcher.Launch, stdio: list[str]) -> bytes:
        """The start object of ``launch``: the same bytes for the same hook (the zygote keeps what it read by
        them), made once per ``Launch`` (``hooks.command`` makes one per hook and thread directory)."""
        made = self.made.get(id(launch))
        if made is not None and made[0] is launch and made[1] == stdio:
            return made[2]
        start = {"argv": launch.argv, "env": launch.env, "add": launch.env_add, "cwd": launch.cwd, "stdio": stdio}
        if launch.direct is not None:
            start["direct"] = launch.direct
        request = json.dumps(start).encode()
        if len(self.made) >= 64:
            self.made.clear()
        self.made[id(launch)] = (launch, stdio, request)  # the launch kept: its id is not reused meanwhile
        return request

