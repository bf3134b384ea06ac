"""The host API additions that bring Pi's example extensions closer (docs/pi-examples.md), each through
the real sidecar and host: ``api.events`` (Pi's ``pi.events``), the ``model_select`` loop event,
``ctx.sample`` (``model/sample``), a question's own ``timeout_ms`` and ``ctx.commands.list()``.

Written as an author porting the Pi example named in each test would write them (github:badlogic/pi-mono,
packages/coding-agent/examples/extensions, MIT licence, © Mario Zechner).
"""

from __future__ import annotations

from test_extension_api import start, start_editor, ws  # noqa: F401 - ws is a fixture
from test_loop_events import loop_event


def notes(sidecar, thread):
    return [(n["params"]["extensionId"], n["params"]["message"]) for n in sidecar.notifications
            if n["method"] == "ui/notify" and n["params"]["threadId"] == thread]


def run(sidecar, thread, name, text=""):
    return sidecar.call("commands/run", {"threadId": thread, "name": name, "arguments": {"text": text}},
                        timeout=60)


# -- api.events: after Pi's event-bus.ts ----------------------------------------------------------------

BUS = """
def on_note(data, ctx):
    ctx.ui.notify('Event from %s: %s' % (data['from'], data['message']))
def emit(arguments, ctx):
    heard = api_ref[0].events.emit('my:notification', {'message': arguments['text'].strip() or 'hello',
                                                       'from': '/emit command'}, ctx)
    return 'heard by %d' % heard
def started(event, ctx):
    api_ref[0].events.emit('my:notification', {'message': 'Session started', 'from': 'event-bus-example'}, ctx)
api_ref = []
def activate(api):
    api_ref.append(api)
    api.events.on('my:notification', on_note)
    api.register_command('emit', 'Emit my:notification (usage: /emit message)', emit, raw_arguments=True)
    api.on('session_start', started)
"""

# a second extension of the thread hears the first; a listener that raises does not stop the others
LISTENER = """
def heard(data):
    trace('heard', data)
def broken(data):
    raise RuntimeError('listener bug')
def activate(api):
    api.events.on('my:notification', broken)
    api.events.on('my:notification', heard)
"""

# registered a listener, then failed: it never hears anything
FAILS = """
def activate(api):
    api.events.on('my:notification', lambda data: trace('failed-one-heard', data))
    raise RuntimeError('activate failed')
"""


def test_api_events_reach_every_loaded_extension_of_the_thread_and_speak_through_the_emitters_ctx(spawn, ws):
    ws.extension("bus", BUS)
    ws.extension("listener", LISTENER)
    ws.extension("fails", FAILS)
    sidecar, _ = start_editor(spawn)
    started = start(sidecar, ws, ["bus", "listener", "fails"])
    thread = started["threadId"]
    assert [d["id"] for d in started["diagnostics"] if d["kind"] == "extension_failed"] == ["fails"]
    # session_start emitted: bus's own listener notified through the thread_start handler's ctx
    assert notes(sidecar, thread) == [("bus", "Event from event-bus-example: Session started")]
    # /emit: both listeners of the two loaded extensions heard it (the broken one was called, too)
    assert run(sidecar, thread, "emit", " deploy done ")["content"][0]["text"] == "heard by 3"
    assert notes(sidecar, thread)[-1] == ("bus", "Event from /emit command: deploy done")
    heard = [e[1] for e in ws.events() if e[0] == "heard"]
    assert heard == [{"message": "Session started", "from": "event-bus-example"},
                     {"message": "deploy done", "from": "/emit command"}]
    assert not [e for e in ws.events() if e[0] == "failed-one-heard"]


def test_api_events_on_after_activate_and_a_bad_name_are_refused(spawn, ws):
    ws.extension("late", """
saved = []
def later(arguments, ctx):
    out = []
    for name, fn in (('x', lambda d: None), ('has space', None)):
        try:
            saved[0].events.on(name, fn)
            out.append('registered')
        except Exception as exc:
            out.append(type(exc).__name__)
    try:
        saved[0].events.emit('has space', {})
    except ValueError:
        out.append('emit refused')
    return ','.join(out)
def activate(api):
    saved.append(api)
    try:
        api.events.on('x', 'not callable')
    except TypeError:
        trace('not callable refused')
    async def coro(data):
        pass
    try:
        api.events.on('x', coro)
    except TypeError:
        trace('coroutine refused')
    api.register_command('later', 'Register too late.', later, raw_arguments=True)
""")
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["late"])["threadId"]
    assert [e[0] for e in ws.events()] == ["not callable refused", "coroutine refused"]
    assert run(sidecar, thread, "later")["content"][0]["text"] == "RegistrationClosed,RegistrationClosed,emit refused"


# -- model_select: after Pi's model-status.ts ----------------------------------------------------------

MODEL_STATUS = """
def on_model(event, ctx):
    trace('model', event)
    if event.get('source') != 'restore':
        ctx.ui.notify('Model: ' + event['model'])
    ctx.ui.set_status('model', event['model'].split('/')[-1])
def activate(api):
    api.on('model_select', on_model)
"""


def test_model_select_reaches_handlers_with_the_editors_model(spawn, ws):
    ws.extension("model-status", MODEL_STATUS)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["model-status"])["threadId"]
    answer = loop_event(sidecar, thread, "model_select", {"model": "anthropic/claude-sonnet-4",
                                                          "previousModel": "openai/gpt-5", "source": "set"})
    assert answer == {"blocked": None, "additionalContext": [], "systemMessages": []}
    assert ["model", {"threadId": thread, "event": "model_select", "model": "anthropic/claude-sonnet-4",
                      "previousModel": "openai/gpt-5", "source": "set"}] in ws.events()
    assert notes(sidecar, thread) == [("model-status", "Model: anthropic/claude-sonnet-4")]
    status = [n["params"] for n in sidecar.notifications if n["method"] == "ui/status"]
    assert status[-1]["key"] == "model" and status[-1]["text"] == "claude-sonnet-4"
    loop_event(sidecar, thread, "model_select", {"model": "anthropic/claude-opus-4", "source": "restore"})
    assert len(notes(sidecar, thread)) == 1  # a restored model is not announced, as in Pi
    bad = sidecar.request("loop/event", {"threadId": thread, "event": "model_select", "payload": {}})
    assert bad["error"]["data"]["kind"] == "invalid_params" and "payload.model" in bad["error"]["message"]


# -- ctx.sample: after Pi's summarize.ts and qna.ts ----------------------------------------------------

CONVERSATION = [{"role": "user", "text": "add a login page"},
                {"role": "assistant", "text": "Done. Should it remember the user? Which colour for the button?"}]

SUMMARIZE = """
SYSTEM = 'Summarize the conversation in one paragraph.'
def summarize(arguments, ctx):
    try:
        history = ctx.messages()
        text = '\\n'.join('%s: %s' % (m['role'], m['text']) for m in history)
        summary = ctx.sample('<conversation>\\n' + text + '\\n</conversation>', system_prompt=SYSTEM, max_tokens=200)
    except Exception as exc:
        return {'content': '%s: %s' % (type(exc).__name__, exc), 'isError': True}
    ctx.ui.notify(summary)
    return summary
async def qna(arguments, ctx):
    last = [m for m in await ctx.messages() if m['role'] == 'assistant'][-1]
    questions = await ctx.sample([{'role': 'user', 'text': 'Extract the questions: ' + last['text']}])
    return questions
def activate(api):
    api.register_command('summarize', 'Summarize the conversation.', summarize, raw_arguments=True)
    api.register_command('qna', 'The questions of the last answer.', qna, raw_arguments=True)
"""


def sampling_editor(spawn, sampling=True, refuse=False):
    asked = []

    def on_request(message):
        asked.append(message)
        if message["method"] == "session/messages":
            return {"result": {"messages": CONVERSATION}}
        if message["method"] == "model/sample":
            if refuse:
                return {"error": {"code": -1, "message": "the user said no"}}
            prompt = message["params"]["messages"][-1]["content"]["text"]
            return {"result": {"role": "assistant", "model": "editor-model", "stopReason": "endTurn",
                               "content": {"type": "text", "text": "ANSWER(%d chars)" % len(prompt)}}}
        return None

    sidecar = spawn(on_request=on_request, initialize=False)
    caps = {"ui": UI_CAPS, "conversation": True, **({"sampling": True} if sampling else {})}
    sidecar.call("initialize", {"protocolVersion": "2", "capabilities": caps})
    return sidecar, asked


UI_CAPS = {"confirm": True, "select": True, "input": True, "notify": True, "status": True}


def test_ctx_sample_asks_the_editors_model_for_a_summary(spawn, ws):
    ws.extension("summarize", SUMMARIZE)
    sidecar, asked = sampling_editor(spawn)
    thread = start(sidecar, ws, ["summarize"])["threadId"]
    result = run(sidecar, thread, "summarize")
    conversation = "user: add a login page\nassistant: " + CONVERSATION[1]["text"]
    expected = "ANSWER(%d chars)" % len("<conversation>\n" + conversation + "\n</conversation>")
    assert result["content"][0]["text"] == expected and not result["isError"]
    assert notes(sidecar, thread) == [("summarize", expected)]
    sample = [m["params"] for m in asked if m["method"] == "model/sample"]
    assert sample == [{"threadId": thread, "extensionId": "summarize", "maxTokens": 200,
                       "systemPrompt": "Summarize the conversation in one paragraph.",
                       "messages": [{"role": "user", "content": {"type": "text", "text":
                                                                 "<conversation>\n" + conversation + "\n</conversation>"}}]}]
    # an async handler awaits it; a list of messages goes as given
    text = "Extract the questions: " + CONVERSATION[1]["text"]
    assert run(sidecar, thread, "qna")["content"][0]["text"] == "ANSWER(%d chars)" % len(text)
    assert [m["params"]["maxTokens"] for m in asked if m["method"] == "model/sample"] == [200, 1024]


def test_ctx_sample_without_the_capability_raises_and_asks_nothing_and_a_refusal_raises(spawn, ws):
    ws.extension("summarize", SUMMARIZE)
    sidecar, asked = sampling_editor(spawn, sampling=False)
    thread = start(sidecar, ws, ["summarize"])["threadId"]
    result = run(sidecar, thread, "summarize")
    assert result["isError"] and "SamplingUnavailable" in result["content"][0]["text"]
    assert "capabilities.sampling" in result["content"][0]["text"]
    assert not [m for m in asked if m["method"] == "model/sample"]
    refusing, asked = sampling_editor(spawn, refuse=True)
    thread = start(refusing, ws, ["summarize"])["threadId"]
    result = run(refusing, thread, "summarize")
    assert result["isError"] and "SamplingUnavailable" in result["content"][0]["text"]
    assert len([m for m in asked if m["method"] == "model/sample"]) == 1
    assert run(refusing, thread, "summarize")["isError"]  # still serving


# -- a question's own time: after Pi's timed-confirm.ts ------------------------------------------------

TIMED = """
def timed(arguments, ctx):
    confirmed = ctx.ui.confirm('Timed Confirmation', 'This dialog will auto-cancel', timeout_ms=300)
    return 'confirmed=%s outcome=%s' % (confirmed, ctx.ui.last_outcome)
async def timed_select(arguments, ctx):
    choice = await ctx.ui.select('Pick one', ['a', 'b'], timeout_ms=10_000_000)
    return 'choice=%s outcome=%s' % (choice, ctx.ui.last_outcome)
def bad(arguments, ctx):
    try:
        ctx.ui.input('Name', timeout_ms=0)
    except ValueError as exc:
        return str(exc)
def activate(api):
    api.register_command('timed', 'Confirm that cancels itself.', timed, raw_arguments=True)
    api.register_command('timed-select', 'Select with a long time.', timed_select, raw_arguments=True)
    api.register_command('bad', 'A wrong time.', bad, raw_arguments=True)
"""


def test_a_questions_own_timeout_ends_it_unanswered_and_tells_the_editor(spawn, ws):
    ws.extension("timed", TIMED)
    sidecar, asked = start_editor(spawn, {"ui/select": lambda m: {"result": {"value": "b"}}})
    thread = start(sidecar, ws, ["timed"], limits={"uiTimeoutMs": 30000})["threadId"]
    # the editor never answers the confirm: the sidecar ends it at its own 300 ms, not at uiTimeoutMs
    assert run(sidecar, thread, "timed")["content"][0]["text"] == "confirmed=False outcome=timeout"
    confirm = [m for m in asked if m["method"] == "ui/confirm"]
    assert len(confirm) == 1 and confirm[0]["params"]["timeoutMs"] == 300
    cancelled = [n["params"]["id"] for n in sidecar.notifications if n["method"] == "$/cancelRequest"]
    assert cancelled == [confirm[0]["id"]]
    # a time past uiTimeoutMs is told as uiTimeoutMs; an answer in time is the answer
    assert run(sidecar, thread, "timed-select")["content"][0]["text"] == "choice=b outcome=answered"
    assert [m["params"]["timeoutMs"] for m in asked if m["method"] == "ui/select"] == [30000]
    assert "timeout_ms must be a positive int" in run(sidecar, thread, "bad")["content"][0]["text"]


# -- ctx.commands.list(): after Pi's commands.ts -------------------------------------------------------

COMMANDS = """
import json
LABELS = (('extension', 'Extensions'), ('template', 'Templates'), ('skill', 'Skills'))
def commands(arguments, ctx):
    listed = ctx.commands.list()
    wanted = arguments['text'].strip()
    shown = [c for c in listed if not wanted or c['source'] == wanted]
    if not shown:
        ctx.ui.notify('No %s commands found' % wanted if wanted else 'No commands found')
        return None
    items = []
    for key, label in LABELS:
        of = [c for c in shown if c['source'] == key]
        if of:
            items.append('--- %s ---' % label)
            items.extend('/%s - %s' % (c['name'], c['description']) for c in of)
    selected = ctx.ui.select('Available Commands', items)
    if selected and not selected.startswith('---'):
        name = selected.split(' - ')[0][1:]
        command = next(c for c in listed if c['name'] == name)
        if command.get('path') and ctx.ui.confirm(name, 'View source path?\\n' + command['path']):
            ctx.ui.notify(command['path'])
    return json.dumps(items)
def activate(api):
    api.register_command('commands', 'List available slash commands', commands, raw_arguments=True)
"""


def test_ctx_commands_lists_the_threads_commands_templates_and_skills(spawn, ws):
    import json

    ws.extension("commands", COMMANDS)
    picks = iter(["/review - Review a file.", "--- Extensions ---"])
    sidecar, asked = start_editor(spawn, {"ui/select": lambda m: {"result": {"value": next(picks)}},
                                          "ui/confirm": lambda m: {"result": {"confirmed": True}}})
    thread = start(sidecar, ws, ["commands"])["threadId"]
    items = json.loads(run(sidecar, thread, "commands")["content"][0]["text"])
    assert items == ["--- Extensions ---", "/commands - List available slash commands",
                     "--- Templates ---", "/review - Review a file.",
                     "--- Skills ---", "/review - Use when reviewing."]
    # the template chosen: Pi's example shows its path after asking
    path = str(ws.root / "templates" / "review.md")
    assert [m["params"]["message"] for m in asked if m["method"] == "ui/confirm"] == ["View source path?\n" + path]
    assert notes(sidecar, thread) == [("commands", path)]
    assert json.loads(run(sidecar, thread, "commands", "skill")["content"][0]["text"]) == [
        "--- Skills ---", "/review - Use when reviewing."]
    assert run(sidecar, thread, "commands", "nothing")["content"] == []
    assert notes(sidecar, thread)[-1] == ("commands", "No nothing commands found")


# -- entryId on turn_start and session_before_fork: after Pi's git-checkpoint.ts ------------------------

CHECKPOINT = """
import subprocess
checkpoints = {}
def git(ctx, *args):
    return subprocess.run(['git', *args], cwd=ctx.cwd, capture_output=True, text=True, check=True).stdout.strip()
def turn_start(event, ctx):
    ref = git(ctx, 'stash', 'create')
    if ref and event.get('entryId'):
        checkpoints[event['entryId']] = ref
def before_fork(event, ctx):
    ref = checkpoints.get(event.get('entryId'))
    if not ref:
        return None
    choice = ctx.ui.select('Restore code state?', ['Yes, restore code to that point', 'No, keep current code'])
    if choice and choice.startswith('Yes'):
        git(ctx, 'checkout', '--', '.')
        git(ctx, 'stash', 'apply', ref)
        ctx.ui.notify('Code restored to checkpoint')
def activate(api):
    api.on('turn_start', turn_start, timeout_ms=20000)
    api.on('session_before_fork', before_fork, timeout_ms=20000)
"""


def test_a_fork_from_an_earlier_entry_restores_the_code_of_that_turn(spawn, ws, tmp_path):
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "start")
    (repo / "app.py").write_text("v0\n")
    git("add", "app.py")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "app")
    ws.extension("git-checkpoint", CHECKPOINT)
    sidecar, asked = start_editor(spawn, {"ui/select": lambda m: {"result": {"value": m["params"]["options"][0]["value"]}}})
    thread = start(sidecar, ws, ["git-checkpoint"], cwd=str(repo))["threadId"]
    (repo / "app.py").write_text("v1 (after the first turn)\n")
    loop_event(sidecar, thread, "turn_start", {"prompt": "go on", "entryId": "m2"})
    (repo / "app.py").write_text("v2 (after the second turn)\n")
    loop_event(sidecar, thread, "turn_start", {"prompt": "more", "entryId": "m4"})
    (repo / "app.py").write_text("v3 (now)\n")
    # forking from m2: the code as it was when the turn after m2 started
    assert loop_event(sidecar, thread, "session_before_fork", {"entryId": "m2"})["blocked"] is None
    assert (repo / "app.py").read_text() == "v1 (after the first turn)\n"
    assert notes(sidecar, thread) == [("git-checkpoint", "Code restored to checkpoint")]
    # an entry without a checkpoint asks nothing
    loop_event(sidecar, thread, "session_before_fork", {"entryId": "m9"})
    loop_event(sidecar, thread, "session_before_fork")
    assert len([m for m in asked if m["method"] == "ui/select"]) == 1


# -- compact_before's own summary: after Pi's custom-compaction.ts -------------------------------------

COMPACTION = """
PROMPT = 'You are a conversation summarizer. Create a comprehensive summary of this conversation.'
def before_compact(event, ctx):
    ctx.ui.notify('Custom compaction extension triggered')
    history = ctx.messages()
    text = '\\n'.join('%s: %s' % (m['role'], m['text']) for m in history)
    try:
        summary = ctx.sample(PROMPT + '\\n<conversation>\\n' + text + '\\n</conversation>', max_tokens=8192)
    except Exception as exc:
        ctx.ui.notify('Compaction failed: %s' % exc, 'error')
        return None  # the editor's own compaction
    if not summary.strip():
        return None
    return {'compaction': {'summary': summary}}
def activate(api):
    api.on('session_before_compact', before_compact, timeout_ms=20000)
"""


def test_compact_before_can_give_the_editor_a_summary_made_by_its_model(spawn, ws):
    ws.extension("custom-compaction", COMPACTION)
    ws.extension("other", "def activate(api):\n"
                          "    api.on('compact_before', lambda e: {'compaction': {'summary': 'second'}})\n")
    sidecar, asked = sampling_editor(spawn)
    thread = start(sidecar, ws, ["custom-compaction", "other"])["threadId"]
    answer = loop_event(sidecar, thread, "compact_before", {"trigger": "auto"})
    text = "user: add a login page\nassistant: " + CONVERSATION[1]["text"]
    prompt = ("You are a conversation summarizer. Create a comprehensive summary of this conversation.\n"
              "<conversation>\n" + text + "\n</conversation>")
    assert answer["compaction"] == {"summary": "ANSWER(%d chars)" % len(prompt), "by": "extension:custom-compaction"}
    assert answer["blocked"] is None
    assert [m["params"]["maxTokens"] for m in asked if m["method"] == "model/sample"] == [8192]
    # without the editor's model: the editor's own compaction (no compaction), the user told
    plain, _ = sampling_editor(spawn, refuse=True)
    ws.extension("other", "def activate(api):\n    pass\n")
    thread = start(plain, ws, ["custom-compaction", "other"])["threadId"]
    answer = loop_event(plain, thread, "compact_before", {"trigger": "manual"})
    assert "compaction" not in answer and notes(plain, thread)[-1][1].startswith("Compaction failed:")
    # a wrong form is a fault (a diagnostic), never a summary
    ws.extension("other", "def activate(api):\n    api.on('compact_before', lambda e: {'compaction': 'text'})\n")
    thread = start(plain, ws, ["other"])["threadId"]
    assert "compaction" not in loop_event(plain, thread, "compact_before", {"trigger": "manual"})


# -- drafts and compaction asked of the editor: after Pi's qna.ts, handoff.ts and trigger-compact.ts --------

DRAFTS = """
async def qna(arguments, ctx):
    last = [m for m in await ctx.messages() if m['role'] == 'assistant']
    if not last:
        ctx.ui.notify('No assistant messages found', 'error')
        return None
    questions = await ctx.sample('Extract the questions, one per line, each followed by A: ' + last[-1]['text'])
    return 'drafted' if await ctx.ui.set_editor_text(questions) else 'not drafted'
def handoff(arguments, ctx):
    goal = arguments['text'].strip()
    if not goal:
        ctx.ui.notify('Usage: /handoff <goal for new thread>', 'error')
        return None
    history = '\\n'.join('%s: %s' % (m['role'], m['text']) for m in ctx.messages())
    prompt = ctx.sample('Write a prompt for a new thread with this goal: %s\\n<conversation>\\n%s\\n</conversation>'
                        % (goal, history), max_tokens=2000)
    return 'handed off' if ctx.ui.set_editor_text(prompt, new_thread=True) else 'not handed off'
THRESHOLD = 100_000
def turn_end(event, ctx):
    if event.get('contextTokens', 0) > THRESHOLD:
        ctx.ui.notify('Compaction started')
        ctx.ui.compact()
def trigger(arguments, ctx):
    return 'asked' if ctx.ui.compact(arguments['text'].strip() or None) else 'not asked'
def activate(api):
    api.register_command('qna', 'Questions of the last answer, as a draft.', qna, raw_arguments=True)
    api.register_command('handoff', 'A new thread with a focused prompt.', handoff, raw_arguments=True)
    api.register_command('trigger-compact', 'Compact now.', trigger, raw_arguments=True)
    api.on('turn_end', turn_end)
"""


def drafts_editor(spawn, declared=True):
    """An editor with its model and conversation, taking chat/draft and chat/compact when ``declared``."""
    def on_request(message):
        if message["method"] == "session/messages":
            return {"result": {"messages": CONVERSATION}}
        if message["method"] == "model/sample":
            return {"result": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "DRAFT"}}}
        return None

    sidecar = spawn(on_request=on_request, initialize=False)
    ui = {**UI_CAPS, "draft": True, "compact": True} if declared else UI_CAPS
    sidecar.call("initialize", {"protocolVersion": "2", "capabilities": {"ui": ui, "conversation": True,
                                                                         "sampling": True}})
    return sidecar


def sent(sidecar, method):
    return [n["params"] for n in sidecar.notifications if n["method"] == method]


def test_drafts_and_compaction_go_to_an_editor_that_takes_them(spawn, ws):
    ws.extension("drafts", DRAFTS)
    sidecar = drafts_editor(spawn)
    thread = start(sidecar, ws, ["drafts"])["threadId"]
    assert run(sidecar, thread, "qna")["content"][0]["text"] == "drafted"
    assert run(sidecar, thread, "handoff", "now the teams page")["content"][0]["text"] == "handed off"
    assert sent(sidecar, "chat/draft") == [
        {"threadId": thread, "extensionId": "drafts", "text": "DRAFT", "newThread": False},
        {"threadId": thread, "extensionId": "drafts", "text": "DRAFT", "newThread": True}]
    # trigger-compact: the editor reports the context's size at turn_end; over the threshold, compact
    loop_event(sidecar, thread, "turn_end", {"lastAssistantMessage": "ok", "contextTokens": 5_000})
    assert sent(sidecar, "chat/compact") == []
    loop_event(sidecar, thread, "turn_end", {"lastAssistantMessage": "ok", "contextTokens": 150_000})
    assert sent(sidecar, "chat/compact") == [{"threadId": thread, "extensionId": "drafts"}]
    assert run(sidecar, thread, "trigger-compact", "keep the API decisions")["content"][0]["text"] == "asked"
    assert sent(sidecar, "chat/compact")[-1] == {"threadId": thread, "extensionId": "drafts",
                                                 "instructions": "keep the API decisions"}
    bad = sidecar.request("loop/event", {"threadId": thread, "event": "turn_end", "payload": {"contextTokens": "9"}})
    assert bad["error"]["data"]["kind"] == "invalid_params" and "payload.contextTokens" in bad["error"]["message"]


def test_without_the_capabilities_nothing_is_drafted_or_compacted(spawn, ws):
    ws.extension("drafts", DRAFTS)
    sidecar = drafts_editor(spawn, declared=False)
    thread = start(sidecar, ws, ["drafts"])["threadId"]
    assert run(sidecar, thread, "qna")["content"][0]["text"] == "not drafted"
    assert run(sidecar, thread, "handoff", "go")["content"][0]["text"] == "not handed off"
    assert run(sidecar, thread, "trigger-compact")["content"][0]["text"] == "not asked"
    assert sent(sidecar, "chat/draft") == [] and sent(sidecar, "chat/compact") == []


# -- a form of several questions: after Pi's questionnaire.ts ------------------------------------------

QUESTIONNAIRE = """
import json
def field_of(q):
    return {'type': 'string', 'title': q.get('label') or q['id'], 'description': q['prompt'],
            'oneOf': [{'const': o['value'], 'title': o['label']} for o in q['options']]}
def questionnaire(call_id, arguments, ctx):
    questions = arguments['questions']
    properties, required = {}, []
    for q in questions:
        properties[q['id']] = field_of(q)
        if q.get('allowOther', True):
            properties[q['id'] + '_other'] = {'type': 'string', 'title': 'Type something', 'description': q['prompt']}
        else:
            required.append(q['id'])
    answers = ctx.ui.elicit('Please answer', {'type': 'object', 'properties': properties, 'required': required})
    if answers is None:
        return {'content': 'User cancelled the questionnaire (%s)' % ctx.ui.last_outcome,
                'details': {'questions': questions, 'answers': [], 'cancelled': True}}
    out = []
    for q in questions:
        other = answers.get(q['id'] + '_other')
        value = other or answers.get(q['id'])
        label = other or next((o['label'] for o in q['options'] if o['value'] == value), value)
        out.append({'id': q['id'], 'value': value, 'label': label, 'wasCustom': bool(other)})
    text = '\\n'.join('%s: user %s %s' % (a['id'], 'wrote' if a['wasCustom'] else 'selected', a['label']) for a in out)
    return {'content': text, 'details': {'questions': questions, 'answers': out, 'cancelled': False}}
SCHEMA = {'type': 'object', 'required': ['questions'], 'properties': {'questions': {'type': 'array', 'items': {
    'type': 'object', 'required': ['id', 'prompt', 'options'], 'properties': {
        'id': {'type': 'string'}, 'label': {'type': 'string'}, 'prompt': {'type': 'string'},
        'allowOther': {'type': 'boolean'}, 'options': {'type': 'array', 'items': {
            'type': 'object', 'required': ['value', 'label'],
            'properties': {'value': {'type': 'string'}, 'label': {'type': 'string'}}}}}}}}}
def activate(api):
    api.register_tool('questionnaire', 'Ask the user one or more questions.', SCHEMA, questionnaire)
"""

QUESTIONS = {"questions": [
    {"id": "scope", "label": "Scope", "prompt": "What should change?",
     "options": [{"value": "ui", "label": "The UI"}, {"value": "api", "label": "The API"}]},
    {"id": "priority", "prompt": "How urgent?", "allowOther": False,
     "options": [{"value": "high", "label": "High"}, {"value": "low", "label": "Low"}]}]}


def test_ctx_ui_elicit_asks_every_question_in_one_form(spawn, ws):
    from test_extension_api import call

    ws.extension("questionnaire", QUESTIONNAIRE)
    answers = iter([{"action": "accept", "content": {"scope_other": "the docs", "priority": "high"}},
                    {"action": "decline"}, {"action": "accept", "content": {"nope": 1}}])
    caps = {**UI_CAPS, "elicit": True}
    sidecar, asked = start_editor(spawn, {"ui/elicit": lambda m: {"result": next(answers)}}, capabilities=caps)
    thread = start(sidecar, ws, ["questionnaire"])["threadId"]
    result = call(sidecar, thread, "questionnaire", QUESTIONS)
    assert result["content"][0]["text"] == "scope: user wrote the docs\npriority: user selected High"
    assert result["details"]["answers"][1] == {"id": "priority", "value": "high", "label": "High", "wasCustom": False}
    form = [m["params"] for m in asked if m["method"] == "ui/elicit"][0]
    assert form["threadId"] == thread and form["extensionId"] == "questionnaire" and "server" not in form
    assert list(form["requestedSchema"]["properties"]) == ["scope", "scope_other", "priority"]
    assert form["requestedSchema"]["required"] == ["priority"]
    declined = call(sidecar, thread, "questionnaire", QUESTIONS, call_id="c2")
    assert declined["content"][0]["text"] == "User cancelled the questionnaire (declined)"
    # an answer naming a field the form does not have is no answer (fail-closed)
    wrong = call(sidecar, thread, "questionnaire", QUESTIONS, call_id="c3")
    assert wrong["content"][0]["text"] == "User cancelled the questionnaire (unavailable)"
    # without capabilities.ui.elicit nothing is asked
    plain, asked_plain = start_editor(spawn)
    thread = start(plain, ws, ["questionnaire"])["threadId"]
    assert call(plain, thread, "questionnaire", QUESTIONS)["details"]["cancelled"] is True
    assert not [m for m in asked_plain if m["method"] == "ui/elicit"]


# -- the system prompt a turn sends: after Pi's system-prompt-header.ts --------------------------------

HEADER = """
def on_start(event, ctx):
    prompt = event.get('systemPrompt')
    ctx.ui.set_status('system-prompt', None if prompt is None else 'System: %d chars' % len(prompt))
def on_close(event, ctx):
    ctx.ui.set_status('system-prompt', None)
def activate(api):
    api.on('agent_start', on_start)
    api.on('session_shutdown', on_close)
"""


def test_turn_start_carries_the_system_prompt_the_editor_sends(spawn, ws):
    ws.extension("system-prompt-header", HEADER)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["system-prompt-header"])["threadId"]
    built = sidecar.call("context/build", {"threadId": thread})["systemPrompt"]
    prompt = "You are a coding agent.\n\n" + built
    loop_event(sidecar, thread, "turn_start", {"prompt": "hi", "systemPrompt": prompt})
    loop_event(sidecar, thread, "turn_start", {"prompt": "again"})
    sidecar.call("thread/close", {"threadId": thread})
    status = [n["params"]["text"] for n in sidecar.notifications if n["method"] == "ui/status"]
    assert status == ["System: %d chars" % len(prompt), None, None]


# -- asking the editor for a model: after Pi's preset.ts -------------------------------------------------

PRESET = """
PRESETS = {'plan': {'provider': 'openai', 'model': 'gpt-5', 'thinkingLevel': 'high'},
           'quick': {'thinkingLevel': 'off'}}
def preset(arguments, ctx):
    name = arguments['text'].strip()
    if name == 'bad':
        try:
            ctx.ui.set_model()
        except ValueError as exc:
            return str(exc)
    p = PRESETS[name]
    model = '%s/%s' % (p['provider'], p['model']) if 'model' in p else None
    if not ctx.ui.set_model(model, thinking_level=p.get('thinkingLevel')):
        ctx.ui.notify('The editor cannot switch the model', 'warning')
        return 'not switched'
    ctx.ui.set_status('preset', 'preset:' + name)
    return 'asked'
def activate(api):
    api.register_command('preset', 'Apply a preset.', preset, raw_arguments=True)
"""


def test_ctx_ui_set_model_asks_an_editor_that_takes_it(spawn, ws):
    ws.extension("preset", PRESET)
    sidecar, _ = start_editor(spawn, capabilities={**UI_CAPS, "model": True})
    thread = start(sidecar, ws, ["preset"])["threadId"]
    assert run(sidecar, thread, "preset", "plan")["content"][0]["text"] == "asked"
    assert run(sidecar, thread, "preset", "quick")["content"][0]["text"] == "asked"
    assert sent(sidecar, "chat/model") == [
        {"threadId": thread, "extensionId": "preset", "model": "openai/gpt-5", "thinkingLevel": "high"},
        {"threadId": thread, "extensionId": "preset", "thinkingLevel": "off"}]
    assert run(sidecar, thread, "preset", "bad")["content"][0]["text"] == "set_model needs a model or a thinking_level"
    plain, _ = start_editor(spawn)
    thread = start(plain, ws, ["preset"])["threadId"]
    assert run(plain, thread, "preset", "plan")["content"][0]["text"] == "not switched"
    assert sent(plain, "chat/model") == []


# -- a tool's progress: after Pi's subagent (onUpdate while the subagents run) ------------------------------

SUBAGENT = """
import subprocess, sys
def subagent(call_id, arguments, ctx):
    outputs = []
    for i, task in enumerate(arguments['tasks']):
        ctx.ui.progress('running %d/%d: %s' % (i + 1, len(arguments['tasks']), task))
        done = subprocess.run([sys.executable, '-c', 'import sys; print(sys.argv[1].upper())', task],
                              capture_output=True, text=True, check=True)
        outputs.append(done.stdout.strip())
    return '\\n'.join(outputs)
def hook(event, ctx):
    trace('hook progress', ctx.ui.progress('from a hook'))
def command(arguments, ctx):
    return 'sent' if ctx.ui.progress('from a command') else 'not sent'
def activate(api):
    api.register_tool('subagent', 'Delegate tasks.', {'type': 'object', 'properties': {
        'tasks': {'type': 'array', 'items': {'type': 'string'}}}, 'required': ['tasks']}, subagent)
    api.on('tool_call', hook)
    api.register_command('progress', 'Progress from a command.', command, raw_arguments=True)
"""


def test_a_tools_progress_reaches_the_editor_labelled_with_its_call(spawn, ws):
    from test_extension_api import call

    ws.extension("subagent", SUBAGENT)
    sidecar, _ = start_editor(spawn, capabilities={**UI_CAPS, "progress": True})
    thread = start(sidecar, ws, ["subagent"])["threadId"]
    result = call(sidecar, thread, "subagent", {"tasks": ["scout", "plan"]}, call_id="call-7")
    assert result["content"][0]["text"] == "SCOUT\nPLAN"
    assert sent(sidecar, "tools/progress") == [
        {"threadId": thread, "extensionId": "subagent", "callId": "call-7", "text": "running 1/2: scout"},
        {"threadId": thread, "extensionId": "subagent", "callId": "call-7", "text": "running 2/2: plan"}]
    assert ["hook progress", False] in ws.events()  # a hook is not the tool: nothing sent
    assert run(sidecar, thread, "progress")["content"][0]["text"] == "not sent"
    plain, _ = start_editor(spawn)
    thread = start(plain, ws, ["subagent"])["threadId"]
    assert call(plain, thread, "subagent", {"tasks": ["x"]})["content"][0]["text"] == "X"
    assert sent(plain, "tools/progress") == []


# -- the user's own shell commands: after Pi's ssh.ts (user_bash) ------------------------------------------

SSH = """
import subprocess
def user_bash(event, ctx):
    remote = ctx.settings.get('remoteCwd')
    if not remote:
        return None  # no remote: the editor runs it as usual
    # stands for `ssh host 'cd <remoteCwd> && <command>'`: the command runs there, not in ctx.cwd
    done = subprocess.run(['sh', '-c', event['command']], cwd=remote, capture_output=True, text=True)
    return {'result': {'output': done.stdout + done.stderr, 'exitCode': done.returncode}}
def activate(api):
    api.on('user_bash', user_bash)
"""


def test_user_bash_can_be_run_by_an_extension_in_the_editors_place(spawn, ws, tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "on-the-remote.txt").write_text("x")
    ws.extension("ssh", SSH)
    sidecar, _ = start_editor(spawn)
    thread = start(sidecar, ws, ["ssh"], cwd=str(tmp_path), extensionSettings={"ssh": {"remoteCwd": str(remote)}})[
        "threadId"]
    answer = loop_event(sidecar, thread, "user_bash", {"command": "ls; exit 3", "cwd": str(tmp_path)})
    assert answer["userBash"] == {"output": "on-the-remote.txt\n", "exitCode": 3, "by": "extension:ssh"}
    # without the setting the handler passes: the editor runs the command itself
    local = start(sidecar, ws, ["ssh"])["threadId"]
    assert "userBash" not in loop_event(sidecar, local, "user_bash", {"command": "ls"})
    # a wrong answer is a fault, never a result
    ws.extension("ssh", "def activate(api):\n    api.on('user_bash', lambda e: {'result': {'output': 1}})\n")
    wrong = start(sidecar, ws, ["ssh"])["threadId"]
    assert "userBash" not in loop_event(sidecar, wrong, "user_bash", {"command": "ls"})
    bad = sidecar.request("loop/event", {"threadId": wrong, "event": "user_bash", "payload": {}})
    assert bad["error"]["data"]["kind"] == "invalid_params" and "payload.command" in bad["error"]["message"]
