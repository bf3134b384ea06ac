"""Handler types beyond ``command`` (protocol-v4 §3): what one trivial PreToolUse hook of each type adds
to a tools/call round trip, on the real sidecar, as same-run medians.

Four sidecars, the calls interleaved so all see the same load: no hook; a ``command`` hook ``exit 0``;
an ``http`` hook POSTing to a stdlib ``http.server`` on 127.0.0.1 answering 204 (in this process, in a
thread); an ``mcp_tool`` hook calling ``ping`` of the SDK test server (tests/mcp_servers/sdk_server.py).
The tool called is ``load_skill`` (its core runs in the sidecar). ``python -m bench.hook_types [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from bench.common import fmt, summary  # noqa: E402
from bench.hooks import RawAt, make_root, round_trip_ms  # noqa: E402


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def _thread(raw: RawAt, root: Path, mcp: bool = False) -> str:
    raw.call("initialize")
    params: dict = {"roots": [str(root)], "watch": False}
    if (root / "hooks.json").exists():
        params["trustedHooks"] = [{"path": str(root / "hooks.json")}]
    if mcp:
        params["mcpServers"] = [{"name": "t", "command": [sys.executable,
                                                          str(REPO / "tests" / "mcp_servers" / "sdk_server.py")]}]
    return raw.call("thread/start", params)["threadId"]


def run(runs: int) -> dict:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    kinds = {"none": None, "command": [{"type": "command", "command": "exit 0"}],
             "http": [{"type": "http", "url": url}],
             "mcp_tool": [{"type": "mcp_tool", "server": "t", "tool": "ping"}]}
    with tempfile.TemporaryDirectory() as tmp:
        sidecars = {}
        for kind, hooks in kinds.items():
            raw = RawAt(REPO / "server")
            sidecars[kind] = (raw, _thread(raw, make_root(Path(tmp) / kind, hooks), mcp=kind == "mcp_tool"))
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for i in range(1, runs + 6):  # 5 warm-up rounds
            for kind, (raw, thread) in sidecars.items():
                ms = round_trip_ms(raw, thread, i)
                if i > 5:
                    times[kind].append(ms)
        for raw, _ in sidecars.values():
            raw.close()
    httpd.shutdown()
    out = {k: summary(v) for k, v in times.items()}
    base = out["none"]["median"]
    return {"round_trip_ms": out, "added_ms": {k: out[k]["median"] - base for k in kinds if k != "none"}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    results = run(30 if args.quick else 150)
    for kind, s in results["round_trip_ms"].items():
        added = results["added_ms"].get(kind)
        print(f"{kind:9} tools/call p50 {fmt(s, ' ms', 2)}" + (f"  added {added:.2f} ms" if added is not None else ""))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
