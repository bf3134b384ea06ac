"""Hooks and the worker runner in-process (pytest-asyncio): the pure rules and the deadlines."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from harness_sidecar.extensions import workers
from harness_sidecar.extensions.hooks import (
    Hook,
    interpret_before,
    judge_after,
    judge_before,
)
from harness_sidecar.extensions.workers import Outcome
from harness_sidecar.tools import Tool, ToolRegistry, call_tool
from harness_sidecar.wire.params import ToolCall


@pytest.mark.parametrize("value, expected", [
    (None, (False, None)),
    ({}, (False, None)),
    ({"block": False}, (False, None)),
    ({"block": False, "reason": "fine"}, (False, None)),
    ({"block": True, "reason": "no"}, (True, "no")),
    ({"block": True}, (True, "blocked by a tool_call hook")),
])
def test_before_hook_values(value, expected):
    assert interpret_before(value) == expected


@pytest.mark.parametrize("value", [False, True, 0, "allow", [], {"block": "yes"}, {"allow": True}])
def test_any_other_before_value_is_a_fault(value):
    with pytest.raises(TypeError):
        interpret_before(value)


def test_judging_outcomes():
    hook = Hook("ext", "tool_call", lambda e: None)
    decision, fault = judge_before(hook, Outcome(timed_out=True), 0.25)
    assert (decision.kind, fault.kind, fault.hook) == ("timeout", "timeout", "tool_call")
    assert "250 ms" in decision.reason
    decision, fault = judge_before(hook, Outcome(error=SystemExit(3)), 1)
    assert decision.kind == "throw" and "SystemExit" in fault.message
    decision, fault = judge_before(hook, Outcome(value={"block": True, "reason": "r"}), 1)
    assert (decision.kind, decision.reason, fault) == ("deny", "r", None)
    assert judge_after(hook, Outcome(value="anything"), 1) is None
    assert judge_after(hook, Outcome(error=KeyError("k")), 1).kind == "throw"


async def test_sync_call_is_bounded_and_does_not_block_the_loop():
    release = threading.Event()
    started = time.monotonic()
    ticks = 0

    async def ticker():
        nonlocal ticks
        while not release.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.ensure_future(ticker())
    outcome = await workers.call(lambda: release.wait(5), (), 0.3)
    release.set()
    await task
    assert outcome.timed_out and time.monotonic() - started < 2
    assert ticks >= 5  # the loop kept running while the call was stuck


async def test_async_call_is_cancelled_at_its_deadline():
    cancelled = asyncio.Event()

    async def slow():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    outcome = await workers.call(slow, (), 0.1)
    await asyncio.wait_for(cancelled.wait(), 2)
    assert outcome.timed_out


@pytest.mark.parametrize("exc", [SystemExit(2), KeyboardInterrupt(), ValueError("v")])
async def test_anything_raised_comes_back_as_a_value(exc):
    def sync():
        raise exc

    async def coro():
        raise exc

    for fn in (sync, coro):
        outcome = await workers.call(fn, (), 1)
        assert outcome.error is exc


async def test_a_stuck_worker_does_not_hold_up_the_queue():
    release = threading.Event()
    stuck = [asyncio.ensure_future(workers.call(lambda: release.wait(10), (), 5)) for _ in range(4)]
    await asyncio.sleep(0.05)
    started = time.monotonic()
    outcome = await workers.call(lambda: "quick", (), 5)
    assert outcome.value == "quick" and time.monotonic() - started < 2
    release.set()
    await asyncio.gather(*stuck)


async def test_a_chain_timing_out_in_its_core_still_runs_the_after_hooks():
    seen = []
    registry = ToolRegistry()
    registry.tools["slow"] = Tool("slow", "", {}, "extension", "ext", execute=lambda call_id, args: time.sleep(5),
                                  timeout_s=0.2)
    registry.before.append(Hook("ext", "tool_call", lambda event: seen.append("before")))
    registry.after.append(Hook("ext", "tool_result", lambda event: seen.append(event["result"]["details"]["kind"])))
    faults = []
    result = await call_tool(registry, "t", ToolCall("c", "slow", {}), 1.0, faults.append)
    assert result.is_error and result.details["kind"] == "timeout"
    assert seen == ["before", "timeout"] and faults == []
