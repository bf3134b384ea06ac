'use strict';
// What the extension may take from the configuration. Trust stays with the user: a repository's
// own .vscode/settings.json must never choose the executable or trust the code it ships.
//
// - `harnessSidecar.command`, `harnessSidecar.trustedExtensions`, `harnessSidecar.trustedHooks` (the
//   command hooks a thread may run) and `harnessSidecar.mcpServers`
//   (the MCP servers each thread starts: commands the sidecar runs) are machine-scoped in
//   package.json (VS Code ignores workspace values of such settings) and listed in
//   `restrictedConfigurations`; on top, they are read here from the user's own values only
//   (`inspect().globalValue`, else the default): a workspace or folder value is never used, even
//   if a VS Code version or a remote setup let one through.
//   The plugins settings (`plugins`: plugin folders, `disabledPlugins`, `trustedPlugins`: whose
//   hooks, MCP servers and extensions may run) are kept the same way.
// - In an untrusted workspace no extension, hooks file or plugin is trusted and no MCP server is
//   started at all, and
//   `roots` too comes from the user's settings only.

const fs = require('fs');
const os = require('os');
const path = require('path');

const SECTION = 'harnessSidecar';
/** The settings only the user's own settings may give. */
const TRUST_KEYS = ['command', 'trustedExtensions', 'trustedHooks', 'mcpServers', 'plugins', 'disabledPlugins',
  'trustedPlugins'];

/** The user's own value of `key` (user or remote-machine settings), else the default. */
function userValue(config, key, fallback) {
  const inspected = config.inspect(key);
  if (!inspected) return fallback;
  if (inspected.globalValue !== undefined) return inspected.globalValue;
  if (inspected.defaultValue !== undefined) return inspected.defaultValue;
  return fallback;
}

/** Keys a workspace set for itself that the extension ignores (to say so in the log). */
function ignoredWorkspaceValues(config) {
  const ignored = [];
  for (const key of TRUST_KEYS) {
    const inspected = config.inspect(key) || {};
    if (inspected.workspaceValue !== undefined || inspected.workspaceFolderValue !== undefined) ignored.push(`${SECTION}.${key}`);
  }
  return ignored;
}

function workspaceFolder(vscode) {
  const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  return folder ? folder.uri.fsPath : undefined;
}

/**
 * The roots when harnessSidecar.roots is empty: <workspace>/.agents, then the workspace's own
 * .claude/ and .codex/ (Claude Code's and Codex's project folders: skills, commands, hooks in
 * settings.json / hooks.json / config.toml) when they exist, then ~/.agents. A repository that has
 * only .claude/ or .codex/ activates the extension (package.json activationEvents) and is read;
 * their hooks run only if your user settings trust them (harnessSidecar.trustedHooks).
 */
function defaultRoots(vscode) {
  const folder = workspaceFolder(vscode);
  const roots = [];
  if (folder) {
    roots.push(path.join(folder, '.agents'));
    for (const name of ['.claude', '.codex']) {
      const root = path.join(folder, name);
      if (isDirectory(root)) roots.push(root);
    }
  }
  roots.push(path.join(os.homedir(), '.agents'));
  return roots;
}

/** @param {string} file */
function isDirectory(file) {
  try { return fs.statSync(file).isDirectory(); } catch { return false; }
}

/**
 * A root as users write it in settings, as the absolute path thread/start needs: `~` and `~/x`,
 * `${workspaceFolder}`, `${userHome}`, `${env:NAME}`, and paths relative to the (first) workspace
 * folder (`.agents`). `{error}` when it cannot be made absolute (no folder is open).
 * @param {string} root  @param {string | undefined} folder
 * @returns {{path: string} | {error: string}}
 */
function expandRoot(root, folder) {
  let text = String(root).trim();
  if (/\$\{workspaceFolder\}/.test(text) && !folder) return { error: `${root}: no workspace folder is open` };
  text = text.replace(/\$\{workspaceFolder\}/g, folder || '')
    .replace(/\$\{userHome\}/g, os.homedir())
    .replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name) => process.env[name] || '');
  if (text === '~' || text.startsWith('~/')) text = path.join(os.homedir(), text.slice(1));
  if (!path.isAbsolute(text)) {
    if (!folder) return { error: `${root}: a relative root needs an open workspace folder` };
    text = path.join(folder, text);
  }
  return { path: path.resolve(text) };
}

/** The user's MCP servers: objects with a `name` and a `command` list (the sidecar checks the rest). */
function mcpServers(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((s) => s && typeof s === 'object' && typeof s.name === 'string' && Array.isArray(s.command));
}

/** The user's trusted hooks files: objects with a string `path` (the sidecar checks the rest). */
function trustedHooks(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((h) => h && typeof h === 'object' && typeof h.path === 'string');
}

/** Strings of a list setting (anything else left out). */
function strings(value) {
  return Array.isArray(value) ? value.filter((v) => typeof v === 'string') : [];
}

/** The user's trusted plugins: objects with a string `name` (the sidecar checks the rest). */
function trustedPlugins(value) {
  if (!Array.isArray(value)) return [];
  return value.filter((p) => p && typeof p === 'object' && typeof p.name === 'string');
}

/** harnessSidecar.deferToolsOver: a whole number of at least 0 (0, the default, defers nothing). */
function deferToolsOver(value) {
  return Number.isInteger(value) && value > 0 ? value : 0;
}

/**
 * The settings the extension runs with: {command, roots, trustedExtensions, trustedHooks, mcpServers,
 * plugins, disabledPlugins, trustedPlugins, deferToolsOver, mode, trusted, ignored}. `trusted` is whether the
 * workspace is trusted (else trustedExtensions, trustedHooks, mcpServers and trustedPlugins are
 * always empty: plugins still bring their skills, command templates and agents, never their code).
 */
function read(vscode) {
  const config = vscode.workspace.getConfiguration(SECTION);
  const trusted = vscode.workspace.isTrusted !== false;
  const command = userValue(config, 'command', ['harness-sidecar']);
  const configuredRoots = trusted ? config.get('roots') : userValue(config, 'roots', []);
  const mode = config.get('mode') === 'lsp' ? 'lsp' : 'jsonl';
  const rootsConfigured = Array.isArray(configuredRoots) && configuredRoots.length > 0;
  const roots = [];
  const rootNotes = [];
  for (const root of rootsConfigured ? configuredRoots : []) {
    const expanded = expandRoot(root, workspaceFolder(vscode));
    if ('path' in expanded) roots.push(expanded.path);
    else rootNotes.push(`harnessSidecar.roots: ${expanded.error}; left out`);
  }
  // Plugin folders (the user's Claude Code or Codex plugins), written as roots are.
  const plugins = [];
  for (const folder of strings(userValue(config, 'plugins', []))) {
    const expanded = expandRoot(folder, workspaceFolder(vscode));
    if ('path' in expanded) plugins.push(expanded.path);
    else rootNotes.push(`harnessSidecar.plugins: ${expanded.error}; left out`);
  }
  return {
    command: Array.isArray(command) && command.length && command.every((a) => typeof a === 'string') ? command : ['harness-sidecar'],
    roots: rootsConfigured ? roots : defaultRoots(vscode),
    rootsConfigured,
    rootNotes,
    trustedExtensions: trusted ? (userValue(config, 'trustedExtensions', []) || []) : [],
    trustedHooks: trusted ? trustedHooks(userValue(config, 'trustedHooks', [])) : [],
    mcpServers: trusted ? mcpServers(userValue(config, 'mcpServers', [])) : [],
    plugins,
    disabledPlugins: strings(userValue(config, 'disabledPlugins', [])),
    deferToolsOver: deferToolsOver(config.get('deferToolsOver')),
    trustedPlugins: trusted ? trustedPlugins(userValue(config, 'trustedPlugins', [])) : [],
    mode,
    trusted,
    ignored: ignoredWorkspaceValues(config),
  };
}

module.exports = { SECTION, TRUST_KEYS, read, userValue, expandRoot };
