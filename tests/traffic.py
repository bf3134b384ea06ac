"""Every message of the end-to-end tests, checked against protocol.schema.json.

Recording (on by default, wired in conftest.py):
- ``SidecarProcess`` (the ``spawn`` fixture, and any direct use) records every frame it sends
  and receives through ``harness_sidecar.console.client.RECORDER``;
- tests that pipe bytes through ``subprocess.run(sidecar_command(), input=…)`` are recorded
  from their input and captured stdout;
- editor clients (Neovim, the shell scripts, VS Code) run the sidecar through this file used
  as a command — ``python tests/traffic.py record DIR -- <sidecar command…>`` — which relays
  both directions unchanged and writes them as JSONL to ``DIR/<pid>.jsonl``.

What is validated, and why:
- **Everything the sidecar writes**, always: requests and notifications against their
  method's params, responses against the result of the request they answer (matched by id)
  or, for errors, against ``$defs/Error`` — and a domain error kind must be one the method
  lists in ``x-messages``. In JSONL mode an undocumented method is a failure; in LSP mode the
  LSP methods pygls adds (``textDocument/*``, ``window/*``…) are skipped.
- **What the tests send, when the sidecar accepted it**: tests send malformed input on purpose
  (fuzz, bad params), so a request's params are validated when the sidecar answered it with a
  result or a domain error other than ``invalid_arguments`` (which refuses them) and
  ``thread_not_found`` (which may come before the rest is read) — input the sidecar accepted
  must match the schema. An answer to the sidecar's request is validated unless the sidecar refused
  it (``item/tool/call`` → a ``malformed_answer`` result) or the test marked it deliberate
  (``harness_sidecar.console.client.Malformed``). Notifications the sidecar cannot refuse are validated
  when sent through ``SidecarProcess.notify`` (meant to be valid), not when piped as raw bytes.

A message that does not validate fails the test that produced it, with the message, the
definition and the validator's reason. The totals are printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter, defaultdict, deque
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "protocol.schema.json"
TO, FROM = "->", "<-"  # to the sidecar, from the sidecar
LSP_LIFECYCLE = {"initialize", "initialized", "shutdown", "exit"}


def _json_path(parts: Any) -> str:
    from harness_sidecar.base.inputschema import json_path

    return json_path(parts)


class ProtocolSchema:
    """protocol.schema.json with a compiled validator per definition (jsonschema-rs)."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.messages: dict[str, dict[str, Any]] = document["x-messages"]
        self._validators: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path = SCHEMA_PATH) -> "ProtocolSchema":
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def validator(self, ref: str | dict[str, Any]) -> Any:
        import jsonschema_rs

        if isinstance(ref, dict):
            ref = ref["$ref"]
        if not ref.startswith("#/"):
            ref = f"#/$defs/{ref}"
        with self._lock:
            validator = self._validators.get(ref)
            if validator is None:
                root = {"$schema": self.document["$schema"], "$defs": self.document["$defs"], "$ref": ref}
                validator = self._validators[ref] = jsonschema_rs.validator_for(root, offline=True)
        return validator

    def error_ref(self, error: Any) -> str:
        """The definition of an error object: its kind's own (a precise reason), else any Error."""
        kind = (error.get("data") or {}).get("kind") if isinstance(error, dict) and isinstance(
            error.get("data"), dict) else None
        name = "Error_" + "".join(p.capitalize() for p in kind.split("_")) if isinstance(kind, str) else ""
        return name if name in self.document["$defs"] else "Error"

    def error(self, ref: str | dict[str, Any], instance: Any) -> str | None:
        """``None`` if ``instance`` matches the definition, else the validator's reason and path."""
        validator = self.validator(ref)
        if validator.is_valid(instance):
            return None
        reasons = [f"{e.message} (at {_json_path(e.instance_path)})" for e in validator.iter_errors(instance)]
        return "; ".join(reasons[:3])


_SCHEMA: ProtocolSchema | None = None


def schema() -> ProtocolSchema:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = ProtocolSchema.load()
    return _SCHEMA


# -- frames ---------------------------------------------------------------------------------------

class FrameSplitter:
    """Bytes in, whole frames out: JSONL, or Content-Length when the first input says so."""

    def __init__(self) -> None:
        self.buffer = b""
        self.framing: str | None = None

    def feed(self, data: bytes, final: bool = False) -> list[bytes]:
        self.buffer += data
        frames: list[bytes] = []
        while True:
            if self.framing is None:
                stripped = self.buffer.lstrip(b"\r\n\t ")
                if len(stripped) < 15 and not final and b"\n" not in stripped:
                    return frames
                self.framing = "content-length" if stripped[:15].lower() == b"content-length:" else "jsonl"
            if self.framing == "jsonl":
                line, sep, rest = self.buffer.partition(b"\n")
                if not sep:
                    if final and self.buffer.strip():
                        frames.append(self.buffer.strip())
                        self.buffer = b""
                    return frames
                self.buffer = rest
                if line.strip():
                    frames.append(line.strip())
            else:
                head, sep, rest = self.buffer.partition(b"\r\n\r\n")
                if not sep:
                    return frames
                length = None
                for header in head.split(b"\r\n"):
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        try:
                            length = int(value.strip())
                        except ValueError:
                            length = None
                if length is None:  # a bad frame the sidecar answers -32700: skip its header
                    self.buffer = rest
                    frames.append(b"")
                    continue
                if len(rest) < length:
                    return frames
                frames.append(rest[:length])
                self.buffer = rest[length:]


# -- a conversation -------------------------------------------------------------------------------

class Stats:
    def __init__(self) -> None:
        self.validated: Counter[str] = Counter()   # by direction
        self.types: Counter[str] = Counter()       # "tools/call result", "thread/diagnostic params", …
        self.errors: Counter[str] = Counter()      # error kinds the sidecar answered
        self.refused_inputs = 0                    # test input the sidecar refused: deliberate, not validated
        self.unchecked = 0                         # raw frames not JSON, LSP's own messages, raw notifications

    def summary(self, schema_: ProtocolSchema) -> str:
        total = sum(self.validated.values())
        methods = len(schema_.messages)
        kinds = sum(1 for m in schema_.messages.values() for part in ("params", "result") if part in m)
        error_kinds = sum(1 for name in schema_.document["$defs"] if name.startswith("Error_"))
        return (f"protocol traffic: {total} messages validated against protocol.schema.json "
                f"({self.validated[FROM]} sent by the sidecar, {self.validated[TO]} sent by tests and clients); "
                f"seen {len(self.types)} of the schema's {kinds} message types (params and results of {methods} "
                f"methods) and {len(self.errors)} of its {error_kinds} error kinds; not validated: "
                f"{self.refused_inputs} inputs the sidecar refused, {self.unchecked} frames that are not protocol "
                f"messages (garbage, LSP's own)")


STATS = Stats()


class Conversation:
    """The frames one sidecar process sent and received, in order (roughly, across directions)."""

    def __init__(self, label: str, lsp: bool = False) -> None:
        self.label = label
        self.lsp = lsp
        self.frames: list[tuple[str, bytes, bool]] = []  # (direction, frame, deliberate)
        self._lock = threading.Lock()

    def add(self, direction: str, frame: bytes, deliberate: bool = False) -> None:
        with self._lock:
            self.frames.append((direction, frame, deliberate))

    def check(self, schema_: ProtocolSchema | None = None, stats: Stats = STATS) -> list[str]:
        """Every problem found; counts what was validated in ``stats``."""
        return _Checker(self, schema_ or schema(), stats).run()


def _key(request_id: Any) -> tuple[str, Any] | None:
    """A request id as a dict key (1 and "1" and True differ), or None when it is not a valid id."""
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        return None
    return (type(request_id).__name__, request_id)


class _Checker:
    def __init__(self, conversation: Conversation, schema_: ProtocolSchema, stats: Stats) -> None:
        self.c, self.s, self.stats = conversation, schema_, stats
        self.problems: list[str] = []
        self.test_requests: dict[Any, deque] = defaultdict(deque)     # id -> (method, params, deliberate)
        self.sidecar_requests: dict[Any, deque] = defaultdict(deque)  # id -> (method, params)
        self.answers: list[tuple[str, dict, Any, bool]] = []          # (method, sidecar params, answer, deliberate)
        self.refused_calls: set[Any] = set()                          # toolCallIds answered malformed_answer

    def fail(self, direction: str, what: str, message: Any, reason: str) -> None:
        text = json.dumps(message, ensure_ascii=False)
        if len(text) > 600:
            text = text[:600] + "…"
        who = "the sidecar sent" if direction == FROM else "the test sent (and the sidecar accepted)"
        self.problems.append(f"{self.c.label}: {who} {what} that does not match protocol.schema.json: {reason}\n"
                             f"    message: {text}")

    def validate(self, direction: str, ref: Any, instance: Any, what: str, message: Any,
                 count: bool = True) -> None:
        if ref is None:
            return
        reason = self.s.error(ref, instance)
        if reason is not None:
            self.fail(direction, what, message, f"{reason} [{ref['$ref'] if isinstance(ref, dict) else ref}]")
        elif not count:
            return  # the envelope of a message counted with its params, result or error
        else:
            self.stats.validated[direction] += 1
            if what.endswith((" params", " result")):
                self.stats.types[what] += 1
            elif what == "error" and isinstance(instance, dict):
                self.stats.errors[str((instance.get("data") or {}).get("kind"))] += 1

    def run(self) -> list[str]:
        for direction, frame, deliberate in self.c.frames:
            try:
                message = json.loads(frame)
            except (ValueError, RecursionError):
                if direction == FROM:
                    self.problems.append(f"{self.c.label}: the sidecar wrote a frame that is not JSON: {frame[:200]!r}")
                else:
                    self.stats.unchecked += 1
                continue
            if direction == FROM:
                self.from_sidecar(message)
            else:
                self.from_test(message, deliberate)
        self.finish()
        return self.problems

    # -- the sidecar's side: always validated --------------------------------------------------
    def from_sidecar(self, m: Any) -> None:
        if not isinstance(m, dict):
            self.fail(FROM, "a message", m, "not a JSON object")
            return
        if m.get("jsonrpc") != "2.0":
            self.fail(FROM, "a message", m, "jsonrpc is not \"2.0\"")
            return
        method = m.get("method")
        if method is not None:
            entry = self.s.messages.get(method)
            if entry is None or entry["direction"] == "client→server" or (
                    self.c.lsp and method in LSP_LIFECYCLE):
                if self.c.lsp:
                    self.stats.unchecked += 1  # LSP's own (textDocument/publishDiagnostics, window/logMessage…)
                else:
                    self.fail(FROM, f"'{method}'", m, "no such server→client message in x-messages")
                return
            is_request = "id" in m
            if is_request != (entry["kind"] == "request"):
                self.fail(FROM, f"'{method}'", m, f"x-messages says it is a {entry['kind']}")
                return
            if is_request:
                self.validate(FROM, "Request", m, f"{method} request envelope", m, count=False)
                self.sidecar_requests[_key(m.get("id"))].append((method, m.get("params")))
            self.validate(FROM, entry["params"], m.get("params", {}), f"{method} params", m)
            return
        # a response to the test
        if "id" not in m or ("result" in m) == ("error" in m):
            self.fail(FROM, "a response", m, "a response has an id and exactly one of result, error")
            return
        pending = self.test_requests.get(_key(m["id"]))
        request = pending.popleft() if pending else None
        if "error" in m:
            if self.c.lsp and (request is None or request[0] in LSP_LIFECYCLE or request[0] not in self.s.messages):
                self.stats.unchecked += 1  # an answer of pygls to LSP's own requests
                return
            self.validate(FROM, "ErrorResponse", m, "error response envelope", m, count=False)
            self.validate(FROM, self.s.error_ref(m["error"]), m["error"], "error", m)
            kind = (m["error"].get("data") or {}).get("kind") if isinstance(m["error"], dict) else None
            if request is not None:
                method, params, deliberate = request
                entry = self.s.messages.get(method)
                # a kind the request got from its method, not from the endpoint (a missing kind fails above)
                domain = isinstance(kind, str) and kind not in self.s.document["x-request-errors"]
                if entry is not None and domain and kind not in entry.get("errors", []):
                    self.fail(FROM, f"a {method} error", m, f"kind {kind!r} is not in x-messages[{method!r}].errors")
                # thread_not_found may come before the other params are read; invalid_arguments refuses them
                if entry is not None and domain and kind not in ("invalid_arguments", "thread_not_found") \
                        and not deliberate:
                    self.validate(TO, entry["params"], params if params is not None else {}, f"{method} params",
                                  {"method": method, "params": params})  # accepted: a domain answer
                elif entry is not None:
                    self.stats.refused_inputs += 1
            return
        if request is None:
            return  # an answer to bytes the test piped that did not parse as a request (id reused after garbage)
        method, params, deliberate = request
        entry = self.s.messages.get(method)
        if entry is None or (self.c.lsp and method in LSP_LIFECYCLE):
            self.stats.unchecked += 1
            return
        self.validate(FROM, "ResultResponse", m, "result envelope", m, count=False)
        self.validate(FROM, entry.get("result"), m["result"], f"{method} result", m)
        if not deliberate:
            self.validate(TO, entry["params"], params if params is not None else {}, f"{method} params",
                          {"method": method, "params": params})
        if method == "tools/call" and isinstance(m["result"], dict):
            result = m["result"].get("result")
            if isinstance(result, dict) and (result.get("details") or {}).get("kind") == "malformed_answer":
                self.refused_calls.add(result.get("toolCallId"))

    # -- the test's side: validated when accepted ------------------------------------------------
    def from_test(self, m: Any, deliberate: bool) -> None:
        if not isinstance(m, dict):
            self.stats.unchecked += 1
            return
        method = m.get("method")
        if isinstance(method, str) and "id" in m:
            key = _key(m["id"])
            if key is None:
                self.stats.unchecked += 1  # refused (-32600) by the sidecar
            else:
                self.test_requests[key].append((method, m.get("params"), deliberate))
            return
        if isinstance(method, str):
            entry = self.s.messages.get(method)
            if getattr(self.c, "raw_notifications", False) or deliberate or entry is None or entry["kind"] != "notification" \
                    or entry["direction"] == "server→client" or (self.c.lsp and method in LSP_LIFECYCLE):
                self.stats.unchecked += 1
                return
            self.validate(TO, entry["params"], m.get("params", {}), f"{method} params", m)
            return
        if "id" in m and ("result" in m or "error" in m):
            pending = self.sidecar_requests.get(_key(m["id"]))
            if pending:
                method, params = pending.popleft()
                self.answers.append((method, params, m, deliberate))
            return
        self.stats.unchecked += 1

    def finish(self) -> None:
        for method, params, answer, deliberate in self.answers:
            if deliberate or (method == "item/tool/call" and isinstance(params, dict)
                              and params.get("callId") in self.refused_calls):
                self.stats.refused_inputs += 1
                continue
            if "error" in answer:
                self.validate(TO, "PeerError", answer["error"], f"{method} error answer", answer)
            else:
                self.validate(TO, self.s.messages[method].get("result"), answer.get("result"), f"{method} result",
                              answer)


class ProcessRecorder(Conversation):
    """The ``harness_sidecar.console.client.RECORDER`` of the tests: one per ``SidecarProcess``."""

    def __init__(self, label: str, lsp: bool = False) -> None:
        super().__init__(label, lsp)
        self._splitter = FrameSplitter()

    def sent(self, data: bytes, deliberate: bool = False) -> None:
        for frame in self._splitter.feed(data):
            self.add(TO, frame, deliberate)

    def received(self, frame: bytes) -> None:
        if frame.strip():
            self.add(FROM, frame.strip())

    def check(self, schema_: ProtocolSchema | None = None, stats: Stats = STATS) -> list[str]:
        for frame in self._splitter.feed(b"", final=True):
            self.add(TO, frame)
        return super().check(schema_, stats)


def conversation_from_bytes(label: str, sent: bytes, received: bytes, lsp: bool = False) -> Conversation:
    """A conversation from piped input and captured output (``subprocess.run`` tests).

    Order across directions is lost, which id matching does not need; notifications piped
    as raw bytes are not validated (the sidecar cannot refuse them).
    """
    conversation = Conversation(label, lsp)
    for frame in FrameSplitter().feed(sent, final=True):
        conversation.add(TO, frame, deliberate=False)
    for frame in FrameSplitter().feed(received, final=True):
        conversation.add(FROM, frame)
    conversation.raw_notifications = True  # type: ignore[attr-defined]
    return conversation


# -- the recorder command for editor clients ------------------------------------------------------

def client_command(command: list[str]) -> list[str]:
    """The sidecar command an editor client's test should use: recorded when the tests record."""
    log_dir = os.environ.get("HARNESS_TRAFFIC_DIR")
    return recording_command(log_dir, command) if log_dir else command


def recording_command(log_dir: str | os.PathLike[str], command: list[str]) -> list[str]:
    """``command`` run through the recorder, which logs to ``log_dir/<pid>.jsonl``."""
    return [sys.executable, str(Path(__file__).resolve()), "record", str(log_dir), "--", *command]


def read_log(path: Path) -> Conversation:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0]) if lines else {}
    conversation = Conversation(f"{header.get('command', path.name)} ({path.name})", lsp=bool(header.get("lsp")))
    for line in lines[1:]:
        entry = json.loads(line)
        conversation.add(entry["dir"], entry["frame"].encode("utf-8", "surrogateescape"))
    return conversation


def _record(log_dir: str, command: list[str]) -> int:
    """Relay stdin → command → stdout unchanged; log every frame of both directions."""
    import signal
    import subprocess

    os.makedirs(log_dir, exist_ok=True)
    log = open(os.path.join(log_dir, f"{os.getpid()}.jsonl"), "w", encoding="utf-8")  # noqa: SIM115
    lock = threading.Lock()
    lsp = "--lsp" in command[1:]
    log.write(json.dumps({"command": " ".join(Path(a).name if "/" in a else a for a in command), "lsp": lsp}) + "\n")
    log.flush()

    def write(direction: str, frames: list[bytes]) -> None:
        with lock:
            for frame in frames:
                log.write(json.dumps({"dir": direction, "frame": frame.decode("utf-8", "surrogateescape")},
                                     ensure_ascii=True) + "\n")
            log.flush()

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: child.send_signal(signum))
    assert child.stdin is not None and child.stdout is not None

    def pump_in() -> None:
        splitter = FrameSplitter()
        while True:
            try:
                data = os.read(0, 65536)
            except OSError:
                data = b""
            if not data:
                write(TO, splitter.feed(b"", final=True))
                try:
                    child.stdin.close()  # type: ignore[union-attr]
                except OSError:
                    pass
                return
            write(TO, splitter.feed(data))
            try:
                child.stdin.write(data)  # type: ignore[union-attr]
            except OSError:
                return

    threading.Thread(target=pump_in, daemon=True).start()
    splitter = FrameSplitter()
    while True:
        data = os.read(child.stdout.fileno(), 65536)
        if not data:
            break
        write(FROM, splitter.feed(data))
        view = memoryview(data)
        while view:
            written = os.write(1, view)
            view = view[written:]
    write(FROM, splitter.feed(b"", final=True))
    code = child.wait()
    log.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "record" and sys.argv[3] == "--":
        sys.path.insert(0, str(REPO / "server"))
        raise SystemExit(_record(sys.argv[2], sys.argv[4:]))
    print("usage: traffic.py record LOG_DIR -- COMMAND...", file=sys.stderr)
    raise SystemExit(2)
