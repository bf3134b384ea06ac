"""protocol-v4 §5 (part 2) through the real sidecar and host: the conversation (``ctx.messages``,
``session/messages``), the tools the model sees (``ctx.tools``, deferred tools, ``tool_search``),
the cancellable session events with Pi's event names as aliases, and the debug log.

Written as an author porting a Pi extension (github:badlogic/pi-mono, packages/coding-agent, MIT
licence, © Mario Zechner) would write them: Pi's ``pi.on("session_start", …)``, ``{"cancel": True}``.
"""

from __future__ import annotations

import pytest
from helpers import error_kind
from test_extension_api import UI, start, start_editor, ws  # noqa: F401 - ws is a fixture
from test_loop_events import EMPTY, loop_event

# -- session events and Pi's names ------------------------------------------------------------------------

# After Pi's confirm-destructive.ts: ask before a new session or a fork would drop the work.
GUARD = """
def on_start(event, ctx):
    trace('start', event)
def on_end(event, ctx):
    trace('end', event)
def also_end(event, ctx):
    raise RuntimeError('cannot tell')
def before_switch(event, ctx):
    trace('switch', event)
    if event['reason'] == 'new':
        return {'cancel': True, 'reason': 'the plan is not saved'}
def before_fork(event):
    return {'block': True, 'reason': 'no forks here'}
def activate(api):
    api.on('session_start', on_start)
    api.on('agent_end', on_end)
    api.on('agent_end', also_end)
    api.on('session_before_switch', before_switch)
    api.on('session_before_fork', before_fork)
"""


def test_pi_event_names_are_aliases_with_the_targets_semantics(spawn, ws):
    ws.extension("guard", GUARD)
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["guard"])
    thread = started["threadId"]
    aliases = [d for d in started["diagnostics"] if d["kind"] == "event_alias"]
    # one diagnostic per alias used (agent_end twice: one), severity info, naming the target
    assert sorted((d["alias"], d["event"], d["severity"]) for d in aliases) == [
        ("agent_end", "stop", "info"), ("session_start", "thread_start", "info")]
    # session_start is thread_start: called once, with thread_start's payload
    assert [e for e in ws.events() if e[0] == "start"] == [
        ["start", {"threadId": thread, "cwd": ws.events()[0][1]["cwd"], "roots": [str(ws.root)]}]]
    # agent_end is stop: its payload, and stop's fail-closed rule (a handler that raised blocks)
    answer = loop_event(sidecar, thread, "stop", {"stopHookActive": False, "lastAssistantMessage": "done"})
    assert answer["blocked"]["by"] == ["extension:guard"]
    assert ["end", {"threadId": thread, "event": "stop", "stopHookActive": False,
                    "lastAssistantMessage": "done"}] in ws.events()


def test_session_before_switch_and_fork_can_be_cancelled(spawn, ws):
    ws.extension("guard", GUARD)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["guard"])["threadId"]
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "new"})["blocked"] == {
        "reason": "the plan is not saved", "by": ["extension:guard"]}
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "resume"}) == EMPTY
    assert loop_event(sidecar, thread, "session_before_fork")["blocked"] == {
        "reason": "no forks here", "by": ["extension:guard"]}
    bad = sidecar.request("loop/event", {"threadId": thread, "event": "session_before_switch", "payload": {}})
    assert error_kind(bad) == "invalid_params" and "payload.reason" in bad["error"]["message"]
    assert loop_event(sidecar, thread, "session_before_switch", {"reason": "resume"}) == EMPTY  # still serving


def test_an_unknown_event_name_still_fails_the_extension_and_names_the_aliases(spawn, ws):
    ws.extension("typo", "def activate(api):\n    api.on('agent_ended', lambda e: None)\n")
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["typo"])
    failed = [d for d in started["diagnostics"] if d["kind"] == "extension_failed"]
    assert failed and "agent_ended" in failed[0]["message"] and "agent_end" in failed[0]["message"]
