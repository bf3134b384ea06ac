'use strict';
// VS Code's own vscode-jsonrpc stream reader/writer (LSP base framing) talk to the sidecar
// unchanged: the sidecar detects Content-Length framing from the first bytes.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('child_process');
const rpc = require('vscode-jsonrpc/node');
const { ROOTS, sidecarCommand } = require('./helpers');

test('vscode-jsonrpc with Content-Length framing, non-ASCII included', async () => {
  const [file, ...args] = sidecarCommand();
  const proc = spawn(file, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  connection.onRequest('item/tool/call', (params) => ({
    contentItems: [{ type: 'inputText', text: `sélection für ${params.tool} ✓` }], success: true,
  }));
  connection.listen();
  const init = await connection.sendRequest('initialize', { clientInfo: { name: 'vscode-jsonrpc ✓' } });
  assert.equal(init.capabilities.framing, 'content-length');
  const started = await connection.sendRequest('thread/start', {
    roots: ROOTS, dynamicTools: [{ name: 'editor_selection', description: 'Sélection', inputSchema: {} }],
  });
  const call = await connection.sendRequest('tools/call', {
    threadId: started.threadId, call: { id: 'ç1', name: 'editor_selection', arguments: { note: '€ and 日本' } },
  });
  assert.deepEqual(call.result.content, [{ type: 'text', text: 'sélection für editor_selection ✓' }]);
  await assert.rejects(connection.sendRequest('no/such', {}), (err) => err.code === -32601);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  assert.equal(await connection.sendRequest('shutdown'), null);
  await connection.sendNotification('exit');
  assert.equal(await exited, 0);
  connection.dispose();
});
