"""Command hooks' figures (issue 19), on the real sidecar, as same-run ratios.

- a trivial PreToolUse command hook (``exit 0``): what it adds to a tools/call round trip (p50 with
  the hook − p50 without, the calls interleaved), against the fork/exec floor measured in the same
  run — spawning ``/bin/true`` from Python with ``subprocess`` as a hook is started (its stdin a pipe
  holding the same bytes as the hook's, its stdout and stderr pipes read to their end) and waiting
  for it; the bare spawn (no pipes, the floor until issue 32's third round) is shown beside it; and its
  parts, each in floors: the hook's own program (``/bin/sh -c 'exit 0'``, not ``/bin/true``) started from
  Python as the floor is, the same run as the sidecar runs a hook (``hooks.command.run_handler``: the
  zygote's hop, the hook's pipes, its exit and answer read) from a bare event loop, and what tools/call
  adds beyond that (the hooks' matching and decision, and the same run in the sidecar's loop);
- the same for a hook that runs a program (``/bin/true``), today and on ``V3`` (exported from git);
- four matching hooks that each take 200 ms against one such hook: they run in parallel;
- 300 matching ``exit 0`` handlers on one call (issue 27): answered, and its round trip ÷ 300 against
  the round trip of a call with one such handler (and against what that one handler adds);
- tools/call with no hooks declared against the sidecar as it was before command hooks (the commit
  ``BASE``, exported from git and run in the same invocation): sequential p50 and pipelined rate.

The tool called is ``load_skill`` (its core runs in the sidecar: no editor round trip in the figure).
``python -m bench.hooks [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import SIDECAR, LauncherTrue, OwnLoop, Raw, bench_env, fmt, summary  # noqa: E402

BASE = "b8d0666"  # the last commit before command hooks
V3 = "20b5f90"  # main before issue 32: every shell-form hook through /bin/sh


class RawAt(Raw):
    """A sidecar driven with raw bytes, its code from ``server`` (another checkout's)."""

    def __init__(self, server: Path) -> None:
        env = {**bench_env(), "PYTHONPATH": str(server)}
        self.proc = subprocess.Popen(SIDECAR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 1


def make_root(path: Path, hooks: list[dict] | None) -> Path:
    skill = path / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Use when benchmarking.\n---\nBody.\n")
    if hooks is not None:
        (path / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "load_skill",
                                                                              "hooks": hooks}]}}))
    return path


def open_thread(raw: Raw, root: Path) -> str:
    raw.call("initialize")
    params = {"roots": [str(root)], "watch": False}
    if (root / "hooks.json").exists():
        params["trustedHooks"] = [{"path": str(root / "hooks.json")}]
    return raw.call("thread/start", params)["threadId"]


def call_line(thread: str, i: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "threadId": thread, "call": {"id": f"c{i}", "name": "load_skill", "arguments": {"name": "demo"}}}}).encode() + b"\n"


def round_trip_ms(raw: Raw, thread: str, i: int) -> float:
    started = time.perf_counter()
    raw.send(call_line(thread, i))
    answer = json.loads(raw.line())
    elapsed = (time.perf_counter() - started) * 1000
    assert "result" in answer and not answer["result"]["result"]["isError"], answer
    return elapsed


def spawn_true_ms(runs: int) -> list[float]:
    """The bare floor: ``/bin/true`` started from Python, no pipes."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def hook_stdin(thread: str, i: int) -> bytes:
    """The stdin a PreToolUse command hook gets for ``call_line(thread, i)`` (the thread's cwd is the
    sidecar's, which is ours)."""
    from harness_sidecar.hooks.command import stdin_payload

    return stdin_payload("PreToolUse", thread, os.getcwd(), {"tool_name": "load_skill",
                                                           "tool_input": {"name": "demo"}, "tool_use_id": f"c{i}"})


def spawn_true_piped_ms(stdin: bytes, argv: tuple[str, ...] = ("/bin/true",)) -> float:
    """The floor a hook is compared with: ``/bin/true`` (or ``argv``) started from Python as a hook is —
    ``stdin`` in a pipe, stdout and stderr pipes read to their end — and waited for."""
    started = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    return (time.perf_counter() - started) * 1000


class HandlerRun(OwnLoop):
    """``hooks.command.run_handler`` of one shell-form command handler, as a PreToolUse hook of the thread
    ``owner`` is run (through its zygote, its stdin made as the start is sent, its output and exit read),
    from one event loop kept for the whole run, timed inside it: a hook's run without the tools/call
    around it (no matching, no decision, no JSON-RPC)."""

    def __init__(self, command: str, owner: str) -> None:
        from harness_sidecar.hooks import command as hook_command
        from harness_sidecar.hooks.declared import Handler, HookSource
        from harness_sidecar.hooks.matcher import compile_matcher

        super().__init__(owner)
        self.run_handler = hook_command.run_handler
        source = HookSource(f"root:{owner}", owner, trusted=True)
        self.handler = Handler(source, "PreToolUse", compile_matcher("load_skill"), command, None, None, 0)

    def run_ms(self, stdin: bytes) -> float:
        async def once() -> float:
            started = time.perf_counter()
            answer = await self.run_handler(self.handler, lambda: stdin, thread_id=self.owner, cwd=os.getcwd(),
                                            timeout_s=60)
            took = (time.perf_counter() - started) * 1000
            assert answer.failure is None and answer.exit_code == 0, answer
            return took

        return self.loop.run_until_complete(once())


def in_turns(round_number: int, measures: list) -> list[float]:
    """Each of ``measures`` run once, in order in odd rounds and in reverse in even ones; their results in
    the order given. A measure taken first in a round comes out faster (measured: 0.04-0.17 ms between
    identical sidecars at p10-p50, 1,200 rounds, load 4), so no side may always be first."""
    order = list(range(len(measures)))
    if round_number % 2 == 0:
        order.reverse()
    took: list[float] = [0.0] * len(measures)
    for k in order:
        took[k] = measures[k]()
    return took


def export(commit: str, into: Path) -> Path:
    """``server`` of ``commit``, exported from git into ``into``."""
    if not (into / "server").exists():
        into.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "server"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "server"


def trivial_hook(tmp: Path, runs: int, command: str = "exit 0", server: Path = REPO / "server",
                 name: str = "trivial") -> dict:
    plain = RawAt(server)
    hooked = RawAt(server)
    plain_thread = open_thread(plain, make_root(tmp / f"plain-{name}", None))
    hooked_thread = open_thread(hooked, make_root(tmp / name, [{"type": "command", "command": command}]))
    without, with_hook, floor, bare, fenced, shell, shell_fenced = [], [], [], [], [], [], []
    through_launcher = LauncherTrue()
    # where the hook's time goes: its own program (``/bin/sh -c command``) started from Python as the floor
    # is, and run as the sidecar runs a hook (``hooks.command.run_handler``, through the zygote) from a
    # bare event loop — the figure's parts
    shell_argv = ("/bin/sh", "-c", command)
    shell_run = HandlerRun(command, "bench-shell")
    for i in range(1, runs + 6):  # interleaved, so both see the same load; 5 warm-up rounds
        took = in_turns(i, [lambda: round_trip_ms(plain, plain_thread, i), lambda: round_trip_ms(hooked, hooked_thread, i),
                            lambda: spawn_true_piped_ms(hook_stdin(hooked_thread, i)), lambda: spawn_true_ms(1)[0],
                            through_launcher.run_ms, lambda: spawn_true_piped_ms(hook_stdin(hooked_thread, i), shell_argv),
                            lambda: shell_run.run_ms(hook_stdin(hooked_thread, i))])
        if i > 5:
            for into, ms in zip((without, with_hook, floor, bare, fenced, shell, shell_fenced), took):
                into.append(ms)
    plain.close()
    hooked.close()
    through_launcher.close()
    shell_run.close()
    w, h, fl, ba, fe = summary(without), summary(with_hook), summary(floor), summary(bare), summary(fenced)
    sh, shf = summary(shell), summary(shell_fenced)
    added = h["median"] - w["median"]
    return {"without_ms": w, "with_ms": h, "floor_ms": fl, "bare_floor_ms": ba, "launcher_ms": fe, "added_ms": added,
            "ratio": added / fl["median"], "ratio_to_bare": added / ba["median"], "ratio_to_launcher": added / fe["median"],
            "command_ms": sh, "command_run_ms": shf,
            # the parts of ``ratio``, each in floors: the program itself (the shell, not /bin/true), the
            # hook's run (run_handler through the zygote against Python's own spawn of the same program),
            # the rest of tools/call (what the call adds beyond the hook's run: matching, decision)
            "parts": {"program": (sh["median"] - fl["median"]) / fl["median"],
                      "run": (shf["median"] - sh["median"]) / fl["median"],
                      "tools_call": (added - shf["median"]) / fl["median"]}}


def hook_sides(tmp: Path, runs: int, commands: dict[str, str], servers: dict[str, Path]) -> dict:
    """What each hook command adds on each server (``{side: {command name: figures}}``), every call of every
    side and the /bin/true floors (piped as a hook, and bare) interleaved round by round, so that all see
    the same load."""
    sides = {}
    for side, server in servers.items():
        plain = RawAt(server)
        sides[(side, None)] = (plain, open_thread(plain, make_root(tmp / f"{side}-plain", None)))
        for name, command in commands.items():
            hooked = RawAt(server)
            sides[(side, name)] = (hooked, open_thread(hooked, make_root(tmp / f"{side}-{name}", [
                {"type": "command", "command": command}])))
    times: dict = {key: [] for key in sides}
    floor, bare = [], []
    keys = list(sides)
    for i in range(1, runs + 6):  # 5 warm-up rounds
        took = in_turns(i, [lambda: spawn_true_piped_ms(hook_stdin("thread-1", i)),  # each sidecar's one thread
                            lambda: spawn_true_ms(1)[0]]
                        + [lambda key=key: round_trip_ms(sides[key][0], sides[key][1], i) for key in keys])
        if i > 5:
            floor.append(took[0])
            bare.append(took[1])
            for key, ms in zip(keys, took[2:]):
                times[key].append(ms)
    for raw, _ in sides.values():
        raw.close()
    fl, ba = summary(floor), summary(bare)
    out: dict = {"floor_ms": fl, "bare_floor_ms": ba}
    for side in servers:
        plain = summary(times[(side, None)])
        out[side] = {"without_ms": plain}
        for name in commands:
            hooked = summary(times[(side, name)])
            added = hooked["median"] - plain["median"]
            out[side][name] = {"with_ms": hooked, "added_ms": added, "ratio": added / fl["median"],
                               "ratio_to_bare": added / ba["median"]}
    return out


def parallel_hooks(tmp: Path, runs: int) -> dict:
    sleeper = {"type": "command", "command": "sleep 0.2"}
    one = RawAt(REPO / "server")
    four = RawAt(REPO / "server")
    one_thread = open_thread(one, make_root(tmp / "one", [sleeper]))
    # four distinct handlers (identical ones would run once)
    four_thread = open_thread(four, make_root(tmp / "four", [
        {"type": "command", "command": f"sleep 0.2 # {n}"} for n in range(4)]))
    ones, fours = [], []
    for i in range(1, runs + 2):
        a = round_trip_ms(one, one_thread, i)
        b = round_trip_ms(four, four_thread, i)
        if i > 1:
            ones.append(a)
            fours.append(b)
    one.close()
    four.close()
    o, f = summary(ones), summary(fours)
    return {"one_ms": o, "four_ms": f, "ratio": f["median"] / o["median"]}


def many_handlers(tmp: Path, runs: int, count: int = 300) -> dict:
    one = RawAt(REPO / "server")
    many = RawAt(REPO / "server")
    plain = RawAt(REPO / "server")
    one_thread = open_thread(one, make_root(tmp / "one-exit0", [{"type": "command", "command": "exit 0"}]))
    # distinct handlers (identical ones would run once)
    many_thread = open_thread(many, make_root(tmp / "many-exit0", [
        {"type": "command", "command": f"exit 0 # {n}"} for n in range(count)]))
    plain_thread = open_thread(plain, make_root(tmp / "plain-exit0", None))
    ones, manys, plains = [], [], []
    for i in range(1, runs + 3):  # interleaved; 2 warm-up rounds
        a = round_trip_ms(one, one_thread, i)
        b = round_trip_ms(many, many_thread, i)
        c = round_trip_ms(plain, plain_thread, i)
        if i > 2:
            ones.append(a)
            manys.append(b)
            plains.append(c)
    for raw in (one, many, plain):
        raw.close()
    o, m, p = summary(ones), summary(manys), summary(plains)
    per = m["median"] / count
    return {"count": count, "one_ms": o, "many_ms": m, "plain_ms": p, "per_handler_ms": per,
            "ratio": per / o["median"], "ratio_to_added": per / max(1e-6, o["median"] - p["median"])}


def no_hooks_vs_base(tmp: Path, runs: int, sequential: int, pipelined: int) -> dict:
    base = export(BASE, tmp / "base")
    root = make_root(tmp / "nohooks", None)
    sides = {"today": RawAt(REPO / "server"), "base": RawAt(base)}
    threads = {name: open_thread(raw, root) for name, raw in sides.items()}
    seq: dict[str, list[float]] = {name: [] for name in sides}
    rate: dict[str, list[float]] = {name: [] for name in sides}
    n = 1
    for _ in range(sequential // 10 + 1):  # warm-up
        for name, raw in sides.items():
            round_trip_ms(raw, threads[name], n)
        n += 1
    for _ in range(sequential):
        for name, raw in sides.items():
            seq[name].append(round_trip_ms(raw, threads[name], n))
        n += 1
    for _ in range(runs):
        for name, raw in sides.items():
            payload = b"".join(call_line(threads[name], n + k) for k in range(pipelined))
            started = time.perf_counter()
            raw.send(payload)
            for _ in range(pipelined):
                raw.line()
            rate[name].append(pipelined / (time.perf_counter() - started))
        n += pipelined
    for raw in sides.values():
        raw.close()
    out = {f"{name}_seq_ms": summary(seq[name]) for name in sides}
    out.update({f"{name}_calls_per_s": summary(rate[name]) for name in sides})
    out["seq_ratio"] = out["today_seq_ms"]["median"] / out["base_seq_ms"]["median"]
    out["rate_ratio"] = out["base_calls_per_s"]["median"] / out["today_calls_per_s"]["median"]
    # Load from other processes only ever slows a run down: the best run of each is the steadier comparison.
    out["best_rate_ratio"] = out["base_calls_per_s"]["max"] / out["today_calls_per_s"]["max"]
    return out


def run(quick: bool) -> dict:
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="harness-bench-hooks-") as tmp_name:
        tmp = Path(tmp_name)
        t = results["trivial"] = trivial_hook(tmp, 40 if quick else 150)
        print(f"tools/call without hooks {fmt(t['without_ms'], ' ms', 2)}, with a trivial PreToolUse hook "
              f"{fmt(t['with_ms'], ' ms', 2)}: +{t['added_ms']:.2f} ms; spawning /bin/true from Python piped as a "
              f"hook {fmt(t['floor_ms'], ' ms', 2)} (bare {fmt(t['bare_floor_ms'], ' ms', 2)}: "
              f"{t['ratio_to_bare']:.2f}×), through containment.launcher {fmt(t['launcher_ms'], ' ms', 2)}", flush=True)
        parts = t["parts"]
        print(f"  its parts, in floors: /bin/sh -c 'exit 0' from Python {fmt(t['command_ms'], ' ms', 2)} "
              f"(1 + {parts['program']:.2f}: the shell's own start), run as a hook (hooks.command.run_handler, "
              f"through the zygote) {fmt(t['command_run_ms'], ' ms', 2)} (+ {parts['run']:.2f}), the rest of "
              f"tools/call + {parts['tools_call']:.2f} (the hooks' matching and decision, and run_handler in the "
              f"sidecar's loop rather than a bare one)", flush=True)
        # 'exit 0' and a hook that runs a program (the shell form of most real hooks: ``python3 …/hook.py``),
        # here /bin/true, on today's sidecar (a simple command starts without /bin/sh) and on V3 (through
        # /bin/sh), all interleaved with the floor
        v = results["versus_v3"] = hook_sides(tmp, 40 if quick else 150, {"exit0": "exit 0", "program": "/bin/true"},
                                              {"today": REPO / "server", "v3": export(V3, tmp / "v3")})
        for name, label in (("exit0", "'exit 0'"), ("program", "/bin/true")):
            print(f"a PreToolUse hook running {label}: today +{v['today'][name]['added_ms']:.2f} ms "
                  f"({v['today'][name]['ratio']:.2f}×; {v['today'][name]['ratio_to_bare']:.2f}× bare), {V3} "
                  f"+{v['v3'][name]['added_ms']:.2f} ms ({v['v3'][name]['ratio']:.2f}×) of spawning /bin/true from "
                  f"Python piped as a hook ({fmt(v['floor_ms'], ' ms', 2)}; bare {fmt(v['bare_floor_ms'], ' ms', 2)})",
                  flush=True)
        p = results["parallel"] = parallel_hooks(tmp, 5 if quick else 15)
        print(f"one 200 ms hook {fmt(p['one_ms'], ' ms')}, four {fmt(p['four_ms'], ' ms')}", flush=True)
        m = results["many"] = many_handlers(tmp, 5 if quick else 15)
        print(f"{m['count']} matching 'exit 0' handlers on one call {fmt(m['many_ms'], ' ms')} "
              f"({m['per_handler_ms']:.2f} ms each); one such handler {fmt(m['one_ms'], ' ms', 2)}, "
              f"no hook {fmt(m['plain_ms'], ' ms', 2)}", flush=True)
        b = results["no_hooks"] = no_hooks_vs_base(tmp, 3 if quick else 7, 100 if quick else 400,
                                                   1000 if quick else 3000)
        print(f"no hooks declared: sequential p50 {fmt(b['today_seq_ms'], ' ms', 3)} vs {BASE} "
              f"{fmt(b['base_seq_ms'], ' ms', 3)}; pipelined {fmt(b['today_calls_per_s'], '/s', 0)} vs "
              f"{fmt(b['base_calls_per_s'], '/s', 0)}", flush=True)
    return results


def targets(results: dict) -> list[tuple[str, bool, str]]:
    t, p, b, m = results["trivial"], results["parallel"], results["no_hooks"], results["many"]
    return [
        ("a trivial PreToolUse hook ('exit 0') adds ≤ 1.3× the /bin/true spawn floor, piped as a hook (p50; "
         "protocol-v4 §6)", t["ratio"] <= 1.3,
         f"{t['ratio']:.2f}× (+{t['added_ms']:.2f} ms vs {t['floor_ms']['median']:.2f} ms; bare floor "
         f"{t['bare_floor_ms']['median']:.2f} ms: {t['ratio_to_bare']:.2f}×)"),
        ("a PreToolUse hook running /bin/true adds ≤ 1.3× the /bin/true spawn floor, piped as a hook (p50)",
         results["versus_v3"]["today"]["program"]["ratio"] <= 1.3,
         f"{results['versus_v3']['today']['program']['ratio']:.2f}× ({V3}: "
         f"{results['versus_v3']['v3']['program']['ratio']:.2f}×)"),
        ("… and ≤ 1.5× the same spawn through containment.launcher (its fences' own cost excluded)",
         t["ratio_to_launcher"] <= 1.5, f"{t['ratio_to_launcher']:.2f}× (launcher {t['launcher_ms']['median']:.2f} ms)"),
        ("four matching 200 ms hooks ≤ 1.3× one", p["ratio"] <= 1.3, f"{p['ratio']:.2f}×"),
        (f"{m['count']} matching 'exit 0' handlers: answered, time ÷ {m['count']} ≤ 2× one handler's call",
         m["ratio"] <= 2, f"{m['ratio']:.2f}× ({m['per_handler_ms']:.2f} ms vs {m['one_ms']['median']:.2f} ms; "
                          f"{m['ratio_to_added']:.2f}× what one handler adds to a call)"),
        (f"no hooks declared: sequential p50 ≤ 1.05× {BASE}", b["seq_ratio"] <= 1.05, f"{b['seq_ratio']:.3f}×"),
        (f"no hooks declared: pipelined time per call ≤ 1.05× {BASE} (median run)", b["rate_ratio"] <= 1.05,
         f"{b['rate_ratio']:.3f}×"),
        (f"no hooks declared: pipelined time per call ≤ 1.05× {BASE} (best run)", b["best_rate_ratio"] <= 1.05,
         f"{b['best_rate_ratio']:.3f}×"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hooks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    results = run(args.quick)
    for name, met, figure in targets(results):
        print(f"  {'met   ' if met else 'MISSED'}  {name}: {figure}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONUNBUFFERED", None)
    raise SystemExit(main())
