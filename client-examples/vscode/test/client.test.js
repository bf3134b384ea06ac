'use strict';
// The client module against the real sidecar: the review scenario, reverse requests,
// timeouts, and a sidecar killed mid-session.
const test = require('node:test');
const assert = require('node:assert/strict');
const { SidecarClient } = require('../client');
const { ROOTS, sidecarCommand } = require('./helpers');

// Every client a test starts is stopped after the file, also when an assertion failed
// (a sidecar left running would keep node waiting instead of reporting the failure).
const started = [];
const track = (client) => { started.push(client); return client; };
test.after(async () => { for (const client of started) await client.stop().catch(() => {}); });

const DYNAMIC = [{ name: 'editor_selection', description: 'Selected text.', inputSchema: { type: 'object' } }];

test('the review scenario end to end', async () => {
  const client = track(new SidecarClient({ command: sidecarCommand() }));
  const asked = [];
  client.onRequest('item/tool/call', async (params) => {
    asked.push(params);
    return { contentItems: [{ type: 'inputText', text: 'const x = «sélection»;' }], success: true };
  });
  const init = await client.start();
  assert.equal(init.serverInfo.name, 'harness-sidecar');
  const started = await client.request('thread/start', {
    roots: ROOTS, trustedExtensions: ['review-extension'], dynamicTools: DYNAMIC,
  });
  const threadId = started.threadId;
  assert.deepEqual(started.catalog.skills.map((s) => s.name), ['commit-message', 'review']);
  assert.equal(started.catalog.skills[1].root, ROOTS[0]); // the project's review wins
  assert.equal(started.catalog.extensions[0].status, 'loaded');

  const { skill } = await client.request('skills/activate', { threadId, name: 'review', resources: ['references/checklist.md'] });
  assert.match(skill.body, /Reviewing in this project/);
  assert.match(skill.resources[0].content, /clear error/);

  const { message } = await client.request('templates/render', {
    threadId, name: 'review', arguments: { path: 'src/parser.ts', focus: 'errors' },
  });
  assert.deepEqual(message, { role: 'user', content: 'Review src/parser.ts with the review skill. Focus on errors.\n' });

  const { systemPrompt } = await client.request('context/build', { threadId });
  assert.ok(systemPrompt.indexOf('User instructions') < systemPrompt.indexOf('Project instructions'));
  assert.match(systemPrompt, /# Active skill: review/);

  const allowed = await client.request('tools/call', { threadId, call: { id: 'c1', name: 'review_note', arguments: { text: 'ok' } } });
  assert.equal(allowed.result.isError, false);
  const blocked = await client.request('tools/call', { threadId, call: { id: 'c2', name: 'review_note', arguments: { text: 'SECRET' } } });
  assert.equal(blocked.result.toolCallId, 'c2');
  assert.equal(blocked.result.details.blocked.kind, 'deny');
  assert.equal(blocked.result.details.blocked.extensionId, 'review-extension');

  const selection = await client.request('tools/call', { threadId, call: { id: 'c3', name: 'editor_selection', arguments: {} } });
  assert.deepEqual(selection.result.content, [{ type: 'text', text: 'const x = «sélection»;' }]);
  assert.equal(asked[0].callId, 'c3');

  await assert.rejects(client.request('skills/activate', { threadId, name: 'nope' }), (err) => err.kind === 'skill_not_found');
  assert.equal(await client.stop(), 0);
});

test('a killed sidecar is reported: pending requests fail at once, and the client can restart it', async () => {
  const client = track(new SidecarClient({ command: sidecarCommand(), maxRestarts: 1 }));
  // An editor tool that never answers keeps a tools/call pending in the sidecar.
  client.onRequest('item/tool/call', () => new Promise(() => {}));
  await client.start();
  const { threadId } = await client.request('thread/start', { roots: ROOTS, dynamicTools: DYNAMIC });
  const exits = [];
  client.on('exit', (code, signal, expected) => exits.push({ code, signal, expected }));
  const restarted = new Promise((resolve) => client.once('started', resolve));
  const pending = client.request('tools/call', { threadId, call: { id: 'c', name: 'editor_selection', arguments: {} } });
  setTimeout(() => client.proc.kill('SIGKILL'), 300);
  const startedAt = Date.now();
  await assert.rejects(pending, (err) => err.kind === 'sidecar_exited');
  assert.ok(Date.now() - startedAt < 5000);
  assert.deepEqual(exits, [{ code: null, signal: 'SIGKILL', expected: false }]);
  await restarted;
  const again = await client.request('thread/start', { roots: ROOTS });
  assert.equal(again.threadId, 'thread-1'); // a fresh sidecar
  assert.equal(await client.stop(), 0);
});

test('requests time out and a failing start is reported', async () => {
  const client = track(new SidecarClient({ command: sidecarCommand() }));
  client.onRequest('item/tool/call', () => new Promise(() => {}));
  await client.start();
  const { threadId } = await client.request('thread/start', { roots: ROOTS, dynamicTools: DYNAMIC });
  await assert.rejects(
    client.request('tools/call', { threadId, call: { id: 'c', name: 'editor_selection', arguments: {} } }, { timeoutMs: 300 }),
    (err) => err.kind === 'timeout');
  // A request that times out lets go of its cancellation token's listener, as an answered one does.
  const listeners = new Set();
  const token = { isCancellationRequested: false, onCancellationRequested: (listener) => {
    listeners.add(listener);
    return { dispose: () => listeners.delete(listener) };
  } };
  await assert.rejects(
    client.request('tools/call', { threadId, call: { id: 'd', name: 'editor_selection', arguments: {} } }, { timeoutMs: 300, token }),
    (err) => err.kind === 'timeout');
  assert.equal(listeners.size, 0, 'the timed-out request still listens to its token');
  assert.equal(await client.stop(), 0);

  const broken = new SidecarClient({ command: ['/nonexistent/harness-sidecar'] });
  await assert.rejects(broken.start(), (err) => err.kind === 'spawn_failed');
});
