"""Command hooks as declared: reading a ``hooks.json`` (Claude Code's and Codex's shape) into handlers.

The shape (protocol-v3 §5)::

    {"hooks": {"<Event>": [{"matcher"?: str,
                            "hooks": [{"type": "command", "command": str, "args"?: [str],
                                       "timeout"?: seconds, "if"?: rule, "once"?: bool,
                                       "async"?: bool, "statusMessage"?: str}]}]}}

Unknown fields are ignored; a document without the ``hooks`` wrapper is a diagnostic
(``hook_invalid``); handlers of types other than ``command`` are listed (``supported: false``) with
``hook_type_unsupported`` and never run; an unknown event or a matcher that is not a valid regular expression is
``hook_invalid`` for that entry alone.

**The seam for other sources.** Reading does not depend on where a declaration comes from: a
``HookSource`` says who declares (``source``: ``root:<path>`` or ``plugin:<name>``), where
(``path``: the ``hooks.json`` or the manifest), the plugin's folders for the ``${CLAUDE_PLUGIN_*}``
variables, and whether the editor trusts it. Roots: ``root_source(root, trusted_hooks)`` +
``read_file(source)``. Plugins (protocol-v3 §6) build their own ``HookSource(source="plugin:<name>",
path=..., plugin_root=..., plugin_data=..., trusted=...)`` and call ``read_hooks(source, document)``
with the parsed ``hooks/hooks.json`` or the manifest's ``hooks`` object (the part holding the
``{"hooks": …}`` wrapper); the handlers join the thread's ``boundaries.ThreadHooks`` like a root's.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # handler_types and matcher are imported by what reads a hooks file: a thread without
    from harness_sidecar.hooks.matcher import Matcher  # one (the common first thread/start) never needs them
from harness_sidecar.base.diagnostics import Diagnostic
from harness_sidecar.hooks.root_files import (  # where a root keeps hooks, also named here
    CONFIG_TOML,
    FILE_NAME,
    HOOKS_FILE,
    SETTINGS_FILE,
    root_files,
)

MAX_FILE_BYTES = 1024 * 1024

# Claude Code's / Codex's event names this sidecar fires (protocol-v3 §5, v4 §3 "Every event the formats
# define is accepted"): a handler of one of them runs at the sidecar's boundary for it.
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
THREAD_EVENTS = ("UserPromptSubmit", "UserPromptExpansion", "SessionStart", "SessionEnd", "InstructionsLoaded",
                 "ConfigChange")
LOOP_EVENTS = ("Stop", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact", "Notification",
               "PermissionRequest",
               # protocol-v4 §3: fired by the editor through loop/event's newer names (loop.py)
               "Elicitation", "ElicitationResult", "TaskCreated", "TaskCompleted", "CwdChanged", "FileChanged",
               "PostToolBatch", "StopFailure", "TeammateIdle", "WorktreeCreate", "WorktreeRemove",
               "PermissionDenied", "Setup")
FIRED_EVENTS = TOOL_EVENTS + THREAD_EVENTS + LOOP_EVENTS
# Every event Claude Code's hooks reference and its settings schema define (33 names, 2.1.x), and Codex's
# (its hooks docs: a subset of Claude Code's, plus ``Interrupt``). A handler of one the sidecar does not
# fire loads, is listed ``dormant: true`` and never runs; one ``hook_dormant`` (info) says so per event.
CLAUDE_CODE_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "PermissionRequest", "PermissionDenied",
    "Notification", "UserPromptSubmit", "UserPromptExpansion", "Stop", "StopFailure", "SubagentStart",
    "SubagentStop", "PreCompact", "PostCompact", "Elicitation", "ElicitationResult", "TeammateIdle",
    "TaskCreated", "TaskCompleted", "Setup", "InstructionsLoaded", "CwdChanged", "FileChanged", "ConfigChange",
    "WorktreeCreate", "WorktreeRemove", "SessionStart", "SessionEnd", "PreModelSwitch", "PostModelSwitch",
    "MessageDisplay", "DirectoryAdded")
CODEX_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse", "PreCompact", "PostCompact", "UserPromptSubmit",
                "SubagentStart", "SubagentStop", "Stop", "SessionStart", "Interrupt")
EVENTS = tuple(dict.fromkeys(CLAUDE_CODE_EVENTS + CODEX_EVENTS))
DORMANT_EVENTS = tuple(e for e in EVENTS if e not in FIRED_EVENTS)
# The events whose hooks can stop what is happening: a failure of one of them blocks (fail closed).
BLOCKING_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit", "UserPromptExpansion", "Stop",
                             "SubagentStop", "ConfigChange", "TaskCreated", "TaskCompleted", "TeammateIdle"})


@dataclass(frozen=True)
class HookSource:
    """Who declares hooks, where, and whether the editor lets them run."""

    source: str  # root:<path of hooks.json> | plugin:<name>
    path: str  # the declaring file (hooks.json, or a plugin's manifest)
    plugin_root: str | None = None  # CLAUDE_PLUGIN_ROOT / PLUGIN_ROOT
    plugin_data: str | None = None  # CLAUDE_PLUGIN_DATA / PLUGIN_DATA (created on first use)
    trusted: bool = False
    sha256: str | None = None  # of the declaring file, as read
    why_untrusted: str = ""  # said in the hook_untrusted diagnostic
    # a pinned plugin's resources.pins.TreePin: checked before each of its handlers starts (protocol-v4 §1)
    pin: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Handler:
    """One declared command handler of one event."""

    source: HookSource
    event: str
    matcher: Matcher
    command: str
    args: tuple[str, ...] | None
    timeout_s: float | None
    order: int  # declaration order within its source
    # A handler of a type this sidecar does not run (protocol-v4 §2 "Declared means listed"): listed in
    # ``catalog.hooks`` with ``supported: false`` and its ``type``, never matched, never run.
    type: str | None = "command"
    supported: bool = True
    declared: tuple[tuple[str, Any], ...] = ()  # what a non-command handler lists (url, server, tool, prompt, …)
    dormant: bool = False  # an event the formats define that the sidecar does not fire: listed, never run
    # an http / mcp_tool / prompt / agent handler's declaration (protocol-v4 §3; ``hooks.handler_types``)
    spec: Any = None
    # Handler fields (protocol-v4 §3): ``if`` (a hooks.rules.Rule), ``once`` (once per thread), ``async``
    # (fire and forget), ``statusMessage`` (a ui/status while it runs)
    condition: Any = field(default=None, compare=False)
    once: bool = False
    run_async: bool = False
    status_message: str | None = None

    @property
    def ident(self) -> tuple[str, str, int]:
        """This handler, as a thread remembers that a ``once`` handler ran."""
        return (self.source.source, self.event, self.order)

    @property
    def key(self) -> tuple[Any, ...]:
        """Identical handlers (same source, command, args; same type and declaration) run once."""
        return (self.source.source, self.command, self.args, self.type, self.spec)

    @property
    def label(self) -> str:
        """How the handler is named to a person: its command, url, server/tool or prompt."""
        if self.command or self.spec is None:
            return self.command
        said = dict(self.declared)
        text = said.get("url") or (f"{said['server']}/{said['tool']}" if "server" in said else said.get("prompt", ""))
        return text if len(text) <= 200 else text[:199] + "…"  # a prompt may be pages long

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source.source, "event": self.event, "matcher": self.matcher.text}
        if self.command or (self.supported and self.type == "command"):
            out["command"] = self.command
        if self.args is not None:
            out["args"] = list(self.args)
        if self.timeout_s is not None:
            out["timeout"] = int(self.timeout_s) if self.timeout_s.is_integer() else self.timeout_s
        if not self.supported or self.type != "command":
            if self.type is not None:
                out["type"] = self.type
            out.update(self.declared)
        if not self.supported:
            out["supported"] = False
        if self.dormant:
            out["dormant"] = True
        if self.condition is not None:
            out["if"] = self.condition.text
        if self.once:
            out["once"] = True
        if self.run_async:
            out["async"] = True
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        out["trusted"] = self.source.trusted
        return out


@dataclass
class Declared:
    """What one source declares: its handlers (in order) and what was wrong with it."""

    source: HookSource
    handlers: list[Handler] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def read_hooks(source: HookSource, document: Any) -> tuple[list[Handler], list[Diagnostic]]:
    """The handlers ``document`` (a parsed hooks file) declares for ``source``, and its diagnostics."""
    from harness_sidecar.hooks import handler_types
    from harness_sidecar.hooks.matcher import BadMatcher, compile_matcher

    handlers: list[Handler] = []
    diagnostics: list[Diagnostic] = []

    def problem(kind: str, message: str, **extra: Any) -> None:
        diagnostics.append(Diagnostic(kind, message, path=source.path, extra={"source": source.source, **extra}))

    events = document.get("hooks") if type(document) is dict else None
    if type(events) is not dict:
        bare = type(document) is dict and any(k in EVENTS for k in document)
        problem("hook_invalid", "a hooks file is an object {\"hooks\": {\"<Event>\": [...]}}"
                + ("; this one lists events without the \"hooks\" wrapper" if bare else "")
                + ": none of its hooks is used")
        return handlers, diagnostics
    for event, groups in events.items():
        if event not in EVENTS:
            problem("hook_invalid", f"unknown hook event {event!r}; known: {', '.join(EVENTS)}", event=event)
            continue
        if type(groups) is not list:
            problem("hook_invalid", f"'hooks.{event}' must be a list of {{matcher, hooks}}", event=event)
            continue
        dormant = event in DORMANT_EVENTS
        first = len(handlers)
        for g, group in enumerate(groups):
            where = f"hooks.{event}[{g}]"
            if type(group) is not dict or type(group.get("hooks")) is not list:
                problem("hook_invalid", f"'{where}' must be an object with a 'hooks' list", event=event)
                continue
            text = group.get("matcher")
            if text is not None and type(text) is not str:
                problem("hook_invalid", f"'{where}.matcher' must be a string", event=event)
                continue
            try:
                matcher = compile_matcher(text)
            except BadMatcher as exc:
                problem("hook_invalid", f"'{where}': {exc}", event=event)
                continue
            for h, item in enumerate(group["hooks"]):
                spot = f"{where}.hooks[{h}]"
                if type(item) is not dict:
                    problem("hook_invalid", f"'{spot}' must be an object", event=event)
                    continue
                kind = item.get("type")
                if kind != "command":
                    why = "only command, http, mcp_tool, prompt and agent hooks run here"
                    if kind in handler_types.TYPES:  # protocol-v4 §3: http, mcp_tool, prompt, agent
                        typed, said = _typed(source, event, matcher, item, kind, len(handlers))
                        if typed is None:
                            problem("hook_invalid", f"'{spot}': {said}", event=event, type=kind)
                            continue
                        fields = _handler_fields(item, source, event, spot)  # if / once / statusMessage too
                        if isinstance(fields, str):
                            problem("hook_invalid", fields, event=event)
                            continue
                        typed = replace(typed, **fields) if fields else typed
                        if typed.supported:
                            handlers.append(typed)
                            continue
                        why = said
                    problem("hook_type_unsupported", f"'{spot}' is a hook of type {kind!r}: {why}; this one is "
                            "listed (supported: false) and never run", event=event, type=str(kind))
                    handlers.append(typed if kind in handler_types.TYPES
                                    else _unsupported(source, event, matcher, item, len(handlers)))
                    continue
                command, args, timeout = item.get("command"), item.get("args"), item.get("timeout")
                if type(command) is not str or not command.strip():
                    problem("hook_invalid", f"'{spot}.command' must be a non-empty string", event=event)
                    continue
                if args is not None and (type(args) is not list or not all(type(a) is str for a in args)):
                    problem("hook_invalid", f"'{spot}.args' must be a list of strings", event=event)
                    continue
                if timeout is not None and (type(timeout) not in (int, float) or timeout <= 0):
                    problem("hook_invalid", f"'{spot}.timeout' must be a positive number of seconds", event=event)
                    continue
                fields = _handler_fields(item, source, event, spot)
                if isinstance(fields, str):
                    problem("hook_invalid", fields, event=event)
                    continue
                handlers.append(Handler(source, event, matcher, command, None if args is None else tuple(args),
                                        None if timeout is None else float(timeout), len(handlers), **fields))
        if dormant and len(handlers) > first:
            handlers[first:] = [replace(h, dormant=True) for h in handlers[first:]]
            problem("hook_dormant", f"{len(handlers) - first} handler(s) of {event!r}: an event Claude Code or "
                    "Codex defines that this sidecar does not fire; listed (dormant: true), never run",
                    event=event, severity="info")
    return handlers, diagnostics


def _handler_fields(item: dict[str, Any], source: HookSource, event: str, spot: str) -> dict[str, Any] | str:
    """A command handler's ``if``, ``once``, ``async`` and ``statusMessage`` (protocol-v4 §3), or what is
    wrong with them (the handler is then ``hook_invalid``)."""
    out: dict[str, Any] = {}
    rule = item.get("if")
    if rule is not None:
        from harness_sidecar.hooks.rules import BadRule, compile_rule

        if type(rule) is not str:
            return f"'{spot}.if' must be a string (one permission rule, e.g. \"Bash(git *)\")"
        try:
            out["condition"] = compile_rule(rule, source.path if source.source.startswith("root:") else None)
        except BadRule as exc:
            return f"'{spot}': {exc}"
    for key, attr in (("once", "once"), ("async", "run_async")):
        value = item.get(key)
        if value is not None and type(value) is not bool:
            return f"'{spot}.{key}' must be true or false"
        if value:
            out[attr] = True
    message = item.get("statusMessage")
    if message is not None and type(message) is not str:
        return f"'{spot}.statusMessage' must be a string"
    if message:
        out["status_message"] = message
    return out


def _typed(source: HookSource, event: str, matcher: Matcher, item: dict[str, Any], kind: str,
           order: int) -> tuple[Handler | None, str]:
    """An http / mcp_tool / prompt / agent handler (``hooks.handler_types``) and why it does not run on
    ``event`` (``supported: false``; "" when it runs), or ``(None, why it is malformed)``."""
    from harness_sidecar.hooks import handler_types

    spec, invalid, unsupported = handler_types.read(kind, item, event)
    timeout = item.get("timeout")
    if invalid is None and timeout is not None and (type(timeout) not in (int, float) or timeout <= 0):
        invalid = "'timeout' must be a positive number of seconds"
    if invalid is not None or spec is None:
        return None, invalid or "malformed"
    return Handler(source, event, matcher, "", None, None if timeout is None else float(timeout), order, type=kind,
                   supported=unsupported is None, declared=spec.listed(), spec=spec), unsupported or ""


def _unsupported(source: HookSource, event: str, matcher: Matcher, item: dict[str, Any], order: int) -> Handler:
    """A handler of a type that does not run here, as it is listed (its strings as declared, no more)."""
    kind = item.get("type")
    command = item.get("command")
    timeout = item.get("timeout")
    declared = tuple((k, item[k]) for k in ("url", "prompt") if type(item.get(k)) is str)
    return Handler(source, event, matcher, command if type(command) is str else "", None,
                   float(timeout) if type(timeout) in (int, float) and timeout > 0 else None, order,
                   type=kind if type(kind) is str else None, supported=False, declared=declared)


def file_format(path: str) -> str:
    """How a root's hooks source file is read: its place in ``ROOT_FILES`` (a plain hooks file otherwise)."""
    name = os.path.basename(path)
    if name.startswith("settings") and name.endswith(".json"):
        return SETTINGS_FILE
    return CONFIG_TOML if name == "config.toml" else HOOKS_FILE


def read_file(source: HookSource) -> Declared | None:
    """Read ``source.path`` and what it declares; its sha256 is taken from the same bytes.

    A hooks file (``hooks.json``) is JSON ``{"hooks": …}``. A settings file (``settings*.json``) is
    JSON whose ``hooks`` key is the same object; without one it contributes nothing and says nothing
    (None); ``disableAllHooks: true`` turns its hooks off (listed nowhere, one ``hooks_disabled`` info).
    A ``config.toml`` is TOML whose ``[hooks]`` tables hold the same shape (``[[hooks.PreToolUse]]``
    with ``matcher``, then ``[[hooks.PreToolUse.hooks]]``); without them, None; ``[features] hooks =
    false`` (or ``codex_hooks = false``) turns them off as Codex does.
    """
    declared = Declared(source)
    kind = file_format(source.path)

    def problem(message: str, line: int | None = None, diagnostic: str = "hook_invalid", **extra: Any) -> Declared:
        declared.diagnostics.append(Diagnostic(diagnostic, message, path=source.path, line=line,
                                               extra={"source": declared.source.source, **extra}))
        return declared

    try:
        with open(source.path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return problem(f"cannot read the hooks file: {exc.strerror}")
    digest = hashlib.sha256(data).hexdigest()
    source = declared.source = _with_digest(source, digest)
    if len(data) > MAX_FILE_BYTES:
        return problem(f"the hooks file is larger than {MAX_FILE_BYTES} bytes")
    if kind == CONFIG_TOML:
        import tomllib

        try:
            document: Any = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            if "hooks" not in data.decode("utf-8", "replace"):
                return None  # a config.toml that declares no hooks is not ours to judge
            return problem(f"config.toml is not TOML: {exc}; none of its [hooks] is used")
        if "hooks" not in document:
            return None
        features = document.get("features")
        if type(features) is dict and (features.get("hooks") is False or features.get("codex_hooks") is False):
            return problem("[features] turns hooks off in this config.toml (as Codex reads it): its [hooks] "
                           "do not run", diagnostic="hooks_disabled", severity="info")
        declared.handlers, declared.diagnostics = read_hooks(source, {"hooks": document["hooks"]})
        return declared
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        what = "settings file" if kind == SETTINGS_FILE else "hooks file"
        return problem(f"the {what} is not JSON: {exc}" + ("; none of its hooks is used" if kind == SETTINGS_FILE
                                                          else ""), line=getattr(exc, "lineno", None))
    if kind == SETTINGS_FILE:
        if type(document) is not dict or "hooks" not in document:
            return None  # settings without hooks: nothing to say
        if document.get("disableAllHooks") is True:
            return problem("disableAllHooks: true in this settings file turns its hooks off (as Claude Code "
                           "reads it): none of them is listed or runs", diagnostic="hooks_disabled",
                           severity="info")
    declared.handlers, declared.diagnostics = read_hooks(source, document)
    return declared


def _with_digest(source: HookSource, digest: str) -> HookSource:
    """``source`` knowing its file's sha256; a pin that does not match makes it untrusted."""
    pinned = source.sha256
    if pinned is not None and pinned.lower() != digest:
        return replace(source, sha256=digest, trusted=False,
                       why_untrusted=f"its sha256 is {digest}, not the pinned {pinned.lower()} (the file changed)")
    return replace(source, sha256=digest)


def file_source(path: str, trusted: list[Any], refused: dict[str, str] | None = None) -> HookSource:
    """The source of one root's hooks file ``path`` (see ``ROOT_FILES``).

    ``trusted``: ``thread/start.trustedHooks`` (``wire.params.TrustedHooks``: path, sha256?).
    Trusted when ``trusted`` names that file — compared canonically (protocol-v4 §1) — and no other
    root's hooks file is that same file (``refused``: path → why, from ``ambiguous_grants``); the
    pin (if any) is checked by ``read_file``.
    """
    if refused and path in refused:
        return HookSource(f"root:{path}", path, why_untrusted=refused[path])
    real = os.path.realpath(path)
    grant = next((t for t in trusted if os.path.realpath(t.path) == real), None)
    if grant is None:
        return HookSource(f"root:{path}", path, why_untrusted="thread/start.trustedHooks does not name it")
    return HookSource(f"root:{path}", path, trusted=True, sha256=grant.sha256)


def root_source(root: str, trusted: list[Any], refused: dict[str, str] | None = None) -> HookSource | None:
    """The source of ``<root>/hooks.json``, or None when the root has none."""
    path = os.path.join(root, FILE_NAME)
    return file_source(path, trusted, refused) if os.path.isfile(path) else None


def all_files(roots: list[str]) -> list[str]:
    """Every root's hooks source files in root order, each path once (a project root and its own
    ``.claude`` folder as two roots reach the same ``settings.json``: one source)."""
    return list(dict.fromkeys(os.path.normpath(f) for root in roots for f in root_files(root)))


def ambiguous_grants(roots: list[str], trusted: list[Any]) -> tuple[dict[str, str], list[Diagnostic]]:
    """One grant, one candidate for hooks files: a ``trustedHooks`` path that is the canonical file of
    two or more roots' ``hooks.json`` (a workspace's ``hooks.json`` linking to the user's trusted one)
    trusts none of them. Returns the refused paths (→ why) and one ``trust_ambiguous`` per such grant."""
    files = all_files(roots)
    if len(files) < 2 or not trusted:
        return {}, []
    canonical = {f: os.path.realpath(f) for f in files}
    refused: dict[str, str] = {}
    diagnostics = []
    for grant in trusted:
        want = os.path.realpath(grant.path)
        matching = [f for f in files if canonical[f] == want]
        if len(matching) < 2:
            continue
        message = (f"trustedHooks entry {grant.path} is the file of {len(matching)} roots' hooks.json "
                   f"({', '.join(matching)}): none of them runs; a root's hooks file that links to another "
                   "root's is not the file you trusted — remove the link")
        refused.update((f, message) for f in matching)
        diagnostics.append(Diagnostic("trust_ambiguous", message, extra={
            "grant": "trustedHooks", "name": grant.path, "candidates": matching, "field": "path"}))
    return refused, diagnostics


def read_roots(roots: list[str], trusted: list[Any]) -> list[Declared]:
    """Every root's hooks sources (``ROOT_FILES``), in root order (a grant's ``trust_ambiguous`` in its first
    file's diagnostics); a settings file or ``config.toml`` that declares no hooks is not among them."""
    refused, ambiguous = ambiguous_grants(roots, trusted)
    out = []
    for path in all_files(roots):
        source = file_source(path, trusted, refused)
        declared = read_file(source)
        if declared is None:
            continue
        if source.path in refused:
            declared.diagnostics += [d for d in ambiguous if d.extra["candidates"][0] == source.path]
        out.append(declared)
    return out
