"""``thread/start.limits``: every bound a thread runs under, with its wire name and default."""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.records import Record

_set = object.__setattr__


class Limits(Record):
    """Every bound of a thread (immutable: a thread keeps the limits it started with). Written out, not
    a frozen ``@dataclass``: the first ``thread/start`` of a fresh process imports this class
    (``records``: dataclasses compile each class's methods at import); same fields, order, defaults,
    repr, equality and hash."""

    __slots__ = ('catalog_bytes', 'hook_timeout_ms', 'tool_timeout_ms', 'dynamic_tool_timeout_ms',
                 'extension_timeout_ms', 'max_skills_per_root', 'max_frontmatter_bytes', 'max_file_bytes',
                 'host_memory_mb', 'host_grace_ms', 'ui_timeout_ms', 'command_timeout_ms',
                 'extension_context_bytes', 'max_listed_files', 'mcp_tool_timeout_ms',
                 'max_handler_timeout_ms', 'command_hook_timeout_ms', 'max_command_hook_timeout_ms',
                 'session_end_budget_ms', 'command_hook_failure', 'max_processes', 'max_tools',
                 'extension_state_bytes', 'context_messages', 'defer_tools_over')

    def __init__(self,
                 catalog_bytes: int = 8000,
                 hook_timeout_ms: int = 5000,
                 tool_timeout_ms: int = 60000,
                 dynamic_tool_timeout_ms: int = 30000,
                 extension_timeout_ms: int = 10000,
                 max_skills_per_root: int = 2000,
                 max_frontmatter_bytes: int = 16384,
                 max_file_bytes: int = 1048576,
                 # v2
                 host_memory_mb: int = 2048,
                 host_grace_ms: int = 2000,
                 ui_timeout_ms: int = 120000,
                 command_timeout_ms: int = 60000,
                 extension_context_bytes: int = 4000,
                 max_listed_files: int = 200,
                 mcp_tool_timeout_ms: int = 60000,
                 # v3
                 max_handler_timeout_ms: int = 60000,  # caps a handler's own timeout_ms (api.on, register_command)
                 # v3: command hooks
                 command_hook_timeout_ms: int = 60000,
                 max_command_hook_timeout_ms: int = 600000,
                 session_end_budget_ms: int = 1500,
                 command_hook_failure: str = "closed",  # "closed" | "open" (wire: commandHookFailure; not an integer)
                 # maxProcesses: tasks (processes and their threads) of the thread's processes, as pids.max counts
                 max_processes: int = 128,
                 max_tools: int = 10000,  # tools one extension may register; more fails its load
                 # v4 §5
                 extension_state_bytes: int = 262144,  # one extension's ctx.state, as compact JSON
                 context_messages: int = 20,  # the last messages a context handler gets (capabilities.conversation)
                 # deferToolsOver: tools/list lists the non-builtin tools past the first N as deferred; 0: none
                 defer_tools_over: int = 0,
                 ) -> None:
        _set(self, 'catalog_bytes', catalog_bytes)
        _set(self, 'hook_timeout_ms', hook_timeout_ms)
        _set(self, 'tool_timeout_ms', tool_timeout_ms)
        _set(self, 'dynamic_tool_timeout_ms', dynamic_tool_timeout_ms)
        _set(self, 'extension_timeout_ms', extension_timeout_ms)
        _set(self, 'max_skills_per_root', max_skills_per_root)
        _set(self, 'max_frontmatter_bytes', max_frontmatter_bytes)
        _set(self, 'max_file_bytes', max_file_bytes)
        _set(self, 'host_memory_mb', host_memory_mb)
        _set(self, 'host_grace_ms', host_grace_ms)
        _set(self, 'ui_timeout_ms', ui_timeout_ms)
        _set(self, 'command_timeout_ms', command_timeout_ms)
        _set(self, 'extension_context_bytes', extension_context_bytes)
        _set(self, 'max_listed_files', max_listed_files)
        _set(self, 'mcp_tool_timeout_ms', mcp_tool_timeout_ms)
        _set(self, 'max_handler_timeout_ms', max_handler_timeout_ms)
        _set(self, 'command_hook_timeout_ms', command_hook_timeout_ms)
        _set(self, 'max_command_hook_timeout_ms', max_command_hook_timeout_ms)
        _set(self, 'session_end_budget_ms', session_end_budget_ms)
        _set(self, 'command_hook_failure', command_hook_failure)
        _set(self, 'max_processes', max_processes)
        _set(self, 'max_tools', max_tools)
        _set(self, 'extension_state_bytes', extension_state_bytes)
        _set(self, 'context_messages', context_messages)
        _set(self, 'defer_tools_over', defer_tools_over)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: Limits are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: Limits are immutable")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self.__slots__))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:  # copy, deepcopy and pickle: made again, not set
        return type(self), tuple(getattr(self, name) for name in self.__slots__)

    # Limits whose smaller values are nonsense (refused as invalid params, never read as "no limit"):
    # below 64 MiB of address space no Python host can run, so 0 is not a way to say "unlimited".
    MINIMUMS = {"hostMemoryMb": 64}

    WIRE_NAMES = {
        "catalogBytes": "catalog_bytes",
        "hookTimeoutMs": "hook_timeout_ms",
        "toolTimeoutMs": "tool_timeout_ms",
        "dynamicToolTimeoutMs": "dynamic_tool_timeout_ms",
        "extensionTimeoutMs": "extension_timeout_ms",
        "maxSkillsPerRoot": "max_skills_per_root",
        "maxFrontmatterBytes": "max_frontmatter_bytes",
        "maxFileBytes": "max_file_bytes",
        "hostMemoryMb": "host_memory_mb",
        "hostGraceMs": "host_grace_ms",
        "uiTimeoutMs": "ui_timeout_ms",
        "commandTimeoutMs": "command_timeout_ms",
        "extensionContextBytes": "extension_context_bytes",
        "maxListedFiles": "max_listed_files",
        "mcpToolTimeoutMs": "mcp_tool_timeout_ms",
        "maxHandlerTimeoutMs": "max_handler_timeout_ms",
        "commandHookTimeoutMs": "command_hook_timeout_ms",
        "maxCommandHookTimeoutMs": "max_command_hook_timeout_ms",
        "sessionEndBudgetMs": "session_end_budget_ms",
        "maxProcesses": "max_processes",
        "maxTools": "max_tools",
        "extensionStateBytes": "extension_state_bytes",
        "contextMessages": "context_messages",
        "deferToolsOver": "defer_tools_over",
        "commandHookFailure": "command_hook_failure",
    }
    STRING_LIMITS = {"commandHookFailure": ("closed", "open")}  # the limits that are not integers: their values


class SidecarLimits:
    """Bounds of the whole sidecar, from its command line (``cli.py``)."""

    __slots__ = ("max_threads",)

    def __init__(self, max_threads: int = 64) -> None:
        self.max_threads = max_threads  # --max-threads: open threads; thread/start beyond is too_many_threads


SIDECAR = SidecarLimits()
