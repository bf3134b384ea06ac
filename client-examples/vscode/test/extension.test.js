'use strict';
// activate() with a stand-in `vscode` module: commands are registered, the catalog is shown,
// the sidecar's stderr reaches the output channel, and the editor tool answers from the selection.
const test = require('node:test');
const assert = require('node:assert/strict');
const Module = require('module');
const path = require('path');
const { ROOTS, sidecarCommand } = require('./helpers');

function fakeVscode() {
  const state = { commands: new Map(), documents: [], output: [], errors: [], selection: 'picked «text»' };
  const vscode = {
    window: {
      createOutputChannel: (name) => ({ name, appendLine: (line) => state.output.push(line), dispose() {} }),
      showErrorMessage: (message) => state.errors.push(message),
      showTextDocument: async (doc) => doc,
      showQuickPick: async (items) => items[0],
      showInputBox: async ({ prompt }) => `value of ${prompt.split(': ')[1]}`,
      get activeTextEditor() {
        return { selection: 'sel', document: { getText: () => state.selection } };
      },
    },
    workspace: {
      workspaceFolders: undefined,
      getConfiguration: () => ({
        get: (key) => ({
          command: sidecarCommand(), roots: ROOTS, trustedExtensions: ['review-extension'],
        })[key],
      }),
      openTextDocument: async ({ content, language }) => {
        const doc = { content, language };
        state.documents.push(doc);
        return doc;
      },
    },
    commands: {
      registerCommand: (id, fn) => { state.commands.set(id, fn); return { dispose() {} }; },
    },
  };
  return { vscode, state };
}

function loadExtension(vscode) {
  const original = Module._load;
  Module._load = function load(request, parent, isMain) {
    if (request === 'vscode') return vscode;
    return original.call(this, request, parent, isMain);
  };
  try {
    const file = path.resolve(__dirname, '..', 'extension.js');
    delete require.cache[file];
    return require(file);
  } finally {
    Module._load = original;
  }
}

test('activate registers the commands and they drive the real sidecar', async () => {
  const { vscode, state } = fakeVscode();
  const extension = loadExtension(vscode);
  const context = { subscriptions: [] };
  const { client, started } = extension.activate(context);
  await started;
  assert.deepEqual([...state.commands.keys()].sort(), [
    'harnessSidecar.activateSkill', 'harnessSidecar.renderTemplate', 'harnessSidecar.showCatalog',
    'harnessSidecar.showSystemPrompt']);

  await state.commands.get('harnessSidecar.showCatalog')();
  assert.match(state.documents[0].content, /\*\*review\*\*: Use when reviewing code in this repository/);
  assert.match(state.documents[0].content, /review-extension\*\*: loaded/);
  assert.match(state.documents[0].content, /shadowed/);

  await state.commands.get('harnessSidecar.activateSkill')('review');
  assert.match(state.documents[1].content, /^# review\n\n# Reviewing in this project/);
  await state.commands.get('harnessSidecar.renderTemplate')('review');
  assert.equal(state.documents[2].content, 'Review value of path with the review skill. Focus on value of focus.\n');
  await state.commands.get('harnessSidecar.showSystemPrompt')();
  assert.match(state.documents[3].content, /# Active skill: review/);

  // The sidecar calls the editor tool; the extension answers from the active selection.
  const { threadId } = await client.request('thread/start', { roots: ROOTS, dynamicTools: [
    { name: 'editor_selection', description: '', inputSchema: {} }] });
  const call = await client.request('tools/call', { threadId, call: { id: 'c', name: 'editor_selection', arguments: {} } });
  assert.deepEqual(call.result.content, [{ type: 'text', text: 'picked «text»' }]);

  // The trusted extension prints to stderr on every tool result: it lands in the output channel.
  await client.request('tools/call', { threadId: 'thread-1', call: { id: 'n', name: 'review_note', arguments: { text: 'x' } } });
  const deadline = Date.now() + 5000;
  while (!state.output.some((l) => l.includes('review-extension: review_note')) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(state.output.some((l) => l.includes('review-extension: review_note')), state.output.join('\n'));
  assert.deepEqual(state.errors, []);
  assert.equal(await extension.deactivate(), 0);
});

test('a crashed sidecar is shown to the user', async () => {
  const { vscode, state } = fakeVscode();
  const extension = loadExtension(vscode);
  const { client, started } = extension.activate({ subscriptions: [] });
  await started;
  const exited = new Promise((resolve) => client.once('exit', resolve));
  client.maxRestarts = 0;
  client.proc.kill('SIGKILL');
  await exited;
  assert.equal(state.errors.length, 1);
  assert.match(state.errors[0], /stopped \(signal SIGKILL\)/);
});
