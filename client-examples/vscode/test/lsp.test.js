'use strict';
// LSP mode from node: vscode-jsonrpc (the library under vscode-languageclient) receives the
// sidecar's publishDiagnostics for a broken SKILL.md; and the extension in LSP mode, with the
// real vscode-languageclient, starts the sidecar as VS Code would.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const rpc = require('vscode-jsonrpc/node');
const { ROOTS, WORKSPACE, sidecarCommand } = require('./helpers');
const { activate, deactivateAll, until } = require('./vscode-stand-in');

const activations = [];
test.after(() => deactivateAll(activations));

test('publishDiagnostics for a broken skill, cleared by an unsaved fix', async () => {
  const [file, ...args] = sidecarCommand();
  const proc = spawn(file, [...args, '--lsp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const published = [];
  let wake = () => {};
  connection.onNotification('textDocument/publishDiagnostics', (params) => { published.push(params); wake(); });
  connection.listen();
  const next = async () => {
    while (!published.length) await new Promise((resolve) => { wake = resolve; });
    return published.shift();
  };
  const roots = [path.join(WORKSPACE, 'broken'), path.join(WORKSPACE, 'project')];
  await connection.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {}, initializationOptions: { roots } });
  await connection.sendNotification('initialized', {});
  const skill = path.join(WORKSPACE, 'broken', 'skills', 'deploy', 'SKILL.md');
  const uri = `file://${skill}`;
  await connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'markdown', version: 1, text: fs.readFileSync(skill, 'utf8') },
  });
  const first = await next();
  assert.equal(first.uri, uri);
  assert.equal(first.diagnostics.length, 1);
  assert.equal(first.diagnostics[0].code, 'invalid_frontmatter');
  assert.match(first.diagnostics[0].message, /is blank/);
  assert.deepEqual(first.diagnostics[0].range.start, { line: 2, character: 13 });
  await connection.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: '---\nname: deploy\ndescription: Deploys the app — in one line ✓.\n---\nbody\n' }],
  });
  assert.deepEqual((await next()).diagnostics, []);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  await connection.sendRequest('shutdown');
  await connection.sendNotification('exit');
  assert.equal(await exited, 0);
  connection.dispose();
});

test('the real vscode-languageclient starts `--lsp --stdio`: live diagnostics, hovers and the commands', async () => {
  // Only the `vscode` module is a stand-in; vscode-languageclient 9 is the real one, spawning the real sidecar.
  const { vscode, state, extension, api } = await activate({ user: { command: sidecarCommand(), mode: 'lsp',
    roots: [path.join(WORKSPACE, 'broken'), ...ROOTS] } }, path.resolve(__dirname, '..', 'extension.js'), activations);
  assert.deepEqual(state.errors, []);
  const languageClient = api.client.client;
  assert.equal(languageClient.initializeResult.serverInfo.name, 'harness-sidecar');
  assert.ok(languageClient.initializeResult.capabilities.hoverProvider);

  const skill = path.join(WORKSPACE, 'broken', 'skills', 'wrong-name', 'SKILL.md');
  state.openDocument(skill, fs.readFileSync(skill, 'utf8'));
  const live = () => state.collections.find((c) => c !== state.collections[0] && c.get(vscode.Uri.file(skill)));
  await until(() => live() && live().get(vscode.Uri.file(skill)).length, 15000, 'the live diagnostics');
  const [diagnostic] = live().get(vscode.Uri.file(skill));
  assert.equal(diagnostic.code, 'name_mismatch');
  assert.match(diagnostic.message, /differs from its directory 'wrong-name'/);
  assert.deepEqual([diagnostic.range.start.line, diagnostic.range.start.character], [1, 6]);

  // Hover, through the provider the client registered with VS Code (markdown: VS Code declares it).
  const doc = vscode.workspace.textDocuments[0];
  const hover = await state.hoverProvider.provideHover(doc, new vscode.Position(1, 7), new vscode.CancellationTokenSource().token);
  assert.match(hover.contents[0].value, /\*\*wrong\*\*/);
  assert.match(hover.contents[0].value, /not in the catalog/);

  // The commands go through the same language client as custom requests.
  await state.commands.get('harnessSidecar.showCatalog')();
  assert.match(state.shown.at(-1).getText(), /\*\*review\*\*: Use when reviewing code in this repository/);
  const problems = state.collections[0]; // the catalog's: in LSP mode only what live diagnostics cannot show
  assert.ok([...problems.entries.values()].flat().every((d) => !['shadowed', 'name_mismatch'].includes(d.code)));

  await extension.deactivate();
  const { State } = require('vscode-languageclient/node');
  assert.equal(languageClient.state, State.Stopped);
});
