'use strict';
// ui/openUrl (protocol-v4 §4): a remote MCP server's OAuth sign-in page, opened with env.openExternal.
// The server is the Python tests' remote server (tests/mcp_servers/http_server.py, the official SDK's
// MCPServer with its own OAuth authorization server on 127.0.0.1, which approves at once); the
// stand-in's "browser" follows the URL to the sidecar's loopback redirect, as a user's would.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { spawn } = require('child_process');
const { MCP_SERVER, sidecarCommand } = require('./helpers');
const { activate, deactivateAll, until } = require('./vscode-stand-in');

const EXTENSION = path.resolve(__dirname, '..', 'extension.js');
const HTTP_SERVER = path.resolve(__dirname, '..', '..', '..', 'tests', 'mcp_servers', 'http_server.py');

const activations = [];
test.after(() => deactivateAll(activations));

function oauthServer() {
  const proc = spawn(MCP_SERVER[0], [HTTP_SERVER, '--oauth'], { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /PORT (\d+)/.exec(out);
      if (match) resolve({ proc, url: `http://127.0.0.1:${match[1]}/mcp` });
    });
    proc.on('exit', (code) => reject(new Error(`the server exited (${code})`)));
  });
}

test('ui/openUrl opens the sign-in page with env.openExternal and the server\'s tools join', async (t) => {
  const { proc, url } = await oauthServer();
  t.after(() => proc.kill());
  const { vscode, state, api } = await activate({ user: { command: sidecarCommand(), roots: [] } }, EXTENSION,
    activations);
  const opened = [];
  vscode.env.openExternal = async (uri) => {
    opened.push(uri.toString());
    const answer = await fetch(uri.toString()); // follows the 302 to http://127.0.0.1:<port>/callback
    return answer.ok;
  };
  const started = await api.client.request('thread/start', { roots: [], mcpServers: [{ name: 'auth', type: 'http', url }] });
  const names = async () => (await api.client.request('tools/list', { threadId: started.threadId })).tools
    .map((tool) => tool.name);
  await until(async () => (await names()).includes('mcp__auth__echo'), 60000, 'the tools to join');
  assert.equal(opened.length, 1);
  assert.match(opened[0], /^http:\/\/127\.0\.0\.1:\d+\/authorize\?.*code_challenge_method=S256/);
  assert.ok(state.output.some((line) => /ui\/openUrl: .*opened in the browser/.test(line)));
  const answer = await api.client.request('tools/call', { threadId: started.threadId,
    call: { id: 'c1', name: 'mcp__auth__echo', arguments: { text: 'signed in' } } });
  assert.equal(answer.result.content[0].text, 'signed in');
});

test('a sign-in page the browser cannot open is shown to the user with its URL', async () => {
  const { vscode, state, extension } = await activate({ user: { command: sidecarCommand(), roots: [] } }, EXTENSION,
    activations);
  vscode.env.openExternal = async () => false;
  const harness = extension.REVERSE_REQUESTS;
  assert.ok(harness['ui/openUrl']);
  const { EditorUi } = require('../ui');
  const ui = new EditorUi(vscode, { info: (line) => state.output.push(line) });
  const result = await ui.openUrl({ threadId: 'thread-1', url: 'https://auth.example.com/authorize?x=1', reason: 'sign in' });
  assert.deepEqual(result, { opened: false });
  assert.ok(state.infos.some((m) => m === 'sign in: open https://auth.example.com/authorize?x=1'));
});
