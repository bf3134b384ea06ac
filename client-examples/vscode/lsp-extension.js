'use strict';
// The language-server variant of the extension: VS Code's own LSP client runs
// `harness-sidecar --lsp`, which publishes diagnostics and hovers while you write
// SKILL.md files, templates, AGENTS.md and extensions. Use it as "main" instead of
// extension.js, or alongside it (see README.md).

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client = null;

function clientOptions() {
  const config = vscode.workspace.getConfiguration('harnessSidecar');
  const roots = config.get('roots');
  const initializationOptions = { trustedExtensions: config.get('trustedExtensions') || [] };
  if (roots && roots.length) initializationOptions.roots = roots; // else [<workspace>/.agents, ~/.agents]
  return {
    documentSelector: [
      { scheme: 'file', pattern: '**/skills/*/SKILL.md' },
      { scheme: 'file', pattern: '**/templates/*.md' },
      { scheme: 'file', pattern: '**/AGENTS.md' },
      { scheme: 'file', pattern: '**/extensions/**/*.py' },
    ],
    initializationOptions,
    outputChannelName: 'Harness Sidecar (LSP)',
  };
}

function serverOptions() {
  const [command, ...args] = vscode.workspace.getConfiguration('harnessSidecar').get('command') || ['harness-sidecar'];
  return { command, args: [...args, '--lsp'], transport: TransportKind.stdio };
}

async function activate(context) {
  client = new LanguageClient('harnessSidecar', 'Harness Sidecar', serverOptions(), clientOptions());
  context.subscriptions.push({ dispose: () => client && client.stop() });
  await client.start();
  return client;
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate, clientOptions, serverOptions };
