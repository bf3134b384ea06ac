"""A thread's trusted extensions: trust decision → load in the host → commit, all-or-nothing each.

The sidecar decides, the host executes: only ids the editor trusted are sent to the host,
in the editor's order, with the very bytes that were hashed; what each ``activate`` staged
comes back as data, and the sidecar commits an extension's registrations only if all of
them can be committed (no tool name clash, every schema valid). The host is told which
extensions were committed; the others' registrations never run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.resources.extension_sources import ExtensionSource
from harness_sidecar.hooks.python import ALIASES, EVENTS
from harness_sidecar.extensions.sidecar.supervisor import ExtensionHost, load_body
from harness_sidecar.extensions.sidecar.steps import Stopped
from harness_sidecar.base.limits import Limits
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.base.names import TOOL_NAME
from harness_sidecar.resources.named_extensions import TrustedExtension

logger = logging.getLogger(__name__)

_SCHEMAS_PER_TURN = 500  # compiled between two turns of the event loop (~10 ms)


@dataclass
class ExtensionTool:
    extension_id: str
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ExtensionCommand:
    extension_id: str
    name: str
    description: str
    input_schema: dict[str, Any] | None
    raw_arguments: bool = False
    timeout_ms: int | None = None


@dataclass
class Registrations:
    """What the committed extensions registered, in load order."""

    tools: list[ExtensionTool] = field(default_factory=list)
    commands: list[ExtensionCommand] = field(default_factory=list)
    handlers: dict[str, list[str]] = field(default_factory=lambda: {e: [] for e in EVENTS})  # event → ext ids
    # event → each handler's own deadline in ms (api.on(..., timeout_ms=)) or None, parallel to ``handlers``
    handler_timeouts: dict[str, list[int | None]] = field(default_factory=lambda: {e: [] for e in EVENTS})
    loaded: list[str] = field(default_factory=list)
    tool_owners: dict[str, str] = field(default_factory=dict)  # tool name → extension id (clash checks in O(1))
    command_owners: dict[str, str] = field(default_factory=dict)  # command name → extension id


def _report_problem(report: Any) -> str | None:
    """Why a host's load report is not well formed (a host that lies is treated as failing)."""
    if type(report) is not dict or type(report.get("ok")) is not bool:
        return "the host's report is malformed"
    if not report["ok"]:
        return None
    tools, hooks, commands = report.get("tools"), report.get("hooks"), report.get("commands")
    if type(tools) is not list or type(hooks) is not list or type(commands) is not list:
        return "the host's report is malformed"
    for item in tools + commands:
        if type(item) is not dict or type(item.get("name")) is not str or type(item.get("description")) is not str:
            return "the host's report is malformed"
    if any(type(t.get("inputSchema")) is not dict for t in tools) or any(e not in EVENTS for e in hooks):
        return "the host's report is malformed"
    timeouts = report.get("hookTimeouts", [None] * len(hooks))
    if type(timeouts) is not list or len(timeouts) != len(hooks) or not all(
            t is None or (type(t) is int and t > 0) for t in timeouts):
        return "the host's report is malformed"
    aliases = report.get("aliases", [])
    if type(aliases) is not list or not all(type(a) is str and a in ALIASES for a in aliases):
        return "the host's report is malformed"
    if any(c.get("timeoutMs") is not None and (type(c["timeoutMs"]) is not int or c["timeoutMs"] <= 0)
           or c.get("rawArguments", False) is not True and "rawArguments" in c for c in commands):
        return "the host's report is malformed"
    return None


async def load_trusted(found: dict[str, ExtensionSource], trusted: list[TrustedExtension], host: ExtensionHost,
                       claimed: Callable[[str], str | None], limits: Limits,
                       diagnostics: list[Diagnostic], check_schema: Callable[[dict[str, Any]], str | None]
                       ) -> Registrations:
    """Load the trusted extensions in the editor's order into ``host`` and commit them one by one.

    ``claimed(name)`` says who already owns a tool name (``None`` when free); ``check_schema``
    says why a schema is not valid JSON Schema (``None`` when it is).
    """
    registrations = Registrations()
    timeout_s = limits.extension_timeout_ms / 1000
    for trust in trusted:
        source = found.get(trust.id)
        if source is None:
            diagnostics.append(Diagnostic("extension_not_found",
                                          f"trusted extension '{trust.id}' was not found in any root or in "
                                          f"thread/start.extensions", extra={"id": trust.id}))
            continue
        if source.refused is not None:
            continue  # the grant matched no runnable candidate: said when it was matched (discovery.resolve_grants)
        if trust.sha256 is not None and trust.sha256 != source.sha256:
            source.status = "hash_mismatch"
            source.error = f"sha256 is {source.sha256}, the editor pinned {trust.sha256}"
            diagnostics.append(Diagnostic("hash_mismatch", f"extension '{trust.id}' was not imported: {source.error}",
                                          source.source, extra={"id": trust.id}))
            continue
        if host.process is None:
            await host.start()
        body = load_body(source.id, source.code, source.code_path, source.source if source.package else None,
                         source.files, timeout_s)
        began = time.perf_counter()
        report = await host.load(body)
        _say_loaded(host.thread_id, source.id, report, time.perf_counter() - began)
        error = await _commit_problem(report, registrations, claimed, limits, check_schema)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: extension %s: staged registrations checked: %s", host.thread_id, source.id,
                         "ok, to be committed" if error is None else f"failed: {error}")
        if error is None:
            _commit(report, source.id, registrations)
            source.status, source.error = "loaded", None
            for alias in dict.fromkeys(report.get("aliases", [])):  # one diagnostic per alias used
                diagnostics.append(Diagnostic(
                    "event_alias", f"extension '{trust.id}' registered a handler for Pi's event '{alias}': it is "
                    f"the sidecar's '{ALIASES[alias]}' handler, with that event's payload and semantics",
                    source.source, extra={"id": trust.id, "alias": alias, "event": ALIASES[alias],
                                          "severity": "info"}))
        else:
            host.loads = [b for b in host.loads if b["id"] != source.id]
            source.status, source.error = "failed", error
            diagnostics.append(Diagnostic("extension_failed", f"extension '{trust.id}' failed: {error}",
                                          source.source, extra={"id": trust.id}))
    if registrations.loaded:
        host.commit(registrations.loaded)
        logger.debug("%s: commit: %s live", host.thread_id, ", ".join(registrations.loaded))
    return registrations


def _say_loaded(thread_id: str, ext_id: str, report: Any, seconds: float) -> None:
    """The host's part of the load sequence, one stderr line a step (``--log-level debug``)."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    timings = report.get("timings") if type(report) is dict else None
    timings = timings if type(timings) is dict else {}
    for key, step in (("importMs", "import"), ("activateMs", "factory activate(api)")):
        if type(timings.get(key)) in (int, float):
            logger.debug("%s: extension %s: %s %.3f ms", thread_id, ext_id, step, timings[key])
    if type(report) is dict and report.get("ok") is True:
        logger.debug("%s: extension %s: registrations staged: %d tools, %d hooks, %d commands (load %.3f ms)",
                     thread_id, ext_id, len(report.get("tools") or []), len(report.get("hooks") or []),
                     len(report.get("commands") or []), seconds * 1000)
    else:
        logger.debug("%s: extension %s: load failed (%.3f ms)", thread_id, ext_id, seconds * 1000)


async def _commit_problem(report: Any, registrations: Registrations, claimed: Callable[[str], str | None],
                          limits: Limits, check_schema: Callable[[dict[str, Any]], str | None]) -> str | None:
    if isinstance(report, Stopped):
        if report.how == "timeout":
            return f"import and activate(api) did not finish within {limits.extension_timeout_ms} ms"
        return "import and activate(api) ended the extension host (it exited or was killed)"
    problem = _report_problem(report)
    if problem:
        return problem
    if not report["ok"]:
        if report.get("timedOut"):
            return f"import and activate(api) did not finish within {limits.extension_timeout_ms} ms"
        return str(report.get("error") or "import and activate(api) failed")
    if len(report["tools"]) > limits.max_tools:
        return (f"registers {len(report['tools'])} tools, more than limits.maxTools "
                f"({limits.max_tools}) allows one extension")
    seen: set[str] = set()  # every check here is one dict or set look-up per name: O(N) in all
    for tool in report["tools"]:
        name = tool["name"]
        if not TOOL_NAME.fullmatch(name):
            return f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'"
        if name in seen:
            return f"registers the tool '{name}' twice"
        seen.add(name)
        owner = claimed(name)
        if owner is None and name in registrations.tool_owners:
            owner = f"extension '{registrations.tool_owners[name]}'"
        if owner:
            return f"tool '{name}' is already registered by {owner}"
    seen.clear()
    for command in report["commands"]:
        name = command["name"]
        if name in seen:
            return f"registers the command '{name}' twice"
        seen.add(name)
        other = registrations.command_owners.get(name)
        if other:
            return f"command '{name}' is already registered by extension '{other}'"
    for index, item in enumerate(report["tools"] + report["commands"]):
        schema = item.get("inputSchema")
        if index % _SCHEMAS_PER_TURN == _SCHEMAS_PER_TURN - 1:
            await asyncio.sleep(0)  # thousands of schemas: let other threads' requests in between
        if schema is not None:
            why = check_schema(schema)
            if why:
                return f"the inputSchema of '{item['name']}' is not valid JSON Schema: {why}"
    return None


def _commit(report: dict[str, Any], ext_id: str, registrations: Registrations) -> None:
    for t in report["tools"]:
        registrations.tools.append(ExtensionTool(ext_id, t["name"], t["description"], t["inputSchema"]))
        registrations.tool_owners[t["name"]] = ext_id
    for c in report["commands"]:
        registrations.commands.append(ExtensionCommand(ext_id, c["name"], c["description"], c.get("inputSchema"),
                                                       c.get("rawArguments", False), c.get("timeoutMs")))
        registrations.command_owners[c["name"]] = ext_id
    timeouts = report.get("hookTimeouts", [None] * len(report["hooks"]))
    for event, timeout_ms in zip(report["hooks"], timeouts):
        registrations.handlers[event].append(ext_id)
        registrations.handler_timeouts[event].append(timeout_ms)
    registrations.loaded.append(ext_id)
