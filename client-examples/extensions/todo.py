"""todo: a todo list the model keeps with a tool and the user reads with ``/todos``.

Shows: a tool whose ``input_schema`` does the argument checking (the sidecar refuses
``{"action": "add"}`` without ``text`` before ``execute`` runs), a command the user runs
(``commands/run``, or ``/todos`` typed in the chat: ``input/submit``), state kept per thread, and
``ctx.ui.set_status`` for a status-bar summary.
Ported from Pi's ``examples/extensions/todo.ts``. Pi rebuilds its list from the session's tool
results; here each thread has its own extension host, so module state *is* the thread's state —
it starts empty in a new thread, and again if the thread's host is restarted (the editor is told:
``thread/diagnostic`` kind ``host_restarted``). Each result still carries the whole list in
``details`` as Pi's does, so an editor can show or keep it. Pi's custom TUI list becomes text.

Settings: none.
"""

TODOS = []  # [{"id": int, "text": str, "done": bool}], this thread's
NEXT_ID = [1]

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


def listing(todos):
    return "\n".join(f"[{'x' if t['done'] else ' '}] #{t['id']}: {t['text']}" for t in todos)


def result(action, text, ctx, error=None):
    done = sum(t["done"] for t in TODOS)
    ctx.ui.set_status("todo", f"todos {done}/{len(TODOS)}" if TODOS else None)
    details = {"action": action, "todos": [dict(t) for t in TODOS], "nextId": NEXT_ID[0]}
    if error:
        details["error"] = error
    return {"content": text, "details": details, "isError": error is not None}


def todo_tool(call_id, arguments, ctx):
    action = arguments["action"]  # checked against SCHEMA before this runs
    if action == "list":
        return result("list", listing(TODOS) or "No todos", ctx)
    if action == "add":
        item = {"id": NEXT_ID[0], "text": arguments["text"], "done": False}
        NEXT_ID[0] += 1
        TODOS.append(item)
        return result("add", f"Added todo #{item['id']}: {item['text']}", ctx)
    if action == "toggle":
        item = next((t for t in TODOS if t["id"] == arguments["id"]), None)
        if item is None:
            return result("toggle", f"Todo #{arguments['id']} not found", ctx, error=f"#{arguments['id']} not found")
        item["done"] = not item["done"]
        return result("toggle", f"Todo #{item['id']} {'completed' if item['done'] else 'uncompleted'}", ctx)
    count = len(TODOS)
    TODOS.clear()
    NEXT_ID[0] = 1
    return result("clear", f"Cleared {count} todos", ctx)


def todos_command(arguments):
    show = arguments.get("show", "all")
    todos = [t for t in TODOS if show == "all" or t["done"] == (show == "done")]
    done = sum(t["done"] for t in TODOS)
    if not TODOS:
        text = "No todos yet. Ask the agent to add some!"
    else:
        text = f"{done}/{len(TODOS)} completed\n" + (listing(todos) or f"(none {show})")
    return {"content": text, "details": {"todos": [dict(t) for t in todos]}}


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
