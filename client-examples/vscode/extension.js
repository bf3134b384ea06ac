'use strict';
// VS Code extension for harness-sidecar: a catalog tree (skills, templates and command templates,
// extensions, command hooks, plugins with their parts and trust state, diagnostics), a status-bar item, commands (show catalog, activate skill, render template,
// show system prompt, call a tool by hand, refresh, restart), catalog diagnostics in the Problems panel, read-only
// documents for what the sidecar returns, and the editor's side of the protocol (requests the
// sidecar sends, dispatched by method in REVERSE_REQUESTS; notifications in NOTIFICATIONS).
//
// Asking the user for trusted extensions (ui/confirm, ui/select, ui/input, ui/notify, ui/status):
// ui.js. *Harness: Run Extension Command* runs the commands extensions register (commands/list,
// commands/run).
//
// Two modes (`harnessSidecar.mode`): "jsonl" (client.js, the default) and "lsp"
// (lsp-extension.js: vscode-languageclient, with live diagnostics and hovers while writing).
// Trust rules: settings.js.

const vscode = require('vscode');
const settingsModule = require('./settings');
const { SidecarClient } = require('./client');
const { EditorUi, UI_CAPABILITIES } = require('./ui');

/** @typedef {import('./client').ServerRequests} ServerRequests */
/** @typedef {import('./client').ServerNotifications} ServerNotifications */
/** @typedef {import('./types/protocol').ThreadStartParams} ThreadStartParams */
/** @typedef {import('./types/protocol').ThreadStartResult} ThreadStartResult */
/** @typedef {import('./types/protocol').CommandSpec} CommandSpec */
/** @typedef {import('./types/protocol').CommandResult} CommandResult */
/**
 * @typedef {{[M in keyof ServerRequests]?: (harness: Harness, params: ServerRequests[M]['params'],
 *   token: import('./client').Token) => ServerRequests[M]['result'] | Promise<ServerRequests[M]['result']>}} ReverseRequests
 */
/**
 * @typedef {{[M in keyof ServerNotifications]?: (harness: Harness, params: ServerNotifications[M]) => void}} Notifications
 */

const SCHEME = 'harness-sidecar';
/** @type {Record<string, 'Information' | 'Warning'>} */
const SEVERITY_OF_KIND = {
  shadowed: 'Information', root_missing: 'Information', duplicate_root: 'Warning', root_not_found: 'Warning',
  root_not_directory: 'Warning', extension_not_found: 'Warning', description_too_long: 'Warning',
};
// Kinds the LSP mode's live diagnostics do not cover (in LSP mode only these go to Problems from the catalog).
const ROOT_LEVEL_KINDS = new Set(['root_missing', 'root_not_found', 'root_not_directory', 'duplicate_root',
  'extension_not_found', 'hash_mismatch', 'extension_failed', 'too_many_skills', 'missing_skill_file', 'not_a_skill',
  'unreadable']);
// Diagnostics about a root itself: quiet when the user never chose the roots (the defaults).
const ROOT_KINDS = new Set(['root_missing', 'root_not_found', 'root_not_directory']);

/**
 * Whether a catalog diagnostic counts as a problem (the status bar's number): not one of severity
 * "info" (a root that does not exist), not a shadowed resource (an earlier root wins, as intended).
 * @param {import('./types/protocol').Diagnostic} d
 */
function isProblem(d) {
  return d.severity !== 'info' && d.kind !== 'shadowed' && d.kind !== 'root_missing';
}

/** @param {import('./types/protocol').Diagnostic} d */
function severityOf(d) {
  if (d.severity === 'info') return 'Information';
  if (d.severity === 'warning') return 'Warning';
  return SEVERITY_OF_KIND[d.kind] || 'Error';
}

/**
 * The editor's tools (item/tool/call). `hookAs` (protocol-v4 §3): how command hooks written for Claude
 * Code see a tool — `read_file` is its `Read {file_path, offset?, limit?}`, so a hook or an `if` rule on
 * `Read` (a `.env` guard) covers it. `editor_selection` has no counterpart there: hooks see its own name.
 * @type {ThreadStartParams['dynamicTools']}
 */
const EDITOR_TOOLS = [{
  name: 'editor_selection',
  description: 'The text selected in the active editor.',
  inputSchema: { type: 'object', properties: {} },
}, {
  name: 'read_file',
  description: 'Read a file as the editor has it (unsaved changes included): its text, or `limit` lines from '
    + 'line `offset` (1-based).',
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'Absolute, or relative to the first workspace folder.' },
      offset: { type: 'integer', minimum: 1 },
      limit: { type: 'integer', minimum: 1 },
    },
    required: ['path'],
    additionalProperties: false,
  },
  hookAs: { name: 'Read', input: { file_path: 'path' } },
}];

/**
 * `read_file`: the open document's text when the editor has it, else the file on disk.
 * @param {{path: string, offset?: number, limit?: number}} args
 * @returns {import('./types/protocol').ItemToolCallResult}
 */
function readFile(args) {
  const fs = require('fs');
  const path = require('path');
  const folders = vscode.workspace.workspaceFolders || [];
  const file = path.isAbsolute(args.path) ? args.path
    : path.resolve(folders.length ? folders[0].uri.fsPath : process.cwd(), args.path);
  const open = (vscode.workspace.textDocuments || []).find((d) => d.uri && d.uri.scheme === 'file' && d.uri.fsPath === file);
  let text;
  try {
    text = open ? open.getText() : fs.readFileSync(file, 'utf8');
  } catch (err) {
    return { contentItems: [{ type: 'inputText', text: `cannot read ${file}: ${err.message}` }], success: false };
  }
  if (args.offset || args.limit) {
    const lines = text.split('\n');
    const from = (args.offset || 1) - 1;
    text = lines.slice(from, args.limit ? from + args.limit : undefined).join('\n');
  }
  return { contentItems: [{ type: 'inputText', text }], success: true };
}

/**
 * Requests the sidecar sends the editor, by method: `handler(harness, params, token)`; `token` is
 * cancelled when the sidecar stops waiting (`$/cancelRequest`).
 * @type {ReverseRequests}
 */
const REVERSE_REQUESTS = {
  'ui/confirm': (harness, params, token) => harness.ui.confirm(params, token),
  'ui/select': (harness, params, token) => harness.ui.select(params, token),
  'ui/input': (harness, params, token) => harness.ui.input(params, token),
  'ui/elicit': (harness, params, token) => harness.ui.elicit(params, token),
  'ui/openUrl': (harness, params) => harness.ui.openUrl(params),
  'item/tool/call': async (harness, params) => {
    if (params.tool === 'read_file') return readFile(/** @type {any} */ (params.arguments));
    if (params.tool !== 'editor_selection') {
      return { contentItems: [{ type: 'inputText', text: `unknown editor tool ${params.tool}` }], success: false };
    }
    const editor = vscode.window.activeTextEditor;
    if (!editor) return { contentItems: [{ type: 'inputText', text: 'no active editor' }], success: false };
    return { contentItems: [{ type: 'inputText', text: editor.document.getText(editor.selection) }], success: true };
  },
};

/** Notifications from the sidecar, by method. @type {Notifications} */
const NOTIFICATIONS = {
  'ui/notify': (harness, params) => harness.ui.notify(params),
  'ui/status': (harness, params) => harness.ui.status(params),
  'thread/diagnostic': (harness, params) => {
    const who = 'extensionId' in params && params.extensionId ? params.extensionId : params.threadId;
    const hook = 'hook' in params && params.hook ? `${params.hook} ` : '';
    const line = `[${who}] ${hook}${params.kind}: ${params.message}`;
    if ('severity' in params && params.severity === 'info') harness.output.info(line);
    else harness.output.warn(line);
  },
  // The live catalog: refresh the same thread (its activated skills stay) at the next idle moment.
  'catalog/changed': (harness, params) => harness.catalogChanged(params),
};

/** Read-only documents under harness-sidecar:/… (catalog, system prompt, skills, rendered templates). */
class Documents {
  constructor() {
    this.contents = new Map();
    this.changed = new vscode.EventEmitter();
    this.onDidChange = this.changed.event;
  }

  provideTextDocumentContent(uri) {
    return this.contents.get(uri.path) || '';
  }

  async show(name, content) {
    const uri = vscode.Uri.parse(`${SCHEME}:/${name}`);
    this.contents.set(uri.path, content);
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
    return doc;
  }
}

/**
 * What of a plugin's code may run (`trusted` of its catalog entry), in words: "data only" (it
 * brings no code), "trusted", "not trusted", or "partly trusted: …" naming what is granted.
 * @param {import('./types/protocol').PluginEntry} p
 */
function pluginTrust(p) {
  const code = (p.hooks ? 1 : 0) + p.mcpServers.length + p.extensions.length;
  if (!code) return 'data only';
  const granted = [];
  if (p.hooks && p.trusted.hooks) granted.push('hooks');
  if (p.trusted.mcpServers.length) granted.push(`MCP ${p.trusted.mcpServers.join(', ')}`);
  if (p.trusted.extensions.length) granted.push(`extensions ${p.trusted.extensions.join(', ')}`);
  const all = (!p.hooks || p.trusted.hooks) && p.trusted.mcpServers.length === p.mcpServers.length
    && p.trusted.extensions.length === p.extensions.length;
  if (!granted.length) return 'not trusted';
  return all ? 'trusted' : `partly trusted: ${granted.join('; ')}`;
}

/** A plugin's extension id as listed, with or without its `<plugin>:` prefix, is granted. */
function extensionTrusted(p, id) {
  const bare = id.startsWith(`${p.name}:`) ? id.slice(p.name.length + 1) : id;
  return p.trusted.extensions.some((t) => t === id || t === bare || t === `${p.name}:${t}`);
}

/** The catalog tree: Skills, Templates (and command templates), Extensions, Command hooks, Plugins, Diagnostics. */
class CatalogTree {
  constructor() {
    this.started = null;
    this.changed = new vscode.EventEmitter();
    this.onDidChangeTreeData = this.changed.event;
  }

  /** @param {any} started  @param {import('./types/protocol').Diagnostic[]} [shown] the diagnostics to list */
  set(started, shown) {
    this.started = started;
    this.shown = shown || (started ? started.diagnostics : []);
    this.changed.fire(undefined);
  }

  /** Nothing to list: VS Code then shows the view's welcome content (package.json viewsWelcome). */
  isEmpty() {
    const started = this.started;
    if (!started) return false;
    const { catalog } = started;
    const none = (list) => !list || !list.length;
    return none(catalog.skills) && none(catalog.templates) && none(catalog.extensions) && none(catalog.hooks)
      && none(catalog.plugins) && none(catalog.commandTemplates) && none(this.shown);
  }

  getTreeItem(node) {
    return node.item;
  }

  getChildren(node) {
    const started = this.started;
    if (!started || this.isEmpty()) return [];
    const { catalog } = started;
    const diagnostics = this.shown;
    const group = (id, label, count) => {
      const item = new vscode.TreeItem(`${label} (${count})`, count ? vscode.TreeItemCollapsibleState.Expanded
        : vscode.TreeItemCollapsibleState.None);
      item.id = id;
      return { group: id, item };
    };
    if (!node) {
      const hooks = catalog.hooks && catalog.hooks.length ? [group('hooks', 'Command hooks', catalog.hooks.length)] : [];
      const plugins = catalog.plugins && catalog.plugins.length ? [group('plugins', 'Plugins', catalog.plugins.length)] : [];
      const templates = catalog.templates.length + (catalog.commandTemplates || []).length;
      return [group('skills', 'Skills', catalog.skills.length), group('templates', 'Templates', templates),
        group('extensions', 'Extensions', catalog.extensions.length), ...hooks, ...plugins,
        group('diagnostics', 'Diagnostics', diagnostics.length)];
    }
    const open = (file, line) => ({ command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(file),
      line ? { selection: new vscode.Range(line - 1, 0, line - 1, 0) } : undefined] });
    const leaf = (label, description, tooltip, icon, command) => {
      const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
      Object.assign(item, { description, tooltip, iconPath: new vscode.ThemeIcon(icon), command });
      return { item };
    };
    // an unsupported handler (protocol v4: supported === false) is listed with its type; it never runs
    const hookWhat = (h) => (h.supported === false ? `${h.type || 'untyped'} handler, not supported: never runs` : h.command);
    const hookLeaf = (h) => leaf(`${h.event}${h.matcher ? ` [${h.matcher}]` : ''}`,
      `${h.trusted ? 'trusted' : 'not trusted'} · ${hookWhat(h)}`, `${hookWhat(h)}\n${h.source}`,
      h.supported === false ? 'circle-slash' : h.trusted ? 'pass' : 'lock', open(h.path || h.source.replace(/^root:/, '')));
    if (node.plugin) return pluginParts(node.plugin, catalog, leaf, hookLeaf, open);
    switch (node.group) {
      case 'skills':
        return catalog.skills.map((s) => leaf(s.name, s.description, `${s.description}\n${s.path}`, 'book',
          open(s.path)));
      case 'templates':
        return [...catalog.templates.map((t) => leaf(t.name, t.variables.length ? t.variables.join(', ') : 'no variables',
          `${t.description || ''}\n${t.path}`, 'file-text', open(t.path))),
        ...(catalog.commandTemplates || []).map((c) => leaf(c.name, c.argumentHint || 'free text',
          `${c.description || ''}\n${c.path}`, 'terminal', open(c.path)))];
      case 'extensions':
        return catalog.extensions.map((e) => leaf(e.id, e.status, e.error || e.path,
          e.status === 'loaded' ? 'pass' : e.status === 'skipped_untrusted' ? 'lock' : 'error', open(e.path)));
      case 'hooks': // declared is not granted: each with its trust state
        return catalog.hooks.map(hookLeaf);
      case 'plugins':
        return catalog.plugins.map((p) => {
          const item = new vscode.TreeItem(p.version ? `${p.name} ${p.version}` : p.name,
            vscode.TreeItemCollapsibleState.Collapsed);
          const trust = pluginTrust(p);
          Object.assign(item, { id: `plugin:${p.name}`, description: trust, tooltip: `${p.path}\n${p.dialect} manifest: ${p.manifest}`,
            iconPath: new vscode.ThemeIcon(trust === 'not trusted' ? 'lock' : 'package') });
          return { plugin: p, item };
        });
      case 'diagnostics':
        return diagnostics.map((d) => leaf(d.kind, d.message, d.hint ? `${d.message}\n${d.hint}` : d.message,
          isProblem(d) ? 'warning' : 'info', d.path ? open(d.path, d.line) : undefined));
      default:
        return [];
    }
  }
}

/**
 * The tools the model may use now (tools/list, fetched again whenever the catalog changes: an extension's
 * ctx.tools.set_active, a new MCP server's tools): Active (with where each comes from), Deferred (listed by
 * name only; the model finds them with tool_search) and Inactive (the thread's tools an extension took away).
 */
class ToolsTree {
  constructor() {
    /** @type {import('./types/protocol').ToolsListResult | null} */
    this.listed = null;
    /** @type {import('./types/protocol').ToolSpec[]} */
    this.all = [];
    this.changed = new vscode.EventEmitter();
    this.onDidChangeTreeData = this.changed.event;
  }

  /**
   * @param {import('./types/protocol').ToolsListResult | null} listed
   * @param {import('./types/protocol').ToolSpec[]} all the thread's tools (thread/start's, thread/refresh's)
   */
  set(listed, all) {
    this.listed = listed;
    this.all = all || [];
    this.changed.fire(undefined);
  }

  getTreeItem(node) {
    return node.item;
  }

  /** @param {{ group?: string, item: any }} [node] */
  getChildren(node) {
    const listed = this.listed;
    if (!listed) return [];
    const active = [], deferred = [];
    for (const tool of listed.tools) ('deferred' in tool && tool.deferred ? deferred : active).push(tool);
    const names = new Set(listed.tools.map((t) => t.name));
    const inactive = this.all.filter((t) => !names.has(t.name));
    const from = (t) => `${t.origin.kind}${t.origin.id ? ` ${t.origin.id}` : ''}`;
    const leaf = (label, description, tooltip, icon) => {
      const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
      Object.assign(item, { description, tooltip, iconPath: new vscode.ThemeIcon(icon) });
      return { item };
    };
    if (!node) {
      const group = (id, label, count) => {
        const item = new vscode.TreeItem(`${label} (${count})`, count ? vscode.TreeItemCollapsibleState.Expanded
          : vscode.TreeItemCollapsibleState.None);
        item.id = `tools:${id}`;
        return { group: id, item };
      };
      return [group('active', 'Active', active.length),
        ...(deferred.length ? [group('deferred', 'Deferred', deferred.length)] : []),
        ...(inactive.length ? [group('inactive', 'Inactive', inactive.length)] : [])];
    }
    switch (node.group) {
      case 'active':
        return active.map((t) => leaf(t.name, from(t), `${t.description}\n${from(t)}`, 'tools'));
      case 'deferred':
        return deferred.map((t) => leaf(t.name, 'deferred: found with tool_search', 'listed by name only', 'search'));
      case 'inactive':
        return inactive.map((t) => leaf(t.name, `${from(t)} · inactive`, 'an extension took it away (ctx.tools.set_active)',
          'circle-slash'));
      default:
        return [];
    }
  }
}

/**
 * A plugin's parts, each with what it is and (for code) its trust state: skills, command templates,
 * agents (metadata, never run), command hooks, MCP servers, extensions.
 * @param {import('./types/protocol').PluginEntry} p
 */
function pluginParts(p, catalog, leaf, hookLeaf, open) {
  const find = (list, name) => (list || []).find((e) => e.name === name);
  const rows = [];
  for (const name of p.skills) {
    const s = find(catalog.skills, name);
    rows.push(leaf(name, 'skill', s ? `${s.description}\n${s.path}` : name, 'book', s ? open(s.path) : undefined));
  }
  for (const name of p.commands) {
    const c = find(catalog.commandTemplates, name);
    rows.push(leaf(name, `command${c && c.argumentHint ? ` ${c.argumentHint}` : ''}`, c ? `${c.description || ''}\n${c.path}` : name,
      'terminal', c ? open(c.path) : undefined));
  }
  for (const name of p.agents) {
    const a = find(catalog.agents, name);
    rows.push(leaf(name, 'agent · listed, never run', a ? `${a.description}\n${a.path}` : name, 'person', a ? open(a.path) : undefined));
  }
  const hooks = (catalog.hooks || []).filter((h) => h.source === `plugin:${p.name}`);
  if (hooks.length) rows.push(...hooks.map(hookLeaf));
  else if (p.hooks) {
    rows.push(leaf(`command hooks (${p.hooks})`, p.trusted.hooks ? 'trusted' : 'not trusted', `${p.hooks} hook handlers of ${p.name}`,
      p.trusted.hooks ? 'pass' : 'lock', undefined));
  }
  for (const server of p.mcpServers) {
    const m = (catalog.mcpServers || []).find((e) => e.plugin === p.name && e.server === server);
    const trusted = p.trusted.mcpServers.includes(server);
    const how = m ? (m.transport === 'stdio' ? [m.command, ...(m.args || [])].join(' ') : `${m.transport} ${m.url || ''} (not started here)`) : '';
    rows.push(leaf(`MCP ${server}`, `${trusted ? 'trusted' : 'not trusted'}${how ? ` · ${how}` : ''}`,
      m ? `${m.name}\n${m.path}` : server, trusted ? 'pass' : 'lock', m ? open(m.path) : undefined));
  }
  for (const id of p.extensions) {
    const trusted = extensionTrusted(p, id);
    const e = (catalog.extensions || []).find((x) => x.id === id || x.id === `${p.name}:${id}`);
    rows.push(leaf(`extension ${id}`, `${trusted ? 'trusted' : 'not trusted'}${e ? ` · ${e.status}` : ''}`, e ? e.path : id,
      trusted ? 'pass' : 'lock', e ? open(e.path) : undefined));
  }
  return rows;
}

function catalogText(started, settings) {
  const { catalog, diagnostics } = started;
  const lines = ['# Harness catalog', ''];
  if (!settings.trusted) lines.push('_This workspace is not trusted: no extension code is loaded, no hooks or plugin code run._', '');
  lines.push('## Skills');
  for (const s of catalog.skills) lines.push(`- **${s.name}**: ${s.description} (${s.path})`);
  lines.push('', '## Templates');
  for (const t of catalog.templates) lines.push(`- **${t.name}** (${t.variables.join(', ') || 'no variables'}): ${t.description || ''}`);
  for (const c of catalog.commandTemplates || []) {
    lines.push(`- **${c.name}** (command${c.argumentHint ? ` ${c.argumentHint}` : ''}): ${c.description || ''}`);
  }
  lines.push('', '## Extensions');
  for (const e of catalog.extensions) lines.push(`- **${e.id}**: ${e.status}${e.error ? ` (${e.error})` : ''}`);
  if (catalog.hooks && catalog.hooks.length) {
    lines.push('', '## Command hooks');
    for (const h of catalog.hooks) {
      lines.push(`- **${h.event}**${h.matcher ? ` [${h.matcher}]` : ''}: \`${h.command}\` — ${h.trusted ? 'trusted' : 'not trusted'} (${h.source})`);
    }
  }
  if (catalog.plugins && catalog.plugins.length) {
    lines.push('', '## Plugins');
    for (const p of catalog.plugins) {
      lines.push(`- **${p.name}**${p.version ? ` ${p.version}` : ''} (${p.dialect}): ${pluginTrust(p)} — ${p.path}`);
      const part = (label, list) => { if (list.length) lines.push(`  - ${label}: ${list.join(', ')}`); };
      part('skills', p.skills);
      part('commands', p.commands);
      part('agents (listed, never run)', p.agents);
      if (p.hooks) lines.push(`  - command hooks: ${p.hooks} — ${p.trusted.hooks ? 'trusted' : 'not trusted'}`);
      part('MCP servers', p.mcpServers.map((m) => `${m} (${p.trusted.mcpServers.includes(m) ? 'trusted' : 'not trusted'})`));
      part('extensions', p.extensions.map((e) => `${e} (${extensionTrusted(p, e) ? 'trusted' : 'not trusted'})`));
    }
  }
  lines.push('', '## Diagnostics');
  for (const d of diagnostics) lines.push(`- ${d.kind}: ${d.message}`);
  return lines.join('\n') + '\n';
}

/**
 * Why the sidecar did not start, and what to set: harness-sidecar is on no package index, so the
 * default command (`harness-sidecar`) is found only when its checkout's .venv/bin is on PATH.
 * @param {string[]} command  @param {Error} err
 */
function startErrorText(command, err) {
  const [file] = command;
  const install = 'Install harness-sidecar from its repository (python3 -m venv .venv && .venv/bin/pip install -e . in the checkout), '
    + 'then set harnessSidecar.command to ["/path/to/checkout/.venv/bin/harness-sidecar"] in your user settings';
  if (/ENOENT/.test(err.message)) {
    const where = file.includes('/') ? 'no such file' : 'it is not on your PATH (harness-sidecar is not on PyPI)';
    return `could not start ${command.join(' ')}: ${file} was not found (${where}). `
      + `harnessSidecar.command is ${JSON.stringify(command)}. ${install}.`;
  }
  if (/EACCES/.test(err.message)) {
    return `could not start ${command.join(' ')}: ${file} is not executable. harnessSidecar.command is ${JSON.stringify(command)}. ${install}.`;
  }
  return `could not start ${command.join(' ')}: ${err.message}. ${install}.`;
}

class Harness {
  constructor(context) {
    this.context = context;
    this.output = vscode.window.createOutputChannel('Harness Sidecar', { log: true });
    this.status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
    this.status.command = 'harnessSidecar.showCatalog';
    this.problems = vscode.languages.createDiagnosticCollection('harness-sidecar');
    this.documents = new Documents();
    this.tree = new CatalogTree();
    this.tools = new ToolsTree();
    this.toolsCount = 0; // tool lists shown (tests wait on it)
    this.ui = new EditorUi(vscode, this.output);
    this.connection = null;
    this.threadPromise = null;
    this.started = null;
    this.startError = null;
    this.refreshCount = 0; // catalog refreshes applied (tests wait on it)
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.refreshTimer = null;
    /** @type {Promise<any> | null} */
    this.refreshing = null;
    this.refreshAgain = false;
    /** @type {ReturnType<typeof settingsModule.read>} set by start(), which activate() calls at once */
    this.settings;
    context.subscriptions.push(this.output, this.status, this.problems,
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this.documents),
      vscode.window.registerTreeDataProvider('harnessSidecar.catalog', this.tree),
      vscode.window.registerTreeDataProvider('harnessSidecar.tools', this.tools));
  }

  setStatus(text, tooltip) {
    this.status.text = `$(book) ${text}`;
    this.status.tooltip = tooltip;
    this.status.show();
  }

  /** An error toast with the actions that fix most failures. */
  async fail(message) {
    this.output.error(message);
    const choice = await vscode.window.showErrorMessage(`Harness: ${message}`, 'Show Output', 'Open Settings');
    if (choice === 'Show Output') this.output.show(true);
    if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', settingsModule.SECTION);
  }

  async start() {
    const settings = this.settings = settingsModule.read(vscode);
    for (const note of settings.rootNotes) this.output.warn(note);
    for (const key of settings.ignored) {
      this.output.warn(`${key} is set by this workspace and ignored: only your user settings choose the command and the trusted extensions`);
    }
    if (!settings.trusted) {
      this.output.info('this workspace is not trusted: no extension, hooks file or plugin is trusted and no MCP server is started '
        + '(skills and templates still work)');
    }
    this.setStatus('Harness: starting', `starting ${settings.command.join(' ')}`);
    let connection;
    if (settings.mode === 'lsp') {
      const { LspConnection } = require('./lsp-extension');
      connection = new LspConnection({ ...settings, output: this.output });
    } else {
      connection = new SidecarClient({ command: settings.command, maxRestarts: 3, capabilities: { ui: UI_CAPABILITIES } });
      connection.on('log', (line) => this.output.info(line));
      connection.on('restart', (attempt) => this.output.warn(`restarting harness-sidecar (attempt ${attempt})`));
    }
    connection.on('exit', (code, signal, expected) => this.exited(connection, code, signal, expected));
    /** @type {<M extends keyof ServerRequests>(method: M) => void} */
    const answer = (method) => {
      const handler = /** @type {NonNullable<ReverseRequests[typeof method]>} */ (REVERSE_REQUESTS[method]);
      connection.onRequest(method, (params, token) => handler(this, params, token));
    };
    /** @type {<M extends keyof ServerNotifications>(method: M) => void} */
    const listen = (method) => {
      const handler = /** @type {NonNullable<Notifications[typeof method]>} */ (NOTIFICATIONS[method]);
      connection.onNotification(method, (params) => handler(this, params));
    };
    for (const method of /** @type {(keyof ServerRequests)[]} */ (Object.keys(REVERSE_REQUESTS))) answer(method);
    for (const method of /** @type {(keyof ServerNotifications)[]} */ (Object.keys(NOTIFICATIONS))) listen(method);
    this.connection = connection;
    this.threadPromise = null;
    this.startError = null;
    try {
      const result = await connection.start();
      this.setStatus('Harness', `harness-sidecar ${result && result.serverInfo ? result.serverInfo.version : ''} (${settings.mode})`);
      return result;
    } catch (err) {
      this.startError = startErrorText(settings.command, err);
      if (this.connection === connection) this.connection = null;
      connection.stop().catch(() => {});
      this.setStatus('Harness: not running', this.startError);
      await this.fail(this.startError);
      return undefined;
    }
  }

  exited(connection, code, signal, expected) {
    if (connection !== this.connection) return;
    this.threadPromise = null;
    this.ui.clear();
    if (expected) return;
    const why = signal ? `signal ${signal}` : `status ${code}`;
    this.setStatus('Harness: stopped', `harness-sidecar exited (${why})`);
    this.fail(`the sidecar stopped (${why}); see the output`);
  }

  async stop() {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    const connection = this.connection;
    this.connection = null;
    this.threadPromise = null;
    this.ui.clear();
    if (connection) await connection.stop();
  }

  async restart() {
    await this.stop();
    return this.start();
  }

  /** The connection, or a clear reason why there is none. */
  live() {
    if (!this.connection) throw new Error(this.startError || 'the sidecar is not running: run "Harness: Restart"');
    return this.connection;
  }

  /** The thread of this window, started on first use (and again after a restart or refresh). */
  thread(token) {
    if (!this.threadPromise) {
      const { roots, trustedExtensions, trustedHooks, mcpServers, plugins, disabledPlugins, trustedPlugins } = this.settings;
      const params = { roots, trustedExtensions, dynamicTools: EDITOR_TOOLS };
      if (trustedHooks.length) params.trustedHooks = trustedHooks;
      if (mcpServers.length) params.mcpServers = mcpServers;
      if (plugins.length) params.plugins = plugins;
      if (disabledPlugins.length) params.disabledPlugins = disabledPlugins;
      if (trustedPlugins.length) params.trustedPlugins = trustedPlugins;
      if (this.settings.deferToolsOver) params.limits = { deferToolsOver: this.settings.deferToolsOver };
      Object.assign(params, this.session());
      this.threadPromise = this.live().request('thread/start', params, token)
        .then((started) => { this.showCatalogState(started); return started; })
        .catch((err) => { this.threadPromise = null; throw err; });
    }
    return this.threadPromise;
  }

  /**
   * This workspace's session (protocol-v4 §5): an id kept in the workspace's state, so that a window
   * reload (a new extension host) resumes it: the trusted extensions get their ctx.state back and the
   * activated skills come back. Every thread of the window resumes it (after Restart too); the first
   * one of a new workspace has nothing saved yet and starts empty.
   */
  session() {
    const store = this.context && this.context.workspaceState;
    let sessionId = store ? store.get(SESSION_KEY) : this.sessionId;
    if (!sessionId) {
      sessionId = `vscode:${require('crypto').randomUUID()}`;
      if (store) store.update(SESSION_KEY, sessionId);
    }
    this.sessionId = sessionId;
    return { sessionId, resume: true };
  }

  /** The Tools view: tools/list of the thread now, beside the thread's tools. */
  async showTools(started) {
    const connection = this.connection;
    if (!connection) return;
    const listed = await connection.request('tools/list', { threadId: started.threadId });
    if (this.connection !== connection || this.started !== started) return; // a newer state is shown
    this.tools.set(listed, started.tools);
    this.toolsCount += 1;
  }

  /** catalog/changed for this window's thread: one refresh at the next idle moment (changes together are one). */
  catalogChanged(params) {
    if (!this.started || params.threadId !== this.started.threadId) return;
    this.scheduleRefresh();
  }

  scheduleRefresh() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      this.refreshNow().catch((err) => this.output.warn(`refreshing the catalog failed: ${err.message}`));
    }, 50);
  }

  /** thread/refresh: the same thread rescanned (its activated skills stay); every view follows. */
  refreshNow() {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    const started = this.started;
    const connection = this.connection;
    if (!started || !connection) return Promise.resolve(undefined);
    this.refreshing = connection.request('thread/refresh', { threadId: started.threadId })
      .then((state) => {
        if (this.connection !== connection || !this.started || this.started.threadId !== started.threadId) return undefined;
        const current = { ...started, ...state };
        this.threadPromise = Promise.resolve(current);
        this.showCatalogState(current);
        this.refreshCount += 1;
        return current;
      })
      .finally(() => {
        this.refreshing = null;
        if (this.refreshAgain) {
          this.refreshAgain = false;
          this.scheduleRefresh();
        }
      });
    return this.refreshing;
  }

  showCatalogState(started) {
    this.started = started;
    this.showTools(started).catch((err) => this.output.warn(`listing the tools failed: ${err.message}`));
    // Quiet about roots the user never made: with the default roots, a missing one is not shown.
    const shown = started.diagnostics.filter((d) => this.settings.rootsConfigured || !ROOT_KINDS.has(d.kind));
    this.tree.set(started, shown);
    vscode.commands.executeCommand('setContext', 'harnessSidecar.catalogEmpty', this.tree.isEmpty());
    const count = shown.filter(isProblem).length;
    const untrusted = this.settings.trusted ? '' : ' · untrusted workspace: no extensions';
    this.setStatus(`Harness ${started.catalog.skills.length} skills${count ? ` $(warning) ${count}` : ''}`,
      `${started.threadId}: ${started.catalog.skills.length} skills, ${started.catalog.templates.length} templates, ` +
      `${started.catalog.extensions.filter((e) => e.status === 'loaded').length} extensions loaded, ${count} problems${untrusted}`);
    this.problems.clear();
    const byFile = new Map();
    for (const d of shown) {
      if (!d.path || (this.settings.mode === 'lsp' && !ROOT_LEVEL_KINDS.has(d.kind))) continue;
      const line = Math.max(0, (d.line || 1) - 1);
      const column = Math.max(0, (d.column || 1) - 1);
      // a root's hint in this editor's words (the sidecar's speaks of thread/start)
      const hint = ROOT_KINDS.has(d.kind) ? 'check harnessSidecar.roots in your settings' : d.hint;
      const diagnostic = new vscode.Diagnostic(new vscode.Range(line, column, line, Number.MAX_SAFE_INTEGER),
        hint ? `${d.message} (${hint})` : d.message, vscode.DiagnosticSeverity[severityOf(d)]);
      diagnostic.source = 'harness-sidecar';
      diagnostic.code = d.kind;
      if (!byFile.has(d.path)) byFile.set(d.path, []);
      byFile.get(d.path).push(diagnostic);
    }
    for (const [file, list] of byFile) this.problems.set(vscode.Uri.file(file), list);
  }

  /** Run `action(token)` with a cancellable progress notification; errors become actionable toasts. */
  run(title, action) {
    return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        try {
          return await action(token);
        } catch (err) {
          if (err.kind === 'cancelled' || token.isCancellationRequested) {
            this.output.info(`${title}: cancelled`);
            return undefined;
          }
          await this.fail(err.message);
          return undefined;
        }
      });
  }

  /**
   * @param {import('vscode').QuickPickItem[]} items
   * @param {string} placeHolder
   */
  async pick(items, placeHolder) {
    const picked = await vscode.window.showQuickPick(items, { placeHolder, matchOnDescription: true, matchOnDetail: true });
    return picked && picked.label;
  }
}

/**
 * A QuickPick of the extensions' commands, with their descriptions and who registered them.
 * @param {CommandSpec[]} commands
 * @returns {Promise<CommandSpec | undefined>}
 */
async function pickCommand(commands) {
  const picked = await vscode.window.showQuickPick(commands.map((c) => ({
    label: c.name, description: c.description, detail: `from ${c.origin.id}`, command: c })),
  { placeHolder: 'Extension command to run', matchOnDescription: true });
  return picked && picked.command;
}

/**
 * The command's arguments, one InputBox per property of its inputSchema (none without properties).
 * A value is taken as JSON when the property's type is not "string" (`3`, `true`, `["a"]`); an
 * optional one left empty is left out. `undefined` when the user pressed Escape.
 */
/**
 * @param {CommandSpec} command
 * @returns {Promise<Record<string, any> | undefined>}
 */
async function askArguments(command) {
  const schema = command.inputSchema || {};
  const properties = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const values = {};
  for (const [key, spec] of Object.entries(properties)) {
    const type = spec && spec.type;
    const asText = type === 'string' || (Array.isArray(type) && type.includes('string'));
    const value = await vscode.window.showInputBox({
      title: `${command.name}: ${key}${required.has(key) ? '' : ' (optional: leave empty to omit)'}`,
      prompt: [spec && spec.description, type ? `type: ${[].concat(type).join(' | ')}` : ''].filter(Boolean).join(' — '),
      placeHolder: spec && spec.enum ? spec.enum.map((v) => JSON.stringify(v)).join(' | ') : undefined,
      validateInput: (text) => {
        if (text === '' || asText) return undefined;
        try { JSON.parse(text); return undefined; } catch (err) { return `not JSON: ${err.message}`; }
      },
    });
    if (value === undefined) return undefined;
    if (value === '' && !required.has(key)) continue;
    values[key] = asText ? value : JSON.parse(value === '' ? 'null' : value);
  }
  return values;
}

/**
 * @param {CommandSpec} command
 * @param {Record<string, any>} values
 * @param {CommandResult} result
 */
function commandResultText(command, values, result) {
  const text = result.content.map((item) => item.text).join('\n');
  const lines = [`# ${command.name}${result.isError ? ' (failed)' : ''}`, ''];
  if (Object.keys(values).length) lines.push(`Arguments: \`${JSON.stringify(values)}\``, '');
  lines.push(text);
  if (result.details && Object.keys(result.details).length) {
    lines.push('', '```json', JSON.stringify(result.details, null, 2), '```');
  }
  return lines.join('\n') + '\n';
}

/**
 * A tool as tools/list gives it, with what a deferred one (limits.deferToolsOver: listed by name only; its
 * schema is what tool_search finds) lacks filled in: its arguments are then typed as free JSON.
 * @param {import('./types/protocol').ToolSpec | import('./types/protocol').DeferredTool} tool
 * @returns {import('./types/protocol').ToolSpec}
 */
function fullSpec(tool) {
  if ('deferred' in tool && tool.deferred) {
    return { name: tool.name, description: 'deferred: tool_search gives its description and schema',
      inputSchema: { type: 'object' }, origin: { kind: 'dynamic' } };
  }
  return /** @type {import('./types/protocol').ToolSpec} */ (tool);
}

/**
 * A QuickPick of the thread's tools (tools/list), with their descriptions and where they come from.
 * @param {import('./types/protocol').ToolSpec[]} tools
 */
async function pickTool(tools) {
  const picked = await vscode.window.showQuickPick(tools.map((t) => ({
    label: t.name, description: t.description,
    detail: `${t.origin.kind}${t.origin.id ? ` ${t.origin.id}` : ''}`, tool: t })),
  { placeHolder: 'Tool to call (its hooks and confirm prompts run as for the model)', matchOnDescription: true });
  return picked && picked.tool;
}

/** Why `text` is not a tool's arguments (a JSON object), or undefined when it is. @param {string} text */
function argumentsProblem(text) {
  let value;
  try { value = JSON.parse(text); } catch (err) { return `not JSON: ${err.message}`; }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'the arguments must be a JSON object, e.g. {}';
  return undefined;
}

/**
 * The tool's arguments as JSON in one InputBox (prefilled `{}`). Text that is not a JSON object is
 * refused while typing; if it is accepted anyway it is said so and asked again, with the text kept.
 * `undefined` when the user pressed Escape.
 * @param {import('./types/protocol').ToolSpec} tool
 * @returns {Promise<Record<string, any> | undefined>}
 */
async function askToolArguments(tool) {
  let value = '{}';
  let problem;
  for (;;) {
    const schema = JSON.stringify(tool.inputSchema || {});
    const text = await vscode.window.showInputBox({
      title: `${tool.name}: arguments (JSON)`,
      prompt: problem ? `${problem}; try again. Schema: ${schema}` : `A JSON object. Schema: ${schema}`,
      value, validateInput: argumentsProblem,
    });
    if (text === undefined) return undefined;
    problem = argumentsProblem(text);
    if (!problem) return JSON.parse(text);
    value = text;
    vscode.window.showWarningMessage(`Harness: ${tool.name}: ${problem}`);
  }
}

/**
 * The result of tools/call as a document: whether it failed or was blocked (and why, by whom),
 * the arguments sent, the content, then the details (blocked, systemMessages, …) as JSON.
 * @param {import('./types/protocol').ToolSpec} tool
 * @param {Record<string, any>} values
 * @param {import('./types/protocol').ToolResult} result
 */
function toolResultText(tool, values, result) {
  const blocked = result.details && result.details.blocked;
  const state = blocked ? ' (blocked)' : result.isError ? ' (failed)' : '';
  const lines = [`# ${tool.name}${state}`, '', `Arguments: \`${JSON.stringify(values)}\``, ''];
  if (blocked) {
    const who = blocked.extensionId ? `extension ${blocked.extensionId}` : (blocked.by || []).join(', ') || 'a hook';
    lines.push(`Blocked by ${who} (${blocked.kind}): ${blocked.reason}`, '');
  }
  lines.push(result.content.map((item) => item.text).join('\n'));
  if (result.details && Object.keys(result.details).length) {
    lines.push('', '```json', JSON.stringify(result.details, null, 2), '```');
  }
  return lines.join('\n') + '\n';
}

let harness = null;
let toolCalls = 0;
const SESSION_KEY = 'harnessSidecar.sessionId';

function activate(context) {
  harness = new Harness(context);
  const h = harness;
  const commands = {
    'harnessSidecar.showCatalog': () => h.run('Harness: loading the catalog', async (token) =>
      h.documents.show('catalog.md', catalogText(await h.thread(token), h.settings))),
    // The same thread rescanned (thread/refresh): activated skills stay. Restart reloads extensions.
    'harnessSidecar.refreshCatalog': () => h.run('Harness: refreshing the catalog', async (token) =>
      (h.started && h.connection ? h.refreshNow() : h.thread(token))),
    'harnessSidecar.activateSkill': (name) => h.run('Harness: activating a skill', async (token) => {
      const { threadId, catalog } = await h.thread(token);
      const skill = name || await h.pick(catalog.skills.map((s) => ({ label: s.name, description: s.description,
        detail: s.path })), 'Skill to activate');
      if (!skill) return undefined;
      const result = await h.live().request('skills/activate', { threadId, name: skill }, token);
      return h.documents.show(`skill/${skill}.md`, `# ${result.skill.name}\n\n${result.skill.body}`);
    }),
    // A {{variable}} template asks each variable; a command template (commands/*.md) asks one free text,
    // as typed after /<name> (`args` a string when called with one).
    // skills/deactivate: the skill leaves the system prompt (a QuickPick of context/build's activeSkills).
    'harnessSidecar.deactivateSkill': (name) => h.run('Harness: deactivating a skill', async (token) => {
      const { threadId } = await h.thread(token);
      const { activeSkills } = await h.live().request('context/build', { threadId }, token);
      if (!name && !activeSkills.length) {
        vscode.window.showInformationMessage('Harness: no skill is active');
        return undefined;
      }
      const skill = name || await h.pick(activeSkills.map((s) => ({ label: s.name, description: s.via,
        detail: s.path })), 'Skill to deactivate');
      if (!skill) return undefined;
      const result = await h.live().request('skills/deactivate', { threadId, name: skill }, token);
      const left = result.activeSkills.map((s) => s.name).join(', ') || 'none';
      vscode.window.showInformationMessage(`Harness: deactivated ${skill}; active: ${left}`);
      return result;
    }),
    'harnessSidecar.renderTemplate': (name, args) => h.run('Harness: rendering a template', async (token) => {
      const { threadId, catalog } = await h.thread(token);
      const commandTemplates = catalog.commandTemplates || [];
      const template = name || await h.pick([
        ...catalog.templates.map((t) => ({ label: t.name,
          description: t.variables.length ? t.variables.join(', ') : 'no variables', detail: t.description || t.path })),
        ...commandTemplates.map((c) => ({ label: c.name, description: c.argumentHint || 'free text',
          detail: c.description || c.path }))], 'Template to render');
      if (!template) return undefined;
      const command = commandTemplates.find((c) => c.name === template);
      if (command && !catalog.templates.some((t) => t.name === template)) {
        const text = typeof args === 'string' ? args : await vscode.window.showInputBox({ title: `Command ${template}`,
          prompt: command.argumentHint || `what you would type after /${template}`, placeHolder: command.argumentHint });
        if (text === undefined) return undefined;
        const result = await h.live().request('templates/render', { threadId, name: template, text }, token);
        for (const d of result.diagnostics || []) h.output.warn(`${template}: ${d.kind}: ${d.message}`);
        return h.documents.show(`render/${template}.md`, result.message.content);
      }
      const entry = catalog.templates.find((t) => t.name === template);
      const values = Object.assign({}, args);
      for (const variable of entry ? entry.variables : []) {
        if (values[variable] === undefined) {
          const value = await vscode.window.showInputBox({ title: `Template ${template}`, prompt: variable });
          if (value === undefined) return undefined;
          values[variable] = value;
        }
      }
      const result = await h.live().request('templates/render', { threadId, name: template, arguments: values }, token);
      return h.documents.show(`render/${template}.md`, result.message.content);
    }),
    'harnessSidecar.showSystemPrompt': () => h.run('Harness: building the system prompt', async (token) => {
      const { threadId } = await h.thread(token);
      return h.documents.show('system-prompt.md', (await h.live().request('context/build', { threadId }, token)).systemPrompt);
    }),
    'harnessSidecar.runCommand': (name, args) => h.run('Harness: running an extension command', async (token) => {
      const { threadId } = await h.thread(token);
      const { commands } = await h.live().request('commands/list', { threadId }, token);
      if (!commands.length) {
        vscode.window.showInformationMessage('Harness: no trusted extension registers a command');
        return undefined;
      }
      const command = name ? commands.find((c) => c.name === name) : await pickCommand(commands);
      if (!command) return undefined;
      const values = args || await askArguments(command);
      if (!values) return undefined;
      const result = await h.live().request('commands/run', { threadId, name: command.name, arguments: values }, token);
      return h.documents.show(`command/${command.name}.md`, commandResultText(command, values, result));
    }),
    // A tool called by hand, as the model would (tools/call): its hooks and confirm prompts run.
    // `name` and `args` (an object) skip the QuickPick and the InputBox.
    'harnessSidecar.callTool': (name, args) => h.run('Harness: calling a tool', async (token) => {
      const { threadId } = await h.thread(token);
      const listed = await h.live().request('tools/list', { threadId }, token);
      const { revision } = listed;
      const tools = listed.tools.map(fullSpec);
      const tool = name ? tools.find((t) => t.name === name) : await pickTool(tools);
      if (!tool) {
        if (name) await h.fail(`no tool named ${name} in this thread (tools/list: ${tools.map((t) => t.name).join(', ')})`);
        return undefined;
      }
      const values = args && typeof args === 'object' ? args : await askToolArguments(tool);
      if (!values) return undefined;
      toolCalls += 1;
      const { result } = await h.live().request('tools/call', { threadId, revision,
        call: { id: `vscode-call-${toolCalls}`, name: tool.name, arguments: values } }, token);
      return h.documents.show(`tool/${tool.name}-${toolCalls}.md`, toolResultText(tool, values, result));
    }),
    'harnessSidecar.restart': () => h.restart(),
    'harnessSidecar.showOutput': () => h.output.show(true),
  };
  for (const [id, fn] of Object.entries(commands)) context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(settingsModule.SECTION)) {
        h.output.info('settings changed: restarting the sidecar');
        h.restart();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      h.output.info('the workspace is now trusted: restarting with your trusted extensions');
      h.restart();
    }),
    { dispose: () => h.stop() });
  const started = h.start();
  return { harness: h, started, get client() { return h.connection; } };
}

function deactivate() {
  return harness ? harness.stop() : undefined;
}

module.exports = { activate, deactivate, catalogText, commandResultText, toolResultText, argumentsProblem, isProblem, REVERSE_REQUESTS, NOTIFICATIONS };
