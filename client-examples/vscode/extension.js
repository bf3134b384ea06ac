'use strict';
// VS Code extension: starts harness-sidecar, shows its catalog, activates skills, renders
// templates, shows the system prompt, and answers the sidecar's `editor_selection` tool.

const os = require('os');
const path = require('path');
const vscode = require('vscode');
const { SidecarClient } = require('./client');

let client = null;
let threadPromise = null;

function settings() {
  const config = vscode.workspace.getConfiguration('harnessSidecar');
  const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
  const defaultRoots = [];
  if (folder) defaultRoots.push(path.join(folder.uri.fsPath, '.agents'));
  defaultRoots.push(path.join(os.homedir(), '.agents'));
  const roots = config.get('roots');
  return {
    command: config.get('command') || ['harness-sidecar'],
    roots: roots && roots.length ? roots : defaultRoots,
    trustedExtensions: config.get('trustedExtensions') || [],
  };
}

const EDITOR_TOOLS = [{
  name: 'editor_selection',
  description: 'The text selected in the active editor.',
  inputSchema: { type: 'object', properties: {} },
}];

async function editorToolCall(params) {
  if (params.tool !== 'editor_selection') {
    return { contentItems: [{ type: 'inputText', text: `unknown editor tool ${params.tool}` }], success: false };
  }
  const editor = vscode.window.activeTextEditor;
  if (!editor) return { contentItems: [{ type: 'inputText', text: 'no active editor' }], success: false };
  return { contentItems: [{ type: 'inputText', text: editor.document.getText(editor.selection) }], success: true };
}

/** The thread of this window, started on first use (and again after a restart). */
function thread() {
  if (!threadPromise) {
    const { roots, trustedExtensions } = settings();
    threadPromise = client.request('thread/start', { roots, trustedExtensions, dynamicTools: EDITOR_TOOLS })
      .catch((err) => { threadPromise = null; throw err; });
  }
  return threadPromise;
}

async function show(content, language = 'markdown') {
  const doc = await vscode.workspace.openTextDocument({ content, language });
  await vscode.window.showTextDocument(doc, { preview: true });
  return doc;
}

function catalogText(started) {
  const { catalog, diagnostics } = started;
  const lines = ['# Harness catalog', '', '## Skills'];
  for (const s of catalog.skills) lines.push(`- **${s.name}**: ${s.description} (${s.source})`);
  lines.push('', '## Templates');
  for (const t of catalog.templates) lines.push(`- **${t.name}** (${t.variables.join(', ') || 'no variables'}): ${t.description || ''}`);
  lines.push('', '## Extensions');
  for (const e of catalog.extensions) lines.push(`- **${e.id}**: ${e.status}${e.error ? ` (${e.error})` : ''}`);
  lines.push('', '## Diagnostics');
  for (const d of diagnostics) lines.push(`- ${d.kind}: ${d.message}`);
  return lines.join('\n') + '\n';
}

async function withErrors(action) {
  try {
    return await action();
  } catch (err) {
    vscode.window.showErrorMessage(`Harness sidecar: ${err.message}`);
    return undefined;
  }
}

function activate(context) {
  const output = vscode.window.createOutputChannel('Harness Sidecar');
  const { command } = settings();
  client = new SidecarClient({ command, maxRestarts: 3 });
  client.on('log', (line) => output.appendLine(line));
  client.on('notification', (method, params) => {
    if (method === 'thread/diagnostic') output.appendLine(`[${params.extensionId}] ${params.hook} ${params.kind}: ${params.message}`);
  });
  client.on('exit', (code, signal, expected) => {
    threadPromise = null;
    if (!expected) {
      const why = signal ? `signal ${signal}` : `status ${code}`;
      output.appendLine(`harness-sidecar exited unexpectedly (${why})`);
      vscode.window.showErrorMessage(`Harness sidecar stopped (${why}); see the "Harness Sidecar" output.`);
    }
  });
  client.on('restart', (attempt) => output.appendLine(`restarting harness-sidecar (attempt ${attempt})`));
  client.onRequest('item/tool/call', editorToolCall);
  const started = client.start().catch((err) => {
    output.appendLine(err.message);
    vscode.window.showErrorMessage(`Harness sidecar could not start: ${err.message}`);
  });

  const commands = {
    'harnessSidecar.showCatalog': () => withErrors(async () => show(catalogText(await thread()))),
    'harnessSidecar.activateSkill': (name) => withErrors(async () => {
      const { threadId, catalog } = await thread();
      const skill = name || await vscode.window.showQuickPick(catalog.skills.map((s) => s.name), { placeHolder: 'Skill to activate' });
      if (!skill) return undefined;
      const result = await client.request('skills/activate', { threadId, name: skill });
      return show(`# ${result.skill.name}\n\n${result.skill.body}`);
    }),
    'harnessSidecar.renderTemplate': (name, args) => withErrors(async () => {
      const { threadId, catalog } = await thread();
      const template = name || await vscode.window.showQuickPick(catalog.templates.map((t) => t.name), { placeHolder: 'Template to render' });
      if (!template) return undefined;
      const entry = catalog.templates.find((t) => t.name === template);
      const values = Object.assign({}, args);
      for (const variable of entry ? entry.variables : []) {
        if (values[variable] === undefined) {
          const value = await vscode.window.showInputBox({ prompt: `${template}: ${variable}` });
          if (value === undefined) return undefined;
          values[variable] = value;
        }
      }
      const result = await client.request('templates/render', { threadId, name: template, arguments: values });
      return show(result.message.content);
    }),
    'harnessSidecar.showSystemPrompt': () => withErrors(async () => {
      const { threadId } = await thread();
      return show((await client.request('context/build', { threadId })).systemPrompt);
    }),
  };
  for (const [id, fn] of Object.entries(commands)) context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  context.subscriptions.push(output, { dispose: () => client && client.stop() });
  return { client, started };
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
