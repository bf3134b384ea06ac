"""Where the two peers contradict each other on a plugin written for both (it has both manifests).

Such a plugin counts as written for each peer, so where Claude Code and Codex read it differently
no reader can agree with both: whatever the sidecar serves disagrees with one of them. ``contradictions``
finds those (plugin, aspect) pairs from the peers' own readings, so the table can say so per
disagreement and give the agreement over the rest beside the raw figure.

The peers are compared as ``compare`` compares each with the sidecar: load; skills (Claude Code lists a
plugin's commands among its skills and Codex serves none, so the commands the sidecar found are taken
out of Claude Code's list first); hooks as the set of events (all Claude Code's ``plugin details``
shows); MCP servers by name.
"""

from __future__ import annotations

from typing import Any

ASPECTS = ("load", "skills", "hooks", "mcp")


def contradiction(p: dict, readings: dict[str, Any]) -> dict[str, str]:
    """``aspect -> what each peer says`` for each aspect the two peers read differently (a plugin with
    both manifests only); ``{}`` when they agree, or one of them was not asked."""
    claude, codex, mine = readings.get("claude"), readings.get("codex"), readings.get("sidecar")
    if p["dialect"] != "both" or claude is None or codex is None:
        return {}
    if claude.loads != codex.loads:
        said = f"claude {'loads' if claude.loads else 'refuses'} it, codex {'loads' if codex.loads else 'refuses'} it"
        return {aspect: said for aspect in ASPECTS}
    if not claude.loads:
        return {}
    out: dict[str, str] = {}
    commands = set(mine.commands) if mine is not None else set()
    claude_skills, codex_skills = set(claude.names) - commands, set(codex.names)
    if claude_skills != codex_skills:
        out["skills"] = (f"claude-only {sorted(claude_skills - codex_skills)[:4]}, "
                         f"codex-only {sorted(codex_skills - claude_skills)[:4]}")
    if claude.hook_events != codex.hook_events:
        out["hooks"] = f"claude events {claude.hook_events}, codex events {codex.hook_events}"
    if sorted(claude.mcp) != sorted(codex.mcp):
        out["mcp"] = f"claude {sorted(claude.mcp)}, codex {sorted(codex.mcp)}"
    return out


def contradictions(plugins: list[dict], readings: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``plugin id -> contradiction`` for every plugin where the peers contradict each other."""
    out = {}
    for p in plugins:
        found = contradiction(p, {reader: got.get(p["id"]) for reader, got in readings.items()})
        if found:
            out[p["id"]] = found
    return out
