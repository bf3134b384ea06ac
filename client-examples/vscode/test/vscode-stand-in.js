'use strict';
// A stand-in for the `vscode` module (the one module the tests may fake): enough of the API for
// extension.js and for the real vscode-languageclient to start, sync documents and show
// diagnostics. `state` records what a user would see (documents, toasts, status bar, Problems).
// `standIn({user, workspace, trusted})`: user and workspace settings of `harnessSidecar`.

const path = require('path');
const matchGlob = require('minimatch').minimatch || require('minimatch'); // v5 (languageclient's) or v9+ (hoisted)

class Disposable {
  constructor(fn) { this.fn = fn; }
  static from(...items) { return new Disposable(() => items.forEach((i) => i && i.dispose && i.dispose())); }
  dispose() { if (this.fn) this.fn(); this.fn = null; }
}

class EventEmitter {
  constructor() {
    this.listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const bound = thisArg ? listener.bind(thisArg) : listener;
      this.listeners.add(bound);
      const d = new Disposable(() => this.listeners.delete(bound));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) { for (const l of [...this.listeners]) l(value); }
  dispose() { this.listeners.clear(); }
}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
}

class Range {
  constructor(a, b, c, d) {
    if (a instanceof Position) { this.start = a; this.end = b; } else { this.start = new Position(a, b); this.end = new Position(c, d); }
  }
}

class Selection extends Range {}

class Uri {
  constructor(scheme, authority, p, query, fragment) {
    Object.assign(this, { scheme, authority: authority || '', path: p || '/', query: query || '', fragment: fragment || '' });
  }
  static file(p) { return new Uri('file', '', p); }
  static parse(value) {
    const match = /^([a-z][a-z0-9+.-]*):(?:\/\/([^/]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/i.exec(value);
    return new Uri(match[1], match[2], decodeURIComponent(match[3]), match[4], match[5]);
  }
  static joinPath(base, ...parts) { return new Uri(base.scheme, base.authority, path.posix.join(base.path, ...parts)); }
  get fsPath() { return this.path; }
  with(change) { return new Uri(change.scheme || this.scheme, this.authority, change.path || this.path); }
  toString() {
    if (this.scheme === 'file') return `file://${encodeURI(this.path)}`;
    const rest = `${this.query ? `?${this.query}` : ''}${this.fragment ? `#${this.fragment}` : ''}`;
    return this.authority ? `${this.scheme}://${this.authority}${encodeURI(this.path)}${rest}`
      : `${this.scheme}:${this.path}${rest}`;
  }
  toJSON() { return { scheme: this.scheme, path: this.path }; }
}

class Diagnostic {
  constructor(range, message, severity) { Object.assign(this, { range, message, severity }); }
}

class MarkdownString {
  constructor(value) { this.value = value || ''; }
  appendMarkdown(v) { this.value += v; return this; }
  appendText(v) { this.value += v; return this; }
}

class Hover { constructor(contents, range) { this.contents = Array.isArray(contents) ? contents : [contents]; this.range = range; } }
class Location { constructor(uri, range) { this.uri = uri; this.range = range; } }
class ThemeIcon { constructor(id) { this.id = id; } }
class TreeItem { constructor(label, collapsibleState) { this.label = label; this.collapsibleState = collapsibleState; } }
class RelativePattern { constructor(base, pattern) { this.baseUri = base; this.pattern = pattern; } }
class Plain { constructor(...args) { this.args = args; } }
class CompletionItem extends Plain {}
class CodeLens extends Plain {}
class CodeAction extends Plain {}
class DocumentLink extends Plain {}
class InlayHint extends Plain {}
class SymbolInformation extends Plain {}
class CallHierarchyItem extends Plain {}
class TypeHierarchyItem extends Plain {}
class CancellationError extends Error {}
class TabInputText {}
class TabInputTextDiff {}
class TabInputCustom {}
class DiagnosticRelatedInformation { constructor(location, message) { this.location = location; this.message = message; } }

class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this.emitter = emitter;
    this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  }
  cancel() { if (!this.token.isCancellationRequested) { this.token.isCancellationRequested = true; this.emitter.fire(); } }
  dispose() {}
}

// Enums: any member name gives a stable number (the client only passes them back to us).
function enumLike(known = {}) {
  let next = 100;
  return new Proxy(known, { get: (target, key) => (key in target ? target[key] : (typeof key === 'string' ? (target[key] = next++) : undefined)) });
}

function textDocument(uri, text, languageId = 'markdown') {
  const lines = () => doc.text.split('\n');
  const doc = {
    uri, fileName: uri.fsPath, languageId, version: 1, text, isClosed: false, isDirty: false, isUntitled: false, eol: 1,
    getText: () => doc.text,
    get lineCount() { return lines().length; },
    lineAt: (line) => ({ text: lines()[typeof line === 'number' ? line : line.line] }),
    offsetAt: (pos) => lines().slice(0, pos.line).reduce((n, l) => n + l.length + 1, 0) + pos.character,
    positionAt: (offset) => { let line = 0; for (const l of lines()) { if (offset <= l.length) break; offset -= l.length + 1; line += 1; } return new Position(line, offset); },
  };
  return doc;
}

function standIn({ user = {}, workspace = {}, trusted = true, folder } = {}) {
  const state = {
    commands: new Map(), shown: [], output: [], errors: [], infos: [], statusBar: null, trees: new Map(),
    providers: new Map(), collections: [], progress: [], user: { ...user }, workspace: { ...workspace },
    answer: undefined, // what the user clicks on an error toast
    quickPicks: [], inputs: [],
    // What the user sees asked for (ui/*): modal messages, QuickPick and InputBox widgets, every
    // information/warning/error message, and every status-bar item.
    modals: [], widgets: [], messages: [], statusBarItems: [],
    // How the user answers: modal(entry) → the button clicked (or a promise; undefined: dismissed);
    // widget(w) is called when a created QuickPick/InputBox is shown (w.pick(label), w.type(text),
    // w.escape(); leave it open by doing nothing).
    // quickPick(items, options) → the item picked by showQuickPick (default: the first);
    // inputBox(options) → the text showInputBox returns (default: `value of <prompt>`).
    answers: { modal: undefined, widget: undefined, quickPick: undefined, inputBox: undefined },
  };
  const configChanged = new EventEmitter();
  const trustGranted = new EventEmitter();
  const opened = new EventEmitter();
  const closed = new EventEmitter();
  const changed = new EventEmitter();
  const DEFAULTS = { command: ['harness-sidecar'], roots: [], trustedExtensions: [], mode: 'jsonl' };

  // A QuickPick or InputBox as VS Code's: hidden by hide() or dispose() (onDidHide fires once).
  const widget = (kind) => {
    const accepted = new EventEmitter();
    const hidden = new EventEmitter();
    const w = {
      kind, items: [], selectedItems: [], activeItems: [], value: '', title: undefined, placeholder: undefined,
      prompt: undefined, visible: false, disposed: false,
      onDidAccept: accepted.event, onDidHide: hidden.event, onDidChangeValue: new EventEmitter().event,
      onDidChangeSelection: new EventEmitter().event, onDidChangeActive: new EventEmitter().event,
      onDidTriggerButton: new EventEmitter().event,
      show() {
        w.visible = true;
        state.widgets.push(w);
        if (state.answers.widget) setImmediate(() => state.answers.widget(w));
      },
      hide() { if (w.visible) { w.visible = false; hidden.fire(); } },
      dispose() { w.hide(); w.disposed = true; },
      // the user:
      pick(label) { w.selectedItems = w.items.filter((i) => i.label === label); accepted.fire(); },
      type(text) { w.value = text; accepted.fire(); },
      escape() { w.hide(); },
    };
    return w;
  };

  const logChannel = (name) => {
    const line = (level) => (message) => state.output.push(`[${level}] ${message}`);
    return {
      name, append: (t) => state.output.push(t), appendLine: (t) => state.output.push(t), replace() {}, clear() {},
      show: () => { state.outputShown = true; }, hide() {}, dispose() {},
      trace: line('trace'), debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'),
      logLevel: 2, onDidChangeLogLevel: new EventEmitter().event,
    };
  };

  const vscode = {
    version: '1.82.0',
    Disposable, EventEmitter, Position, Range, Selection, Uri, Diagnostic, MarkdownString, Hover, Location, ThemeIcon,
    TreeItem, RelativePattern, DiagnosticRelatedInformation, CancellationTokenSource, CompletionItem, CodeLens,
    CodeAction, DocumentLink, InlayHint, SymbolInformation, CallHierarchyItem, TypeHierarchyItem, CancellationError,
    TabInputText, TabInputTextDiff, TabInputCustom,
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    TextDocumentSaveReason: enumLike(), DiagnosticTag: enumLike(), CodeActionKind: enumLike(), CompletionItemKind: enumLike(),
    SymbolKind: enumLike(), SymbolTag: enumLike(), FoldingRangeKind: enumLike(), DocumentHighlightKind: enumLike(),
    CompletionItemTag: enumLike(), SignatureHelpTriggerKind: enumLike(), CompletionTriggerKind: enumLike(),
    CodeActionTriggerKind: enumLike(), NotebookCellKind: enumLike(), FileType: enumLike(), UIKind: { Desktop: 1 },
    env: { appName: 'stand-in', language: 'en', machineId: 'm', sessionId: 's', uiKind: 1, openExternal: async () => true },
    extensions: { getExtension: () => undefined, all: [] },
    window: {
      createOutputChannel: (name) => logChannel(name),
      showErrorMessage: async (message, ...actions) => {
        state.messages.push({ level: 'error', message });
        state.errors.push({ message, actions });
        return state.answer;
      },
      showWarningMessage: async (message, ...rest) => {
        if (rest[0] && typeof rest[0] === 'object' && rest[0].modal) {
          const entry = { message, options: rest[0], actions: rest.slice(1) };
          state.modals.push(entry);
          return typeof state.answers.modal === 'function' ? state.answers.modal(entry) : state.answers.modal;
        }
        state.messages.push({ level: 'warning', message });
        state.errors.push({ message, actions: [] });
        return undefined;
      },
      showInformationMessage: async (message) => {
        state.messages.push({ level: 'info', message });
        state.infos.push(message);
        return undefined;
      },
      createQuickPick: () => widget('quickPick'),
      createInputBox: () => widget('inputBox'),
      showTextDocument: async (doc) => { state.shown.push(doc); return { document: doc }; },
      showQuickPick: async (items, options) => {
        const list = await items;
        state.quickPicks.push({ items: list, options });
        return state.answers.quickPick ? state.answers.quickPick(list, options) : list[0];
      },
      showInputBox: async (options) => {
        state.inputs.push(options);
        return state.answers.inputBox ? state.answers.inputBox(options) : `value of ${options.prompt}`;
      },
      createStatusBarItem: (alignment, priority) => {
        const item = { text: '', tooltip: '', alignment, priority, visible: false, disposed: false,
          show() { this.visible = true; }, hide() { this.visible = false; },
          dispose() { this.visible = false; this.disposed = true; } };
        state.statusBarItems.push(item);
        if (!state.statusBar) state.statusBar = item; // the first is the extension's own
        return item;
      },
      registerTreeDataProvider: (id, provider) => { state.trees.set(id, provider); return new Disposable(); },
      createTreeView: (id, options) => { state.trees.set(id, options.treeDataProvider); return { dispose() {} }; },
      withProgress: async (options, task) => {
        const source = new CancellationTokenSource();
        const entry = { options, source, reports: [] };
        state.progress.push(entry);
        return task({ report: (r) => entry.reports.push(r) }, source.token);
      },
      activeTextEditor: undefined,
      visibleTextEditors: [],
      onDidChangeActiveTextEditor: new EventEmitter().event,
      onDidChangeVisibleTextEditors: new EventEmitter().event,
      tabGroups: { all: [], onDidChangeTabs: new EventEmitter().event },
    },
    workspace: {
      get isTrusted() { return trusted; },
      workspaceFolders: folder ? [{ uri: Uri.file(folder), name: path.basename(folder), index: 0 }] : undefined,
      textDocuments: [],
      notebookDocuments: [],
      getConfiguration: (section) => ({
        get: (key, fallback) => {
          const value = state.workspace[key] !== undefined ? state.workspace[key] : state.user[key] !== undefined ? state.user[key] : DEFAULTS[key];
          return value === undefined ? fallback : value;
        },
        inspect: (key) => (section === 'harnessSidecar' ? { key: `${section}.${key}`, defaultValue: DEFAULTS[key],
          globalValue: state.user[key], workspaceValue: state.workspace[key] } : undefined),
        has: () => false,
        update: async () => {},
      }),
      onDidChangeConfiguration: configChanged.event,
      onDidGrantWorkspaceTrust: trustGranted.event,
      onDidOpenTextDocument: opened.event,
      onDidCloseTextDocument: closed.event,
      onDidChangeTextDocument: changed.event,
      onDidSaveTextDocument: new EventEmitter().event,
      onWillSaveTextDocument: new EventEmitter().event,
      onDidChangeWorkspaceFolders: new EventEmitter().event,
      onDidCreateFiles: new EventEmitter().event,
      onDidRenameFiles: new EventEmitter().event,
      onDidDeleteFiles: new EventEmitter().event,
      onWillCreateFiles: new EventEmitter().event,
      onWillRenameFiles: new EventEmitter().event,
      onWillDeleteFiles: new EventEmitter().event,
      onDidOpenNotebookDocument: new EventEmitter().event,
      onDidChangeNotebookDocument: new EventEmitter().event,
      onDidSaveNotebookDocument: new EventEmitter().event,
      onDidCloseNotebookDocument: new EventEmitter().event,
      createFileSystemWatcher: () => ({ onDidCreate: new EventEmitter().event, onDidChange: new EventEmitter().event, onDidDelete: new EventEmitter().event, dispose() {} }),
      registerTextDocumentContentProvider: (scheme, provider) => { state.providers.set(scheme, provider); return new Disposable(); },
      openTextDocument: async (uri) => {
        const provider = state.providers.get(uri.scheme);
        if (!provider) throw new Error(`no content provider for ${uri.scheme}`);
        const doc = textDocument(uri, await provider.provideTextDocumentContent(uri));
        doc.readOnly = true; // what VS Code does for a content provider's documents
        return doc;
      },
      getWorkspaceFolder: () => undefined,
      asRelativePath: (p) => String(p),
    },
    languages: {
      createDiagnosticCollection: (name) => {
        const entries = new Map();
        const collection = {
          name, entries,
          set: (uri, list) => { if (Array.isArray(uri)) { for (const [u, l] of uri) entries.set(u.toString(), l || []); } else entries.set(uri.toString(), list || []); },
          get: (uri) => entries.get(uri.toString()),
          delete: (uri) => entries.delete(uri.toString()),
          clear: () => entries.clear(),
          forEach: (fn) => entries.forEach((l, u) => fn(Uri.parse(u), l)),
          dispose: () => entries.clear(),
        };
        state.collections.push(collection);
        return collection;
      },
      match: (selector, document) => {
        const selectors = Array.isArray(selector) ? selector : [selector];
        return selectors.some((s) => (typeof s === 'string' ? s === document.languageId
          : (!s.scheme || s.scheme === document.uri.scheme) && (!s.language || s.language === document.languageId)
            && (!s.pattern || matchGlob(document.uri.fsPath, typeof s.pattern === 'string' ? s.pattern : s.pattern.pattern, { dot: true })))) ? 10 : 0;
      },
      registerHoverProvider: (selector, provider) => { state.hoverProvider = provider; return new Disposable(); },
      onDidChangeDiagnostics: new EventEmitter().event,
    },
    commands: {
      registerCommand: (id, fn) => { state.commands.set(id, fn); return new Disposable(() => state.commands.delete(id)); },
      executeCommand: async (id, ...args) => { state.executed = [...(state.executed || []), [id, ...args]]; },
    },
  };
  // Test controls: what a user or VS Code would do.
  state.setUser = (key, value) => { state.user[key] = value; configChanged.fire({ affectsConfiguration: (s) => `harnessSidecar.${key}`.startsWith(s) }); };
  state.openDocument = (file, text, languageId) => {
    const doc = textDocument(Uri.file(file), text, languageId);
    vscode.workspace.textDocuments.push(doc);
    opened.fire(doc);
    return doc;
  };
  state.grantTrust = () => { trusted = true; trustGranted.fire(); };
  return { vscode, state };
}

let current = null;
let hooked = false;

/** Load `file` with `vscode` resolved to the stand-in (also for modules loaded later, e.g. vscode-languageclient). */
function loadWith(vscode, file) {
  current = vscode;
  if (!hooked) {
    const Module = require('module');
    const original = Module._load;
    Module._load = function load(request, parent, isMain) {
      if (request === 'vscode') return current;
      return original.call(this, request, parent, isMain);
    };
    hooked = true;
  }
  const root = path.resolve(__dirname, '..') + path.sep;
  for (const key of Object.keys(require.cache)) {
    const ours = key.startsWith(root) && !key.includes(`${path.sep}node_modules${path.sep}`) && !key.includes(`${path.sep}test${path.sep}`);
    if (ours || key.includes(`${path.sep}vscode-languageclient${path.sep}`)) delete require.cache[key];
  }
  delete require.cache[require.resolve(file)]; // e.g. a bundle outside this folder
  return require(file);
}

/**
 * Activate the extension whose main module is `main` against a fresh stand-in (`options`: see standIn)
 * and wait for its start (`context`: more of the ExtensionContext, e.g. a workspaceState that outlives a window
 * reload). `registry` (an array), when given, gets the extension before it activates, for
 * deactivateAll() after the tests: also after a failed assertion, since a sidecar left running would
 * keep node waiting instead of reporting the failure.
 */
async function activate(options, main, registry, context = {}) {
  const { vscode, state } = standIn(options);
  const extension = loadWith(vscode, main);
  if (registry) registry.push(extension);
  const api = extension.activate({ subscriptions: [], ...context }); // context: e.g. a workspaceState kept across reloads
  await api.started;
  return { vscode, state, extension, api };
}

/** Deactivate every extension in `registry` (one a test already deactivated has nothing left to stop). */
async function deactivateAll(registry) {
  for (const extension of registry) await extension.deactivate();
}

/** Run the registered command `id`, as the user would from the command palette. */
function run(state, id, ...args) {
  return state.commands.get(id)(...args);
}

/** Wait until `predicate()` is true (or fail after `ms`). */
async function until(predicate, ms = 15000, what = 'condition') {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

module.exports = { standIn, loadWith, until, activate, deactivateAll, run };
