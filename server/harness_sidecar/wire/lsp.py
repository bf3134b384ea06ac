"""LSP mode (``harness-sidecar --lsp [--stdio]``): the sidecar as a language server.

What an author waits for — ``initialize``, the text-document notifications, the live
diagnostics they produce and hovers — is served here, from the first byte on, with
nothing heavier than ``json`` and the catalog's own rules. pygls and lsprotocol (whose
import alone takes ~0.3 s: hundreds of attrs classes built at import) are imported on a
thread once the first diagnostics are out (or the session is idle), and serve everything
else: the custom requests (``thread/start`` … ``tools/call``, answered by the very same
``threads.sidecar.Sidecar`` as in JSONL mode), ``item/tool/call`` to the client, cancellation,
``shutdown``/``exit`` once they are loaded. A session that only edits files never needs
them.

Every message passes one router (``Session.route``) in order, before and after pygls is
loaded; it answers what pygls would leave unanswered or answer without ``data.kind``
(a request before ``initialize``: ``-32002``; a second ``initialize``; a request after
``shutdown``; malformed JSON), and every error pygls writes gets its ``data.kind``.

Watching: when the client can register file watchers (``workspace.didChangeWatchedFiles.
dynamicRegistration``), the server registers globs for what makes a catalog under each root
(its own roots at ``initialized``, each thread's as it starts) and the client's
``workspace/didChangeWatchedFiles`` feeds the threads' rescans (``Sidecar.files_changed``);
the threads then start no watcher of their own. Otherwise the threads watch as in JSONL mode and
the server watches its own roots the same way. Either way a change republishes the diagnostics
of every open document (a skill becomes shadowed by one added elsewhere without being reopened).

``wire`` does not import ``resources``: the linter and the methods are handed in by
``cli``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import deque
from typing import Any, Callable

from harness_sidecar import SERVER_NAME, __version__
from harness_sidecar.base import jsondepth
from harness_sidecar.base.errors import (
    InvalidParams,
    InvalidRequest,
    ParseError,
    RpcError,
    ServerNotInitialized,
    TooDeep,
)
from harness_sidecar.wire.transport import (
    CONTENT_LENGTH,
    BadFrame,
    Reader,
    TooLarge,
    Writer,
    claim_stdin,
)

logger = logging.getLogger(__name__)

ENCODINGS = ("utf-8", "utf-16", "utf-32")
SEVERITY = {"error": 1, "warning": 2, "information": 3, "hint": 4}
DOCUMENT_METHODS = ("textDocument/didOpen", "textDocument/didChange", "textDocument/didSave",
                    "textDocument/didClose")
IDLE_BEFORE_IMPORT_S = 0.3  # with no document opened this long after initialize, load pygls anyway
WATCH_REQUEST_PREFIX = "harness-sidecar-watch-"  # ids of our client/registerCapability requests
# What makes a catalog under a root (as resources/watch.py watches it): the root itself (created or
# deleted), its AGENTS.md, skill folders and their SKILL.md, templates, anything under extensions/, its
# hooks sources (hooks.json, a .claude root's settings files, a .codex root's config.toml), command
# templates, anything under plugins/; and a .codex root's prompts/ (Codex's custom prompts).
WATCH_GLOBS = ("AGENTS.md", "skills/*", "skills/*/SKILL.md", "templates/*.md", "extensions/**", "hooks.json",
               "commands/*.md", "plugins/**", "settings.json", "settings.local.json", "config.toml")
CODEX_HOME_GLOBS = ("prompts/*.md",)
GLOB_SPECIAL = frozenset("*?[]{}")


# -- positions --------------------------------------------------------------------------------

def _parse(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


def choose_encoding(capabilities: Any) -> str:
    """The client's first position encoding that is supported (as pygls chooses), else UTF-16."""
    general = capabilities.get("general") if isinstance(capabilities, dict) else None
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    for encoding in offered if isinstance(offered, list) else []:
        if encoding in ENCODINGS:
            return encoding
    return "utf-16"


def to_units(line: str, column: int, encoding: str) -> int:
    """A code-point column of ``line`` in the client's units."""
    if encoding == "utf-32":
        return column
    prefix = line[:column]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_units(line: str, units: int, encoding: str) -> int:
    """A client column (in its units) of ``line`` as a code-point column, clamped to the line."""
    if encoding == "utf-32":
        return max(0, min(units, len(line)))
    seen = 0
    for i, char in enumerate(line):
        if seen >= units:
            return i
        code = ord(char)
        seen += (1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4) if encoding == "utf-8" \
            else (2 if code >= 0x10000 else 1)
    return len(line)


def _position(position: Any) -> tuple[int, int]:
    """``(line, character)`` of an LSP position (the character in the client's units)."""
    if not isinstance(position, dict):
        raise InvalidParams("a position must be {line, character}", "position")
    line, character = position.get("line"), position.get("character")
    if not isinstance(line, int) or not isinstance(character, int) or line < 0 or character < 0:
        raise InvalidParams("a position needs non-negative integers 'line' and 'character'", "position")
    return line, character


def _offset(text: str, position: Any, encoding: str) -> int:
    line, character = _position(position)
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    return sum(len(x) + 1 for x in lines[:line]) + from_units(lines[line], character, encoding)


def apply_change(text: str, change: Any, encoding: str) -> str:
    """One ``contentChanges`` item: the whole text, or a range replaced."""
    if not isinstance(change, dict) or not isinstance(change.get("text"), str):
        raise InvalidParams("each content change needs a 'text' string", "contentChanges")
    if "range" not in change:
        return change["text"]
    span = change["range"]
    if not isinstance(span, dict):
        raise InvalidParams("'range' must be {start, end}", "contentChanges.range")
    start, end = _offset(text, span.get("start"), encoding), _offset(text, span.get("end"), encoding)
    return text[:start] + change["text"] + text[max(start, end):]


def uri_to_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI, else ``None``."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return os.path.normpath(unquote(parts.path))


def path_to_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()


def watchers(root: str, relative: bool) -> list[dict[str, Any]] | None:
    """``FileSystemWatcher``s for ``root``: relative patterns when the client supports them, else
    absolute glob strings; ``None`` when ``root`` cannot be written as a glob (it holds ``*?[]{}``)."""
    root = os.path.normpath(root)
    parent, name = os.path.split(root)
    globs = WATCH_GLOBS + (CODEX_HOME_GLOBS if name == ".codex" else ())  # command_templates.is_codex_home
    if relative:
        base = path_to_uri(root)
        return [{"globPattern": {"baseUri": path_to_uri(parent), "pattern": name}}] + \
            [{"globPattern": {"baseUri": base, "pattern": glob}} for glob in globs]
    if GLOB_SPECIAL & set(root):
        return None
    return [{"globPattern": root}] + [{"globPattern": f"{root}/{glob}"} for glob in globs]


def default_roots(workspace_folder: str | None) -> list[str]:
    """Without ``initializationOptions.roots``: ``[<workspace>/.agents, ~/.agents]``."""
    roots = [os.path.join(workspace_folder, ".agents")] if workspace_folder else []
    return roots + [os.path.join(os.path.expanduser("~"), ".agents")]


# -- documents, diagnostics, hovers --------------------------------------------------------------

class Core:
    """Initialize, text synchronisation, diagnostics and hovers, on plain JSON."""

    def __init__(self, load_lint: Callable[[], Any], send: Callable[[dict[str, Any]], None]) -> None:
        self._load_lint = load_lint
        self._lint: Any = None
        self.send = send
        self.roots = default_roots(None)
        self.trusted: set[str] = set()
        self.encoding = "utf-16"
        self.markdown = False
        self.documents: dict[str, list[Any]] = {}
        self.initialize_params: dict[str, Any] = {}
        self.client_watches = False  # the client registers file watchers for us (dynamic registration)
        self.relative_patterns = False

    @property
    def lint(self) -> Any:
        return self._load_lint_once()

    def _load_lint_once(self) -> Any:
        if self._lint is None:
            self._lint = self._load_lint()
        return self._lint

    def preload(self) -> None:
        """Import the linter while the client reads the ``initialize`` answer."""
        def load() -> None:
            try:
                self._load_lint_once()
            except Exception:  # noqa: BLE001 - the first document will report it
                logger.debug("preloading the linter failed", exc_info=True)

        threading.Thread(target=load, name="harness-lsp-preload", daemon=True).start()

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self.initialize_params = params
        capabilities = params.get("capabilities")
        self.encoding = choose_encoding(capabilities)
        hover = ((capabilities or {}).get("textDocument") or {}).get("hover") if isinstance(capabilities, dict) \
            else None
        formats = hover.get("contentFormat") if isinstance(hover, dict) else None
        self.markdown = isinstance(formats, list) and "markdown" in formats
        workspace = capabilities.get("workspace") if isinstance(capabilities, dict) else None
        watched = workspace.get("didChangeWatchedFiles") if isinstance(workspace, dict) else None
        self.client_watches = isinstance(watched, dict) and watched.get("dynamicRegistration") is True
        self.relative_patterns = isinstance(watched, dict) and watched.get("relativePatternSupport") is True
        options = params.get("initializationOptions")
        options = options if isinstance(options, dict) else {}
        folder = None
        folders = params.get("workspaceFolders")
        if isinstance(folders, list) and folders and isinstance(folders[0], dict):
            folder = uri_to_path(str(folders[0].get("uri", "")))
        elif isinstance(params.get("rootUri"), str):
            folder = uri_to_path(params["rootUri"])
        elif isinstance(params.get("rootPath"), str):
            folder = params["rootPath"]
        roots = options.get("roots")
        self.roots = [os.path.normpath(r) for r in roots if isinstance(r, str)] if isinstance(roots, list) \
            else default_roots(folder)
        trusted = options.get("trustedExtensions")
        self.trusted = {t if isinstance(t, str) else t.get("id") for t in trusted if isinstance(t, (str, dict))} \
            if isinstance(trusted, list) else set()
        return {
            "capabilities": {
                "positionEncoding": self.encoding,
                "textDocumentSync": {"openClose": True, "change": 1, "save": True},
                "hoverProvider": True,
                "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}},
            },
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
        }

    def missing_roots_message(self) -> str | None:
        if any(os.path.isdir(root) for root in self.roots):
            return None
        first = self.roots[0] if self.roots else ".agents"
        return (f"harness-sidecar: none of the roots exists ({', '.join(self.roots) or 'none given'}), so no "
                f"skill, template or extension is checked. Create one (e.g. {first}/skills/<name>/SKILL.md) "
                f"or name your roots in initializationOptions.roots.")

    # text synchronisation: each one publishes the document's diagnostics

    def did_open(self, params: dict[str, Any]) -> None:
        document = params.get("textDocument")
        if not isinstance(document, dict) or not isinstance(document.get("uri"), str) \
                or not isinstance(document.get("text"), str):
            raise InvalidParams("'textDocument' needs 'uri' and 'text'", "textDocument")
        self.documents[document["uri"]] = [document.get("version"), document["text"]]
        self.publish(document["uri"])

    def did_change(self, params: dict[str, Any]) -> None:
        document = params.get("textDocument")
        uri = document.get("uri") if isinstance(document, dict) else None
        if uri not in self.documents:
            return  # a change to a document never opened: nothing to lint against
        changes = params.get("contentChanges")
        text = self.documents[uri][1]
        for change in changes if isinstance(changes, list) else []:
            text = apply_change(text, change, self.encoding)
        self.documents[uri] = [document.get("version"), text]
        self.publish(uri)

    def did_save(self, params: dict[str, Any]) -> None:
        document = params.get("textDocument")
        uri = document.get("uri") if isinstance(document, dict) else None
        if uri in self.documents:
            if isinstance(params.get("text"), str):
                self.documents[uri][1] = params["text"]
            self.publish(uri)

    def did_close(self, params: dict[str, Any]) -> None:
        document = params.get("textDocument")
        uri = document.get("uri") if isinstance(document, dict) else None
        if isinstance(uri, str):
            self.documents.pop(uri, None)
            self.send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                       "params": {"uri": uri, "diagnostics": []}})

    def diagnostics(self, uri: str, text: str) -> list[dict[str, Any]]:
        path = uri_to_path(uri)
        if path is None:
            return []
        findings = self.lint.lint(path, text, self.roots, self.trusted)
        if not findings:
            outside = self.lint.outside_roots(path, self.roots)
            findings = [outside] if outside is not None else []
        lines = text.split("\n")
        out = []
        for f in findings:
            line = lines[f.line] if f.line < len(lines) else ""
            end = f.end if f.end > f.start else len(line)
            out.append({"range": {"start": {"line": f.line, "character": to_units(line, f.start, self.encoding)},
                                  "end": {"line": f.line, "character": to_units(line, end, self.encoding)}},
                        "message": f.message, "severity": SEVERITY[f.severity], "code": f.kind,
                        "source": SERVER_NAME})
        return out

    def republish(self) -> None:
        """Files changed on disk: every open document's diagnostics again (shadowing, trust…)."""
        for uri in list(self.documents):
            self.publish(uri)

    def publish(self, uri: str) -> None:
        version, text = self.documents[uri]
        params: dict[str, Any] = {"uri": uri, "diagnostics": self.diagnostics(uri, text)}
        if isinstance(version, int):
            params["version"] = version
        self.send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})

    def hover(self, params: Any) -> dict[str, Any] | None:
        if not isinstance(params, dict) or not isinstance(params.get("textDocument"), dict):
            raise InvalidParams("'textDocument' is required", "textDocument")
        uri = params["textDocument"].get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("'textDocument.uri' must be a string", "textDocument.uri")
        path = uri_to_path(uri)
        if path is None:
            return None
        if uri in self.documents:
            text = self.documents[uri][1]
        else:
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                return None
        lines = text.split("\n")
        line, units = _position(params.get("position"))
        if line >= len(lines):
            return None
        character = from_units(lines[line], units, self.encoding)
        found = self.lint.hover(path, text, line, character, self.roots, markdown=self.markdown)
        if found is None:
            return None
        value, start, end = found
        return {"contents": {"kind": "markdown" if self.markdown else "plaintext", "value": value},
                "range": {"start": {"line": line, "character": to_units(lines[line], start, self.encoding)},
                          "end": {"line": line, "character": to_units(lines[line], end, self.encoding)}}}


# -- the session: one router before and after pygls is loaded --------------------------------------

class Inbox:
    """The reader thread's frames: queued for the start, then handed to the event loop."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: deque[Any] = deque()
        self._target: Callable[[list[Any]], None] | None = None

    def __call__(self, batch: list[Any]) -> None:  # the reader thread
        with self._cond:
            if self._target is not None:
                self._target(batch)
                return
            self._items.extend(batch)
            self._cond.notify_all()

    def get(self, timeout: float | None) -> Any:
        with self._cond:
            if not self._items:
                self._cond.wait(timeout)
            return self._items.popleft() if self._items else None

    def connect(self, target: Callable[[list[Any]], None], first: list[Any]) -> None:
        with self._cond:
            items = first + list(self._items)
            self._items.clear()
            if items:
                target(items)
            self._target = target


class Session:
    def __init__(self, writer: Writer, load_lint: Callable[[], Any], make_sidecar: Callable[[Any], Any]) -> None:
        self.writer = writer
        self.core = Core(load_lint, self.send)
        self.make_sidecar = make_sidecar
        self.initialized = False
        self.shutting_down = False
        self.exit_code: int | None = None
        self.backend: Any = None
        self._import: threading.Thread | None = None
        self._import_error: BaseException | None = None
        self.first_publish_done = False
        self.watched_roots: set[str] = set()
        self._watch_requests = 0

    # file watching by the client

    def watch_roots(self, roots: list[str]) -> None:
        """Ask the client to watch what makes a catalog under ``roots`` (the ones not asked yet)."""
        found = []
        for root in roots:
            root = os.path.normpath(root)
            if root in self.watched_roots:
                continue
            self.watched_roots.add(root)
            globs = watchers(root, self.core.relative_patterns)
            if globs is None:
                logger.warning("cannot ask the client to watch %s (a glob cannot name it); thread/refresh rescans it",
                               root)
                continue
            found += globs
        if not found:
            return
        self._watch_requests += 1
        request_id = f"{WATCH_REQUEST_PREFIX}{self._watch_requests}"
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "client/registerCapability", "params": {
            "registrations": [{"id": request_id, "method": "workspace/didChangeWatchedFiles",
                               "registerOptions": {"watchers": found}}]}})

    def files_changed(self, params: Any) -> None:
        changes = params.get("changes") if isinstance(params, dict) else None
        paths = [path for change in changes if isinstance(change, dict) and isinstance(change.get("uri"), str)
                 for path in [uri_to_path(change["uri"])] if path is not None] if isinstance(changes, list) else []
        if not paths:
            return
        self.core.republish()
        if self.backend is not None:
            self.backend.files_changed(paths)

    # output

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(message)

    def send_error(self, request_id: Any, error: RpcError) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_error()})

    # loading pygls off the critical path

    def start_import(self) -> None:
        if self._import is None:
            self._import = threading.Thread(target=self._do_import, name="harness-lsp-import", daemon=True)
            self._import.start()

    def _do_import(self) -> None:
        try:
            from harness_sidecar.wire import lsp_pygls  # noqa: F401
        except BaseException as exc:  # noqa: BLE001 - reported when a request needs it
            self._import_error = exc

    def load_backend(self) -> Any:
        if self.backend is None:
            self.start_import()
            assert self._import is not None
            self._import.join()
            if self._import_error is not None:
                raise self._import_error
            from harness_sidecar.wire import lsp_pygls

            self.backend = lsp_pygls.Backend(self, self.make_sidecar)
        return self.backend

    # the router

    def decode(self, item: Any) -> dict[str, Any] | None:
        """A frame as a message object, or ``None`` after answering what is wrong with it."""
        if isinstance(item, TooLarge):
            self.send_error(None, InvalidRequest("message too large: the limit is 16 MiB", "too_large"))
            return None
        if isinstance(item, BadFrame):
            self.send_error(None, ParseError(f"bad Content-Length frame: {item.reason}"))
            return None
        try:
            message = jsondepth.bounded_loads(_parse, item)
        except jsondepth.TooDeep as exc:
            head = exc.value if type(exc.value) is dict else {}
            request_id = head.get("id") if "method" in head and type(head.get("id")) in (int, str) else None
            if request_id is not None or "method" not in head or not exc.whole:
                self.send_error(request_id, TooDeep(f"the message is nested deeper than {jsondepth.MAX_DEPTH} "
                                                    f"levels of arrays and objects"))
            return None
        except UnicodeDecodeError as exc:
            self.send_error(None, ParseError(f"the message is not valid UTF-8 (byte {exc.start})"))
            return None
        except (ValueError, RecursionError) as exc:
            self.send_error(None, ParseError(f"malformed JSON: {exc}"))
            return None
        if not isinstance(message, dict):
            self.send_error(None, InvalidRequest(f"a message must be a JSON object, not {type(message).__name__}"))
            return None
        request_id = message.get("id")
        if "id" in message and "method" in message and (isinstance(request_id, bool)
                                                        or not isinstance(request_id, (int, str))):
            self.send_error(None, InvalidRequest("'id' must be an integer or a string"))
            return None
        if message.get("jsonrpc") != "2.0":
            self.send_error(request_id, InvalidRequest("'jsonrpc' must be \"2.0\""))
            return None
        if "method" in message and not isinstance(message["method"], str):
            self.send_error(request_id, InvalidRequest("'method' must be a string"))
            return None
        return message

    def route(self, message: dict[str, Any], in_loop: bool) -> bool:
        """Serve ``message``; ``False`` when it needs pygls and pygls is not running yet."""
        method = message.get("method")
        is_request = "id" in message and method is not None
        params = message.get("params")
        if method is None and str(message.get("id")).startswith(WATCH_REQUEST_PREFIX):
            if "error" in message:  # the client refused: say so; thread/refresh still rescans
                logger.warning("the client refused to watch files: %s", message["error"])
            return True
        if method == "exit":
            if self.backend is not None and in_loop:
                self.exit_code = self.backend.handle(message)
            if self.exit_code is None:
                self.exit_code = 0 if self.shutting_down else 1
            return True
        if method == "initialize":
            if self.initialized:
                self.send_error(message.get("id"), InvalidRequest("'initialize' was already called",
                                                                  "already_initialized"))
                return True
            if not is_request:
                return True
            if params is not None and not isinstance(params, dict):
                self.send_error(message["id"], InvalidParams("'params' must be an object", "params"))
                return True
            self.initialized = True
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": self.core.initialize(params or {})})
            self.core.preload()
            note = self.core.missing_roots_message()
            if note:
                self.send({"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 3, "message": note}})
            return True
        if not self.initialized:
            if is_request:
                self.send_error(message["id"], ServerNotInitialized(f"'{method}' before 'initialize'"))
            return True  # notifications before initialize are dropped, as LSP says
        if self.shutting_down and is_request:
            self.send_error(message["id"], InvalidRequest(f"'{method}' after 'shutdown'", "shutting_down"))
            return True
        try:
            if method in DOCUMENT_METHODS:
                if not isinstance(params, dict):
                    raise InvalidParams("'params' must be an object", "params")
                getattr(self.core, {"textDocument/didOpen": "did_open", "textDocument/didChange": "did_change",
                                    "textDocument/didSave": "did_save", "textDocument/didClose": "did_close"}[method])(
                    params)
                self.first_publish_done = self.first_publish_done or method != "textDocument/didClose"
                return True
            if method == "textDocument/hover" and is_request:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": self.core.hover(params)})
                return True
        except RpcError as exc:
            if is_request:
                self.send_error(message["id"], exc)
            else:
                logger.warning("%s: %s", method, exc.message)
            return True
        if method == "shutdown" and is_request and self.backend is None:
            self.shutting_down = True
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return True
        if method == "initialized" and self.core.client_watches and not self.watched_roots:
            self.watch_roots(self.core.roots)
        if method == "workspace/didChangeWatchedFiles":
            self.files_changed(params)
            return True
        if method in ("initialized", "$/setTrace", "$/cancelRequest") and self.backend is None:
            return True  # nothing is in flight before pygls: nothing to cancel
        if not in_loop:
            return False
        if method == "shutdown" and is_request:
            self.shutting_down = True
        self.backend.handle(message)
        return True

    # the two phases

    def serve(self, inbox: Inbox) -> int:
        """Serve on the calling thread until a message needs pygls, then on its event loop."""
        waited = 0.0
        while self.exit_code is None:
            timeout = None
            if self.initialized and self._import is None:
                if self.first_publish_done:
                    self.start_import()
                else:
                    timeout = IDLE_BEFORE_IMPORT_S
            item = inbox.get(timeout)
            if item is None:
                waited += timeout or 0
                if waited >= IDLE_BEFORE_IMPORT_S:
                    self.start_import()
                continue
            if isinstance(item, EOFError):
                return 0
            message = self.decode(item)
            if message is None or self.route(message, in_loop=False):
                continue
            try:
                self.load_backend()
            except BaseException as exc:  # noqa: BLE001
                logger.error("cannot load pygls: %s", exc)
                if "id" in message:
                    self.send_error(message["id"], RpcError(
                        f"the LSP mode cannot serve '{message['method']}': pygls failed to load ({exc}); "
                        f"install the 'lsp' extra from your harness-sidecar checkout: pip install -e '.[lsp]'"))
                continue
            return self.backend.run(inbox, message)
        return self.exit_code


def serve(protocol_fd: int, load_lint: Callable[[], Any], make_sidecar: Callable[[Any], Any]) -> int:
    """Serve LSP on stdin and the claimed protocol fd; return the exit code.

    As in LSP: ``exit`` after ``shutdown`` → 0, ``exit`` without it → 1; stdin reaching
    EOF → 0.
    """
    writer = Writer(protocol_fd)
    writer.framing = CONTENT_LENGTH
    inbox = Inbox()
    Reader(claim_stdin(), inbox, lambda framing: None).start()  # fd 0 → /dev/null for every child
    session = Session(writer, load_lint, make_sidecar)
    code = session.serve(inbox)
    writer.flush()
    return code
