"""todo: a todo list the model keeps with a tool and the user reads with ``/todos``; it survives a
host restart, ``thread/start.resume`` and ``thread/fork``.

Shows: a tool whose ``input_schema`` does the argument checking (the sidecar refuses
``{"action": "add"}`` without ``text`` before ``execute`` runs), a command the user runs
(``commands/run``, or ``/todos`` typed in the chat: ``input/submit``), state kept in ``ctx.state``
(read at every call, so a restarted host, a resumed or a forked thread has the list), ``thread_start``
with its ``reason``, and ``ctx.ui.set_status`` for a status-bar summary.

Ported from Pi's ``examples/extensions/todo.ts`` (MIT, © Mario Zechner,
https://github.com/badlogic/pi-mono). Class: **nearly**. Pi rebuilds its list in ``session_start`` /
``session_fork`` from the last ``todo`` tool result on the session's branch; here the list is the
extension's ``ctx.state`` (``{todos, nextId}``), which the sidecar saves under the thread's
``sessionId``, hands back on ``resume`` and copies on ``fork`` — the same list at the same point, and
the two threads diverge after a fork as Pi's branches do. Module variables would be lost when the
thread's host restarts, so every call reads ``ctx.state``. Each result still carries the whole list
in ``details`` as Pi's does. What differs is only how it is shown: Pi's custom TUI list (``/todos``)
becomes text, and the status item is set again when a resumed or forked thread starts.

Settings: none.
"""

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["list", "add", "toggle", "clear"]},
        "text": {"type": "string", "minLength": 1, "description": "Todo text (for add)"},
        "id": {"type": "integer", "description": "Todo id (for toggle)"},
    },
    "required": ["action"],
    "additionalProperties": False,
    "allOf": [
        {"if": {"properties": {"action": {"const": "add"}}}, "then": {"required": ["text"]}},
        {"if": {"properties": {"action": {"const": "toggle"}}}, "then": {"required": ["id"]}},
    ],
}


def load(ctx):
    """This thread's list: ``{"todos": [{"id", "text", "done"}], "nextId": int}`` (empty when never set)."""
    state = ctx.state.get() or {}
    return {"todos": state.get("todos", []), "nextId": state.get("nextId", 1)}


def listing(todos):
    return "\n".join(f"[{'x' if t['done'] else ' '}] #{t['id']}: {t['text']}" for t in todos)


def show_status(todos, ctx):
    done = sum(t["done"] for t in todos)
    ctx.ui.set_status("todo", f"todos {done}/{len(todos)}" if todos else None)


def result(action, text, state, ctx, error=None):
    ctx.state.set(state)
    show_status(state["todos"], ctx)
    details = {"action": action, "todos": [dict(t) for t in state["todos"]], "nextId": state["nextId"]}
    if error:
        details["error"] = error
    return {"content": text, "details": details, "isError": error is not None}


def todo_tool(call_id, arguments, ctx):
    state = load(ctx)
    todos = state["todos"]
    action = arguments["action"]  # checked against SCHEMA before this runs
    if action == "list":
        return result("list", listing(todos) or "No todos", state, ctx)
    if action == "add":
        item = {"id": state["nextId"], "text": arguments["text"], "done": False}
        state["nextId"] += 1
        todos.append(item)
        return result("add", f"Added todo #{item['id']}: {item['text']}", state, ctx)
    if action == "toggle":
        item = next((t for t in todos if t["id"] == arguments["id"]), None)
        if item is None:
            return result("toggle", f"Todo #{arguments['id']} not found", state, ctx,
                          error=f"#{arguments['id']} not found")
        item["done"] = not item["done"]
        return result("toggle", f"Todo #{item['id']} {'completed' if item['done'] else 'uncompleted'}", state, ctx)
    count = len(todos)
    return result("clear", f"Cleared {count} todos", {"todos": [], "nextId": 1}, ctx)


def todos_command(arguments, ctx):
    every = load(ctx)["todos"]
    show = arguments.get("show", "all")
    todos = [t for t in every if show == "all" or t["done"] == (show == "done")]
    done = sum(t["done"] for t in every)
    if not every:
        text = "No todos yet. Ask the agent to add some!"
    else:
        text = f"{done}/{len(every)} completed\n" + (listing(todos) or f"(none {show})")
    return {"content": text, "details": {"todos": [dict(t) for t in todos]}}


def thread_started(event, ctx):
    """Pi's ``session_start``/``session_fork`` rebuild: the list is already in ``ctx.state``; show it."""
    if event["reason"] != "startup":
        show_status(load(ctx)["todos"], ctx)


def activate(api):
    api.register_tool(
        name="todo",
        description="Manage a todo list. Actions: list, add (text), toggle (id), clear.",
        input_schema=SCHEMA,
        execute=todo_tool,
    )
    api.register_command(
        "todos", "Show the todos of this thread.", todos_command,
        input_schema={"type": "object", "properties": {"show": {"enum": ["all", "open", "done"]}},
                      "additionalProperties": False},
    )
    api.on("thread_start", thread_started)
