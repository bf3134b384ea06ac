"""The Python hooks' event names (``api.on``): the tool call's stages and the thread's lifecycle events.

Plain names, kept apart from ``hooks.python`` (the rules for what a hook returns, and their dataclasses) so
that what only names an event — a thread's start, its registry, its extension hosts — does not import those
rules and ``hooks.loop``/``hooks.decision`` behind them (issue #32: a plain first thread/start needs none).
"""

from __future__ import annotations

BEFORE = "tool_call"
TRANSFORM = "tool_result_transform"
AFTER = "tool_result"
THREAD_START = "thread_start"
THREAD_CLOSE = "thread_close"
CONTEXT = "context"
INPUT = "input"
OBSERVERS = (AFTER, THREAD_START, THREAD_CLOSE)  # what they return is ignored (a value is a diagnostic)
