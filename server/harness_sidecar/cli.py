"""Command line: serve on stdio (default), ``check`` resource trees, run the ``demo``."""

from __future__ import annotations

import logging
import os
import sys

USAGE = """\
usage: harness-sidecar [--log-level LEVEL]            serve JSON-RPC on stdin/stdout
       harness-sidecar --lsp [--log-level LEVEL]      serve as a language server (needs the 'lsp' extra)
       harness-sidecar check [--json] ROOT [ROOT ...]  lint resource trees (earlier root wins)
       harness-sidecar demo [--workspace DIR]          run the review scenario and print the conversation
       harness-sidecar --version | --help

The protocol is documented in protocol.md. Logs go to stderr; stdout carries protocol
messages only. LEVEL is one of debug, info, warning (default), error.
"""


def configure_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level.upper(), logging.WARNING),
                        format="harness-sidecar %(levelname)s %(name)s: %(message)s")


def serve() -> int:
    import asyncio

    from harness_sidecar.server import Endpoint
    from harness_sidecar.transport import Reader, Writer, claim_stdout

    writer = Writer(claim_stdout())

    def set_framing(framing: str) -> None:
        writer.framing = framing

    endpoint = Endpoint(writer)

    def start_reader(deliver):  # type: ignore[no-untyped-def]
        Reader(0, deliver, set_framing).start()

    code = asyncio.run(endpoint.serve(start_reader))
    sys.stderr.flush()
    # Daemon worker threads may still be stuck in an extension's code: leave without joining them.
    os._exit(code)


def serve_lsp() -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        print("harness-sidecar: --lsp needs pygls and lsprotocol: pip install 'harness-sidecar[lsp]'", file=sys.stderr)
        return 2
    from harness_sidecar import lsp
    from harness_sidecar.transport import claim_stdout

    code = lsp.serve(claim_stdout())
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
        else:
            rest.append(arg)
        i += 1
    if level.lower() not in ("debug", "info", "warning", "error"):
        print(f"harness-sidecar: unknown log level {level!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    configure_logging(level)
    if not rest:
        return serve()
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
