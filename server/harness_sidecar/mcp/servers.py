"""A thread's MCP servers: start them, list their tools, call them, follow their changes, close them.

The protocol is our own small client (``session.py`` for JSON-RPC, ``messages.py`` for what a
server may send), written against the MCP specification; the processes and pipes are ours too
(``process.py``). It replaced the official SDK's ``ClientSession``, measured: through the sidecar,
a sequential ``tools/call`` spent ~760 µs of the sidecar's CPU per call inside the SDK's session
(pydantic validation and dumps, anyio's backend detection), the first thread naming a server paid
0.9–1.6 s of CPU importing the SDK, and the sidecar needs none of what that machinery is for
(HTTP transports, sampling, elicitation, tasks). The SDK's ``stdio_client`` was never used: it
passes the server only a few environment variables (§6 says the sidecar's whole environment plus
``env``), writes the server's stderr unprefixed to a file we give it, does not tell the exit
status, and sets no parent-death signal.

Everything the tool pipeline does (argument validation, hooks, transforms, observers, revisions,
name clashes, schema checks) happens outside this module; a call here is the *core* of an MCP tool.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

from harness_sidecar import __version__
from harness_sidecar.base import jsonio
from harness_sidecar.base.errors import RESOURCE_ERRNOS, DomainError
from harness_sidecar.base.inputschema import InvalidSchema
from harness_sidecar.base.inputschema import compile as compile_schema
from .messages import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    Invalid,
    check_call_result,
    check_initialize,
    check_tools_page,
)
from .model import (
    FULL_NAME,
    McpCallResult,
    McpServerConfig,
    McpTool,
    check_configs,
    error_result,
    full_name,
    map_result,
)
from .process import ServerProcess, write_stderr
from .session import Closed, RpcError, Session

logger = logging.getLogger(__name__)

STOP_GRACE_S = 2.0  # close stdin → this long → SIGTERM → this long → SIGKILL
EXIT_WINDOW_S = 300.0
MAX_EXITS = 3  # exits within EXIT_WINDOW_S after which a server is not restarted
MAX_MESSAGE_BYTES = 64 << 20  # one line on a server's stdout
MAX_PAGES = 1000  # tools/list pages
CLIENT_INFO = {"name": "harness-sidecar", "version": __version__}

Notify = Callable[[dict[str, Any]], Any]
ToolsChanged = Callable[[], Any]


class _StartFailed(Exception):
    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno  # the system refused the sidecar a process or descriptors (EAGAIN, EMFILE, ...)


def _preview(line: bytes) -> str:
    text = line[:120].decode("utf-8", "replace")
    return repr(text) + ("…" if len(line) > 120 else "")


class _Connection:
    """One process of a server and the MCP session over its pipes."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.process = ServerProcess(server.label, server.owner.thread_id)
        self.session: Session | None = None
        self.ready = False  # initialized and listed
        self.eof = False  # the server's stdout is over: no answer will come
        self.pin_seen: Any = None  # a pinned plugin's server: its tree's identities when its start was checked
        self.stopping = False  # we are ending it
        self.failure: str | None = None  # what the stdout pump saw go wrong
        self.changed_during_start = False
        self.dead = asyncio.Event()
        self.output_schemas: dict[str, Any] = {}  # tool → its outputSchema, from this process's listing
        self._validators: dict[str, Any] = {}  # tool → CompiledSchema or InvalidSchema, compiled on first call
        self._pump: asyncio.Task[None] | None = None
        self._finisher: asyncio.Task[None] | None = None

    # -- start ------------------------------------------------------------------------------------

    async def spawn(self) -> None:
        config = self.server.config
        owner = self.server.owner
        owner._spawning += 1
        try:
            await self.process.spawn(config.command, {**os.environ, **config.env}, config.cwd)
        finally:
            owner._spawning -= 1
        owner._live.add(self)
        self.session = Session(self.server.label, self.process.stdin, self._on_notification, self._broken,
                               MAX_MESSAGE_BYTES)
        self._pump = asyncio.create_task(self._pump_stdout())
        owner._keep(asyncio.create_task(self._watch_exit()))

    async def connect(self, timeout_s: float) -> list[dict[str, Any]]:
        """Initialize and list every page of tools within ``timeout_s``; ``_StartFailed`` says why not."""
        session = self.session
        assert session is not None
        step = "initialize"
        try:
            async with asyncio.timeout(timeout_s):
                result = await session.request("initialize", {"protocolVersion": LATEST_VERSION, "capabilities": {},
                                                              "clientInfo": CLIENT_INFO})
                version = check_initialize(result)
                if version not in SUPPORTED_VERSIONS:
                    raise _StartFailed(f"answered initialize with protocol version {version!r}, which the sidecar "
                                       f"does not speak (it speaks {', '.join(SUPPORTED_VERSIONS)})")
                session.notify("notifications/initialized")
                step = "tools/list"
                tools = await self.list_tools()
                for _ in range(3):  # a list_changed during start-up: the listing we return is the latest
                    if not self.changed_during_start:
                        break
                    self.changed_during_start = False
                    tools = await self.list_tools()
        except TimeoutError:
            raise _StartFailed(f"did not finish initializing and listing its tools within "
                               f"{timeout_s * 1000:.0f} ms") from None
        except RpcError as exc:
            if self.eof or self.failure:
                raise _StartFailed(await self._gone_reason()) from None
            raise _StartFailed(f"answered {step} with an error: {exc.message}") from None
        except Closed:
            raise _StartFailed(await self._gone_reason()) from None
        except Invalid as exc:
            if self.eof or self.failure:
                raise _StartFailed(await self._gone_reason()) from None
            raise _StartFailed(f"answered {step} with a result that is not valid: {exc}") from None
        self.ready = True
        return tools

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every page of ``tools/list``, as dicts of the fields the sidecar uses (``Invalid``, ``RpcError``...)."""
        session = self.session
        assert session is not None
        tools: list[dict[str, Any]] = []
        schemas: dict[str, Any] = {}
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page, cursor = check_tools_page(await session.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None))
            for tool in page:
                tools.append({"name": tool["name"], "description": tool.get("description") or "",
                              "inputSchema": tool["inputSchema"]})
                schemas[tool["name"]] = tool.get("outputSchema")
            if cursor is None:
                if schemas != self.output_schemas:
                    self.output_schemas = schemas
                    self._validators = {}
                return tools
            if cursor in seen:
                raise _StartFailed(f"repeated the tools/list cursor {cursor!r}")
            seen.add(cursor)
        raise _StartFailed(f"listed more than {MAX_PAGES} pages of tools")

    def check_output(self, tool: str, result: dict[str, Any]) -> None:
        """A successful result of a tool with an ``outputSchema`` carries ``structuredContent`` valid against it."""
        schema = self.output_schemas.get(tool)
        if schema is None or result.get("isError"):
            return
        validator = self._validators.get(tool)
        if validator is None:
            try:
                validator = compile_schema(schema)
            except InvalidSchema as exc:
                validator = exc
            self._validators[tool] = validator
        if isinstance(validator, InvalidSchema):
            raise Invalid(f"the outputSchema of tool {tool!r} is not valid JSON Schema: {validator.message}")
        if "structuredContent" not in result:
            raise Invalid(f"tool {tool!r} has an outputSchema but returned no structuredContent")
        error = validator.first_error(result["structuredContent"])
        if error is not None:
            message, path = error
            raise Invalid(f"its structuredContent does not match the outputSchema of tool {tool!r}: {message} "
                          f"(at {path})")

    async def _gone_reason(self) -> str:
        if self.failure:
            return self.failure
        await self.process.wait_exit(2.0)
        if self.process.returncode is None:
            return "closed its stdout during start-up"
        reason = f"{self.process.describe_exit()} during start-up"
        await self.process.drain_stderr(0.5)
        tail = [line for line in self.process.stderr_tail if line.strip()]
        return f"{reason} (last stderr line: {tail[-1].strip()[:200]})" if tail else reason

    # -- the pipes --------------------------------------------------------------------------------

    async def _pump_stdout(self) -> None:
        """Server stdout → one JSON-RPC message per line → the session."""
        session = self.session
        assert session is not None
        reader = self.process.stdout
        buffer = bytearray()
        try:
            while True:
                try:
                    chunk = await reader.read(1 << 16)
                except (ConnectionError, OSError):
                    break
                if not chunk:
                    break
                searched = len(buffer)
                buffer += chunk
                if buffer.find(b"\n", searched) < 0:
                    if len(buffer) > MAX_MESSAGE_BYTES:
                        self._violation(f"wrote a message of more than {MAX_MESSAGE_BYTES} bytes")
                        return
                    continue
                *lines, rest = bytes(buffer).split(b"\n")
                buffer = bytearray(rest)
                for line in lines:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        session.receive(line)
                    except Invalid as exc:
                        if not self.ready:
                            self._violation(f"wrote what is not MCP on stdout: {_preview(line)}")
                            return
                        write_stderr(f"[{self.server.label}] ignored a stdout line that is not MCP: "
                                     f"{_preview(line)} ({exc})\n")
                    except Exception:  # a bug of ours: the next line is still read
                        logger.exception("MCP server %s: handling %s failed", self.server.label, _preview(line))
        finally:
            self.eof = True  # before the session fails its requests, so that a failed call can tell why
            session.close()
            if not self.stopping:
                self.finish()

    def _broken(self, what: str | None) -> None:
        """Its stdin broke (``None``: it exited, or closed its stdin and can no longer be talked to), or
        it broke the protocol on that side (``what``)."""
        if what is not None:
            self._violation(what)
        elif not self.stopping:
            self.finish()

    def _violation(self, what: str) -> None:
        """The server broke the protocol: say so, kill it (its exit is then handled as any exit)."""
        if self.failure is None:
            self.failure = what
            if self.ready:
                write_stderr(f"[{self.server.label}] {what}: killing it\n")
        self.process.kill_group(signal.SIGKILL)

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tools/list_changed":
            self.server.tools_changed_notice(self)
        elif method == "notifications/message":
            level, data = params.get("level"), params.get("data")
            if type(level) is str:
                text = data if isinstance(data, str) else jsonio.dumps(data).decode("utf-8")
                write_stderr(f"[{self.server.label}] log {level}: {text}\n")
        # progress, resources/prompts changes, a cancellation of a request it sent us (answered at once): not used

    # -- the end ----------------------------------------------------------------------------------

    async def _watch_exit(self) -> None:
        await self.process.exited.wait()
        if not self.stopping:
            await self.finish()

    def finish(self) -> asyncio.Task[None]:
        """Release everything once the server is gone (or has to go); idempotent."""
        if self._finisher is None:
            self._finisher = asyncio.create_task(self._finish())
            self.server.owner._keep(self._finisher)
        return self._finisher

    async def _finish(self) -> None:
        if not self.process.exited.is_set() and not await self.process.wait_exit(1.0):
            self.process.kill_group(signal.SIGKILL)  # it closed stdout but lives on: it is of no use
            await self.process.wait_exit(5.0)
        if self._pump is not None:  # what it wrote before it exited is still read (a last answer counts)...
            await asyncio.wait([self._pump], timeout=1.0)
            self._pump.cancel()  # ...but a grandchild may hold its stdout open for ever
        if self.session is not None:
            self.session.close()
        await self.process.reap()
        self.server.owner._live.discard(self)
        self.server.on_exit(self)
        self.dead.set()

    async def stop(self) -> None:
        """The shutdown sequence: no more requests; close stdin; TERM after 2 s; KILL after 2 s more."""
        self.stopping = True
        if self.session is not None:
            self.session.close()
        await self.process.stop(STOP_GRACE_S)
        await self.finish()

    async def kill(self) -> None:
        self.stopping = True
        self.process.kill_group(signal.SIGKILL)
        await self.process.wait_exit(5.0)
        await self.finish()


class _Server:
    """One configured server across its processes: state, listing, exits and restarts."""

    def __init__(self, owner: McpServers, config: McpServerConfig) -> None:
        self.owner = owner
        self.config = config
        self.name = config.name
        self.label = f"{owner.thread_id} mcp {config.name}"
        self.state = "starting"  # ready | exited | unavailable (not restarted) | failed (never started)
        self.listing: list[dict[str, Any]] = []  # the server's tools that pass allow/deny
        self.conn: _Connection | None = None
        self.failure = ""
        self.failure_errno: int | None = None  # why its first start failed, where the system refused it
        self.exits: collections.deque[float] = collections.deque()
        self.lock = asyncio.Lock()
        self._relist: asyncio.Task[None] | None = None
        self._relist_again = False

    @property
    def timeout_s(self) -> float:
        return self.config.startup_timeout_ms / 1000

    def _filter(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [tool for tool in tools if self.config.admits(tool["name"])]

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.failure = f"MCP server '{self.name}' {reason}"

    # -- first start ----------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            self.conn, self.listing = await self._launch()
        except _StartFailed as exc:
            self._fail(str(exc))
            self.failure_errno = exc.errno
            return
        self.state = "ready"

    async def _launch(self) -> tuple[_Connection, list[dict[str, Any]]]:
        """A new process, initialized and listed: the connection and its tools that pass allow/deny.

        ``_StartFailed`` says why not (a process that did start is killed first). The first start and
        every restart come through here."""
        pin = self.config.pin  # a pinned plugin's server starts only while its tree matches the pin
        why, seen = (None, ()) if pin is None else pin.start_check() if not pin.large else \
            await asyncio.to_thread(pin.start_check)
        if why is not None:
            raise _StartFailed(f"is not started (hash_mismatch): {why}")
        if self.config.remote:  # streamable HTTP or SSE (protocol-v4 §4): the SDK's transports, imported now
            from .remote import connection_class, load_sdk

            try:
                await load_sdk()
            except ImportError as exc:
                raise _StartFailed(f"cannot be connected: the mcp package (>= 2.3) is needed for remote servers "
                                   f"({exc})") from None
            conn: _Connection = connection_class(_Connection, _StartFailed, MAX_MESSAGE_BYTES)(self)
        else:
            conn = _Connection(self)
        try:
            await conn.spawn()
        except (OSError, ValueError) as exc:
            raise _StartFailed(f"cannot be started ({self.config.command[0]!r}): {exc}",
                               getattr(exc, "errno", None)) from None
        try:
            listing = self._filter(await conn.connect(self.timeout_s))
            # the tree changed between the check and the end of initialize: this process is not trusted
            why = None if pin is None else pin.end_check(seen) if not pin.large else \
                await asyncio.to_thread(pin.end_check, seen)
            if why is not None:
                raise _StartFailed(f"is not started (hash_mismatch): {why}")
            conn.pin_seen = seen
            return conn, listing
        except _StartFailed:
            await conn.kill()
            raise

    # -- exits and restarts -----------------------------------------------------------------------

    def _record_exit(self) -> None:
        now = time.monotonic()
        self.exits.append(now)
        while self.exits and now - self.exits[0] > EXIT_WINDOW_S:
            self.exits.popleft()
        self.state = "unavailable" if len(self.exits) >= MAX_EXITS else "exited"

    def on_exit(self, conn: _Connection) -> None:
        """A connection is over; if it was this server's running one, that is an exit (§6)."""
        if conn is not self.conn or conn.stopping or not conn.ready or self.owner.closing:
            return
        self._record_exit()
        what = conn.process.describe_exit()
        if conn.failure:
            what = f"{conn.failure}; it {what}"
        message = f"MCP server '{self.name}' {what}; " + (
            "it is restarted on the next call to it" if self.state == "exited"
            else f"it exited {MAX_EXITS} times within {EXIT_WINDOW_S / 60:.0f} minutes and is not restarted")
        self.owner._notify({"threadId": self.owner.thread_id, "kind": "mcp_exit", "name": self.name,
                            "message": message, **conn.process.exit_status()})

    def _unavailable(self) -> McpCallResult:
        if self.state == "failed":
            return error_result("mcp_unavailable", self.failure)
        return error_result("mcp_unavailable", f"MCP server '{self.name}' exited {MAX_EXITS} times within "
                                               f"{EXIT_WINDOW_S / 60:.0f} minutes and is not restarted"
                                               + (f" (last: {self.failure})" if self.failure else ""))

    async def _restart(self) -> str | None:
        """Start a fresh process for an exited server; ``None`` on success, else why not."""
        async with self.lock:
            if self.state == "ready":
                return None
            if self.state != "exited" or self.owner.closing:
                return "it is not running"
            try:
                conn, listing = await self._launch()
            except _StartFailed as exc:
                self._record_exit()
                self.failure = str(exc)
                return self.failure
            if self.owner.closing:
                await conn.stop()
                return "the thread is closing"
            self.conn = conn
            self.state = "ready"
            self.owner._notify({"threadId": self.owner.thread_id, "kind": "mcp_restarted", "name": self.name,
                                "message": f"MCP server '{self.name}' was restarted"})
            if listing != self.listing:
                self.listing = listing
                self.owner._tools_changed()
            return None

    # -- list_changed -----------------------------------------------------------------------------

    def tools_changed_notice(self, conn: _Connection) -> None:
        if not conn.ready:  # starting (first start or restart): connect() lists again before it returns
            conn.changed_during_start = True
            return
        if conn is not self.conn:
            return
        if self._relist is not None and not self._relist.done():
            self._relist_again = True
            return
        self._relist = asyncio.create_task(self._relist_tools(conn))
        self.owner._keep(self._relist)

    async def _relist_tools(self, conn: _Connection) -> None:
        while True:
            self._relist_again = False
            try:
                async with asyncio.timeout(self.timeout_s):
                    listing = self._filter(await conn.list_tools())
            except Exception as exc:  # it exited, or answers badly: keep the listing we have
                if not conn.eof and not self.owner.closing:
                    write_stderr(f"[{self.label}] could not list its tools after tools/list_changed: "
                                 f"{exc or type(exc).__name__}\n")
                return
            if not self._relist_again:
                break
        if conn is self.conn and not self.owner.closing and listing != self.listing:
            self.listing = listing
            self.owner._tools_changed()

    # -- calls ------------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> McpCallResult:
        if self.state in ("failed", "unavailable"):
            return self._unavailable()
        if self.state == "exited":
            reason = await self._restart()
            if reason is not None:
                if self.state == "unavailable":
                    return self._unavailable()
                return error_result("mcp_unavailable", f"MCP server '{self.name}' could not be restarted: {reason}")
        conn = self.conn
        assert conn is not None and conn.session is not None
        try:
            async with asyncio.timeout(timeout_s):
                result = await conn.session.request("tools/call", {"name": tool, "arguments": arguments})
            check_call_result(result)
            conn.check_output(tool, result)
        except TimeoutError:
            return error_result("timeout", f"MCP tool '{tool}' of server '{self.name}' did not answer within "
                                           f"{timeout_s:g} s; the server was asked to cancel it")
        except RpcError as exc:
            return error_result("mcp_error", f"MCP server '{self.name}' answered with an error: {exc.message}",
                                code=exc.code)
        except Closed:
            return await self._lost(conn)
        except Invalid as exc:
            return error_result("mcp_error", f"MCP server '{self.name}' gave a result that is not valid: {exc}")
        pin = self.config.pin  # a pinned plugin's server may read its tree after it started (lazy imports)
        why = None
        if pin is not None and conn.pin_seen is not None:
            why = pin.end_check(conn.pin_seen) if not pin.large else \
                await asyncio.to_thread(pin.end_check, conn.pin_seen)
        if why is not None:
            self._fail(f"is ended and not restarted (hash_mismatch): {why}")
            await conn.kill()
            return error_result("mcp_unavailable", self.failure)
        return map_result(result)

    async def _lost(self, conn: _Connection) -> McpCallResult:
        if conn.stopping or self.owner.closing:
            return error_result("mcp_unavailable", f"MCP server '{self.name}' was stopped (the thread is closing)")
        try:
            await asyncio.wait_for(conn.dead.wait(), 5.0)
        except TimeoutError:
            pass
        what = conn.failure or conn.process.describe_exit()
        return error_result("mcp_exit", f"MCP server '{self.name}' {what} during the call",
                            **conn.process.exit_status())


class McpServers:
    """The MCP servers of one thread. Build it with ``await McpServers.start(...)``."""

    def __init__(self, thread_id: str, configs: list[McpServerConfig], notify: Notify | None,
                 on_tools_changed: ToolsChanged | None, open_url: Any = None) -> None:
        self.thread_id = thread_id
        # a remote server's login (auth.py): ``await open_url(url, reason)`` → opened (bool), or None
        # when the editor cannot open URLs (then a diagnostic mcp_auth_required carries the URL)
        self.open_url = open_url
        self._servers = {config.name: _Server(self, config) for config in configs}
        self._notify_fn = notify
        self._changed_fn = on_tools_changed
        self.diagnostics: list[dict[str, Any]] = []
        self.closing = False
        self._started = False
        self._live: set[_Connection] = set()
        self._spawning = 0
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    async def start(cls, thread_id: str, configs: list[McpServerConfig], *, notify: Notify | None = None,
                    on_tools_changed: ToolsChanged | None = None, open_url: Any = None) -> McpServers:
        """Start every server concurrently; return when each has listed its tools or failed.

        ``notify(params)`` receives ``thread/diagnostic`` params (``mcp_exit``, ``mcp_restarted``);
        ``on_tools_changed()`` is called after a server's listing changed (``tools/list_changed``, or a
        restart that lists other tools). Either may be a coroutine function. A failed ``required``
        server raises ``DomainError("mcp_unavailable", ..., name=...)`` after every server is stopped.
        """
        check_configs(configs)
        self = cls(thread_id, configs, notify, on_tools_changed, open_url)
        if not configs:
            self._started = True
            return self
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        return self

    async def _start(self) -> None:
        servers = list(self._servers.values())
        await asyncio.gather(*(server.start() for server in servers))
        self.diagnostics = [
            {"kind": "mcp_unavailable", "name": server.name, "message": server.failure,
             "hint": "check the server's command, environment and stderr (prefixed "
                     f"'[{server.label}]' in the sidecar's stderr)"}
            for server in servers if server.state == "failed"]
        self.diagnostics += self.skipped()
        for server in servers:
            if server.state == "failed" and server.config.required:
                await self.close()
                if server.failure_errno in RESOURCE_ERRNOS:  # the sidecar's own failure, not the server's
                    raise DomainError("resources_exhausted", server.failure, errno=server.failure_errno)
                raise DomainError("mcp_unavailable", server.failure, name=server.name)
        self._started = True

    # -- what the thread offers -------------------------------------------------------------------

    def tools(self) -> list[McpTool]:
        """The servers' tools in §6 order (servers as configured, each in its own order), filters applied.

        Tools of a server that exited stay listed; a full name that is not 1–64 of A-Za-z0-9_- is left
        out (see ``skipped()``).
        """
        return [McpTool(name, server.name, tool["name"], tool["description"], tool["inputSchema"])
                for server, tool, name, valid in self._listed() if valid]

    def skipped(self) -> list[dict[str, Any]]:
        """``mcp_tool_skipped`` diagnostics for the tools ``tools()`` leaves out by their name."""
        return [{"kind": "mcp_tool_skipped", "name": name, "server": server.name, "tool": tool["name"],
                 "message": f"tool {tool['name']!r} of MCP server '{server.name}' is left out: "
                            f"its name {name!r} is not 1–64 of A-Za-z0-9_-",
                 "hint": "rename the tool in the server, or deny it in tools.deny"}
                for server, tool, name, valid in self._listed() if not valid]

    def _listed(self) -> Iterator[tuple[_Server, dict[str, Any], str, bool]]:
        """Every listed tool of the servers not failed: (server, tool, full name, whether the name is valid)."""
        for server in self._servers.values():
            if server.state == "failed":
                continue
            for tool in server.listing:
                name = full_name(server.name, tool["name"])
                yield server, tool, name, FULL_NAME.fullmatch(name) is not None

    def status(self) -> dict[str, str]:
        """Each server's state: ``ready``, ``exited``, ``unavailable`` or ``failed``."""
        return {name: server.state for name, server in self._servers.items()}

    # -- calls ------------------------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: dict[str, Any], timeout_s: float) -> McpCallResult:
        """Call ``tool`` of ``server``: always a result, never an exception (``CancelledError`` aside).

        ``isError`` results carry ``details.kind``: ``timeout`` (the server was sent
        ``notifications/cancelled``), ``mcp_exit``, ``mcp_unavailable``, ``mcp_error`` (the server
        answered with a JSON-RPC error, ``details.code``) or ``tool_not_found`` (filtered or unknown).
        Cancelling the awaiting task sends the server ``notifications/cancelled`` and re-raises.
        """
        entry = self._servers.get(server)
        if entry is None:
            return error_result("tool_not_found", f"no MCP server named {server!r} in this thread")
        if not entry.config.admits(tool) or (entry.state != "failed"
                                             and all(t["name"] != tool for t in entry.listing)):
            return error_result("tool_not_found", f"MCP server '{server}' offers no tool {tool!r} in this thread")
        if self.closing:
            return error_result("mcp_unavailable", f"MCP server '{server}' was stopped (the thread is closing)")
        return await entry.call(tool, arguments, timeout_s)

    # -- the end ----------------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop every server (close stdin, SIGTERM after 2 s, SIGKILL after 2 s more); return once all are gone."""
        self.closing = True
        for server in self._servers.values():
            if server._relist is not None:
                server._relist.cancel()
        while self._live or self._spawning:
            if self._live:
                await asyncio.gather(*(conn.stop() for conn in list(self._live)))
            else:
                await asyncio.sleep(0.01)
        pending = [task for task in self._tasks if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=2.0)

    # -- helpers ----------------------------------------------------------------------------------

    def _keep(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _call_soon(self, fn: Callable[..., Any] | None, *args: Any) -> None:
        """Call a callback that may be sync or async; an async one runs as a task we keep (``_keep``)."""
        if fn is None:
            return
        try:
            result = fn(*args)
        except Exception:
            logger.exception("MCP callback %r raised", fn)
            return
        if inspect.isawaitable(result):
            self._keep(asyncio.ensure_future(result))

    def _notify(self, params: dict[str, Any]) -> None:
        self._call_soon(self._notify_fn, params)

    def _tools_changed(self) -> None:
        if self._started and not self.closing:
            self._call_soon(self._changed_fn)
