"""hello: the smallest tool, with its arguments checked by its schema.

Shows: ``api.register_tool`` with an ``input_schema`` that the sidecar enforces (JSON Schema
2020-12) before any hook or ``execute`` runs: ``{}`` or ``{"name": 42}`` come back as an
``isError`` result with ``details.kind = "invalid_arguments"`` and the JSON path at fault, so
``execute`` can rely on its arguments.
Ported from Pi's ``examples/extensions/hello.ts`` (whose TypeBox schema becomes plain JSON Schema).

Settings: none.
"""


def hello(call_id, arguments):
    name = arguments["name"]  # present and a string: the schema said so
    return {"content": f"Hello, {name}!", "details": {"greeted": name}}


def activate(api):
    api.register_tool(
        name="hello",
        description="A simple greeting tool.",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 1, "description": "Name to greet"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        execute=hello,
    )
