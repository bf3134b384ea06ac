'use strict';
// LSP mode from node: vscode-jsonrpc (the library under vscode-languageclient) receives the
// sidecar's publishDiagnostics for a broken SKILL.md; and the languageclient variant of the
// extension starts `harness-sidecar --lsp` with the right options.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const Module = require('module');
const path = require('path');
const { spawn } = require('child_process');
const rpc = require('vscode-jsonrpc/node');
const { WORKSPACE, sidecarCommand } = require('./helpers');

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
  assert.match(first.diagnostics[0].message, /spans several lines/);
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

test('the languageclient variant starts `--lsp` with the roots and the document selector', async () => {
  const created = [];
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      created.push({ id, name, serverOptions, clientOptions });
    }
    async start() { this.started = true; }
    async stop() { this.stopped = true; }
  }
  const settings = { command: ['/opt/bin/harness-sidecar'], roots: ['/p/.agents'], trustedExtensions: ['review-extension'] };
  const fakes = {
    vscode: { workspace: { getConfiguration: () => ({ get: (key) => settings[key] }) } },
    'vscode-languageclient/node': { LanguageClient, TransportKind: { stdio: 0 } },
  };
  const original = Module._load;
  Module._load = function load(request, parent, isMain) {
    return request in fakes ? fakes[request] : original.call(this, request, parent, isMain);
  };
  let extension;
  try {
    extension = require('../lsp-extension');
  } finally {
    Module._load = original;
  }
  const context = { subscriptions: [] };
  const client = await extension.activate(context);
  assert.equal(client.started, true);
  const [{ serverOptions, clientOptions }] = created;
  assert.deepEqual(serverOptions, { command: '/opt/bin/harness-sidecar', args: ['--lsp'], transport: 0 });
  assert.deepEqual(clientOptions.initializationOptions, { trustedExtensions: ['review-extension'], roots: ['/p/.agents'] });
  assert.ok(clientOptions.documentSelector.some((s) => s.pattern === '**/skills/*/SKILL.md'));
  await extension.deactivate();
  assert.equal(client.stopped, true);
});
