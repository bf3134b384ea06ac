"""What the host's parts share: the thread it serves (from ``init``), the registrations committed, the
exchanges in flight, the channel's output and the step board. Plain state; every part is given it.

Runs in the host process: imports nothing of the sidecar's side.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Callable

from harness_sidecar.extensions import board as board_cells
from harness_sidecar.extensions.host.output import Output


class HostState:
    """One thread's host: what ``init`` said, what ``commit`` made live, what is in flight."""

    def __init__(self, out: Output, board: board_cells.HostBoard | None) -> None:
        self.pid = os.getpid()  # the host's: a child forked from it is not the host
        self.out = out
        self.board = board  # the step board the sidecar shares, when it passed one
        self.thread_id = ""
        self.cwd: str | None = None
        self.roots: list[str] = []
        self.ui: dict[str, bool] = {}  # the editor's ui capabilities, as the sidecar passed them on
        self.conversation = False  # the editor declared capabilities.conversation (ctx.messages may ask)
        self.sampling = False  # the editor declared capabilities.sampling (ctx.sample may ask model/sample)
        self.settings: dict[str, dict[str, Any]] = {}
        # extension id → its ctx.state as compact JSON text: bytes as init's stateLines brought it, str once set
        self.states: dict[str, bytes | str] = {}
        self.state_bytes = 262144  # limits.extensionStateBytes
        self.max_result_bytes = 16 * 1024 * 1024
        self.max_tools: int | None = None  # limits.maxTools (per extension)
        self.loaded: dict[str, Any] = {}  # extension id → loading.Extension
        self.handlers: dict[str, list[Any]] = collections.defaultdict(list)  # event → api.Handler, load order
        self.tools: dict[str, Any] = {}  # name → api.ToolSpec
        self.plans: dict[str, list[tuple[str, Any]]] = {}  # tool name → its call plan (``calls.call_plan``)
        self.commands: dict[str, Any] = {}  # name → api.CommandSpec
        self.listeners: dict[str, list[Any]] = {}  # api.events: event name → bus.Listener, load order
        self.schemas: dict[str, Any] = {}  # tool name → inputSchema (to check rewritten arguments)
        self.compiled: dict[str, Any] = {}  # tool name → its compiled inputSchema, made when first needed
        self.exchanges: dict[int, Any] = {}  # id → exchanges.Exchange
        # how an aborted exchange lets its questions to the user go (``ui.UserRequests.resolve_ui``)
        self.resolve_ui: Callable[..., None] = lambda *args: None

    def bounded(self, text: str) -> str:
        """A notification's text, cut to --max-result-bytes characters: the frame stays small enough for the
        sidecar to read (it cuts the line further, with its mark, to fit a line of --max-result-bytes)."""
        return text if len(text) <= self.max_result_bytes else text[:self.max_result_bytes]
