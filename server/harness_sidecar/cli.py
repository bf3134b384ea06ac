"""Command line: serve on stdio (default), ``check`` resource trees, run the ``demo``."""

from __future__ import annotations

import os
import sys
from typing import Any

USAGE = """\
usage: harness-sidecar [--stdio] [--log-level LEVEL] [--max-in-flight N] [--max-result-bytes N] [--max-threads N]
                       [--max-queued-bytes N]         serve JSON-RPC on stdin/stdout
       harness-sidecar --lsp [--stdio] [--log-level LEVEL]
                                                      serve as a language server (needs the 'lsp' extra)
       harness-sidecar check [--json] ROOT [ROOT ...]  lint resource trees (earlier root wins)
       harness-sidecar demo [--workspace DIR]          run the review scenario and print the conversation
       harness-sidecar schema                         print the protocol as one JSON Schema (2020-12) document
       harness-sidecar --version | --help

The protocol is documented in protocol.md. Logs go to stderr; stdout carries protocol
messages only. LEVEL is one of debug, info, warning (default), error; debug adds each
extension's load sequence and each tool call's steps with durations, one line each.
--max-in-flight N: run at most N requests at once (default 1000); the others wait in
arrival order, up to --max-queued-bytes N of them (default 64 MiB); one that does not fit is
answered 'overloaded'. stdin is always read: answers to the sidecar's own requests never wait.
--max-result-bytes N: no response line is longer (default 16 MiB); see protocol.md.
--max-threads N: at most N open threads; thread/start beyond is error too_many_threads (default 64).
--stdio (what language clients add) names the only transport there is; --pipe, --socket
and --node-ipc are refused.
"""

OTHER_TRANSPORTS = ("--pipe", "--socket", "--node-ipc")


def configure_logging(level: str) -> None:
    import logging

    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper(), logging.WARNING),
                        format="harness-sidecar %(levelname)s %(name)s: %(message)s")


def queue_stderr() -> None:
    """While serving: the log and everything forwarded from hosts, MCP servers and hooks go through a
    queue, so an editor that does not read the sidecar's stderr never blocks it (``stderr.SINK``)."""
    import logging

    from harness_sidecar.base.stderr import SINK, SinkStream

    plain, sys.stderr = sys.stderr, SinkStream(SINK)  # type: ignore[assignment]
    for handler in logging.getLogger().handlers:  # a log configured before writes through the queue too
        if isinstance(handler, logging.StreamHandler) and handler.stream is plain:
            handler.setStream(sys.stderr)


def flush_stderr() -> None:
    from harness_sidecar.base.stderr import SINK

    sys.stderr.flush()
    SINK.flush(1.0)


def serve(level: str, max_in_flight: int = 1000, max_result_bytes: int = 16 * 1024 * 1024,
          max_queued_bytes: int = 64 * 1024 * 1024, max_threads: int = 64) -> int:
    """Serve JSON-RPC on stdio. A first ``initialize`` is answered before asyncio is imported (and
    before ``limits``, whose ``dataclasses`` import brings ``inspect``, ``ast`` and ``dis``)."""
    from harness_sidecar.wire.lifecycle import (
        Relay,
        clean_initialize,
        initialize_result,
    )
    from harness_sidecar.wire.transport import Reader, Writer, claim_stdin, claim_stdout
    from harness_sidecar.wire import early_scan

    writer = Writer(claim_stdout())
    relay = Relay()

    def set_framing(framing: str) -> None:
        writer.framing = framing

    reader = Reader(claim_stdin(), early_scan.tap(relay), set_framing)
    reader.max_in_transit = max_queued_bytes  # read ahead of the loop at most this much (it never waits)
    reader.start()
    first = relay.first_batch()
    answered = None
    if first and isinstance(first[0], bytes):
        answered = clean_initialize(first[0])
        if answered is not None:
            writer.write({"jsonrpc": "2.0", "id": answered[0], "result": initialize_result(writer.framing)})
            first = first[1:]
            early_scan.start()  # the first thread/start's catalog is scanned beside the imports below
    set_max_threads(max_threads)
    queue_stderr()
    configure_logging(level)
    import asyncio

    from harness_sidecar import containment

    containment.SERVING = True

    from harness_sidecar.wire.endpoint import Endpoint

    endpoint = Endpoint(writer, make_sidecar, max_in_flight=max_in_flight, max_result_bytes=max_result_bytes,
                        max_queued_bytes=max_queued_bytes, preload_service=preload_sidecar)
    endpoint.reader = reader
    if answered is not None:
        endpoint.initialized = True
        endpoint.set_capabilities(answered[1])
        endpoint.preload(now=True)
    code = asyncio.run(endpoint.serve(lambda deliver: relay.connect(deliver, first)))
    from harness_sidecar.containment import lifetimes

    if lifetimes._instance is not None:  # whatever a thread's code left: ended before we go
        lifetimes._instance.close()
    flush_stderr()
    # Daemon worker threads may still be stuck in an extension's code: leave without joining them.
    os._exit(code)


def make_sidecar(peer: Any) -> Any:
    """The methods the wire serves (JSONL and LSP alike), made when the first request needs them."""
    from harness_sidecar.threads.sidecar import Sidecar

    return Sidecar(peer)


def preload_sidecar() -> None:
    """Imported once ``initialize`` is answered, before the event loop runs, in the main thread
    (``Endpoint.preload(now=True)``): a second thread importing beside the loop's start-up only traded
    the GIL back and forth, and on a loaded machine every hand-over waited for a core."""
    import harness_sidecar.resources.extension_sources  # noqa: F401
    import harness_sidecar.threads.sidecar  # noqa: F401


def serve_lsp() -> int:
    # Only looked up here: importing them takes ~0.3 s, which the LSP mode spends off the
    # path to the first diagnostic (see wire/lsp.py).
    from importlib.util import find_spec

    try:
        missing = [name for name in ("pygls", "lsprotocol") if find_spec(name) is None]
    except (ImportError, ValueError):
        missing = ["pygls"]
    if missing:
        print("harness-sidecar: --lsp needs pygls and lsprotocol; install the 'lsp' extra from your harness-sidecar checkout: pip install -e '.[lsp]'", file=sys.stderr)
        return 2
    from harness_sidecar import containment
    from harness_sidecar.wire import lsp
    from harness_sidecar.wire.transport import claim_stdout

    containment.SERVING = True

    def load_lint():  # the catalog's rules, for live diagnostics and hovers
        from harness_sidecar.resources import lint

        return lint

    queue_stderr()
    code = lsp.serve(claim_stdout(), load_lint, make_sidecar)
    flush_stderr()
    os._exit(code)


def set_max_threads(count: int) -> None:
    from harness_sidecar.base.limits import SIDECAR

    SIDECAR.max_threads = count


def quiet_on_broken_pipe(command: Any, options: list[str]) -> int:
    """Run a command that prints; if the reader goes away (``… | head -1``) stop quietly, as cat does."""
    try:
        return command(options)
    except BrokenPipeError:
        # Later writes (the interpreter's final flush) go nowhere instead of raising again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def main(argv: list[str] | None = None) -> int:
    import gc

    # No collector pass while serving starts: with the default threshold the ~220 modules a first
    # thread/start imports cost 44 passes (8-12 ms of CPU) over objects that all live as long as the
    # process. ``Endpoint.preload`` freezes them and ``Endpoint.serve`` enables the collector again;
    # every other command enables it at once.
    gc.disable()
    from harness_sidecar.containment.private import make_private

    make_private()  # first: no other process of the user opens our /proc/<pid>/fd/* or memory (protocol.md)
    args = list(sys.argv[1:] if argv is None else argv)
    options = {"--log-level": "warning", "--max-in-flight": "1000", "--max-result-bytes": str(16 * 1024 * 1024),
               "--max-threads": "64"}
    options["--max-queued-bytes"] = str(64 * 1024 * 1024)
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in options and (eq or i + 1 < len(args)):
            options[name] = value if eq else args[i + 1]
            i += 1 if eq else 2
            continue
        if name in OTHER_TRANSPORTS:
            print(f"harness-sidecar: {name} is not supported: the sidecar speaks on stdin/stdout "
                  f"only (in vscode-languageclient: transport: TransportKind.stdio)", file=sys.stderr)
            return 2
        if arg != "--stdio":
            rest.append(arg)
        i += 1
    level = options["--log-level"]
    if level.lower() not in ("debug", "info", "warning", "error"):
        print(f"harness-sidecar: unknown log level {level!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    numbers = {}
    for name in ("--max-in-flight", "--max-result-bytes", "--max-threads", "--max-queued-bytes"):
        if not options[name].isdigit() or int(options[name]) < 1:
            print(f"harness-sidecar: {name} takes a positive integer, not {options[name]!r}\n\n{USAGE}",
                  file=sys.stderr)
            return 2
        numbers[name] = int(options[name])
    if not rest:
        return serve(level, numbers["--max-in-flight"], numbers["--max-result-bytes"], numbers["--max-queued-bytes"],
                     numbers["--max-threads"])
    gc.enable()
    set_max_threads(numbers["--max-threads"])
    configure_logging(level)
    command, options = rest[0], rest[1:]
    if command == "--lsp" and not options:
        return serve_lsp()
    if command in ("--version", "-V"):
        from harness_sidecar import PROTOCOL_VERSION, __version__

        print(f"harness-sidecar {__version__} (protocol {PROTOCOL_VERSION})")
        return 0
    if command in ("--help", "-h", "help"):
        print(USAGE, end="")
        return 0
    if command == "check":
        from harness_sidecar.console.check import main as check_main

        return quiet_on_broken_pipe(check_main, options)
    if command == "schema" and not options:
        from harness_sidecar.wire.protocol import dumps

        sys.stdout.write(dumps())
        return 0
    if command == "demo":
        from harness_sidecar.console.demo import main as demo_main

        return quiet_on_broken_pipe(demo_main, options)
    print(f"harness-sidecar: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2
