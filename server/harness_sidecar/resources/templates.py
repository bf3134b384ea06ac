"""Templates: ``{{name}}`` placeholders replaced in one pass; everything else stays literal."""

from __future__ import annotations

from typing import Any

from harness_sidecar.base.errors import DomainError
from harness_sidecar.base.limits import Limits
from harness_sidecar.resources.catalog import (
    PLACEHOLDER,
    Catalog,
    find_placeholders,
    read_template,
)


def render_text(text: str, arguments: dict[str, Any]) -> str:
    """Replace every ``{{name}}``; values are inserted as-is and never scanned again."""
    for key, value in arguments.items():
        if not isinstance(value, str):
            raise DomainError("invalid_arguments", f"argument '{key}' must be a string, not {type(value).__name__}",
                              argument=key)
    missing = [name for name in find_placeholders(text) if name not in arguments]
    if missing:
        raise DomainError("missing_argument", f"missing argument '{missing[0]}'", variable=missing[0],
                          missing=missing)
    return PLACEHOLDER.sub(lambda m: arguments[m.group(1)], text)


def render(catalog: Catalog, name: str, arguments: dict[str, Any], limits: Limits) -> dict[str, str]:
    entry = catalog.templates.get(name)
    if entry is None:
        raise DomainError("template_not_found", f"no template named '{name}' in this thread's catalog", name=name)
    try:
        _, body = read_template(entry.source, entry.root, limits)
    except DomainError as exc:
        if exc.kind == "resource_not_found":
            raise DomainError("template_not_found", f"template '{name}' no longer exists at {entry.source}",
                              name=name, path=entry.source) from None
        raise
    return {"role": "user", "content": render_text(body, arguments)}
