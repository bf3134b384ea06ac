"""The sidecar's open threads, by id, and the ones still starting: the one table every part looks a
thread up in (``get``), so a request pipelined behind its thread's ``thread/start`` waits for it.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.threads.thread import Thread
from harness_sidecar.wire import params as P


class OpenThreads:
    """Open threads by id, and the futures of the ones starting."""

    def __init__(self) -> None:
        self.threads: dict[str, Thread] = {}
        self.starting: dict[str, asyncio.Future] = {}
        self._ids = itertools.count(1)

    def new_id(self) -> str:
        return f"thread-{next(self._ids)}"

    def open_or_starting(self) -> int:
        return len(self.threads) + len(self.starting)

    def get_open(self, thread_id: Any) -> Thread | None:
        """The open thread ``thread_id`` names, without waiting (None while it starts, or when there is none)."""
        return self.threads.get(thread_id) if type(thread_id) is str and thread_id not in self.starting else None

    async def get(self, params: dict[str, Any]) -> Thread:
        """The open thread named by ``params.threadId``.

        A request pipelined behind the ``thread/start`` that creates its thread waits for
        that start to finish, so a session piped by hand behaves as it reads.
        """
        thread_id = P.thread_id(params)
        starting = self.starting.get(thread_id)
        if starting is not None:
            await asyncio.shield(starting)
        thread = self.threads.get(thread_id)
        if thread is None:
            if len(thread_id) > 200:  # never echo a huge id back (twice) to the editor
                raise DomainError("thread_not_found", f"no open thread '{thread_id[:200]}…' "
                                                      f"({len(thread_id)} characters)")
            raise DomainError("thread_not_found", f"no open thread '{thread_id}'", threadId=thread_id)
        return thread
