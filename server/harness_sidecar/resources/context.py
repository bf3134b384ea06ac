"""The system prompt: instructions, the skill listing within a byte budget, active skill bodies."""

from __future__ import annotations

from collections.abc import Iterable

from harness_sidecar.resources.activation import ActivatedSkill
from harness_sidecar.resources.catalog import Catalog

SKILLS_HEADING = "# Skills\n\nActivate a skill with the load_skill tool when its description fits the task.\n"


def skill_listing(entries: Iterable[tuple[str, str]], budget: int) -> tuple[str, int]:
    """``name: description`` lines in name order, whole entries only, within ``budget`` UTF-8 bytes.

    Stops at the first entry that does not fit (never packs a later, shorter one into the
    gap). Returns the listing and how many entries were left out.
    """
    ordered = sorted(entries)
    lines: list[str] = []
    used = 0
    for name, description in ordered:
        line = f"{name}: {description}\n"
        size = len(line.encode("utf-8"))
        if used + size > budget:
            break
        lines.append(line)
        used += size
    return "".join(lines), len(ordered) - len(lines)


def left_out_of_listing(catalog: Catalog, catalog_bytes: int) -> int:
    """How many skills the listing leaves out: when any, the thread offers ``find_skills``.

    The catalog's skills are already in name order: counted up to the first that does not fit
    (the listing's own rule), without building or sorting the listing (thread/start asks this
    of every catalog, 10,000 skills included).
    """
    used = 0
    fitted = 0
    for skill in catalog.skills.values():
        used += len(f"{skill.name}: {skill.description}\n".encode("utf-8"))
        if used > catalog_bytes:
            break
        fitted += 1
    return len(catalog.skills) - fitted


def build_system_prompt(catalog: Catalog, activated: dict[str, ActivatedSkill], catalog_bytes: int) -> str:
    sections: list[str] = []
    for instructions in reversed(catalog.instructions):  # lowest precedence first: the project speaks last
        sections.append(f"# Instructions ({instructions.source})\n\n{instructions.text.strip()}\n")
    if catalog.skills:
        listing, left_out = skill_listing(((s.name, s.description) for s in catalog.skills.values()), catalog_bytes)
        section = SKILLS_HEADING + "\n" + listing
        if left_out:
            section += (f"({left_out} more skill{'s' if left_out != 1 else ''} not listed: the catalog budget is full; "
                        f"search them with the find_skills tool)\n")
        sections.append(section)
    for name in sorted(activated):
        skill = activated[name]
        if skill.via == "load_skill":  # its body is the tool result in the conversation already (seed 003)
            continue
        section = f"# Active skill: {skill.name}\n\n{skill.body.strip()}\n"
        for resource in skill.resources:
            if resource.mime_type is not None:  # not text: named, not pasted as base64
                section += (f"\n## Resource: {resource.request}\n\n"
                            f"({resource.mime_type}, {resource.size} bytes, not text: {resource.source})\n")
                continue
            section += f"\n## Resource: {resource.request}\n\n{resource.content.rstrip()}\n"
        sections.append(section)
    return "\n".join(sections)


def extension_sections(contributions: list[dict[str, str]], budget: int) -> str:
    """``# Extension: <id>`` sections in load order, whole sections only, within ``budget`` UTF-8 bytes.

    Each section's bytes are counted with its header line; the sections stop at the first one
    that does not fit (never a later, shorter one in the gap). A note on how many were left
    out may follow and is not counted. One section per extension, its handlers' texts joined.
    """
    by_extension: dict[str, list[str]] = {}
    for item in contributions:
        by_extension.setdefault(item["extensionId"], []).append(item["text"].strip())
    parts: list[str] = []
    used = 0
    for ext_id, texts in by_extension.items():
        section = f"# Extension: {ext_id}\n\n" + "\n\n".join(t for t in texts if t) + "\n"
        size = len(section.encode("utf-8"))
        if used + size > budget:
            break
        parts.append(section)
        used += size
    left_out = len(by_extension) - len(parts)
    if left_out:
        parts.append(f"({left_out} more extension section{'s' if left_out != 1 else ''} left out: "
                     f"extensionContextBytes is full)\n")
    return "\n".join(parts)


def hook_context_sections(context: list[tuple[str, str]], event: str = "SessionStart") -> str:
    """``# Hook context (<event>: <source>)`` sections, one per source in declaration order, its texts joined
    (protocol-v4 §2 "SessionStart context reaches the model")."""
    by_source: dict[str, list[str]] = {}
    for source, text in context:
        if text.strip():
            by_source.setdefault(source, []).append(text.strip())
    return "\n".join(f"# Hook context ({event}: {source})\n\n" + "\n\n".join(texts) + "\n"
                     for source, texts in by_source.items())
