"""Shapes of wire values: each one is both its JSON Schema and, for what the sidecar receives, its parser.

A shape is declared once (``wire/params.py`` for what editors send, ``wire/protocol.py``
for the rest) and gives two things that therefore cannot drift apart:

- ``shape.schema(defs)``: its JSON Schema (draft 2020-12) fragment; a named shape is put in
  ``defs`` once and referenced as ``{"$ref": "#/$defs/<name>"}``;
- ``shape.parse(value, where)``: the checked Python value, or ``InvalidParams`` naming the
  field (``where``: ``roots[0]``, ``call.id``, ``limits.hookTimeoutMs``) with a clear message.

Every constraint a shape puts in its schema, its parser enforces (tests/test_schema.py
checks both against many inputs); a few checks no JSON Schema can state (an id listed twice)
live in the parser only and are said in the schema's ``description``.

Parsing runs on every request, so it is plain code: type tests on exact JSON types
(``json.loads`` makes exactly ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``,
``None``), paths built only when a value is descended into or an error is raised.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable

from harness_sidecar.base.errors import InvalidParams

MISSING: Any = object()
_ALL_TYPES = frozenset({str, dict, list, bool, int, float, type(None)})
_TYPE_NAMES = {str: "string", dict: "object", list: "array", bool: "boolean", int: "integer", float: "number",
               type(None): "null"}


def type_name(value: Any) -> str:
    """The JSON type of ``value`` as a message says it: ``string``, ``null``, ``number``…"""
    return _TYPE_NAMES.get(type(value)) or type(value).__name__


def with_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts ``null``."""
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "description", "default", "items", "minLength", "minimum",
                                                "pattern", "maxLength", "format", "additionalProperties",
                                                "propertyNames"}:
        return {**schema, "type": [kind, "null"]}
    described = {k: schema[k] for k in ("description", "default") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in described}
    return {"anyOf": [inner, {"type": "null"}], **described}


class Shape:
    """Base: ``name`` makes it a ``$defs`` entry; ``description`` documents it."""

    json_types: tuple[type, ...] = ()  # the Python types of its JSON values (for Either)
    expected = "a value"                # "must be <expected>" in messages

    def __init__(self, *, name: str | None = None, description: str | None = None, error: str | None = None,
                 **extra: Any) -> None:
        self.name = name
        self.description = description
        self.error = error  # a message for a value of the wrong type: "'{where}' ..." ({where}, {type})
        self.extra = extra  # more schema keywords, verbatim (e.g. examples)

    # -- schema -------------------------------------------------------------------------
    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        if self.name is None:
            return self._document(defs)
        if self.name not in defs:
            defs[self.name] = {}  # reserve first: a shape may refer to itself
            defs[self.name] = self._document(defs)
        return {"$ref": f"#/$defs/{self.name}"}

    def _document(self, defs: dict[str, Any]) -> dict[str, Any]:
        body = self.body(defs)
        if self.description:
            body = {"description": self.description, **body}
        body.update(self.extra)
        return body

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    # -- parsing ------------------------------------------------------------------------
    def plain_types(self) -> frozenset[type] | None:
        """The Python types whose values ``parse`` returns unchanged without any other check (fast path)."""
        return None

    def parse(self, value: Any, where: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__} describes output only")

    def wrong_type(self, value: Any, where: str) -> InvalidParams:
        if self.error:
            return InvalidParams(self.error.format(where=where, type=type_name(value)), where)
        return InvalidParams(f"'{where}' must be {self.expected}, not {type_name(value)}", where)


class AnyValue(Shape):
    """Any JSON value."""

    json_types = (str, dict, list, bool, int, float, type(None))

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {}

    def parse(self, value: Any, where: str) -> Any:
        return value


class Str(Shape):
    """A string; ``pattern`` (a Python regex also valid in ECMA-262, matched whole), ``enum``;
    ``check(value, where)`` adds what a schema cannot say, or says it with a better message (it
    must then refuse exactly what the schema keywords refuse)."""

    json_types = (str,)
    expected = "a string"

    def __init__(self, *, pattern: str | None = None, pattern_error: str | None = None,
                 enum: tuple[str, ...] | None = None, check: Callable[[str, str], Any] | None = None,
                 schema_extra: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.pattern = pattern
        self._regex = re.compile(pattern) if pattern else None
        self.pattern_error = pattern_error
        self.enum = enum
        self.check = check
        self.schema_extra = schema_extra or {}

    def plain_types(self) -> frozenset[type] | None:
        plain = self.check is None and self._regex is None and self.enum is None
        return frozenset({str}) if plain else None

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.enum is not None:
            out = {"enum": list(self.enum)} if len(self.enum) > 1 else {"const": self.enum[0]}
        if self.pattern is not None:
            out["pattern"] = f"^(?:{self.pattern})$"
        out.update(self.schema_extra)
        return out

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not str:
            raise self.wrong_type(value, where)
        if self.check is not None:
            result = self.check(value, where)
            if result is not None:
                value = result
        if self._regex is not None and not self._regex.fullmatch(value):
            raise InvalidParams((self.pattern_error or "'{where}': {value!r} does not match {pattern}").format(
                where=where, value=value, pattern=self.pattern), where)
        if self.enum is not None and value not in self.enum:
            raise InvalidParams(f"'{where}' must be one of {', '.join(self.enum)}, not {value!r}", where)
        return value


class Int(Shape):
    """An integer (never a boolean); ``minimum`` inclusive."""

    json_types = (int,)
    expected = "an integer"

    def __init__(self, *, minimum: int | None = None, default: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.minimum, self.default = minimum, default

    def plain_types(self) -> frozenset[type] | None:
        return frozenset({int}) if self.minimum is None else None

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.default is not None:
            out["default"] = self.default
        return out

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not int:
            raise self.wrong_type(value, where)
        if self.minimum is not None and value < self.minimum:
            if self.error:
                raise self.wrong_type(value, where)
            raise InvalidParams(f"'{where}' must be an integer at least {self.minimum}", where)
        return value


class Bool(Shape):
    json_types = (bool,)
    expected = "a boolean"

    def __init__(self, *, default: bool | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.default = default

    def plain_types(self) -> frozenset[type] | None:
        return frozenset({bool})

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "boolean"} if self.default is None else {"type": "boolean", "default": self.default}

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not bool:
            raise self.wrong_type(value, where)
        return value


class Null(Shape):
    json_types = (type(None),)
    expected = "null"

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "null"}

    def parse(self, value: Any, where: str) -> Any:
        if value is not None:
            raise self.wrong_type(value, where)
        return None


class Const(Shape):
    """Exactly one JSON scalar (output only)."""

    def __init__(self, value: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.value = value
        self.json_types = (type(value),)

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"const": self.value}


class Enum(Shape):
    """One of a few JSON scalars (output only)."""

    def __init__(self, *values: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.values = values
        self.json_types = tuple({type(v) for v in values})

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"enum": list(self.values)}


class Arr(Shape):
    """An array of ``items``; ``unique(parsed_items, where)`` may refuse repeats (a parser-only check)."""

    json_types = (list,)
    expected = "an array"

    def __init__(self, items: Shape, *, min_items: int | None = None,
                 unique: Callable[[list[Any], str], None] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.items, self.min_items, self.unique = items, min_items, unique

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.items.schema(defs)}
        if self.min_items is not None:
            out["minItems"] = self.min_items
        return out

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not list:
            raise self.wrong_type(value, where)
        if self.min_items is not None and len(value) < self.min_items:
            raise InvalidParams(f"'{where}' must have at least {self.min_items} item(s)", where)
        items = self.items
        out = [items.parse(item, f"{where}[{i}]") for i, item in enumerate(value)]
        if self.unique is not None:
            self.unique(out, where)
        return out


class Map(Shape):
    """An object used as a map: any keys, every value a ``values``."""

    json_types = (dict,)
    expected = "an object"

    def __init__(self, values: Shape, *, values_checked_later: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.values = values
        # The method refuses a wrong value itself, with a domain error (e.g. templates/render's
        # invalid_arguments): the schema states the rule, parsing leaves the values alone.
        self.values_checked_later = values_checked_later

    def plain_types(self) -> frozenset[type] | None:
        plain = self.values_checked_later or isinstance(self.values, AnyValue)
        return frozenset({dict}) if plain else None

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        additional = True if isinstance(self.values, AnyValue) else self.values.schema(defs)
        return {"type": "object", "additionalProperties": additional}

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise self.wrong_type(value, where)
        values = self.values
        if self.values_checked_later or isinstance(values, AnyValue):
            return value
        return {key: values.parse(item, f"{where}.{key}") for key, item in value.items()}


class Field:
    """One property of an ``Obj``. ``attr`` is the Python name (default: the key in snake_case).

    ``required`` fields must be present; an optional field that is absent — or ``null`` when
    the object is one the sidecar receives — takes ``default`` (or ``default_factory()``).
    """

    __slots__ = ("key", "shape", "required", "default", "default_factory", "attr", "description")

    def __init__(self, key: str, shape: Shape, *, required: bool = True, default: Any = MISSING,
                 default_factory: Callable[[], Any] | None = None, attr: str | None = None,
                 description: str | None = None) -> None:
        self.key, self.shape, self.required = key, shape, required
        self.default, self.default_factory = default, default_factory
        self.attr = attr or re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        self.description = description


def opt(key: str, shape: Shape, **kw: Any) -> Field:
    return Field(key, shape, required=False, **kw)


class Obj(Shape):
    """An object with named fields.

    ``incoming``: sent to the sidecar — unknown keys are ignored (editors send more than we
    read) and ``null`` stands for an absent optional field; ``closed`` refuses unknown keys
    (``unknown_error``: "'{where}' …" with ``{key}``). Outgoing objects list every field the
    sidecar may send and, unless ``open``, nothing else. ``cls`` builds the parsed value from the
    fields' ``attr`` names (default: a dict keyed like the wire). ``check(parsed, where)`` runs after.
    """

    json_types = (dict,)
    expected = "an object"

    def __init__(self, fields: list[Field], *, cls: Callable[..., Any] | None = None, incoming: bool = False,
                 closed: bool | None = None, null_absent: bool | None = None, open_values: Shape | None = None,
                 unknown_error: str | None = None, check: Callable[[Any, str], None] | None = None,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.fields = fields
        self.cls = cls
        self.incoming = incoming if null_absent is None else null_absent  # null stands for an absent field
        self.closed = (not incoming) if closed is None else closed
        self.open_values = open_values
        self.unknown_error = unknown_error
        self.check = check
        self._keys = frozenset(f.key for f in fields)
        self._positional = cls is not None and _positional_fields(cls) == tuple(f.attr for f in fields)
        self._plan = tuple((f.key, f.attr, _ALL_TYPES if isinstance(f.shape, AnyValue) else f.shape.plain_types(),
                            f.shape.parse, f.required, f.default, f.default_factory) for f in fields)

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required = []
        for f in self.fields:
            schema = f.shape.schema(defs)
            if f.required:
                required.append(f.key)
            elif self.incoming:
                schema = with_null(schema)
            if f.description:
                schema = {"description": f.description, **schema}
            if not f.required and isinstance(f.default, (str, int, bool)) and "default" not in schema:
                schema = {**schema, "default": f.default}
            properties[f.key] = schema
        out: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            out["required"] = required
        if self.open_values is not None:
            out["additionalProperties"] = self.open_values.schema(defs)
        elif self.closed:
            out["additionalProperties"] = False
        return out

    def parse(self, value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise self.wrong_type(value, where)
        prefix = where + "." if where else ""
        if self.closed:
            for key in value:
                if key not in self._keys:
                    message = (self.unknown_error or "'{where}' has an unknown field '{key}'").format(
                        where=where, key=key, known=", ".join(f.key for f in self.fields))
                    raise InvalidParams(message, prefix + key)
        out = {}
        incoming = self.incoming
        for key, attr, plain, parse, required, default, factory in self._plan:
            item = value.get(key, MISSING)
            if item is MISSING or (item is None and incoming and not required):
                if required:
                    raise InvalidParams(f"'{prefix}{key}' is required", prefix + key)
                if factory is not None:
                    out[attr] = factory()
                elif default is not MISSING:
                    out[attr] = default
            elif plain is not None and type(item) in plain:
                out[attr] = item  # a plain value of the right type: nothing else to check
            else:
                out[attr] = parse(item, prefix + key)
        if self.cls is None:
            parsed = out
        elif self._positional and len(out) == len(self._plan):  # every field, in the class's order
            parsed = self.cls(*out.values())  # a third of a call by keywords (~0.3 µs a tools/call)
        else:
            parsed = self.cls(**out)
        if self.check is not None:
            self.check(parsed, where)
        return parsed


def _positional_fields(cls: Any) -> tuple[str, ...] | None:
    """The names ``cls`` takes positionally, in order: a NamedTuple's or a dataclass's fields (None: other)."""
    names = getattr(cls, "_fields", None)
    if type(names) is tuple:
        return names
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)  # no ClassVar, no InitVar: with one of those, not positional
        if len(fields) == len(cls.__dataclass_fields__) and all(f.init and not f.kw_only for f in fields):
            return tuple(f.name for f in fields)
    return None


class Either(Shape):
    """One of several shapes, chosen by the JSON type of the value (each alternative's types differ)."""

    def __init__(self, *options: Shape, **kw: Any) -> None:
        super().__init__(**kw)
        self.options = options
        self.json_types = tuple(t for o in options for t in o.json_types)
        self._by_type = {}
        for option in options:
            for t in option.json_types:
                self._by_type.setdefault(t, option)

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(o.expected for o in self.options)

    def plain_types(self) -> frozenset[type] | None:
        parts = [o.plain_types() for o in self.options]
        return None if any(p is None for p in parts) else frozenset().union(*parts)  # type: ignore[misc]

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"oneOf": [o.schema(defs) for o in self.options]}

    def parse(self, value: Any, where: str) -> Any:
        option = self._by_type.get(type(value))
        if option is None:
            raise self.wrong_type(value, where)
        return option.parse(value, where)


class Union(Shape):
    """Output only: one of several object shapes told apart by a ``const`` field (e.g. ``kind``)."""

    def __init__(self, *options: Shape, **kw: Any) -> None:
        super().__init__(**kw)
        self.options = options

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"oneOf": [o.schema(defs) for o in self.options]}


class Nullable(Shape):
    def __init__(self, inner: Shape, **kw: Any) -> None:
        super().__init__(**kw)
        self.inner = inner
        self.json_types = (*inner.json_types, type(None))

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return with_null(self.inner.schema(defs))

    def parse(self, value: Any, where: str) -> Any:
        return None if value is None else self.inner.parse(value, where)


class Convert(Shape):
    """``inner``'s schema; parsing gives ``fn(inner.parse(value))``."""

    def __init__(self, inner: Shape, fn: Callable[[Any], Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.inner, self.fn = inner, fn
        self.json_types, self.expected = inner.json_types, inner.expected

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return self.inner.schema(defs) if self.name is None and not self.description else super().schema(defs)

    def body(self, defs: dict[str, Any]) -> dict[str, Any]:
        return self.inner.schema(defs)

    def parse(self, value: Any, where: str) -> Any:
        return self.fn(self.inner.parse(value, where))

