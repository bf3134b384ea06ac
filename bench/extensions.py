"""The extension host's and the extension API's figures (issues 9 and 10), on the real processes.

- tools/call through one before and one after hook (an extension tool): pipelined calls/s,
  sequential round trip, and CPU per call of the sidecar *and* its host (every process under
  the sidecar), against the two-process relay floor (bench/relay_server.py: the least a server
  with a separate host process can do) measured in turns with it, and the one-process echo floor;
- the same through a before hook, a transform and an observer, with an inputSchema checked;
- 100,000 pipelined calls: the sidecar's peak RSS;
- thread/start with one trusted extension against the same thread/start without (the spare
  host ready, as in an editor session);
- a frozen host (a hook holding the GIL): how long after the hook's deadline the blocked
  answer arrives;
- a ui/confirm round trip: what it adds to a call beyond the editor's own answering time;
- a neighbour flooding: thread B's tools/list latency while thread A's host sends 60 MiB lines
  and 16 MB results.

``python -m bench.extensions [--quick]`` runs them alone; ``python -m bench`` includes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import (ECHO, RELAY, SIDECAR, SPARE_SETTLE_S, Raw, echo_lines, fmt, pipelined,  # noqa: E402
                          start_thread, summary, tool_calls)
from bench.workspace import make_extension_root  # noqa: E402

POLICY_EXTENSION = '''
def echo(call_id, arguments):
    return {"content": arguments["text"], "details": {"n": len(arguments["text"])}}

def before(event):
    if "SECRET" in event["call"]["arguments"].get("text", ""):
        return {"block": True, "reason": "secret"}

def redact(event):
    text = event["result"]["content"][0]["text"]
    if "sk-live" in text:
        return {"content": text.replace("sk-live", "[redacted]")}

def after(event):
    pass

def activate(api):
    api.register_tool(name="echo", description="Echo text.", input_schema={
        "type": "object", "properties": {"text": {"type": "string", "maxLength": 1000}},
        "required": ["text"], "additionalProperties": False}, execute=echo)
    api.on("tool_call", before)
    api.on("tool_result_transform", redact)
    api.on("tool_result", after)
'''

FROZEN_EXTENSION = '''
import re
def gate(event):
    if event["call"]["arguments"].get("freeze"):
        re.match(r"(a+)+$", "a" * 40 + "b")  # holds the GIL for hours
def ping(call_id, arguments):
    return "pong"
def activate(api):
    api.register_tool(name="ping", description="", input_schema={}, execute=ping)
    api.on("tool_call", gate)
'''

CONFIRM_EXTENSION = '''
def gate(event, ctx):
    if event["call"]["arguments"].get("ask") and not ctx.ui.confirm("Go?", "Run it?"):
        return {"block": True, "reason": "no"}
def ping(call_id, arguments):
    return "pong"
def activate(api):
    api.register_tool(name="ping", description="", input_schema={}, execute=ping)
    api.on("tool_call", gate)
'''


FLOOD_EXTENSION = '''
import os, socket, sys
def line(call_id, arguments):
    # a 60 MiB line written straight onto the channel (the host's fd is its first argument)
    s = socket.socket(fileno=os.dup(int(sys.argv[1])))
    s.setblocking(True)
    s.sendall(b'["done",999,"' + b'x' * (60 << 20) + b'"]\\n')
    s.detach()
    return "sent"
def big(call_id, arguments):
    return "x" * (16_000_000)
def watch(event):
    pass
def activate(api):
    api.register_tool(name="line", description="", input_schema={}, execute=line)
    api.register_tool(name="big", description="", input_schema={}, execute=big)
    api.on("tool_result", watch)
'''


def flooded_neighbour(flooder: Path, quiet: Path, floods: int) -> dict:
    """Thread B's tools/list, sent back to back while thread A's host floods: p50, p99, max (ms)."""
    raw = Raw(SIDECAR)
    raw.call("initialize")
    a = start_thread(raw, {"roots": [str(flooder)], "trustedExtensions": ["flood"]})["threadId"]
    b = raw.call("thread/start", {"roots": [str(quiet)]})["threadId"]
    waits = []
    request_id = 10_000
    for i in range(floods):
        request_id += 1
        flood = request_id
        raw.send(json.dumps({"jsonrpc": "2.0", "id": flood, "method": "tools/call", "params": {
            "threadId": a, "call": {"id": f"f{i}", "name": ("line", "big")[i % 2], "arguments": {}}}}).encode()
            + b"\n")
        answered = False
        while not answered:
            request_id += 1
            probe = request_id
            started = time.perf_counter()
            raw.send(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "tools/list",
                                 "params": {"threadId": b}}).encode() + b"\n")
            while True:
                message = json.loads(raw.line())
                if message.get("id") == flood:
                    answered = True
                elif message.get("id") == probe:
                    break
            waits.append((time.perf_counter() - started) * 1000)
            time.sleep(0.002)
    raw.close()
    waits.sort()
    return {"probes": len(waits), "p50_ms": waits[len(waits) // 2], "p99_ms": waits[int(len(waits) * 0.99)],
            "max_ms": waits[-1]}


def policy_calls(root: Path, count: int, runs: int) -> dict:
    """A call with a schema through a before hook, a transform and an observer."""
    raw = Raw(SIDECAR)
    raw.call("initialize")
    thread = start_thread(raw, {"roots": [str(root)], "trustedExtensions": ["policy"]})["threadId"]
    rates, cpu = pipelined(raw, b"".join(echo_lines("tools/call", thread, count)), count, runs, children=True)
    raw.close()
    return {"pipelined_calls_per_s": summary(rates), "cpu_us_per_call": summary(cpu)}


def pipelined_rss(root: Path, calls: int) -> dict:
    """The sidecar's peak RSS after ``calls`` tools/call written at once (it reads at most
    --max-in-flight ahead; the rest waits in the pipe)."""
    raw = Raw(SIDECAR)
    raw.call("initialize")
    thread = raw.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["hooked"]})["threadId"]
    template = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": "c", "name": "echo", "arguments": {"text": "hello"}}}}

    def write() -> None:
        chunk = []
        for i in range(1, calls + 1):
            template["id"] = i
            chunk.append(json.dumps(template).encode() + b"\n")
            if len(chunk) == 1000:
                raw.send(b"".join(chunk))
                chunk.clear()
        if chunk:
            raw.send(b"".join(chunk))

    started = time.perf_counter()
    writer = threading.Thread(target=write)
    writer.start()
    for _ in range(calls):
        raw.line()
    elapsed = time.perf_counter() - started
    writer.join()
    rss = raw.peak_rss_mb()
    raw.close()
    return {"calls": calls, "seconds": elapsed, "peak_rss_mb": rss}


def thread_start_with_extension(root: Path, runs: int) -> dict:
    """In one editor session (spare host ready): thread/start trusting one extension vs not."""
    raw = Raw(SIDECAR)
    raw.call("initialize")
    start_thread(raw, {"roots": [str(root)]})  # modules loaded, as after a first chat; the spare host ready
    without, with_ext = [], []
    for _ in range(runs):
        # these thread/starts are timed, so not start_thread (its settling would fall in the span):
        # the same settling after each instead
        started = time.perf_counter()
        raw.call("thread/start", {"roots": [str(root)]})
        without.append((time.perf_counter() - started) * 1000)
        time.sleep(SPARE_SETTLE_S)
        started = time.perf_counter()
        result = raw.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["hooked"]})
        with_ext.append((time.perf_counter() - started) * 1000)
        assert any(t["name"] == "echo" for t in result["tools"]), result["tools"]
        time.sleep(SPARE_SETTLE_S)
    raw.close()
    diffs = [b - a for a, b in zip(without, with_ext)]
    return {"without_ms": summary(without), "with_ms": summary(with_ext), "added_ms": summary(diffs)}


def frozen_host(root: Path, runs: int, hook_ms: int = 300) -> dict:
    """A before hook holding the GIL: the blocked answer's delay past the hook's deadline."""
    raw = Raw(SIDECAR)
    raw.call("initialize")
    delays = []
    for _ in range(runs):  # a thread each: each freezes its own host once (the 3-exits rule is per thread)
        thread = raw.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["frozen"],
                                           "limits": {"hookTimeoutMs": hook_ms, "hostGraceMs": 500}})["threadId"]
        raw.call("tools/call", {"threadId": thread, "call": {"id": "w", "name": "ping"}})  # host warm
        started = time.perf_counter()
        result = raw.call("tools/call", {"threadId": thread, "call": {"id": "f", "name": "ping",
                                                                      "arguments": {"freeze": True}}})["result"]
        delays.append((time.perf_counter() - started) * 1000 - hook_ms)
        assert result["details"]["blocked"]["kind"] == "timeout", result
    raw.close()
    return {"hook_timeout_ms": hook_ms, "delay_after_deadline_ms": summary(delays)}


def confirm_overhead(root: Path, runs: int) -> dict:
    """What a ui/confirm adds to a call, beyond the time the editor took to answer it."""
    raw = Raw(SIDECAR)
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"capabilities": {"ui": {"confirm": True}}}}).encode() + b"\n")
    raw.line()
    thread = raw.call("thread/start", {"roots": [str(root)], "trustedExtensions": ["asker"]})["threadId"]
    plain, asked, answering_ms = [], [], []
    next_id = 100

    def call(arguments: dict) -> tuple[float, float]:
        nonlocal next_id
        next_id += 1
        started = time.perf_counter()
        raw.send(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": "tools/call", "params": {
            "threadId": thread, "call": {"id": "c", "name": "ping", "arguments": arguments}}}).encode() + b"\n")
        answering = 0.0
        while True:
            message = json.loads(raw.line())
            if message.get("method") == "ui/confirm":
                t0 = time.perf_counter()
                raw.send(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                     "result": {"confirmed": True}}).encode() + b"\n")
                answering += time.perf_counter() - t0
            elif message.get("id") == next_id:
                return (time.perf_counter() - started) * 1000, answering * 1000

    for _ in range(20):  # warm-up
        call({})
        call({"ask": True})
    for _ in range(runs):
        plain.append(call({})[0])
        total, answering = call({"ask": True})
        asked.append(total)
        answering_ms.append(answering)
    raw.close()
    added = [a - p - e for a, p, e in zip(asked, plain, answering_ms)]
    return {"plain_ms": summary(plain), "asked_ms": summary(asked), "added_ms": summary(added)}


def _pipelined_cpu(raw: Raw, payload: bytes, count: int) -> float:
    """µs of CPU per call (of ``raw``'s process and every process under it) for ``count`` calls written at once."""
    return pipelined(raw, payload, count, 1, children=True, warm_up=False)[1][0]


def cpu_against_relay(root: Path, count: int, rounds: int) -> dict:
    """tools/call CPU (sidecar + host) against the relay floor's (server + worker), measured in turns.

    Both processes run side by side and take turns, ``count`` pipelined calls each (A B, then B A): a
    stretch of contention for the CPU (this figure moved 1.75-2.93x between runs of the same code when
    the sidecar's and the relay's calls ran seconds apart) then lands on both, and each round gives
    one ratio. ``count`` is large enough that the clock-tick resolution of the CPU figures (10 ms) is a
    few per cent of a turn. The figure is the median of the rounds' ratios.
    """
    sidecar, relay = Raw(SIDECAR), Raw(RELAY)
    try:
        sidecar.call("initialize")
        thread = start_thread(sidecar, {"roots": [str(root)], "trustedExtensions": ["hooked"]})["threadId"]
        ours = b"".join(echo_lines("tools/call", thread, count))
        floor = b"".join(echo_lines("echo", "t", count))
        _pipelined_cpu(sidecar, ours, count)  # warm-up: the host's first calls, the relay's worker
        _pipelined_cpu(relay, floor, count)
        ours_us, floor_us, ratios = [], [], []
        for turn in range(rounds):
            first, second = ((sidecar, ours), (relay, floor)) if turn % 2 == 0 else ((relay, floor), (sidecar, ours))
            a = _pipelined_cpu(*first, count)
            b = _pipelined_cpu(*second, count)
            mine, theirs = (a, b) if turn % 2 == 0 else (b, a)
            ours_us.append(mine)
            floor_us.append(theirs)
            ratios.append(mine / theirs)
    finally:
        sidecar.close()
        relay.close()
    return {"sidecar_cpu_us_per_call": summary(ours_us), "relay_cpu_us_per_call": summary(floor_us),
            "ratio": summary(ratios), "calls_per_turn": count}


def run(runs: int, quick: bool) -> dict:
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="harness-bench-ext-") as tmp:
        hooked = make_extension_root(Path(tmp) / "hooked")
        policy = make_extension_root(Path(tmp) / "policy", "policy", POLICY_EXTENSION)
        frozen = make_extension_root(Path(tmp) / "frozen", "frozen", FROZEN_EXTENSION)
        asker = make_extension_root(Path(tmp) / "asker", "asker", CONFIRM_EXTENSION)
        flooder = make_extension_root(Path(tmp) / "flooder", "flood", FLOOD_EXTENSION)
        quiet = make_extension_root(Path(tmp) / "quiet", "quiet", "def activate(api):\n    pass\n")
        pipelined = 5000
        calls = tool_calls(SIDECAR, hooked, 300, pipelined, runs, include_children=True)
        echo = tool_calls(ECHO, None, 300, pipelined, runs)
        relay = tool_calls(RELAY, None, 300, pipelined, runs, include_children=True)
        results["tools_call"] = calls
        results["echo_floor"] = echo
        results["relay_floor"] = relay
        results["cpu_ratio_to_echo"] = calls["server_cpu_us_per_call"]["median"] / \
            echo["server_cpu_us_per_call"]["median"]
        paired = results["cpu_against_relay"] = cpu_against_relay(hooked, 20_000, 5 if quick else 9)
        results["cpu_ratio_to_relay"] = paired["ratio"]["median"]
        print(f"tools/call, 1 before + 1 after hook (extension tool): {fmt(calls['pipelined_calls_per_s'], '/s', 0)}"
              f" pipelined, {fmt(calls['sequential_us'], ' µs', 0)} round trip, sidecar + host CPU "
              f"{fmt(calls['server_cpu_us_per_call'], ' µs', 0)}/call", flush=True)
        print(f"echo floor:                                           {fmt(echo['pipelined_calls_per_s'], '/s', 0)}"
              f" pipelined, {fmt(echo['sequential_us'], ' µs', 0)} round trip, CPU "
              f"{fmt(echo['server_cpu_us_per_call'], ' µs', 0)}/call", flush=True)
        print(f"relay floor (two processes):                          {fmt(relay['pipelined_calls_per_s'], '/s', 0)}"
              f" pipelined, {fmt(relay['sequential_us'], ' µs', 0)} round trip, CPU "
              f"{fmt(relay['server_cpu_us_per_call'], ' µs', 0)}/call", flush=True)
        print(f"CPU per call in turns ({paired['calls_per_turn']:,} pipelined calls a turn): sidecar + host "
              f"{fmt(paired['sidecar_cpu_us_per_call'], ' µs', 1)}, relay floor "
              f"{fmt(paired['relay_cpu_us_per_call'], ' µs', 1)}; ratio {fmt(paired['ratio'], '×', 2)}", flush=True)
        results["policy_calls"] = policy_calls(policy, pipelined, runs)
        results["policy_ratio_to_echo_rate"] = results["policy_calls"]["pipelined_calls_per_s"]["median"] / \
            echo["pipelined_calls_per_s"]["median"]
        print(f"tools/call with a schema, before hook, transform, observer: "
              f"{fmt(results['policy_calls']['pipelined_calls_per_s'], '/s', 0)} pipelined, sidecar + host CPU "
              f"{fmt(results['policy_calls']['cpu_us_per_call'], ' µs', 0)}/call", flush=True)
        results["pipelined_100k"] = pipelined_rss(hooked, 20_000 if quick else 100_000)
        p = results["pipelined_100k"]
        print(f"{p['calls']:,} calls written at once: answered in {p['seconds']:.1f} s, sidecar peak RSS "
              f"{p['peak_rss_mb']:.1f} MB", flush=True)
        results["thread_start_extension"] = thread_start_with_extension(hooked, runs * 2)
        t = results["thread_start_extension"]
        print(f"thread/start in a warm session: without extensions {fmt(t['without_ms'], ' ms')}, trusting one "
              f"{fmt(t['with_ms'], ' ms')}: {fmt(t['added_ms'], ' ms')} more", flush=True)
        results["frozen_host"] = frozen_host(frozen, 3 if quick else 5)
        f = results["frozen_host"]
        print(f"a hook holding the GIL ({f['hook_timeout_ms']} ms limit): blocked answer "
              f"{fmt(f['delay_after_deadline_ms'], ' ms')} after the deadline", flush=True)
        results["confirm"] = confirm_overhead(asker, 30 if quick else 100)
        c = results["confirm"]
        print(f"a ui/confirm answered at once by the editor adds {fmt(c['added_ms'], ' ms', 2)} to a call "
              f"({fmt(c['plain_ms'], ' ms', 2)} without)", flush=True)
        results["flooded"] = flooded_neighbour(flooder, quiet, 4 if quick else 10)
        n = results["flooded"]
        print(f"thread B's tools/list while thread A's host sends 60 MiB lines and 16 MB results: p50 "
              f"{n['p50_ms']:.1f} ms, p99 {n['p99_ms']:.1f} ms, max {n['max_ms']:.1f} ms ({n['probes']} probes)",
              flush=True)
    return results


def targets(results: dict) -> list[tuple[str, bool, str]]:
    calls = results["tools_call"]
    rate = calls["pipelined_calls_per_s"]["median"]
    p50 = calls["sequential_us"]["median"]
    ratio = results["cpu_ratio_to_relay"]
    policy = results["policy_calls"]["pipelined_calls_per_s"]["median"]
    added = results["thread_start_extension"]["added_ms"]["median"]
    frozen = results["frozen_host"]["delay_after_deadline_ms"]["median"]
    confirm = results["confirm"]["added_ms"]["median"]
    rss = results["pipelined_100k"]["peak_rss_mb"]
    return [
        ("tools/call, 1 before + 1 after hook ≥ 10,000 calls/s pipelined", rate >= 10000, f"{rate:.0f}/s"),
        ("… CPU (sidecar + host) ≤ 2× the two-process relay floor's", ratio <= 2, f"{ratio:.2f}×"),
        ("… sequential round trip p50 ≤ 0.5 ms", p50 <= 500, f"{p50:.0f} µs"),
        (f"{results['pipelined_100k']['calls']:,} pipelined calls: sidecar peak RSS ≤ 100 MB", rss <= 100,
         f"{rss:.1f} MB"),
        ("thread/start with one trusted extension ≤ 30 ms more than without", added <= 30, f"{added:.1f} ms"),
        ("a frozen host: the blocked answer ≤ 100 ms after the deadline", frozen <= 100, f"{frozen:.0f} ms"),
        ("schema + before + transform + observer ≥ 8,000 calls/s pipelined", policy >= 8000, f"{policy:.0f}/s"),
        ("a ui/confirm round trip adds ≤ 1 ms beyond the editor's answer", confirm <= 1, f"{confirm:.2f} ms"),
        ("thread B's tools/list p99 ≤ 100 ms while thread A floods its channel", results["flooded"]["p99_ms"] <= 100,
         f"{results['flooded']['p99_ms']:.1f} ms"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extensions", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    results = run(3 if args.quick else 7, args.quick)
    for name, met, figure in targets(results):
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
