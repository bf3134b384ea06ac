"""Issue 31's corpus check: the public corpus's plugins that declare remote MCP servers list their
tools when trusted.

For every plugin of ``<cache>/plugins.json`` (laid out by ``bench.corpus_peers.fetch``) whose
declarations — ``.mcp.json``, the manifests' ``mcpServers`` (inline, or the files they name) — hold
a remote server (``type: http|sse``, or a ``url``), a copy of the plugin is laid out under
``<cache>/work/remote/`` whose non-empty server URLs point at one local stand-in
(``bench.corpus_peers.standin``: the official SDK on 127.0.0.1, ``/mcp`` streamable HTTP and
``/sse`` legacy SSE, chosen by the entry's ``type``). Everything else stays as the plugin wrote it:
headers and their ``${VAR}``s (every variable they name is set to a dummy value in the sidecar's
environment), ``oauth`` blocks, empty URLs. Then the real sidecar starts one thread per plugin with
the plugin trusted for its remote servers only (``trustedPlugins: [{name, hooks: false,
extensions: false, mcpServers: [...]}]``: its stdio servers and hooks do not run) and each remote
server is judged: **listed** when ``mcp__<plugin_P_S>__echo`` is among the thread's tools, else not
listed with the sidecar's diagnostic for it (kind + message) as the cause.

    python -m bench.corpus_peers.remote            # -> bench/results/corpus_remote.{md,json}
    python -m bench.corpus_peers.remote --repos anthropics/knowledge-work-plugins

It changes no product code and needs no network (the stand-in is on loopback).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.corpus_peers.fetch import cache_dir

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
MANIFESTS = (".claude-plugin/plugin.json", ".codex-plugin/plugin.json")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


@dataclass
class Declared:
    """One remote server as the plugin's files declare it."""
    plugin_id: str
    plugin: str          # the plugin's name (catalog.plugins[].name once read)
    server: str          # its key in the declaring file
    file: str            # the declaring file, relative to the plugin's folder
    type: str | None
    url: str | None
    headers: list[str] = field(default_factory=list)   # header names only
    variables: list[str] = field(default_factory=list)  # ${VAR}s its headers / url name
    oauth: bool = False
    also_in: list[str] = field(default_factory=list)   # other files declaring the same key (counted once)
    # the sidecar's verdict
    name: str | None = None       # plugin_<plugin>_<server> as listed in catalog.mcpServers
    transport: str | None = None  # as the sidecar lists it
    listed: bool = False          # its tools are listed (mcp__<name>__echo)
    tools: list[str] = field(default_factory=list)
    called: bool = False          # tools/call of its echo answered with the text sent
    headers_sent: bool | None = None  # its declared headers reached the stand-in (by name); None: none declared
    cause: str = ""               # the kind that says why not (or "" when listed)
    message: str = ""             # the sidecar's message for it


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _server_maps(folder: Path) -> list[tuple[str, dict, list]]:
    """(file, the JSON document, the key path to its servers map) for every declaration of a plugin."""
    out: list[tuple[str, dict, list]] = []
    files: list[str] = []
    if (folder / ".mcp.json").is_file():
        files.append(".mcp.json")
    for manifest in MANIFESTS:
        data = _read_json(folder / manifest)
        if not isinstance(data, dict):
            continue
        ms = data.get("mcpServers")
        refs = [ms] if isinstance(ms, str) else [m for m in ms if isinstance(m, str)] if isinstance(ms, list) else []
        if isinstance(ms, dict):
            out.append((manifest, data, ["mcpServers"]))
        if isinstance(ms, list):
            out.extend((manifest, data, ["mcpServers", i]) for i, m in enumerate(ms) if isinstance(m, dict))
        for ref in refs:
            rel = os.path.normpath(ref)
            if rel not in files and (folder / rel).is_file():
                files.append(rel)
    for rel in files:
        data = _read_json(folder / rel)
        if isinstance(data, dict):
            out.append((rel, data, ["mcpServers"] if isinstance(data.get("mcpServers"), dict) else []))
    return out


def _at(data, path: list):
    for key in path:
        data = data[key]
    return data


def _is_remote(spec: object) -> bool:
    return isinstance(spec, dict) and (spec.get("type") in ("http", "sse", "streamable-http", "streamableHttp")
                                       or "url" in spec)


def declared_remote(p: dict, folder: Path) -> list[Declared]:
    out: list[Declared] = []
    for rel, data, path in _server_maps(folder):
        for server, spec in _at(data, path).items():
            if not _is_remote(spec):
                continue
            twice = next((d for d in out if d.server == server), None)
            if twice is not None:  # the sidecar lists a key once (the later one: invalid_mcp_servers)
                twice.also_in.append(rel)
                continue
            headers = spec.get("headers") if isinstance(spec.get("headers"), dict) else {}
            text = json.dumps([spec.get("url"), headers])
            out.append(Declared(p["id"], p["name"], server, rel, spec.get("type"),
                                spec.get("url") if isinstance(spec.get("url"), str) else None,
                                sorted(headers), sorted(set(VAR.findall(text))), "oauth" in spec))
    return out


def lay_out(folder: Path, target: Path, urls: dict[str, str]) -> None:
    """A copy of the plugin whose non-empty remote URLs point at the stand-in (``/sse`` for sse, else ``/mcp``)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(folder, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    changed: dict[str, dict] = {}
    for rel, data, path in _server_maps(target):
        for spec in _at(data, path).values():
            if _is_remote(spec) and isinstance(spec.get("url"), str) and spec["url"]:
                spec["url"] = urls["sse"] if spec.get("type") == "sse" else urls["http"]
                changed[rel] = data
    for rel, data in changed.items():
        dest = target / rel
        if dest.is_symlink():  # never write through a link into the laid-out repository
            dest.unlink()
        dest.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


class Standin:
    """A stand-in server as a child process: ours (both transports, no auth), or with ``oauth`` the tests'
    SDK server that is its own OAuth 2.1 authorization server (tests/mcp_servers/http_server.py, one
    transport per process) — every request without its token is answered 401."""

    def __init__(self, log: Path, oauth: str | None = None) -> None:
        command = [sys.executable, "-m", "bench.corpus_peers.standin"] if oauth is None else \
            [sys.executable, str(REPO / "tests" / "mcp_servers" / "http_server.py"), "--oauth", "--transport", oauth]
        with open(log, "a") as err:  # the SDK's session log lines, kept out of the report
            self.proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"the stand-in did not start: {line!r}")
        self.base = f"http://127.0.0.1:{int(line.split()[1])}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _about(diag: dict, name: str, server: str) -> bool:
    return diag.get("name") == name or diag.get("server") in (name, server) or name in diag.get("message", "")


def judge(sc, p: dict, copy: Path, found: list[Declared], oauth: bool = False) -> None:
    """One thread with the plugin trusted for its remote servers; fills each server's verdict."""
    first = sc.call("thread/start", {"roots": [], "plugins": [str(copy)], "watch": False}, timeout=120)
    sc.call("thread/close", {"threadId": first["threadId"]})
    here = [e for e in first["catalog"]["plugins"] if os.path.realpath(e["path"]) == os.path.realpath(copy)]
    entry = next((e for e in here if e["name"] == p["name"]), here[0] if here else None)
    if entry is None:
        diags = [d for d in first.get("diagnostics", []) if str(d.get("path", "")).startswith(str(copy))]
        for d in found:
            d.cause = "plugin_not_loaded"
            d.message = "; ".join(f"{x['kind']}: {x.get('message', '')[:200]}" for x in diags)[:600]
        return
    listed = {m["server"]: m for m in first["catalog"]["mcpServers"] if m.get("plugin") == entry["name"]}
    remote = [m["server"] for m in listed.values() if m["transport"] != "stdio"]
    answer = sc.call("thread/start", {"roots": [], "plugins": [str(copy)], "watch": False, "trustedPlugins": [
        {"name": entry["name"], "hooks": False, "extensions": False, "mcpServers": remote}]}, timeout=180)
    tools = [t["name"] for t in answer["tools"]]
    diags = answer.get("diagnostics", [])
    if oauth:  # the sign-in is asked for after the start: thread/diagnostic mcp_auth_required, one per server
        names = {listed[d.server]["name"] for d in found if d.server in listed and d.url}
        names -= {x.get("name") for x in diags}  # already said unavailable at the start
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not names <= _said(sc, answer["threadId"]):
            time.sleep(0.1)
        diags = diags + [n["params"] for n in sc.notifications if n.get("method") == "thread/diagnostic"
                         and n["params"].get("threadId") == answer["threadId"]]
    try:
        _verdicts(sc, answer["threadId"], entry["name"], found, listed, tools, diags + first.get("diagnostics", []),
                  copy)
    finally:
        sc.call("thread/close", {"threadId": answer["threadId"]})


def _said(sc, thread: str) -> set[str]:
    """The servers a thread/diagnostic (mcp_auth_required, mcp_unavailable…) has named so far."""
    return {n["params"].get("name") for n in list(sc.notifications) if n.get("method") == "thread/diagnostic"
            and n["params"].get("threadId") == thread}


def _verdicts(sc, thread: str, plugin: str, found: list[Declared], listed: dict, tools: list[str], diags: list[dict],
              copy: Path) -> None:
    for d in found:
        d.plugin = plugin
        m = listed.get(d.server)
        if m is None:
            hit = [x for x in diags if d.server in x.get("message", "")
                   and str(x.get("path", "")).startswith(str(copy))]
            d.cause = hit[0]["kind"] if hit else "not_in_catalog"
            d.message = hit[0].get("message", "")[:400] if hit else "catalog.mcpServers does not list it"
            continue
        d.name, d.transport = m["name"], m["transport"]
        d.tools = sorted(t for t in tools if t.startswith(f"mcp__{m['name']}__"))
        d.listed = f"mcp__{m['name']}__echo" in d.tools
        if d.listed:
            answer = sc.call("tools/call", {"threadId": thread, "call": {
                "id": f"echo-{d.server}", "name": f"mcp__{m['name']}__echo", "arguments": {"text": d.server}}},
                timeout=120)["result"]
            content = answer.get("content") or [{}]
            d.called = not answer.get("isError") and content[0].get("text") == d.server
            if not d.called:
                d.message = f"listed, but tools/call of echo answered {json.dumps(answer)[:300]}"
            if d.headers and f"mcp__{m['name']}__headers" in d.tools:  # our stand-in says which headers came
                seen = sc.call("tools/call", {"threadId": thread, "call": {
                    "id": f"headers-{d.server}", "name": f"mcp__{m['name']}__headers", "arguments": {}}},
                    timeout=120)["result"]
                names = set(((seen.get("content") or [{}])[0].get("text") or "").split())
                d.headers_sent = {h.lower() for h in d.headers} <= names
                if not d.headers_sent:
                    d.message = f"listed, but the stand-in saw headers {sorted(names)}, not all of {d.headers}"
            continue
        hit = [x for x in diags if _about(x, m["name"], d.server)]
        d.cause = hit[0]["kind"] if hit else "no_tools_no_diagnostic"
        d.message = hit[0].get("message", "")[:400] if hit else ""
        if d.cause == "mcp_unavailable" and d.url == "":
            d.cause = "mcp_unavailable (url left empty by the plugin)"
        elif d.cause == "mcp_unavailable" and "refused the Authorization header" in d.message:
            d.cause = "mcp_unavailable (its own Authorization header refused: a static token, no OAuth)"


def sidecar_remote(SidecarProcess, env: dict, plugins: list[dict], tree: Path, scanned: set) -> list[dict]:
    """The cross-check: every plugin read untrusted from its laid-out folder; the remote servers the
    sidecar lists (or calls an unsupported transport) that the file scan above did not find."""
    out: list[dict] = []
    with SidecarProcess(env=env, stderr=subprocess.DEVNULL) as sc:
        sc.initialize()
        for p in plugins:
            folder = str((tree / p["repo"].replace("/", "+") / p["path"]).resolve())
            answer = sc.call("thread/start", {"roots": [], "plugins": [folder], "watch": False}, timeout=120)
            sc.call("thread/close", {"threadId": answer["threadId"]})
            names = {e["name"] for e in answer["catalog"]["plugins"] if os.path.realpath(e["path"]) == folder}
            for m in answer["catalog"]["mcpServers"]:
                if m.get("plugin") in names and m["transport"] != "stdio" and (p["id"], m["server"]) not in scanned:
                    out.append({"plugin_id": p["id"], "server": m["server"], "transport": m["transport"]})
    return out


def run(repos: list[str] | None, oauth: bool = False) -> dict:
    sys.path.insert(0, str(REPO / "server"))
    from harness_sidecar.console.client import SidecarProcess, child_env

    cache = cache_dir()
    index = json.loads((cache / "plugins.json").read_text())
    tree = cache / "repos"
    work = cache / "work" / "remote"
    work.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in index["plugins"] if not repos or p["repo"] in repos]
    todo: list[tuple[dict, Path, list[Declared]]] = []
    for p in chosen:
        folder = tree / p["repo"].replace("/", "+") / p["path"]
        found = declared_remote(p, folder) if folder.is_dir() else []
        if found:
            todo.append((p, folder, found))
    variables = sorted({v for _, _, f in todo for d in f for v in d.variables})
    state = cache / "work" / "remote-state"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    env = child_env({"HARNESS_SIDECAR_STATE_DIR": str(state), "HARNESS_SIDECAR_CACHE_DIR": "off",
                     **{v: f"dummy-{v.lower()}" for v in variables}})
    missed = sidecar_remote(SidecarProcess, env, chosen, tree, {(p["id"], d.server) for p, _, f in todo for d in f})
    log = cache / "work" / "remote-standin.log"
    log.write_text("")
    standins = [Standin(log, "http"), Standin(log, "sse")] if oauth else [Standin(log)]
    urls = {"http": standins[0].base + "/mcp", "sse": standins[-1].base + "/sse"}
    started = time.monotonic()
    try:
        with SidecarProcess(env=env, stderr=subprocess.DEVNULL) as sc:
            sc.initialize()
            for n, (p, folder, found) in enumerate(todo, 1):
                copy = work / p["id"].replace("/", "+")
                lay_out(folder, copy, urls)
                judge(sc, p, copy, found, oauth)
                print(f"  {n}/{len(todo)} {p['id']}: {sum(d.listed for d in found)}/{len(found)} listed",
                      file=sys.stderr)
    finally:
        for standin in standins:
            standin.stop()
    servers = [d for _, _, f in todo for d in f]
    causes = collections.Counter(d.cause for d in servers if not d.listed)
    return {"oauth": oauth, "plugins": len(chosen), "pluginsWithRemote": len(todo), "servers": len(servers),
            "listed": sum(d.listed for d in servers), "notListed": dict(causes.most_common()),
            "byType": dict(collections.Counter(str(d.type) for d in servers)),
            "called": sum(d.called for d in servers),
            "headersSent": sum(d.headers_sent is True for d in servers), "missedByScan": missed,
            "alsoDeclared": sum(bool(d.also_in) for d in servers),
            "withOauth": sum(d.oauth for d in servers), "withHeaders": sum(bool(d.headers) for d in servers),
            "variables": variables, "seconds": round(time.monotonic() - started, 1),
            "rows": [asdict(d) for d in servers]}


def render_md(report: dict) -> str:
    lines = ["# The corpus's remote MCP servers, trusted, against a local stand-in" +
             (" that asks for OAuth (the sidecar without a UI)" if report["oauth"] else ""), "",
             f"{report['pluginsWithRemote']} of {report['plugins']} plugins declare {report['servers']} remote "
             f"servers (by type: {report['byType']}); **{report['listed']} list their tools**.", "",
             f"Of those listed, {report['called']} answered a `tools/call` of `echo` through the sidecar. "
             f"{report['withHeaders']} declare headers ({report['headersSent']} seen by the stand-in, by name), {report['withOauth']} an `oauth` block; "
             f"{report['alsoDeclared']} are declared twice (manifest and `.mcp.json`: counted once). "
             f"Remote servers the sidecar lists that the file scan missed: {len(report['missedByScan'])} "
             f"{report['missedByScan'] or ''}.", "",
             "| not listed: cause | servers |", "| --- | --- |"]
    lines += [f"| `{k}` | {v} |" for k, v in report["notListed"].items()]
    lines += ["", f"${{VAR}}s set to dummy values: {', '.join(report['variables']) or 'none'}", "",
              "| plugin | server | type | listed | cause | message |", "| --- | --- | --- | --- | --- | --- |"]
    for r in sorted(report["rows"], key=lambda r: (r["listed"], r["plugin_id"], r["server"])):
        lines.append(f"| {r['plugin_id']} | {r['server']} | {r['type']} | {'yes' if r['listed'] else 'no'} | "
                     f"{r['cause']} | {r['message'][:160].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", help="comma-separated owner/name: only these repositories")
    ap.add_argument("--oauth", action="store_true", help="the stand-in asks every request for OAuth and the editor "
                    "has no ui.openUrl: each server should be mcp_auth_required (its sign-in URL a diagnostic)")
    ap.add_argument("--out", help="path stem of the .md and .json (default bench/results/corpus_remote[_oauth])")
    args = ap.parse_args(argv)
    report = run(args.repos.split(",") if args.repos else None, args.oauth)
    args.out = args.out or str(RESULTS / ("corpus_remote_oauth" if args.oauth else "corpus_remote"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(render_md(report))
    print(f"{report['servers']} remote servers in {report['pluginsWithRemote']} plugins: {report['listed']} listed; "
          f"not listed: {report['notListed']} ({report['seconds']} s) -> {out}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
