"""Command line: serve on stdio (default), ``check`` resource trees, run the ``demo``."""

from __future__ import annotations

import os
import sys

USAGE = """\
usage: harness-sidecar [--stdio] [--log-level LEVEL]          serve JSON-RPC on stdin/stdout
       harness-sidecar --lsp [--stdio] [--log-level LEVEL]    serve as a language server (needs the 'lsp' extra)
       harness-sidecar check [--json] ROOT [ROOT ...]  lint resource trees (earlier root wins)
       harness-sidecar demo [--workspace DIR]          run the review scenario and print the conversation
       harness-sidecar --version | --help

The protocol is documented in protocol.md. Logs go to stderr; stdout carries protocol
messages only. LEVEL is one of debug, info, warning (default), error. --stdio (what
language clients add) names the only transport there is; --pipe, --socket and --node-ipc
are refused.
"""

OTHER_TRANSPORTS = ("--pipe", "--socket", "--node-ipc")


def configure_logging(level: str) -> None:
    import logging

    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper(), logging.WARNING),
                        format="harness-sidecar %(levelname)s %(name)s: %(message)s")


def serve(level: str) -> int:
    """Serve JSON-RPC on stdio. A first ``initialize`` is answered before asyncio is imported."""
    from harness_sidecar.wire.lifecycle import (
        Relay,
        clean_initialize,
        initialize_result,
    )
    from harness_sidecar.wire.transport import Reader, Writer, claim_stdout

    writer = Writer(claim_stdout())
    relay = Relay()

    def set_framing(framing: str) -> None:
        writer.framing = framing

    Reader(0, relay, set_framing).start()
    first = relay.first_batch()
    answered = False
    if first and isinstance(first[0], bytes):
        request_id = clean_initialize(first[0])
        if request_id is not None:
            writer.write({"jsonrpc": "2.0", "id": request_id, "result": initialize_result(writer.framing)})
            first, answered = first[1:], True
    configure_logging(level)
    import asyncio

    from harness_sidecar.wire.endpoint import Endpoint

    endpoint = Endpoint(writer)
    if answered:
        endpoint.initialized = True
        endpoint.preload()
    code = asyncio.run(endpoint.serve(lambda deliver: relay.connect(deliver, first)))
    sys.stderr.flush()
    # Daemon worker threads may still be stuck in an extension's code: leave without joining them.
    os._exit(code)


def serve_lsp() -> int:
    # Only looked up here: importing them takes ~0.3 s, which the LSP mode spends off the
    # path to the first diagnostic (see wire/lsp.py).
    from importlib.util import find_spec

    try:
        missing = [name for name in ("pygls", "lsprotocol") if find_spec(name) is None]
    except (ImportError, ValueError):
        missing = ["pygls"]
    if missing:
        print("harness-sidecar: --lsp needs pygls and lsprotocol: pip install 'harness-sidecar[lsp]'", file=sys.stderr)
        return 2
    from harness_sidecar.wire import lsp
    from harness_sidecar.wire.transport import claim_stdout

    def load_lint():  # the catalog's rules, for live diagnostics and hovers
        from harness_sidecar.resources import lint

        return lint

    def make_sidecar(peer):  # the methods, once a custom request needs them
        from harness_sidecar.threads import Sidecar

        return Sidecar(peer)

    code = lsp.serve(claim_stdout(), load_lint, make_sidecar)
    sys.stderr.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    level = "warning"
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--log-level" and i + 1 < len(args):
            level = args[i + 1]
            i += 2
            continue
        if arg.startswith("--log-level="):
            level = arg.split("=", 1)[1]
        elif arg.split("=", 1)[0] in OTHER_TRANSPORTS:
            print(f"harness-sidecar: {arg.split('=', 1)[0]} is not supported: the sidecar speaks on stdin/stdout "
                  f"only (in vscode-languageclient: transport: TransportKind.stdio)", file=sys.stderr)
            return 2
        elif arg != "--stdio":
            rest.append(arg)
        i += 1
    if level.lower() not in ("debug", "info", "warning", "error"):
        print(f"harness-sidecar: unknown log level {level!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    if not rest:
        return serve(level)
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
        from harness_sidecar.check import main as check_main

        return check_main(options)
    if command == "demo":
        from harness_sidecar.demo import main as demo_main

        return demo_main(options)
    print(f"harness-sidecar: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2
