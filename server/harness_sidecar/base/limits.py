"""``thread/start.limits``: every bound a thread runs under, with its wire name and default."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    catalog_bytes: int = 8000
    hook_timeout_ms: int = 5000
    tool_timeout_ms: int = 60000
    dynamic_tool_timeout_ms: int = 30000
    extension_timeout_ms: int = 10000
    max_skills_per_root: int = 2000
    max_frontmatter_bytes: int = 16384
    max_file_bytes: int = 1048576
    # v2
    host_memory_mb: int = 2048
    host_grace_ms: int = 2000
    ui_timeout_ms: int = 120000
    command_timeout_ms: int = 60000
    extension_context_bytes: int = 4000
    max_listed_files: int = 200
    mcp_tool_timeout_ms: int = 60000
    # v3
    max_handler_timeout_ms: int = 60000  # caps a handler's own timeout_ms (api.on, register_command)
    # v3: command hooks
    command_hook_timeout_ms: int = 60000
    max_command_hook_timeout_ms: int = 600000
    session_end_budget_ms: int = 1500
    command_hook_failure: str = "closed"  # "closed" | "open" (wire: commandHookFailure; not an integer)
    max_processes: int = 128  # tasks (processes and their threads) of the thread's processes, as pids.max counts
    max_tools: int = 10000  # tools one extension may register; more fails its load
    # v4 §5
    extension_state_bytes: int = 262144  # one extension's ctx.state, as compact JSON
    context_messages: int = 20  # the last messages a context handler gets (capabilities.conversation)
    defer_tools_over: int = 0  # tools/list lists the non-builtin tools past the first N as deferred; 0: none

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


@dataclass
class SidecarLimits:
    """Bounds of the whole sidecar, from its command line (``cli.py``)."""

    max_threads: int = 64  # --max-threads: open threads; thread/start beyond is too_many_threads


SIDECAR = SidecarLimits()
