"""Garbage in, one answer per request out, and the sidecar keeps serving (fixed seed, bounded)."""

from __future__ import annotations

import json
import random
import subprocess

from harness_sidecar.console.client import child_env, sidecar_command
from helpers import WORKSPACE

METHODS = ["thread/start", "thread/close", "thread/fork", "skills/activate", "skills/deactivate", "templates/render",
           "context/build", "tools/list", "tools/call", "initialize", "shutdown", "nope/nope", "$/cancelRequest"]


def random_value(rng: random.Random, depth: int = 0):
    kinds = ["int", "str", "bool", "null", "float"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.choice([0, -1, 1, 2 ** 63, rng.randint(-5, 5)])
    if kind == "str":
        return rng.choice(["", "thread-1", "review", "../../etc/passwd", "\u2028", "\ud800", "x" * 300, "/tmp"])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "float":
        return rng.choice([0.5, 1e308, -0.0])
    if kind == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["threadId", "name", "roots", "call", "arguments", "resources", "id", "limits", "trustedExtensions"]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_random_requests_each_get_exactly_one_answer():
    rng = random.Random(20261130)
    lines = [json.dumps({"id": "init", "method": "initialize"}).encode(),
             json.dumps({"id": "start", "method": "thread/start", "params": {
                 "roots": [str(WORKSPACE / "project")], "trustedExtensions": ["review-extension"]}}).encode()]
    expected = {"init", "start"}
    for i in range(400):
        choice = rng.random()
        if choice < 0.6:
            message = {"id": i, "method": rng.choice(METHODS), "params": random_value(rng)}
            if message["method"] in ("shutdown", "initialize"):
                message["method"] = "tools/list"
            if isinstance(message["params"], dict) and rng.random() < 0.5:
                message["params"]["threadId"] = "thread-1"
            expected.add(i)
            lines.append(json.dumps(message).encode())
        elif choice < 0.8:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 60))).replace(b"\n", b" "))
        elif choice < 0.9:
            lines.append(b"[" * 5000 + b"]" * 5000)
        else:
            lines.append(json.dumps({"method": rng.choice(METHODS), "params": random_value(rng)}).encode())
    lines.append(json.dumps({"id": "last", "method": "thread/start", "params": {
        "roots": [str(WORKSPACE / "project")]}}).encode())
    expected.add("last")
    proc = subprocess.run(sidecar_command(), input=b"\n".join(lines) + b"\n", capture_output=True,
                          env=child_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answered: dict = {}
    for line in proc.stdout.splitlines():
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0"
        if "method" in message:  # a notification (thread/diagnostic) or nothing else
            assert "id" not in message
            continue
        key = message["id"]
        if key is None:
            continue
        assert key not in answered, f"answered twice: {key}"
        answered[key] = message
    assert set(answered) == expected
    assert [s["name"] for s in answered["last"]["result"]["catalog"]["skills"]] == ["review"]
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-3000:]
