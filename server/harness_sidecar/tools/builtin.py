"""The builtin tools' declarations: ``load_skill``'s and ``find_skills``' schemas and their whole check of
their arguments (the schema, then what a schema cannot say). Their runners live with the thread's tool
methods (``threads.tools``), which have the thread they act on.
"""

from __future__ import annotations

from typing import Any, Callable

from harness_sidecar.base import inputschema
from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.records import Record
from harness_sidecar.resources.activation import check_skill_name
from harness_sidecar.resources.find_skills import FIND_SKILLS_SCHEMA, check_arguments

LOAD_SKILL_DESCRIPTION = "Activate a skill by name: its instructions and files become part of the context."
LOAD_SKILL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The skill's name, as listed in the catalog."},
                   "path": {"type": "string", "description": "Optional: the SKILL.md path of one same-name "
                                                             "candidate, to load that one (never another)."}},
    "required": ["name"],
    "additionalProperties": False,
}


class BuiltinArguments(Record):
    """A builtin's whole check of its arguments — its inputSchema, then what the schema cannot say (a skill
    name's form, a query's length) — made where every tool's arguments are checked: before any hook sees
    the call (v4 §2). ``first_error`` is a compiled schema's. (Written out, not a dataclass: same repr and
    equality, issue #32.)"""

    __slots__ = ("schema", "check", "field")

    def __init__(self, schema: Any, check: Callable[[dict[str, Any]], Any], field: str) -> None:
        self.schema = schema  # inputschema.CompiledSchema
        self.check = check  # raises DomainError
        self.field = field  # the argument the check is about

    def first_error(self, arguments: Any) -> tuple[str, str] | None:
        error = self.schema.first_error(arguments)
        if error is not None:
            return error
        try:
            self.check(arguments)
        except DomainError as exc:
            return exc.message, f"$.{self.field}"
        return None


LOAD_SKILL_ARGUMENTS = BuiltinArguments(inputschema.compile(LOAD_SKILL_SCHEMA),
                                        lambda arguments: check_skill_name(arguments["name"]), "name")
FIND_SKILLS_ARGUMENTS = BuiltinArguments(inputschema.compile(FIND_SKILLS_SCHEMA), check_arguments, "query")
