"""Small probes of Codex's plugin reading, the evidence behind the corpus table's "Codex's own reading" causes:
``python -m bench.corpus_peers.probe_codex`` (Codex from ``$HARNESS_CORPUS_PEERS``, as ``compare`` uses it).

Each probe is a one-plugin variant of a real corpus plugin's file (named in ``PROBES``), laid out in a
scratch workspace with a ``.agents/plugins/marketplace.json`` of its own, read with ``plugin/list`` +
``plugin/read`` by one ``codex app-server`` in an empty ``CODEX_HOME``; it prints how many hooks and
which skills Codex lists for each. Nothing here touches the sidecar: it shows what the peer does, so a
disagreement can be called the peer's rule rather than guessed.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from bench.codex import CodexAppServer
from bench.corpus_peers.compare import REPO, peer_bin

sys.path.insert(0, str(REPO / "server"))  # the checkout's sidecar, installed or not
from harness_sidecar.hooks.declared import EVENTS  # noqa: E402

HOOK = {"type": "command", "command": "true"}


def _hooks(*events: str) -> dict:
    return {event: [{"matcher": "Bash", "hooks": [HOOK]}] for event in events}


# name -> (what it shows, files of the plugin: relative path -> JSON or text)
PROBES: dict[str, tuple[str, dict[str, object]]] = {
    "plain": ("hooks/hooks.json with PreToolUse + Stop (the control)",
              {".codex-plugin/plugin.json": {"name": "plain"},
               "hooks/hooks.json": {"hooks": _hooks("PreToolUse", "Stop")}}),
    "schema-key": ("the same file with a top-level \"$schema\" (everything-claude-code's hooks/hooks.json)",
                   {".codex-plugin/plugin.json": {"name": "schema-key"},
                    "hooks/hooks.json": {"$schema": "https://json.schemastore.org/claude-code-settings.json",
                                         "hooks": _hooks("PreToolUse", "Stop")}}),
    "description-key": ("the same file with a top-level \"description\"",
                        {".codex-plugin/plugin.json": {"name": "description-key"},
                         "hooks/hooks.json": {"description": "x", "hooks": _hooks("PreToolUse", "Stop")}}),
    "other-key": ("the same file with a top-level \"x-note\" (any other name)",
                  {".codex-plugin/plugin.json": {"name": "other-key"},
                   "hooks/hooks.json": {"x-note": "x", "hooks": _hooks("PreToolUse", "Stop")}}),
    "post-tool-use-failure": ("PreToolUse + PostToolUseFailure (a Claude Code event)",
                              {".codex-plugin/plugin.json": {"name": "post-tool-use-failure"},
                               "hooks/hooks.json": {"hooks": _hooks("PreToolUse", "PostToolUseFailure")}}),
    "every-event": (f"one handler for each of the {len(EVENTS)} Claude Code + Codex events the sidecar accepts",
                    {".codex-plugin/plugin.json": {"name": "every-event"},
                     "hooks/hooks.json": {"hooks": _hooks(*EVENTS)}}),
    "claude-inline": ("a Claude manifest's inline hooks without the \"hooks\" wrapper (laurigates' plugins)",
                      {".claude-plugin/plugin.json": {"name": "claude-inline", "hooks": _hooks("SessionStart")}}),
    "claude-inline-wrapped": ("a Claude manifest's inline {\"hooks\": {...}}",
                              {".claude-plugin/plugin.json": {"name": "claude-inline-wrapped",
                                                              "hooks": {"hooks": _hooks("SessionStart")}}}),
    "capital-name": ("a skill whose frontmatter name is \"Zotero\" (openai plugins' zotero)",
                     {".codex-plugin/plugin.json": {"name": "capital-name"},
                      "skills/zotero/SKILL.md": "---\nname: Zotero\ndescription: Use for Zotero.\n---\nBody\n"}),
}


def lay_out(top: Path) -> Path:
    entries = []
    for name, (_, files) in PROBES.items():
        for rel, content in files.items():
            path = top / "plugins" / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        entries.append({"name": name, "source": {"source": "local", "path": f"./plugins/{name}"},
                        "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"}})
    market = top / ".agents" / "plugins" / "marketplace.json"
    market.parent.mkdir(parents=True)
    market.write_text(json.dumps({"name": "probes", "plugins": entries}))
    return market


def main() -> int:
    binary = peer_bin("codex")
    if binary is None:
        sys.exit("codex is not installed: python -m bench.corpus_peers.compare --install-peers")
    scratch = Path(tempfile.mkdtemp(prefix="codex-probe-"))
    try:
        market = lay_out(scratch / "ws")
        server = CodexAppServer(str(binary), scratch / "ws", scratch / "home", client="harness-corpus")
        try:
            listed = server.request("plugin/list", {"cwds": [str(scratch / "ws")]})["result"]
            errors = listed.get("marketplaceLoadErrors") or []
            print(f"marketplace load errors: {errors or 'none'}")
            print("| probe | what it shows | Codex hooks (events) | Codex skills |")
            print("| --- | --- | --- | --- |")
            for name, (what, _) in PROBES.items():
                read = server.request("plugin/read", {"marketplacePath": str(market), "pluginName": name})
                if "error" in read:
                    print(f"| {name} | {what} | error {read['error'].get('message', '')[:80]} | |")
                    continue
                plugin = read["result"]["plugin"]
                hooks = plugin.get("hooks") or []
                events = sorted({h["eventName"] for h in hooks})
                skills = sorted(s["name"] for s in plugin.get("skills") or [])
                print(f"| {name} | {what} | {len(hooks)} {events} | {skills} |")
        finally:
            server.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
