"""The sidecar's reading of each corpus plugin beside Claude Code's and Codex's:
``python -m bench.corpus_peers.compare`` (after ``python -m bench.corpus_peers.fetch``).

Per plugin and per reader: loads?, skills + commands (names, the ``<plugin>:`` prefix dropped),
hooks (handlers and events), MCP servers (names).

- **sidecar**: the real sidecar from this checkout, one process; per plugin a ``thread/start
  {roots: [], plugins: [<folder>]}`` and its ``catalog.plugins`` / ``hooks`` / ``mcpServers`` /
  ``diagnostics``, then ``thread/close``.
- **claude**: ``claude plugin validate <folder>`` (its verdict is recorded, not scored: it flags
  what the loader tolerates), and the loader's ``claude --plugin-dir <folder> plugin details
  <name>`` (``<name>`` the Claude manifest's, else the folder's). A marketplace entry without a
  manifest is loaded as Claude Code loads it: the entry is copied into a marketplace of our own
  (``claude plugin marketplace add`` of a hard-linked copy of the repository whose marketplace
  name is changed — official names are reserved), ``claude plugin install``, then ``plugin
  details``. Claude Code's ``details`` lists hook *events*, not handlers, so hooks are compared on
  the set of events with Claude Code. No login is needed for any of this.
- **codex**: one ``codex app-server`` (stdio JSON-RPC, its own ``CODEX_HOME``). A plugin that its
  repository's marketplace names (``.agents/plugins/marketplace.json`` first, else Claude's
  ``.claude-plugin/marketplace.json``, which Codex reads too) is read through that entry, with the
  marketplace's folder among the ``cwds``; any other through a workspace of its own whose
  ``.agents/plugins/marketplace.json`` names the plugin's folder (a link) as a local source.
  ``plugin/list {cwds}`` (a load error is its ``marketplaceLoadErrors``), then
  ``plugin/read {marketplacePath, pluginName}`` → ``skills``, ``hooks`` (one per handler),
  ``mcpServers``. Codex serves no command templates, so against Codex the sidecar's commands are
  left out of the skills comparison and reported apart.

The peers come from ``$HARNESS_CORPUS_PEERS`` (default ``<cache>/peers``), where ``--install-peers``
runs ``npm install @anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0`` (never in this
repository). Results: ``bench/results/corpus_peers.json`` and ``.md``: the agreement table per peer
(all plugins, and the plugins written for that peer), and every disagreement with a cause.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.codex import CodexAppServer
from bench.corpus_peers.fetch import cache_dir, peers_dir
from bench.corpus_peers.peers import contradictions

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
PEER_PACKAGES = ["@anthropic-ai/claude-code@2.1.197", "@openai/codex@0.171.0"]
ASPECTS = ("load", "skills", "hooks", "mcp")


@dataclass
class Reading:
    """What one reader makes of one plugin."""
    loads: bool
    names: list[str] = field(default_factory=list)      # skills + commands, prefix dropped
    commands: list[str] = field(default_factory=list)   # the command templates among them
    skills: list[str] = field(default_factory=list)     # the skills among them
    hook_events: list[str] = field(default_factory=list)  # sorted, distinct
    hook_handlers: int | None = None                     # None when the reader does not say
    mcp: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)       # diagnostics / errors, short
    diagnostics: list[dict] = field(default_factory=list)  # the sidecar's: {kind, path, name?, message}


def _unprefix(name: str) -> str:
    return name.split(":", 1)[1] if ":" in name else name


def install_peers() -> None:
    d = peers_dir()
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "package.json").exists():
        (d / "package.json").write_text('{"name": "corpus-peers", "private": true}\n')
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", *PEER_PACKAGES], cwd=d, check=True)


def peer_bin(name: str) -> Path | None:
    path = peers_dir() / "node_modules" / ".bin" / name
    return path if path.exists() else None


# -- the sidecar --------------------------------------------------------------------------------

def read_sidecar(plugins: list[dict], tree: Path) -> dict[str, Reading]:
    sys.path.insert(0, str(REPO / "server"))
    from harness_sidecar.console.client import SidecarProcess, child_env

    out: dict[str, Reading] = {}
    state = cache_dir() / "work" / "sidecar-state"
    state.mkdir(parents=True, exist_ok=True)
    env = child_env({"HARNESS_SIDECAR_STATE_DIR": str(state), "HARNESS_SIDECAR_CACHE_DIR": "off"})
    with SidecarProcess(env=env, stderr=subprocess.DEVNULL) as sc:
        sc.initialize()
        for p in plugins:
            folder = str((tree / p["repo"].replace("/", "+") / p["path"]).resolve())
            answer = sc.call("thread/start", {"roots": [], "plugins": [folder]}, timeout=120)
            catalog = answer["catalog"]
            here = [e for e in catalog["plugins"] if os.path.realpath(e["path"]) == folder]
            # one folder can hold several plugins (anthropics/skills' marketplace entries share "./")
            entry = next((e for e in here if e["name"] == p["name"]), here[0] if here else None)
            diags = [d for d in answer.get("diagnostics", [])
                     if str(d.get("path", "")).startswith(folder)]
            notes = sorted({f"{d['kind']}: {d.get('message', '')[:160]}" for d in diags})
            kept = [{"kind": d["kind"], "path": d.get("path", ""), "name": d.get("name"),
                     "message": d.get("message", "")[:400]} for d in diags]
            if entry is None:
                out[p["id"]] = Reading(loads=False, notes=notes, diagnostics=kept)
            else:
                name = entry["name"]
                hooks = [h for h in catalog["hooks"] if h.get("source") == f"plugin:{name}"]
                servers = [m.get("server") or m["name"] for m in catalog["mcpServers"] if m.get("plugin") == name]
                commands = sorted(_unprefix(c) for c in entry.get("commands", []))
                skills = sorted(_unprefix(s) for s in entry.get("skills", []))
                out[p["id"]] = Reading(
                    loads=True, names=sorted(set(commands) | set(skills)), commands=commands, skills=skills,
                    hook_events=sorted({h["event"] for h in hooks}),
                    hook_handlers=entry.get("hooks", len(hooks)), mcp=sorted(servers), notes=notes,
                    diagnostics=kept)
            sc.call("thread/close", {"threadId": answer["threadId"]})
    return out


class ReadingCache:
    """Claude Code's readings kept per (its version, the repository's locked commit, plugin id) in
    ``<cache>/work/claude-readings.json``: a rerun asks only about what changed. ``--fresh`` drops it."""

    def __init__(self, path: Path, version: str, commits: dict[str, str]) -> None:
        self.path, self.version, self.commits = path, version, commits
        self.lock = threading.Lock()
        try:
            self.data = json.loads(path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def key(self, p: dict) -> str:
        return f"{self.version}|{self.commits.get(p['repo'], '?')}|{p['id']}"

    def get(self, p: dict) -> tuple[Reading, dict] | None:
        hit = self.data.get(self.key(p))
        return (Reading(**hit["reading"]), hit["extra"]) if hit else None

    def put(self, p: dict, reading: Reading, extra: dict) -> None:
        with self.lock:
            self.data[self.key(p)] = {"reading": asdict(reading), "extra": extra}
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            tmp.replace(self.path)


# -- Claude Code --------------------------------------------------------------------------------

_SECTION = re.compile(r"^\s{2}(Skills|Agents|Hooks|MCP servers|LSP servers) \((\d+)\)\s*(.*)$")


def parse_details(text: str) -> dict[str, list[str]] | None:
    """The component inventory of ``claude plugin details``; None when it names no plugin."""
    if "Component inventory" not in text:
        return None
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            rest = re.sub(r"\s+\(.*\)\s*$", "", m.group(3)).strip()
            names = [n.strip() for n in rest.split(",") if n.strip()] if rest else []
            found[m.group(1)] = names
            if len(names) != int(m.group(2)):  # a list cut short or a name with a comma: keep the count
                found[m.group(1) + "#count"] = [m.group(2)]
    return found


class Claude:
    def __init__(self, binary: Path, work: Path) -> None:
        self.binary = binary
        self.work = work
        self.local = threading.local()
        self.lock = threading.Lock()
        self.homes = 0

    def _env(self) -> dict[str, str]:
        home = getattr(self.local, "home", None)
        if home is None:
            with self.lock:
                self.homes += 1
                home = self.work / f"claude-home-{self.homes}"
            if home.exists():
                shutil.rmtree(home)
            (home / ".claude").mkdir(parents=True)
            (home / ".claude" / ".claude.json").write_text("{}\n")
            self.local.home = home
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
        env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), DISABLE_AUTOUPDATER="1",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1")
        return env

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.binary), *args], capture_output=True, text=True, timeout=120,
                              env=self._env(), cwd=str(cwd), stdin=subprocess.DEVNULL)

    def read(self, p: dict, folder: Path, repo_tree: Path) -> tuple[Reading, dict]:
        extra: dict = {}
        if p["manifests"] == [] :
            return self._read_marketplace_entry(p, repo_tree)
        name = folder.name
        manifest = folder / ".claude-plugin" / "plugin.json"
        try:
            data = json.loads(manifest.read_text())
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                name = data["name"]
        except (OSError, ValueError):
            pass
        v = self.run("plugin", "validate", str(folder), cwd=self.work)
        extra["validate"] = {"rc": v.returncode,
                             "errors": [l.strip() for l in (v.stdout + v.stderr).splitlines() if "❯" in l][:5]}
        d = self.run("--plugin-dir", str(folder), "plugin", "details", name, cwd=self.work)
        return self._reading(d, name), extra

    def _reading(self, d: subprocess.CompletedProcess, name: str) -> Reading:
        parsed = parse_details(d.stdout)
        if parsed is None:
            tail = (d.stderr.strip() or d.stdout.strip()).splitlines()
            tail = [l for l in tail if "configuration file" not in l and "backup" not in l.lower()
                    and "restore it" not in l]
            return Reading(loads=False, notes=[f"details {name}: rc={d.returncode}: " + " | ".join(tail[-3:])[:300]])
        notes = [f"{k}: {v[0]} listed" for k, v in parsed.items() if k.endswith("#count")]
        return Reading(loads=True, names=sorted(set(parsed.get("Skills", []))), hook_events=sorted(set(parsed.get("Hooks", []))),
                       mcp=sorted(parsed.get("MCP servers", [])), notes=notes)

    def _read_marketplace_entry(self, p: dict, repo_tree: Path) -> tuple[Reading, dict]:
        ref = next((m for m in p["marketplaces"] if m["kind"] == "claude"), None)
        if ref is None:
            return Reading(loads=False, notes=["no manifest and no Claude marketplace entry"]), {}
        copy = self.work / "claude-mkt" / p["repo"].replace("/", "+")
        with self.lock:
            if not copy.exists():
                shutil.copytree(repo_tree, copy, symlinks=True, copy_function=os.link)
        mfile = copy / ref["file"]
        market_name = "corpus-" + p["repo"].replace("/", "-").lower()
        with self.lock:
            data = json.loads(mfile.read_text())
            if data.get("name") != market_name:
                data["name"] = market_name
                mfile.unlink()  # a hard link: never write through to the laid-out repository
                mfile.write_text(json.dumps(data, indent=1))
        market_root = mfile.parent.parent
        added = getattr(self.local, "markets", set())
        self.local.markets = added
        extra: dict = {"via": f"marketplace {ref['file']} entry {ref['entry']}"}
        if market_name not in added:
            a = self.run("plugin", "marketplace", "add", str(market_root), cwd=self.work)
            if a.returncode != 0:
                return Reading(loads=False, notes=[f"marketplace add: {(a.stderr or a.stdout).strip()[-300:]}"]), extra
            added.add(market_name)
        i = self.run("plugin", "install", f"{ref['entry']}@{market_name}", cwd=self.work)
        if i.returncode != 0:
            return Reading(loads=False, notes=[f"install: {(i.stderr or i.stdout).strip()[-300:]}"]), extra
        d = self.run("plugin", "details", ref["entry"], cwd=self.work)
        return self._reading(d, ref["entry"]), extra


def read_claude(plugins: list[dict], tree: Path, workers: int, commits: dict[str, str],
                fresh: bool, cached_only: bool = False) -> tuple[dict[str, Reading], dict[str, dict], str]:
    binary = peer_bin("claude")
    if binary is None:
        print(f"claude: not installed under {peers_dir()} (run with --install-peers); left out", file=sys.stderr)
        return {}, {}, "not installed"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    out: dict[str, Reading] = {}
    extra: dict[str, dict] = {}
    cache_file = cache_dir() / "work" / "claude-readings.json"
    if fresh and cache_file.exists():
        cache_file.unlink()
    cache = ReadingCache(cache_file, version, commits)
    if cached_only:
        for p in plugins:
            hit = cache.get(p)
            if hit is not None:
                out[p["id"]], extra[p["id"]] = hit
        print(f"claude: {len(out)} of {len(plugins)} plugins from kept readings (--claude-cached-only)", file=sys.stderr)
        return out, extra, version
    work = cache_dir() / "work" / "claude"
    if work.exists():
        shutil.rmtree(work)  # homes and marketplace copies: made anew each run
    work.mkdir(parents=True)
    claude = Claude(binary, work)

    def one(p: dict):
        hit = cache.get(p)
        if hit is not None:
            return p["id"], hit
        repo_tree = tree / p["repo"].replace("/", "+")
        reading, more = claude.read(p, (repo_tree / p["path"]).resolve(), repo_tree)
        cache.put(p, reading, more)
        return p["id"], (reading, more)

    # marketplace entries first and in one worker (they share a marketplace per repository)
    market = [p for p in plugins if not p["manifests"]]
    for p in market:
        pid, (r, e) = one(p)
        out[pid], extra[pid] = r, e
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for n, (pid, (r, e)) in enumerate(pool.map(one, [p for p in plugins if p["manifests"]]), 1):
            out[pid], extra[pid] = r, e
            if n % 50 == 0:
                print(f"  claude: {n + len(market)}/{len(plugins)}", file=sys.stderr)
    return out, extra, version


# -- Codex (bench.codex.CodexAppServer) ---------------------------------------------------------

def read_codex(plugins: list[dict], tree: Path, installed: bool = False) -> tuple[dict[str, Reading], str, dict]:
    """Codex's readings by ``plugin/read``; with ``installed`` each loaded plugin is also
    ``plugin/install``ed (a local copy into its ``CODEX_HOME``) and ``skills/list`` + ``hooks/list``
    are compared with what ``plugin/read`` said (the third value: counts and the plugins that
    differ)."""
    binary = peer_bin("codex")
    if binary is None:
        print(f"codex: not installed under {peers_dir()} (run with --install-peers); left out", file=sys.stderr)
        return {}, "not installed", {}
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    work = cache_dir() / "work" / "codex"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    spaces: dict[str, tuple[Path, str]] = {}     # the generated one-plugin marketplace of each plugin
    own: dict[str, tuple[Path, Path, str]] = {}    # (cwd, marketplace file, entry) of its repository's marketplace
    for i, p in enumerate(plugins):
        repo_tree = tree / p["repo"].replace("/", "+")
        folder = (repo_tree / p["path"]).resolve()
        ws = work / "ws" / f"{i:04d}"
        (ws / ".agents" / "plugins").mkdir(parents=True)
        os.symlink(folder, ws / "plugin")
        name = p["name"] or folder.name
        (ws / ".agents" / "plugins" / "marketplace.json").write_text(json.dumps({
            "name": f"corpus-{i:04d}",
            "plugins": [{"name": name, "source": {"source": "local", "path": "./plugin"},
                         "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"}}]}))
        spaces[p["id"]] = (ws, name)
        refs = sorted(p["marketplaces"], key=lambda m: m["kind"] != "codex")
        if refs:
            ref = refs[0]
            mfile = (repo_tree / ref["file"]).resolve()
            cwd = mfile.parent.parent if ref["kind"] == "claude" else mfile.parent.parent.parent
            own[p["id"]] = (cwd, mfile, ref["entry"])
    server = CodexAppServer(str(binary), work, work / "home", client="harness-corpus")
    out: dict[str, Reading] = {}
    check: dict = {}
    where: dict[str, tuple[str, str]] = {}  # plugin id -> (marketplace file, plugin name) it was read through
    try:
        cwds = list(dict.fromkeys([str(ws) for ws, _ in spaces.values()] + [str(c) for c, _, _ in own.values()]))
        listed = server.request("plugin/list", {"cwds": cwds})
        result = listed.get("result") or {}
        errors = {os.path.realpath(e["marketplacePath"]): e["message"] for e in result.get("marketplaceLoadErrors", [])}
        present = {os.path.realpath(m["path"]): {pl["name"] for pl in m.get("plugins", [])}
                   for m in result.get("marketplaces", []) if m.get("path")}
        for p in plugins:
            ws, name = spaces[p["id"]]
            mpath = os.path.realpath(ws / ".agents" / "plugins" / "marketplace.json")
            via = "a marketplace of its own"
            if p["id"] in own:
                _, mfile, entry = own[p["id"]]
                if entry in present.get(os.path.realpath(mfile), set()):
                    mpath, name, via = os.path.realpath(mfile), entry, f"its repository's {mfile.name} entry {entry}"
            if mpath in errors:
                out[p["id"]] = Reading(loads=False, notes=[f"plugin/list: {errors[mpath][:300]}"])
                continue
            if name not in present.get(mpath, set()):
                out[p["id"]] = Reading(loads=False, notes=["plugin/list: not listed"])
                continue
            read = server.request("plugin/read", {"marketplacePath": mpath, "pluginName": name})
            where[p["id"]] = (mpath, name)
            if "error" in read:
                out[p["id"]] = Reading(loads=False, notes=[f"plugin/read ({via}): {json.dumps(read['error'])[:300]}"])
                continue
            detail = read["result"]["plugin"]
            hooks = detail.get("hooks") or []
            out[p["id"]] = Reading(
                loads=True, names=sorted({_unprefix(s["name"]) for s in detail.get("skills") or []}),
                hook_events=sorted({h["eventName"][:1].upper() + h["eventName"][1:] for h in hooks}),
                hook_handlers=len(hooks), mcp=sorted(detail.get("mcpServers") or []), notes=[f"via {via}"])
        if installed:
            check = _check_installed(server, plugins, out, where, cwds, result)
    finally:
        server.close()
    return out, version, check


def _check_installed(server: CodexAppServer, plugins: list[dict], out: dict[str, Reading],
                     where: dict[str, tuple[str, str]], cwds: list[str], listed: dict) -> dict:
    market_name = {os.path.realpath(m["path"]): m["name"] for m in listed.get("marketplaces", []) if m.get("path")}
    plugin_id: dict[str, str] = {}
    failed = []
    for p in plugins:
        if not out.get(p["id"], Reading(loads=False)).loads:
            continue
        mpath, name = where[p["id"]]
        answer = server.request("plugin/install", {"marketplacePath": mpath, "pluginName": name})
        if "error" in answer:
            failed.append({"plugin": p["id"], "error": json.dumps(answer["error"])[:200]})
            continue
        plugin_id[p["id"]] = f"{name}@{market_name.get(mpath, '?')}"
    skills: dict[str, set[str]] = {}
    for entry in (server.request("skills/list", {"cwds": cwds, "forceReload": True}).get("result") or {}).get("data", []):
        for k in entry.get("skills", []):
            if k.get("pluginId"):
                skills.setdefault(k["pluginId"], set()).add(_unprefix(k["name"]))
    hooks: dict[str, set[str]] = {}
    for entry in (server.request("hooks/list", {"cwds": cwds}).get("result") or {}).get("data", []):
        for h in entry.get("hooks", []):
            if h.get("pluginId"):
                hooks.setdefault(h["pluginId"], set()).add(h["key"])
    differ = []
    for pid, cid in plugin_id.items():
        r = out[pid]
        got_skills, got_hooks = sorted(skills.get(cid, set())), len(hooks.get(cid, set()))
        if got_skills != r.names or got_hooks != r.hook_handlers:
            differ.append({"plugin": pid, "onlyInstalled": sorted(set(got_skills) - set(r.names)),
                           "onlyRead": sorted(set(r.names) - set(got_skills)),
                           "hooks": [r.hook_handlers, got_hooks]})
    commands_as_skills = sum(1 for d in differ if any(n.startswith("source-command-") for n in d["onlyInstalled"]))
    return {"installed": len(plugin_id), "installFailed": failed, "differ": differ,
            "commandsAsSkills": commands_as_skills}


# -- agreement ----------------------------------------------------------------------------------

def _kinds(reading: Reading) -> list[str]:
    return sorted({n.split(":", 1)[0] for n in reading.notes})


def _about(diag: dict, name: str) -> bool:
    """Whether a sidecar diagnostic is about the skill, command or server ``name``."""
    path, message = diag.get("path") or "", diag.get("message") or ""
    return (diag.get("name") in (name, )
            or f"/{name}/" in path or Path(path).stem == name
            or f"'{name}'" in message or f'"{name}"' in message)


def _cause_of_name(name: str, mine: Reading, folder: Path | None, peer: str, aspect: str) -> str:
    """Why the peer has ``name`` and the sidecar does not: the sidecar diagnostic about it, else what the
    plugin's files show."""
    for d in mine.diagnostics:
        if _about(d, name) and d["kind"] not in ("shadowed", "plugin_manifest_both"):
            msg = d["message"]
            if d["kind"] == "invalid_mcp_servers" and " " in name:
                return "invalid_mcp_servers (a server name with a space)"
            if d["kind"] == "invalid_mcp_servers" and len(name) > 32:
                return "invalid_mcp_servers (a server name longer than 32)"
            if d["kind"] == "invalid_name":
                quoted = re.search(r"name '([^']*)'", msg)
                bad = quoted.group(1) if quoted else name
                return "invalid_name (" + ("an underscore" if "_" in bad else
                                           "upper case or spaces" if bad != bad.lower() or " " in bad else
                                           "a slash" if "/" in bad else
                                           "a leading digit or other" ) + ")"
            return d["kind"]
    if folder is not None:
        if aspect == "skills" and (folder / "skills" / f"{name}.md").is_file():
            return "skills/<name>.md file (the peer serves it as a skill)"
        if aspect == "skills" and (folder / "commands" / f"{name}.md").is_file() and peer == "codex":
            return "a command the peer serves as a skill"
        if aspect == "skills" and any(len(hit.relative_to(folder / "skills").parts) > 2
                                      for hit in (folder / "skills").glob(f"**/{name}/SKILL.md")):
            return "a skill nested below skills/<folder>/ (the peer looks deeper)"
    for d in mine.diagnostics:  # frontmatter names: a skill whose frontmatter name the peer uses
        if d["kind"] == "name_mismatch" and name in (d.get("message") or ""):
            return "name_mismatch (the peer names it by its frontmatter)"
    return "no sidecar diagnostic names it"


# The events Codex 0.171.0's plugin/read lists handlers of (probe_codex's every-event probe; the others it drops).
CODEX_LISTED_EVENTS = frozenset({"Interrupt", "PermissionRequest", "PostCompact", "PostToolUse", "PreCompact",
                                 "PreToolUse", "SessionEnd", "SessionStart", "Stop", "SubagentStart", "SubagentStop",
                                 "UserPromptSubmit"})


def _codex_reading_rule(manifest_hooks: object, hooks_from: str | None, folder: Path | None, mine: Reading,
                        theirs: Reading) -> str:
    """Which of Codex's own rules, each shown by a probe of ``probe_codex``, leaves out hooks the sidecar reads."""
    if hooks_from == ".claude-plugin" and isinstance(manifest_hooks, dict) and manifest_hooks \
            and "hooks" not in manifest_hooks and not theirs.hook_handlers:
        return ("a Claude manifest's inline hooks without the \"hooks\" wrapper, which Claude Code runs: "
                "Codex lists none (probe claude-inline)")
    if manifest_hooks is None and folder is not None and (folder / "hooks" / "hooks.json").is_file():
        try:
            data = json.loads((folder / "hooks" / "hooks.json").read_text())
        except (OSError, ValueError):
            data = None
        extra = sorted(set(data) - {"hooks", "description"}) if isinstance(data, dict) else []
        if extra and not theirs.hook_handlers:
            return (f"Codex ignores a hooks file with a top-level key besides hooks and description ({', '.join(extra)}), "
                    "silently (probe schema-key)")
    unlisted = sorted(set(mine.hook_events) - CODEX_LISTED_EVENTS)
    if unlisted and set(theirs.hook_events) <= set(mine.hook_events) - set(unlisted):
        return f"events Codex does not list ({', '.join(unlisted)}), probe every-event"
    return ""


def _hook_cause(peer: str, mine: Reading, theirs: Reading, folder: Path | None, dialect: str) -> str:
    unknown = sorted({re.search(r"unknown hook event '([^']+)'", d["message"]).group(1)
                      for d in mine.diagnostics
                      if d["kind"] == "hook_invalid" and re.search(r"unknown hook event '([^']+)'", d["message"])})
    kinds = sorted({d["kind"] for d in mine.diagnostics if d["kind"].startswith(("hook_", "invalid_hooks",
                                                                                 "duplicate_hooks"))})
    manifest_hooks, hooks_from = None, None
    if folder is not None:
        for rel in (".codex-plugin/plugin.json", ".claude-plugin/plugin.json"):
            try:
                data = json.loads((folder / rel).read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "hooks" in data:
                manifest_hooks, hooks_from = data["hooks"], rel.split("/")[0]
                break
    if peer == "codex" and (mine.hook_handlers or 0) > (theirs.hook_handlers or 0):
        known = _codex_reading_rule(manifest_hooks, hooks_from, folder, mine, theirs)
        if known:
            return known
    if (peer == "codex" and hooks_from == ".claude-plugin" and isinstance(manifest_hooks, (str, list))
            and not theirs.hook_handlers and (mine.hook_handlers or 0) > 0
            and not (folder / "hooks" / "hooks.json").is_file()):
        return "hooks only at a Claude manifest's hooks path (Codex lists none from it)"
    if peer == "codex" and manifest_hooks == {} and (mine.hook_handlers or 0) > 0 and not theirs.hook_handlers:
        return "manifest \"hooks\": {} turns hooks off in Codex, the sidecar still reads hooks/hooks.json"
    if (peer == "codex" and manifest_hooks not in (None, {}) and folder is not None
            and (folder / "hooks" / "hooks.json").is_file() and (mine.hook_handlers or 0) > (theirs.hook_handlers or 0)):
        return "manifest hooks added to hooks/hooks.json (Codex replaces the default file)"
    if peer == "codex" and manifest_hooks is None and (mine.hook_handlers or 0) > 0 and not theirs.hook_handlers:
        return ("Codex lists none of hooks/hooks.json's handlers (no manifest hooks field, why is not known"
                + (", the file uses events the sidecar does not know: " + ", ".join(unknown) if unknown else "") + ")")
    if unknown:
        return "hook_invalid (events the sidecar does not know: " + ", ".join(unknown) + ")"
    if kinds:
        return "sidecar: " + ", ".join(kinds)
    if (mine.hook_handlers or 0) < (theirs.hook_handlers or 0) or len(mine.hook_events) < len(theirs.hook_events):
        return f"{peer} finds hooks the sidecar does not (no sidecar diagnostic)"
    return f"the sidecar finds hooks {peer} does not"


def compare_one(peer: str, p: dict, mine: Reading, theirs: Reading, folder: Path | None = None) -> dict[str, dict]:
    """Per aspect: {agree: bool, cause?: str, detail?: str}."""
    res: dict[str, dict] = {}
    if mine.loads != theirs.loads:
        if not mine.loads:
            kinds = sorted({d["kind"] for d in mine.diagnostics if d.get("path", "").rstrip("/") == str(folder)
                            or d["kind"] in ("not_a_plugin", "invalid_manifest", "duplicate_hooks_file")}) \
                or _kinds(mine)
            cause = "sidecar refuses the plugin: " + (", ".join(kinds) or "no diagnostic")
            if "not_a_plugin" in kinds and not p["manifests"]:
                cause = "sidecar refuses the plugin: not_a_plugin (a marketplace entry without a manifest)"
            elif "invalid_manifest" in kinds:
                why = next((d["message"] for d in mine.diagnostics if d["kind"] == "invalid_manifest"), "")
                cause = "sidecar refuses the plugin: invalid_manifest (" + (
                    "hooks names the default hooks/hooks.json" if "hooks.json" in why else why[:80]) + ")"
        else:
            said = [n for n in theirs.notes if n.startswith("validate says")]
            cause = (f"{peer} refuses the plugin: {said[0]}" if said
                     else f"{peer} refuses the plugin ({'; '.join(theirs.notes)[:200]})")
        res["load"] = {"agree": False, "cause": cause}
        for a in ASPECTS[1:]:
            res[a] = {"agree": False, "cause": "load differs"}
        return res
    res["load"] = {"agree": True}
    if not mine.loads:
        for a in ASPECTS[1:]:
            res[a] = {"agree": True}
        return res
    names = set(mine.skills) if peer == "codex" else set(mine.names)  # Codex serves no command templates
    if peer == "codex" and not mine.skills and mine.names and not mine.commands:
        names = set(mine.names)  # a cached reading from before ``skills`` was kept
    only_mine, only_theirs = sorted(names - set(theirs.names)), sorted(set(theirs.names) - names)
    if only_mine or only_theirs:
        causes = sorted({_cause_of_name(n, mine, folder, peer, "skills") for n in only_theirs})
        if only_mine:
            causes.append(f"only the sidecar serves {', '.join(only_mine[:4])}"
                          + (" (the sidecar reads the Codex manifest of a plugin with both)"
                             if peer == "claude" and "plugin_manifest_both" in _kinds(mine) else ""))
        res["skills"] = {"agree": False, "cause": "; ".join(causes),
                         "detail": f"sidecar-only {only_mine[:8]}; {peer}-only {only_theirs[:8]}"}
    else:
        res["skills"] = {"agree": True}
    if peer == "claude":  # Claude Code lists events, not handlers
        same = mine.hook_events == theirs.hook_events
        detail = f"events sidecar {mine.hook_events} vs {peer} {theirs.hook_events}"
    else:
        same = mine.hook_handlers == theirs.hook_handlers
        detail = (f"handlers sidecar {mine.hook_handlers} {mine.hook_events} vs {peer} "
                  f"{theirs.hook_handlers} {theirs.hook_events}")
    res["hooks"] = {"agree": True} if same else {
        "agree": False, "cause": _hook_cause(peer, mine, theirs, folder, p["dialect"]), "detail": detail}
    if mine.mcp == theirs.mcp:
        res["mcp"] = {"agree": True}
    else:
        missing = sorted(set(theirs.mcp) - set(mine.mcp))
        causes = sorted({_cause_of_name(n, mine, None, peer, "mcp") for n in missing})
        extra = sorted(set(mine.mcp) - set(theirs.mcp))
        if extra:
            causes.append(f"only the sidecar lists {', '.join(extra[:4])}")
        res["mcp"] = {"agree": False, "cause": "; ".join(causes), "detail": f"sidecar {mine.mcp} vs {peer} {theirs.mcp}"}
    if peer == "claude" and "plugin_manifest_both" in _kinds(mine):
        for a in ASPECTS[1:]:
            if not res[a]["agree"] and "Codex manifest" not in res[a]["cause"]:
                res[a]["cause"] = "the sidecar reads the Codex manifest of a plugin with both; " + res[a]["cause"]
    return res


def written_for(p: dict, peer: str) -> bool:
    return p["dialect"] in (peer, "both")


def table(plugins: list[dict], comparisons: dict[str, dict[str, dict]], peer: str, subset: bool,
          leave_out: dict[str, dict[str, str]] | None = None) -> dict:
    """Agreement per aspect; ``leave_out`` (plugin id -> aspects) drops those (plugin, aspect) pairs:
    where the peers contradict each other (``peers.contradictions``)."""
    chosen = [p for p in plugins if p["id"] in comparisons and (not subset or written_for(p, peer))]
    row = {"plugins": len(chosen)}
    for a in ASPECTS:
        counted = [p for p in chosen if a not in (leave_out or {}).get(p["id"], {})]
        agree = sum(1 for p in counted if comparisons[p["id"]][a]["agree"])
        row[a] = {"agree": agree, "of": len(counted), "pct": round(100 * agree / len(counted), 1) if counted else None}
    return row


def render_md(report: dict) -> str:
    lines = [f"# Corpus agreement: harness-sidecar vs its peers",
             "",
             f"{report['plugins']} plugins from {len(report['repositories'])} repositories "
             f"(sidecar: server/ as of {report['sidecarCommit']}; {report['peers']}); "
             f"made by `python -m bench.corpus_peers.compare` at {report['when']}.",
             "", "| peer | plugins | load | skills+commands | hooks | MCP servers |",
             "| --- | --- | --- | --- | --- | --- |"]
    for key, row in report["tables"].items():
        cells = [f"{row[a]['agree']}/{row[a]['of']} ({row[a]['pct']}%)" for a in ASPECTS]
        lines.append(f"| {key} | {row['plugins']} | " + " | ".join(cells) + " |")
    lines += ["", "Against Codex the sidecar's command templates are left out (Codex serves none); against "
              "Claude Code hooks are compared as the set of events (`plugin details` lists events).", "",
              "## Causes", "", "| peer | aspect | cause | plugins |", "| --- | --- | --- | --- |"]
    for c in report["causes"]:
        lines.append(f"| {c['peer']} | {c['aspect']} | {c['cause']} | {c['count']} |")
    lines += ["", "## Every disagreement", "", "| plugin | written for | peer | aspect | cause | detail |",
              "| --- | --- | --- | --- | --- | --- |"]
    for d in report["disagreements"]:
        detail = str(d.get("detail", "")).replace("|", "\\|")
        cause = d["cause"].replace("|", "\\|")
        lines.append(f"| {d['plugin']} | {d['dialect']} | {d['peer']} | {d['aspect']} | {cause} | {detail} |")
    v = report.get("claudeValidate")
    if v:
        lines += ["", "## `claude plugin validate` (recorded, not scored)", "",
                  f"{v['failed']} of {v['asked']} plugins fail validation; {v['failedButLoads']} of those load in "
                  "Claude Code's loader all the same. Most frequent errors:", ""]
        lines += [f"- {n} × {e}" for e, n in v["top"]]
    c = report.get("codexInstalledCheck")
    if c:
        lines += ["", "## Codex: installed plugins (`--codex-installed`)", "",
                  f"{c['installed']} plugins installed with `plugin/install`; `skills/list` + `hooks/list` differ "
                  f"from `plugin/read` for {len(c['differ'])}; {len(c['installFailed'])} installs failed.", ""]
        lines += [f"{c['commandsAsSkills']} of them gain skills named `source-command-<command>`: once installed, Codex "
                  "serves (some of) a Claude plugin's commands as skills.", ""]
        lines += [f"- {d['plugin']}: only installed {d['onlyInstalled'][:6]}"
                  + (f" (+{len(d['onlyInstalled']) - 6})" if len(d['onlyInstalled']) > 6 else "")
                  + f"; only plugin/read {d['onlyRead'][:6]}; hooks read {d['hooks'][0]} vs installed {d['hooks'][1]}"
                  for d in c["differ"]]
        lines += [f"- install failed: {d['plugin']}: {d['error']}" for d in c["installFailed"][:20]]
    if report["skipped"]:
        lines += ["", "## Repositories skipped", ""] + [f"- {s['repo']}@{s['commit']}: {s['why']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--install-peers", action="store_true", help=f"npm install {' '.join(PEER_PACKAGES)} first")
    ap.add_argument("--peers", default="claude,codex", help="which peers to ask (claude,codex)")
    ap.add_argument("--repos", default="", help="only these owner/name, comma-separated")
    ap.add_argument("--limit", type=int, default=0, help="only the first N plugins (a quick slice)")
    ap.add_argument("--workers", type=int, default=2, help="Claude Code processes at once")
    ap.add_argument("--fresh", action="store_true", help="ask Claude Code again about every plugin (no kept readings)")
    ap.add_argument("--codex-installed", action="store_true",
                    help="also plugin/install every plugin into Codex's home and check skills/list + hooks/list "
                         "against plugin/read")
    ap.add_argument("--claude-cached-only", action="store_true",
                    help="use only kept Claude Code readings (plugins without one are left out of its table)")
    ap.add_argument("--out", default=str(RESULTS / "corpus_peers"), help="results path without extension")
    args = ap.parse_args(argv)
    if args.install_peers:
        install_peers()
    index_path = cache_dir() / "plugins.json"
    if not index_path.exists():
        sys.exit(f"no {index_path}: run python -m bench.corpus_peers.fetch first")
    index = json.loads(index_path.read_text())
    for s in index["skipped"]:
        print(f"SKIPPED {s['repo']}@{s['commit'][:12]}: {s['why']}", file=sys.stderr)
    plugins = index["plugins"]
    if args.repos:
        wanted = set(args.repos.split(","))
        plugins = [p for p in plugins if p["repo"] in wanted]
    if args.limit:
        plugins = plugins[: args.limit]
    tree = cache_dir() / "repos"
    peers = [x for x in args.peers.split(",") if x]
    started = time.monotonic()
    readings: dict[str, dict[str, Reading]] = {}
    versions: dict[str, str] = {}
    readings["sidecar"] = read_sidecar(plugins, tree)
    print(f"sidecar: {len(plugins)} plugins in {time.monotonic() - started:.0f}s", file=sys.stderr)
    extras: dict[str, dict] = {}
    codex_check: dict = {}
    if "codex" in peers:
        t = time.monotonic()
        readings["codex"], versions["codex"], codex_check = read_codex(plugins, tree, args.codex_installed)
        if codex_check:
            print(f"codex: {codex_check['installed']} plugins installed; skills/list + hooks/list differ from "
                  f"plugin/read for {len(codex_check['differ'])}; {len(codex_check['installFailed'])} installs failed",
                  file=sys.stderr)
        print(f"codex: {time.monotonic() - t:.0f}s", file=sys.stderr)
    if "claude" in peers:
        t = time.monotonic()
        commits = {r["repo"]: r["commit"] for r in index["repositories"]}
        readings["claude"], extras, versions["claude"] = read_claude(plugins, tree, args.workers, commits, args.fresh,
                                                                     args.claude_cached_only)
        print(f"claude: {time.monotonic() - t:.0f}s", file=sys.stderr)
    for pid, reading in readings.get("claude", {}).items():  # why its loader refused: what validate said
        errors = extras.get(pid, {}).get("validate", {}).get("errors", [])
        if not reading.loads and errors and not any(n.startswith("validate says") for n in reading.notes):
            reading.notes.append("validate says " + " / ".join(e.lstrip("❯ ").strip() for e in errors)[:200])
    contra = contradictions(plugins, readings) if readings.get("claude") and readings.get("codex") else {}
    comparisons: dict[str, dict[str, dict]] = {}
    disagreements = []
    causes: dict[tuple[str, str, str], int] = {}
    for peer in [x for x in ("claude", "codex") if readings.get(x)]:
        comparisons[peer] = {}
        for p in plugins:
            theirs = readings[peer].get(p["id"])
            if theirs is None:
                continue
            folder = (tree / p["repo"].replace("/", "+") / p["path"]).resolve()
            c = compare_one(peer, p, readings["sidecar"][p["id"]], theirs, folder)
            comparisons[peer][p["id"]] = c
            for aspect in ASPECTS:
                said = contra.get(p["id"], {}).get(aspect)
                if said and not c[aspect]["agree"] and c[aspect]["cause"] != "load differs":
                    why = c[aspect]["cause"].replace("; ", ", ")
                    c[aspect]["cause"] = ("the peers contradict each other on this plugin with both manifests "
                                          f"(the sidecar follows its Codex manifest): {said} [{why}]")
            for aspect in ASPECTS:
                if not c[aspect]["agree"] and c[aspect]["cause"] != "load differs":
                    disagreements.append({"plugin": p["id"], "dialect": p["dialect"], "peer": peer, "aspect": aspect,
                                          "cause": c[aspect]["cause"], "detail": c[aspect].get("detail", "")})
                    for one in c[aspect]["cause"].split("; "):
                        one = re.sub(r"^(only the sidecar (serves|lists)) .*?( \(|$)", r"\1 names the peer lacks\3", one)
                        if one.startswith("the peers contradict"):
                            one = one.split("): ", 1)[0] + ")"
                        key = (peer, aspect, re.sub(r" \(.*\)$", "", one) if one.startswith(peer) else one)
                        causes[key] = causes.get(key, 0) + 1
    # the product measured: the last commit that changed server/ (bench-only commits do not change it)
    sidecar_commit = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h", "--", "server"],
                                    capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "server"],
                           capture_output=True, text=True).stdout.strip()
    sidecar_commit += " + uncommitted changes" if dirty else ""
    tables = {}
    for peer in comparisons:
        tables[f"{peer} (all)"] = table(plugins, comparisons[peer], peer, subset=False)
        tables[f"{peer} (written for {peer})"] = table(plugins, comparisons[peer], peer, subset=True)
        if contra:
            tables[f"{peer} (written for {peer}, where the peers agree)"] = table(plugins, comparisons[peer], peer,
                                                                                 subset=True, leave_out=contra)
    repos = sorted({p["repo"] for p in plugins})
    validated = [(p["id"], extras[p["id"]]["validate"]) for p in plugins if "validate" in extras.get(p["id"], {})]
    top: dict[str, int] = {}
    for _, v in validated:
        for e in v["errors"]:
            e = re.sub(r"\s+", " ", e.lstrip("❯ ").strip())[:140]
            top[e] = top.get(e, 0) + 1
    claude_validate = {
        "asked": len(validated), "failed": sum(1 for _, v in validated if v["rc"] != 0),
        "failedButLoads": sum(1 for pid, v in validated if v["rc"] != 0 and readings["claude"][pid].loads),
        "top": sorted(top.items(), key=lambda kv: -kv[1])[:8]} if validated else None
    report = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sidecarCommit": sidecar_commit,
        "peers": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "plugins": len(plugins),
        "repositories": [r for r in index["repositories"] if r["repo"] in repos],
        "skipped": index["skipped"],
        "tables": tables,
        "claudeValidate": claude_validate,
        "codexInstalledCheck": codex_check or None,
        "causes": [{"peer": k[0], "aspect": k[1], "cause": k[2], "count": v}
                   for k, v in sorted(causes.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[1]))],
        "disagreements": disagreements,
        "peersContradict": contra,
        "perPlugin": [{**p, "readings": {r: asdict(readings[r][p["id"]]) for r in readings if p["id"] in readings[r]},
                       "claudeValidate": extras.get(p["id"], {})} for p in plugins],
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(render_md(report))
    for key, row in tables.items():
        print(f"{key:50} n={row['plugins']:4} " + "  ".join(
            f"{a} {row[a]['agree']}/{row[a]['of']} ({row[a]['pct']}%)" for a in ASPECTS))
    print(f"wrote {out.with_suffix('.md')} and .json ({len(disagreements)} disagreements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
