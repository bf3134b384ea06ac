"""JSON Schema (draft 2020-12) for tool and command arguments: compile once, check every call.

``compile(schema)`` checks a schema once, at registration, and raises ``InvalidSchema``
when it is not valid JSON Schema; ``CompiledSchema.first_error(instance)`` answers
``None`` for valid arguments, else ``(message, json_path)`` with the path of the
offending value (``$``, ``$.name``, ``$.items[2]``, ``$['a key']``).

The validator is jsonschema-rs (Rust; 0.2–0.7 µs per call on typical schemas, ~15 ms
to import, offline: a ``$ref`` never fetches anything). It is imported only when needed:
most tools have *simple* schemas — ``{}``, ``{"type": "object", "properties": {}}``, or
a flat object whose properties each only name their ``type`` — and for those the answer
"valid" is decided here, exactly as JSON Schema defines it (``integer`` accepts ``1.0``,
``true`` is not a number, ``additionalProperties: false`` refuses unlisted keys). Only an
*invalid* instance of a simple schema loads the library, to describe the failure in the
library's own words, so both paths always give the same answer (tests/test_inputschema.py
checks this on many cases). This module imports nothing of the package: the extension
host can import it cheaply.

Instances are JSON data as ``json.loads`` makes them; anything else (a tuple, a set, a
non-string key) is the caller's to refuse first — the library reports it as an error.
A schema's ``$schema`` may name draft 6, 7 or 2019-09 (MCP servers often send draft 7);
it is then honoured. Without it, 2020-12 applies.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CompiledSchema", "InvalidSchema", "compile", "json_path"]

# $schema values under which the simple keywords below mean exactly what they mean in 2020-12
# (draft 4 is left to the library: an empty "required" is invalid there).
_SAME_CORE = frozenset({
    "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
    "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2019-09/schema#",
    "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-06/schema", "http://json-schema.org/draft-06/schema#",
})
_ANNOTATIONS = ("title", "description", "$comment")
_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InvalidSchema(ValueError):
    """The schema is not valid JSON Schema; ``message`` says why and where."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def json_path(parts: Any) -> str:
    """``["items", 2, "a b"]`` → ``$.items[2]['a b']``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            out.append("." + part)
        else:
            out.append("['" + part.replace("\\", "\\\\").replace("'", "\\'") + "']")
    return "".join(out)


def _pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


_PY_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
             "array": (list,), "null": (type(None),)}


def _accepted(names: tuple[str, ...]) -> tuple[frozenset[type], bool]:
    """The exact Python types JSON data of these type names has, and whether an integral float counts.

    JSON Schema's ``integer`` includes ``1.0``; booleans are not numbers (``bool`` is its own type).
    """
    types = frozenset(t for name in names for t in _PY_TYPES[name])
    return types, "integer" in names and float not in types


def _type_names(value: Any) -> tuple[str, ...] | None:
    """The type names of a ``type`` keyword if it is a valid one, else ``None``."""
    if isinstance(value, str):
        return (value,) if value in _TYPES else None
    if isinstance(value, list) and value and all(isinstance(t, str) and t in _TYPES for t in value) \
            and len(set(value)) == len(value):
        return tuple(value)
    return None


def _annotations_only(schema: dict, allowed: frozenset[str]) -> bool:
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            if not isinstance(value, str):
                return False
        elif key not in allowed:
            return False
    return True


_TOP = frozenset({"$schema", "type", "properties", "required", "additionalProperties"})
_PROPERTY = frozenset({"type"})


class _Simple:
    """A schema simple enough to decide validity without the library (see the module doc)."""

    __slots__ = ("object_only", "properties", "required", "closed")

    def __init__(self, object_only: bool, properties: dict[str, tuple[str, ...] | None], required: tuple[str, ...],
                 closed: bool) -> None:
        self.object_only = object_only    # "type": "object"
        # name -> (exact Python types allowed, integral floats allowed) or None (anything)
        self.properties = {name: None if names is None else _accepted(names) for name, names in properties.items()}
        self.required = required
        self.closed = closed              # "additionalProperties": false

    @classmethod
    def recognise(cls, schema: Any) -> "_Simple | None":
        if schema is True:
            return cls(False, {}, (), False)
        if type(schema) is not dict or not _annotations_only(schema, _TOP):
            return None
        if "$schema" in schema and (type(schema["$schema"]) is not str or schema["$schema"] not in _SAME_CORE):
            return None
        object_only = False
        if "type" in schema:
            if schema["type"] != "object":
                return None
            object_only = True
        raw = schema.get("properties", {})
        if type(raw) is not dict:
            return None
        properties: dict[str, tuple[str, ...] | None] = {}
        for name, sub in raw.items():
            if sub is True or sub == {}:
                properties[name] = None
                continue
            if type(sub) is not dict or not _annotations_only(sub, _PROPERTY) or "type" not in sub:
                return None
            names = _type_names(sub["type"])
            if names is None:
                return None
            properties[name] = names
        required = schema.get("required", [])
        if type(required) is not list or not all(type(r) is str for r in required) or len(set(required)) != len(required):
            return None
        closed = schema.get("additionalProperties", True)
        if closed is True or closed == {}:
            closed = False
        elif closed is False:
            if "properties" not in schema:
                return None  # the library words this case differently; leave it to the library
            closed = True
        else:
            return None
        return cls(object_only, properties, tuple(required), closed)

    def accepts(self, instance: Any) -> bool:
        if type(instance) is not dict:
            return not self.object_only
        for name in self.required:
            if name not in instance:
                return False
        properties = self.properties
        for name, value in instance.items():
            if name in properties:
                allowed = properties[name]
                if allowed is not None:
                    cls = type(value)
                    if cls not in allowed[0] and not (allowed[1] and cls is float and value.is_integer()):
                        return False
            elif self.closed:
                return False
        return True


_lib: Any = None  # jsonschema_rs once something needed it


def _library() -> Any:
    global _lib
    if _lib is None:
        import jsonschema_rs

        _lib = jsonschema_rs
    return _lib


def _build(schema: Any) -> Any:
    """The library's validator, or ``InvalidSchema``."""
    lib = _library()
    try:
        return lib.validator_for(schema, offline=True)
    except lib.ValidationError as exc:
        where = _pointer(exc.instance_path)
        raise InvalidSchema(exc.message + (f" (at {where})" if where else "")) from None
    except lib.ReferencingError as exc:
        raise InvalidSchema(str(exc).split("\n", 1)[0]) from None
    except (ValueError, TypeError) as exc:  # e.g. a schema too deep or not JSON data
        raise InvalidSchema(f"the schema cannot be compiled: {exc}") from None


class CompiledSchema:
    """A checked schema. ``first_error`` is safe to call from any thread."""

    __slots__ = ("schema", "simple", "_validator")

    def __init__(self, schema: Any, simple: _Simple | None, validator: Any) -> None:
        self.schema = schema
        self.simple = simple
        self._validator = validator

    def _library_validator(self) -> Any:
        if self._validator is None:
            self._validator = _build(self.schema)
        return self._validator

    def first_error(self, instance: Any) -> tuple[str, str] | None:
        """``None`` when ``instance`` is valid, else ``(message, json_path)`` of the first error found."""
        validator = self._validator
        if validator is None:
            # Until something in this process needed the library, a simple schema is decided here;
            # once it is loaded it is also the faster path, so every schema uses it.
            if _lib is None and self.simple is not None and self.simple.accepts(instance):
                return None
            validator = self._library_validator()
        try:
            if validator.is_valid(instance):
                return None
            error = next(validator.iter_errors(instance))
        except StopIteration:  # pragma: no cover - is_valid and iter_errors disagree
            return None
        except (ValueError, TypeError, OverflowError) as exc:
            return f"the value cannot be checked: {exc}", "$"
        return error.message, json_path(error.instance_path)

    def is_valid(self, instance: Any) -> bool:
        return self.first_error(instance) is None


def compile(schema: Any) -> CompiledSchema:  # noqa: A001 - the natural name; shadows a builtin only here
    """Check ``schema`` once; raise ``InvalidSchema`` when it is not valid JSON Schema."""
    simple = _Simple.recognise(schema)
    if simple is not None:
        return CompiledSchema(schema, simple, None)
    if not isinstance(schema, (dict, bool)):
        raise InvalidSchema(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    return CompiledSchema(schema, None, _build(schema))
