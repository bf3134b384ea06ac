"""Running one command handler: its process, its stdin, its answer (protocol-v3 §5 "Running", "Answers").

Shell form (``command`` alone) runs ``/bin/sh -c command``; with ``args``, ``command`` is run directly
with them. The process is started by ``containment.launcher`` (kind ``HOOK``, owned by the thread):
cwd = the thread's cwd; environment = the sidecar's plus ``CLAUDE_PROJECT_DIR`` and, for a plugin,
``CLAUDE_PLUGIN_ROOT``/``PLUGIN_ROOT``/``CLAUDE_PLUGIN_DATA``/``PLUGIN_DATA``. ``${NAME}`` of those is
never pasted into a shell script: in shell form it stays an expansion of that environment variable,
quoted (``shell_command``); in exec form it is substituted in ``command`` and ``args``, each a whole
argument (protocol-v4 §1). stdin is one JSON object, then EOF. stdout is read up
to 1 MiB (more is a failure), stderr's tail is kept for the reason of a block or a failure, and each
stderr line goes to the sidecar's stderr with the hook's prefix. At the deadline the whole process group is killed.

``run_handler`` never raises: every way a hook can go wrong is an ``Answer`` with ``failure`` set.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.containment import launcher, zygote
from harness_sidecar.hooks.declared import Handler
from harness_sidecar.hooks.decision import undefined_value


MAX_STDOUT = 1024 * 1024
STDERR_TAIL = 2000
_VARIABLE = re.compile(r"\$\{([A-Z_]+)\}")
_BARE_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")  # $NAME: the whole name, as the shell reads it


@dataclass
class Answer:
    """What one handler said. ``failure`` (why it failed) excludes everything else."""

    handler: Handler
    exit_code: int | None = None
    stdout: str = ""
    stderr_tail: str = ""
    output: dict[str, Any] | None = None  # the JSON answer (exit 0, stdout starting with '{')
    failure: str | None = None
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def variables(handler: Handler, project_dir: str) -> dict[str, str]:
    """The six variables of §5 that apply to ``handler`` (the plugin ones only for a plugin)."""
    out = {"CLAUDE_PROJECT_DIR": project_dir}
    source = handler.source
    if source.plugin_root is not None:
        out["CLAUDE_PLUGIN_ROOT"] = out["PLUGIN_ROOT"] = source.plugin_root
    if source.plugin_data is not None:
        out["CLAUDE_PLUGIN_DATA"] = out["PLUGIN_DATA"] = source.plugin_data
    return out


def substitute(text: str, values: dict[str, str]) -> str:
    """``${NAME}`` of the known variables replaced; any other ``${...}`` is left for the shell."""
    return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def shell_command(text: str, values: dict[str, str]) -> str:
    """Shell form (protocol-v4 §1 "No path is shell syntax"): no value is pasted into the script.

    Each ``${NAME}`` (and, outside quotes, ``$NAME``) of the known variables stays a parameter expansion the
    shell makes from the hook's environment (where ``variables`` puts the value), quoted by where it
    stands: ``"${NAME}"`` outside quotes (no field splitting, no globbing), as written inside double
    quotes, and ``'"${NAME}"'`` inside single quotes (the quote is closed around it, so it expands there
    as Claude Code's pasting did). The
    shell never reads the result of an expansion as code, so whatever bytes a folder name holds —
    ``$(…)``, backticks, ``;``, quotes, newlines — it is one word, the path. Only the quoting is read
    here (a misread of nested quotes can only change which quotes surround the expansion, never make
    a value code: the value is never in the script).
    """
    out: list[str] = []
    frames = [["", 0]]  # one per command substitution "$(" open: [its quote: "" | "'" | '"', its "(" depth]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        frame = frames[-1]
        quote = frame[0]
        if c == "$":
            # ${NAME} anywhere (Claude Code pastes it, even in single quotes); $NAME only outside quotes, where
            # the shell would split it (in double quotes it is whole already, in single quotes it is text)
            m = _VARIABLE.match(text, i) or (_BARE_VARIABLE.match(text, i) if quote == "" else None)
            if m is not None and m.group(1) in values:
                name = m.group(1)
                out.append(f'"${{{name}}}"' if quote == "" else f'${{{name}}}' if quote == '"'
                           else f"'\"${{{name}}}\"'")
                i = m.end()
                continue
            if quote != "'" and text.startswith("$(", i):
                frames.append(["", 0])
                out.append("$(")
                i += 2
                continue
        if c == "\\" and quote != "'" and i + 1 < n:
            out.append(text[i:i + 2])
            i += 2
            continue
        if c in "'\"" and (quote == "" or quote == c):
            frame[0] = c if quote == "" else ""
        elif quote == "" and len(frames) > 1 and c in "()":
            if c == "(":
                frame[1] += 1
            elif frame[1]:
                frame[1] -= 1
            else:
                frames.pop()
        out.append(c)
        i += 1
    return "".join(out)


# What a word of a simple command may hold, besides ${NAME}/$NAME of the known variables: nothing the shell
# reads (no quote, backslash, $, glob, tilde, comment, redirection, separator, brace or parenthesis)
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:@%+,=-]+")
# dash's builtins and reserved words, and bash's (where /bin/sh is bash, it is not taken): the shell runs
# these itself, so a command naming one is never exec'd
_SHELL_OWN = frozenset(
    ". : [ [[ ]] alias bg break builtin caller cd chdir command compgen complete continue declare dirs disown "
    "echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile "
    "popd printf pushd pwd read readarray readonly return select set shift shopt source suspend test time times "
    "trap true type typeset ulimit umask unalias unset wait ! case coproc do done elif else esac fi for function "
    "if in then until while { }".split())
_SHELL_IS_DASH = os.path.basename(os.path.realpath("/bin/sh")) == "dash"


def direct_argv(command: str, values: dict[str, str]) -> list[str] | None:
    """The command line ``/bin/sh -c command`` would ``exec`` when ``command`` is one simple command of
    plain words (``python3 ${CLAUDE_PLUGIN_ROOT}/hooks/check.py --strict``): each ``${NAME}`` or ``$NAME``
    of the known variables is its value, whole (the shell expands it quoted: ``shell_command``). None
    for anything the shell itself would read otherwise — quoting, other expansions, several commands, a
    builtin or reserved word, an assignment — and where ``/bin/sh`` is not dash (whose only addition to
    the environment of what it execs is ``PWD``, which the zygote adds as dash would)."""
    if not _SHELL_IS_DASH:
        return None
    words = command.replace("\t", " ").split(" ")
    out: list[str] = []
    for word in words:
        if not word:
            continue
        parts: list[str] = []
        i = 0
        while i < len(word):
            if word[i] == "$":
                m = _VARIABLE.match(word, i) or _BARE_VARIABLE.match(word, i)
                if m is None or m.group(1) not in values:
                    return None
                parts.append(values[m.group(1)])
                i = m.end()
                continue
            m = _PLAIN_WORD.match(word, i)
            if m is None:
                return None
            parts.append(m.group(0))
            i = m.end()
        if not out and ("=" in word or word in _SHELL_OWN):
            return None  # an assignment, or the shell's own command
        out.append("".join(parts))
    return out or None


def argv_of(handler: Handler, values: dict[str, str]) -> list[str]:
    """The command line: shell form's script never holds a value (``shell_command``); exec form's values
    are whole arguments (no shell reads them)."""
    if handler.args is None:
        return ["/bin/sh", "-c", shell_command(handler.command, values)]
    return [substitute(handler.command, values), *(substitute(a, values) for a in handler.args)]


class _Collector(asyncio.SubprocessProtocol):
    def __init__(self, label: str) -> None:
        self.label = label
        self.stdout = bytearray()
        self.too_large = False
        self.stderr = bytearray()  # the tail
        self._line = bytearray()
        # one future per hook: done when the process has exited (-1) and its stdout and stderr are closed,
        # or at the deadline — one wake-up of the waiting task, not a gather of three futures in a wait_for
        self.waiting_for = {-1, 1, 2}
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()
        self.timed_out = False
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            if len(self.stdout) + len(data) > MAX_STDOUT:
                self.too_large = True
                kill_group(self.transport)
                return
            self.stdout += data
        else:
            self.stderr += data
            if len(self.stderr) > STDERR_TAIL * 2:
                del self.stderr[:-STDERR_TAIL]
            self._line += data
            *lines, rest = self._line.split(b"\n")
            self._line = bytearray(rest[-4096:])
            for line in lines:
                _write_stderr(f"[{self.label}] {line[:16384].decode('utf-8', 'replace').rstrip()}\n")

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.waiting_for.discard(fd)
        if not self.waiting_for and not self.done.done():
            self.done.set_result(None)

    def process_exited(self) -> None:
        self.pipe_connection_lost(-1, None)

    def deadline(self) -> None:
        if not self.done.done():
            self.timed_out = True
            self.done.set_result(None)


def _write_stderr(text: str) -> None:
    """A hook's stderr line to the sidecar's stderr, with its prefix (as an MCP server's)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def kill_group(transport: Any) -> None:
    """SIGKILL the hook's process group (it leads its own session: what it started goes too)."""
    if isinstance(transport, zygote.Transport):  # its pid may still be on its way: killed when it comes
        transport.kill_group()
        return
    pid = transport.get_pid() if transport is not None else None
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stdin_payload(event: str, thread_id: str, cwd: str, fields: dict[str, Any]) -> bytes:
    """The one JSON object a hook reads on stdin: the common fields, then the event's own."""
    body = {"session_id": thread_id, "transcript_path": None, "cwd": cwd, "hook_event_name": event,
            "permission_mode": "default", **fields}
    return json.dumps(body, ensure_ascii=False).encode()


_LAUNCHES: dict[tuple[int, str, str], tuple[Handler, launcher.Launch, str]] = {}


def _launch_of(handler: Handler, thread_id: str, cwd: str) -> tuple[launcher.Launch, str]:
    """How ``handler`` is started for ``thread_id`` in ``cwd``, and its stderr prefix: made once (the
    same every time; never changed once made), kept with the handler itself so its id is not reused."""
    key = (id(handler), thread_id, cwd)
    made = _LAUNCHES.get(key)
    if made is not None and made[0] is handler:
        return made[1], made[2]
    values = variables(handler, cwd)
    launch = launcher.Launch(argv_of(handler, values), launcher.HOOK, owner=thread_id, env_add=values, cwd=cwd,
                             direct=direct_argv(handler.command, values) if handler.args is None else None)
    label = f"{thread_id} hook {handler.source.source} {handler.event}"
    if len(_LAUNCHES) >= 256:
        _LAUNCHES.clear()
    _LAUNCHES[key] = (handler, launch, label)
    return launch, label


async def run_handler(handler: Handler, stdin: bytes | Callable[[], bytes], *, thread_id: str, cwd: str,
                      timeout_s: float) -> Answer:
    """Run ``handler`` once with ``stdin`` (or what a function makes: through the zygote, made once the
    request to start it is on its way); its ``Answer`` by ``timeout_s`` at the latest."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = Answer(handler)
    if handler.source.plugin_data is not None:
        try:
            os.makedirs(handler.source.plugin_data, mode=0o700, exist_ok=True)
        except OSError as exc:
            answer.failure = f"cannot create its data folder {handler.source.plugin_data}: {exc.strerror}"
            return answer
    launch, label = _launch_of(handler, thread_id, cwd)
    through_zygote = zygote.takes(launch)
    try:
        if through_zygote:  # stdin: a pipe the zygote's side fills as the hook starts; the
            # transport comes back as soon as the zygote has the request (its pid is applied when it comes)
            transport, proto = await zygote.spawn(launch, lambda: _Collector(label), stdin=stdin,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                  at_once=True)
        else:
            if callable(stdin):
                stdin = stdin()
            transport, proto = await launcher.spawn(launch, lambda: _Collector(label), stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except (OSError, ValueError) as exc:
        answer.failure = f"it could not be started: {exc}"
        answer.elapsed_s = loop.time() - started
        return answer
    timer = None
    try:
        pipe = None if through_zygote else transport.get_pipe_transport(0)  # the zygote's side wrote it
        if pipe is not None:
            try:
                pipe.write(stdin)
                pipe.write_eof()
            except (OSError, RuntimeError):
                pass  # a hook that does not read its stdin may close it: that is its business
        timer = loop.call_later(max(0.0, timeout_s - (loop.time() - started)), proto.deadline)
        try:
            await proto.done
        except asyncio.CancelledError:  # nobody waits for its answer any more (thread/close, a cancelled call)
            kill_group(transport)
            raise
        if proto.timed_out:
            kill_group(transport)
            answer.failure = f"it did not finish within {timeout_s * 1000:.0f} ms (its process group was killed)"
        elif getattr(transport, "start_error", None) is not None:
            answer.failure = f"it could not be started: {transport.start_error}"
        code = transport.get_returncode()
    finally:
        if timer is not None:
            timer.cancel()
        transport.close()
    answer.elapsed_s = loop.time() - started
    answer.stderr_tail = bytes(proto.stderr[-STDERR_TAIL:]).decode("utf-8", "replace").strip()
    answer.exit_code = code
    if answer.failure is not None:
        return answer
    if proto.too_large:
        answer.failure = f"its stdout is larger than {MAX_STDOUT} bytes"
        return answer
    answer.stdout = bytes(proto.stdout).decode("utf-8", "replace")
    if answer.stdout.startswith("\ufeff"):  # a UTF-8 BOM (Windows editors, PowerShell) is not the answer
        answer.stdout = answer.stdout[1:]
    if code is None or code < 0:
        answer.failure = f"it was killed by signal {-code if code else '?'}"
    elif code == 0:
        read_output(answer)
    elif code not in (0, 2):
        answer.failure = f"it exited with code {code}"
    return answer


def read_output(answer: Answer, what: str = "its stdout") -> Answer:
    """An exit-0 answer's ``stdout`` read as the formats read it (protocol-v3 §5 "Answers"): JSON when it
    starts with ``{`` (read strictly, protocol-v4 §2: never a silent allow), plain text otherwise — the one
    reader of command, http and mcp_tool answers (``what`` names the text in a failure)."""
    if not answer.stdout.lstrip().startswith("{"):
        return answer
    try:
        output = json.loads(answer.stdout)
    except ValueError as exc:
        answer.failure = f"{what} starts with '{{' but is not JSON: {exc}"
        return answer
    if type(output) is not dict:
        answer.failure = f"{what} is JSON but not an object"
        return answer
    undefined = undefined_value(answer.handler.event, output)
    if undefined is None:
        answer.output = output
    else:
        where, value, defined = undefined
        answer.failure = (f"its answer's '{where}' is {json.dumps(value, ensure_ascii=False)[:200]}, "
                          f"not a value the format defines ({', '.join(map(repr, defined))})")
        answer.extra["field"] = where
    return answer
