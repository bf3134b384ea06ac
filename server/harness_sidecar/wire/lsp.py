"""LSP mode (``harness-sidecar --lsp``): the same sidecar as a pygls language server.

The custom requests (``thread/start`` … ``tools/call``) are served by the very same
``threads.Sidecar`` as in JSONL mode, with the same params, results and ``error.data.kind``;
``thread/diagnostic`` is a notification and ``item/tool/call`` a request to the client.
On top, skill authors get live diagnostics and hovers on SKILL.md files, templates,
AGENTS.md and extension files under the roots, computed from the editor's unsaved text by
``lint`` (the catalog's own rules). pygls and lsprotocol are imported only here.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.uris import to_fs_path

from harness_sidecar import __version__
from harness_sidecar.errors import InvalidParams, PeerError, RpcError
from harness_sidecar.resources import lint
from harness_sidecar.threads import Sidecar

logger = logging.getLogger(__name__)

SEVERITY = {
    lint.ERROR: types.DiagnosticSeverity.Error,
    lint.WARNING: types.DiagnosticSeverity.Warning,
    lint.INFORMATION: types.DiagnosticSeverity.Information,
    lint.HINT: types.DiagnosticSeverity.Hint,
}


class SidecarProtocol(LanguageServerProtocol):
    """Keeps the sidecar's own messages as plain JSON.

    pygls turns the params of methods it does not know into namedtuples (renaming keys
    that are not identifiers); the sidecar's methods and the answers to its
    ``item/tool/call`` requests must stay dicts, exactly as on the JSONL wire.
    """

    custom_methods: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent_ids: set[Any] = set()

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data:
            method = data.get("method")
            if method in self.custom_methods and "id" in data:
                return JsonRPCRequestMessage(id=data["id"], method=method, jsonrpc=data["jsonrpc"],
                                             params=data.get("params"))
            if method is None and "error" not in data and data.get("id") in self.sent_ids:
                return JsonRPCResponseMessage(id=data["id"], jsonrpc=data["jsonrpc"], result=data.get("result"))
        return super().structure_message(data)


class SidecarLanguageServer(LanguageServer):
    def report_server_error(self, error: Exception, source: Any) -> None:
        # A failed custom request is answered with its error; do not also pop up a message.
        logger.debug("request failed: %s", error)


class LspPeer:
    """The ``threads.Peer`` of the LSP mode: notifications and requests to the client."""

    def __init__(self, server: SidecarLanguageServer) -> None:
        self.server = server
        self._ids = itertools.count(1)
        self.client_capabilities: dict[str, Any] = {}  # the sidecar's own (ui/*): none in LSP mode

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.server.protocol.notify(method, params)

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        protocol: SidecarProtocol = self.server.protocol  # type: ignore[assignment]
        msg_id = next(self._ids)
        protocol.sent_ids.add(msg_id)
        try:
            future = asyncio.wrap_future(protocol.send_request(method, params, msg_id=msg_id))
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer to {method} within {timeout_s:g} s") from None
        except JsonRpcException as exc:
            raise PeerError(exc.message) from None
        finally:
            protocol.sent_ids.discard(msg_id)


def _custom_handler(method: str, handler: Any) -> Any:
    async def serve(params: Any) -> Any:
        if params is None:
            params = {}
        try:
            if not isinstance(params, dict):
                raise InvalidParams("'params' must be an object", "params")
            return await handler(params)
        except RpcError as exc:
            error = exc.to_error()
            raise JsonRpcException(error["message"], error["code"], error["data"]) from None

    serve.__name__ = f"serve_{method.replace('/', '_')}"
    return serve


def default_roots(workspace_folder: str | None) -> list[str]:
    """Without ``initializationOptions.roots``: ``[<workspace>/.agents, ~/.agents]``."""
    roots = [os.path.join(workspace_folder, ".agents")] if workspace_folder else []
    return roots + [os.path.join(os.path.expanduser("~"), ".agents")]


def build_server() -> SidecarLanguageServer:
    server = SidecarLanguageServer("harness-sidecar", __version__, protocol_cls=SidecarProtocol,
                                   text_document_sync_kind=types.TextDocumentSyncKind.Full)
    sidecar = Sidecar(LspPeer(server))
    SidecarProtocol.custom_methods = frozenset(sidecar.methods)
    for method, handler in sidecar.methods.items():
        server.feature(method)(_custom_handler(method, handler))
    state: dict[str, Any] = {"roots": default_roots(None), "trusted": set(), "shutdown": False, "exited": False}
    server.state = state  # type: ignore[attr-defined]

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        folder = None
        if params.workspace_folders:
            folder = to_fs_path(params.workspace_folders[0].uri)
        elif params.root_uri:
            folder = to_fs_path(params.root_uri)
        roots = options.get("roots")
        state["roots"] = [os.path.normpath(r) for r in roots if isinstance(r, str)] if isinstance(roots, list) \
            else default_roots(folder)
        trusted = options.get("trustedExtensions") or []
        state["trusted"] = {t if isinstance(t, str) else t.get("id") for t in trusted
                            if isinstance(t, (str, dict))}

    @server.feature(types.SHUTDOWN)
    def shutdown(params: Any) -> None:
        state["shutdown"] = True

    @server.feature(types.EXIT)
    def exit_(params: Any) -> None:
        state["exited"] = True

    def publish(uri: str) -> None:
        path = to_fs_path(uri)
        document = server.workspace.get_text_document(uri)
        findings = lint.lint(path, document.source, state["roots"], state["trusted"]) if path else []
        lines = document.lines or [""]
        codec = document.position_codec
        diagnostics = []
        for f in findings:
            start = codec.position_to_client_units(lines, types.Position(line=f.line, character=f.start))
            end = codec.position_to_client_units(lines, types.Position(line=f.line, character=f.end))
            diagnostics.append(types.Diagnostic(range=types.Range(start=start, end=end), message=f.message,
                                                severity=SEVERITY[f.severity], code=f.kind,
                                                source="harness-sidecar"))
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=document.version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                               diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        path = to_fs_path(params.text_document.uri)
        document = server.workspace.get_text_document(params.text_document.uri)
        lines = document.lines or [""]
        position = document.position_codec.position_from_client_units(lines, params.position)
        found = lint.hover(path, document.source, position.line, position.character, state["roots"]) if path else None
        if found is None:
            return None
        text, start, end = found
        codec = document.position_codec
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=types.Range(start=codec.position_to_client_units(lines, types.Position(line=position.line,
                                                                                         character=start)),
                              end=codec.position_to_client_units(lines, types.Position(line=position.line,
                                                                                       character=end))))

    return server


def quiet_pygls() -> None:
    """pygls logs every error answer with a traceback; an unknown skill is not a server fault."""
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.CRITICAL)


def serve(protocol_fd: int) -> int:
    """Serve LSP on stdin and the claimed protocol fd; return the exit code.

    As in LSP: ``exit`` after ``shutdown`` → 0, ``exit`` without it → 1; stdin reaching
    EOF → 0.
    """
    quiet_pygls()
    server = build_server()
    server.start_io(os.fdopen(0, "rb", closefd=False), os.fdopen(protocol_fd, "wb", buffering=0))
    state = server.state  # type: ignore[attr-defined]
    return 1 if state["exited"] and not state["shutdown"] else 0
