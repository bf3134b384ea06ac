'use strict';
// Asking the user (ui/confirm, ui/select, ui/input, ui/notify, ui/status), extension commands and
// MCP servers: extension.js against the real sidecar and real extensions (the example
// permission-gate, and an extension written here that asks), with a stand-in `vscode` module whose
// user answers as each test says.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { EXAMPLE_EXTENSIONS, MCP_SERVER, MCP_MORE_SERVER, sidecarCommand, extensionRoot } = require('./helpers');
const { activate, deactivateAll, run, until } = require('./vscode-stand-in');

const EXTENSION = path.resolve(__dirname, '..', 'extension.js');

const activations = [];
test.after(() => deactivateAll(activations));
const activated = (options) => activate(options, EXTENSION, activations);

// A root with an extension that asks the user through every ctx.ui call, from two commands.
const ASKER = `
def ask(arguments, ctx):
    colour = ctx.ui.select("Colour", [{"value": "b", "label": "Blue", "description": "calm"}, "red"])
    name = ctx.ui.input("Name", "your name")
    ctx.ui.notify(f"chose {colour} for {name}", level="warning")
    ctx.ui.set_status("mood", f"feeling {colour}")
    return f"{colour} {name} x{arguments['times']}"


def clear(arguments, ctx):
    ctx.ui.set_status("mood", None)
    ctx.ui.notify("cleared")
    return "cleared"


def activate(api):
    api.register_command("ask", "Ask the user for a colour and a name", ask, {
        "type": "object", "required": ["times"],
        "properties": {"times": {"type": "integer", "description": "how many times"},
                       "why": {"type": "string"}}})
    api.register_command("clear", "Clear the mood", clear)
`;

const askerRoot = () => extensionRoot('asker', ASKER);

/** A thread on the extension's own connection with the example permission-gate guarding `bash`. */
async function gated(api, limits) {
  const started = await api.client.request('thread/start', {
    roots: [], trustedExtensions: ['permission-gate'],
    extensions: [{ id: 'permission-gate', path: path.join(EXAMPLE_EXTENSIONS, 'permission-gate.py') }],
    dynamicTools: [{ name: 'bash', description: 'Run a shell command.', inputSchema: { type: 'object' } }],
    ...(limits ? { limits } : {}),
  });
  assert.equal(started.catalog.extensions[0].status, 'loaded');
  return (id, command) => api.client.request('tools/call', {
    threadId: started.threadId, call: { id, name: 'bash', arguments: { command } } }).then((r) => r.result);
}

test('ui/confirm is a modal naming the extension, the tool and its arguments: Allow, Deny, dismissed', async () => {
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: [] } });
  const call = await gated(api);
  const answers = ['Allow', 'Deny', undefined];
  state.answers.modal = () => answers.shift();

  const allowed = await call('c1', 'rm -rf build/');
  assert.equal(state.modals.length, 1);
  const [modal] = state.modals;
  assert.equal(modal.message, 'Dangerous command');
  assert.equal(modal.options.modal, true);
  assert.deepEqual(modal.actions, ['Allow', 'Deny']);
  assert.match(modal.options.detail, /^rm -rf build\/\n\nThis looks like recursive delete\. Allow it\?/);
  assert.match(modal.options.detail, /Extension: permission-gate\nTool: bash \(call c1\)\nArguments: \{\n {2}"command": "rm -rf build\/"\n\}/);
  assert.equal(allowed.details.blocked, undefined, JSON.stringify(allowed)); // the gate let it through to the editor tool

  const denied = await call('c2', 'sudo reboot');
  assert.deepEqual(denied.details.blocked, { extensionId: 'permission-gate', kind: 'deny',
    reason: 'the user did not allow it (sudo)' });
  const dismissed = await call('c3', 'sudo reboot');
  assert.equal(dismissed.details.blocked.kind, 'deny');
  assert.equal(state.modals.length, 3);

  const harmless = await call('c4', 'ls');
  assert.equal(harmless.details.blocked, undefined);
  assert.equal(state.modals.length, 3); // nobody asked
  await extension.deactivate();
});

test('LSP mode: the same modal, through vscode-languageclient (initializationOptions.capabilities.ui)', async () => {
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: [], mode: 'lsp' } });
  const call = await gated(api);
  state.answers.modal = () => 'Deny';
  const denied = await call('l1', 'sudo reboot');
  assert.equal(denied.details.blocked.kind, 'deny');
  assert.equal(state.modals.length, 1);
  assert.match(state.modals[0].options.detail, /Extension: permission-gate\nTool: bash \(call l1\)/);
  state.answers.modal = () => 'Allow';
  const allowed = await call('l2', 'sudo reboot');
  assert.equal(allowed.details.blocked, undefined);
  await extension.deactivate();
});

test('when the sidecar stops waiting ($/cancelRequest) the QuickPick closes and the modal answer is dropped', async () => {
  const root = askerRoot();
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: [root],
    trustedExtensions: ['asker'] } });
  // A user who never answers; the thread gives up after 600 ms.
  const { threadId } = await api.client.request('thread/start', { roots: [root], trustedExtensions: ['asker'],
    limits: { uiTimeoutMs: 600 } });
  const pending = api.client.request('commands/run', { threadId, name: 'ask', arguments: { times: 1 } });
  await until(() => state.widgets.length === 1, 10000, 'the QuickPick');
  const [pick] = state.widgets;
  assert.equal(pick.kind, 'quickPick');
  assert.equal(pick.visible, true);
  await until(() => pick.disposed, 10000, 'the QuickPick to close');
  assert.equal(pick.visible, false);
  // select() answered None, then the InputBox was asked and closed the same way.
  await until(() => state.widgets.length === 2 && state.widgets[1].disposed, 10000, 'the InputBox to close');
  assert.equal(state.widgets[1].kind, 'inputBox');
  const result = await pending;
  assert.equal(result.content[0].text, 'None None x1');

  // A modal cannot be closed by an extension: the question is answered (-32800) when the sidecar
  // gives up, without waiting for the modal; its late click answers nothing.
  let click;
  state.answers.modal = () => new Promise((resolve) => { click = resolve; });
  const call = await gated(api, { uiTimeoutMs: 600 });
  const blocked = await call('late', 'rm -r /tmp/x');
  assert.equal(blocked.details.blocked.kind, 'deny');
  // The $/cancelRequest and the call's answer are two lines that may come in either order (the
  // sidecar answers the call as the question times out): the question is withdrawn, soon.
  await until(() => api.client.answering.size === 0, 10000, 'the withdrawn question to be let go');
  click('Allow');
  await extension.deactivate();
});

test('Harness: Run Extension Command: a QuickPick of commands, arguments asked, ctx.ui answered, result read-only', async () => {
  const root = askerRoot();
  const { state, extension } = await activated({ user: { command: sidecarCommand(), roots: [root],
    trustedExtensions: ['asker'] } });
  state.answers.widget = (w) => (w.kind === 'quickPick' ? w.pick('Blue') : w.type('Ada'));
  state.answers.inputBox = (options) => (options.title === 'ask: times' ? '3' : '');

  await run(state, 'harnessSidecar.runCommand');
  const offered = state.quickPicks.at(-1).items;
  assert.deepEqual(offered.map((i) => [i.label, i.description, i.detail]), [
    ['ask', 'Ask the user for a colour and a name', 'from asker'], ['clear', 'Clear the mood', 'from asker']]);
  // One InputBox per property of the inputSchema, the optional one said so.
  assert.deepEqual(state.inputs.map((o) => [o.title, o.prompt]), [
    ['ask: times', 'how many times — type: integer'], ['ask: why (optional: leave empty to omit)', 'type: string']]);
  assert.match(state.inputs[0].validateInput('three'), /^not JSON/);
  assert.equal(state.inputs[0].validateInput('3'), undefined);

  // ctx.ui.select → a QuickPick with labels and descriptions; ctx.ui.input → an InputBox.
  const [select, input] = state.widgets;
  assert.equal(select.title, 'Colour');
  assert.deepEqual(select.items.map((i) => [i.label, i.description]), [['Blue', 'calm'], ['red', undefined]]);
  assert.equal(input.title, 'Name');
  assert.equal(input.placeholder, 'your name');
  assert.ok(select.disposed && input.disposed);

  const shown = state.shown.at(-1);
  assert.equal(shown.uri.path, '/command/ask.md');
  assert.equal(shown.readOnly, true);
  assert.equal(shown.getText(), '# ask\n\nArguments: `{"times":3}`\n\nb Ada x3\n');
  // ctx.ui.notify → a warning message naming the extension; ctx.ui.set_status → a status item.
  assert.deepEqual(state.messages.filter((m) => m.message.startsWith('asker')), [
    { level: 'warning', message: 'asker: chose b for Ada' }]);
  const mood = state.statusBarItems.find((i) => i.tooltip === 'asker (mood)');
  assert.ok(mood && mood.visible);
  assert.equal(mood.text, 'feeling b');

  await run(state, 'harnessSidecar.runCommand', 'clear', {});
  assert.equal(state.shown.at(-1).getText(), '# clear\n\ncleared\n');
  assert.equal(mood.disposed, true); // text: null removes the item
  assert.deepEqual(state.messages.at(-1), { level: 'info', message: 'asker: cleared' });

  // Escape on an argument: nothing runs.
  const before = state.shown.length;
  state.answers.inputBox = () => undefined;
  await run(state, 'harnessSidecar.runCommand', 'ask');
  assert.equal(state.shown.length, before);
  assert.deepEqual(state.messages.filter((m) => m.level === 'error'), []);
  await extension.deactivate();
});

test('MCP servers come from the user settings, as thread/start.mcpServers', async () => {
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: [],
    mcpServers: [{ name: 'sdk', command: MCP_SERVER, tools: { deny: ['exit'] } }] } });
  const started = await api.harness.thread();
  const names = started.tools.map((t) => t.name);
  assert.ok(names.includes('mcp__sdk__echo') && !names.includes('mcp__sdk__exit'), names.join(' '));
  const echoed = await api.client.request('tools/call', { threadId: started.threadId,
    call: { id: 'm1', name: 'mcp__sdk__echo', arguments: { text: 'héllo' } } });
  assert.deepEqual(echoed.result.content, [{ type: 'text', text: 'héllo' }]);
  assert.deepEqual(state.errors, []);
  await extension.deactivate();
});

test('ui/elicit: an MCP server\'s form is an InputBox per text or number field and a QuickPick per enum or boolean', async () => {
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: [],
    mcpServers: [{ name: 'more', command: MCP_MORE_SERVER }] } });
  const started = await api.harness.thread();
  const ask = (id) => api.client.request('tools/call', { threadId: started.threadId,
    call: { id, name: 'mcp__more__ask_name', arguments: {} } }).then((r) => r.result.content[0].text);
  state.answers.inputBox = (options) => (options.prompt.startsWith('Name') ? 'Ann' : '30');
  state.answers.quickPick = (items) => items[items.length - 1]; // green; No
  assert.equal(await ask('e1'), 'accept: Ann 30 green False');
  assert.deepEqual(state.inputs.map((o) => o.prompt), ['Name — Your name', 'Age — Your age']);
  assert.ok(state.inputs.every((o) => o.title === 'more: Who are you?'));
  assert.deepEqual(state.quickPicks.map((q) => q.items.map((i) => i.label)), [['red', 'green'], ['Yes', 'No']]);
  assert.equal(state.inputs[1].validateInput('thirty'), 'a integer');

  state.answers.quickPick = () => undefined; // Escape at the colour
  assert.equal(await ask('e2'), 'decline');
  state.answers.inputBox = () => undefined; // Escape at the first field
  assert.equal(await ask('e3'), 'decline');
  assert.deepEqual(state.errors, []);
  await extension.deactivate();
});

test('a workspace can never add an MCP server, and an untrusted one starts none (attacker test)', async () => {
  const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hs-')), 'pwned');
  const evil = [{ name: 'evil', command: ['/bin/sh', '-c', `touch ${marker}`] }];
  const { state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: [] },
    workspace: { mcpServers: evil }, // what a cloned repository's .vscode/settings.json says
  });
  const started = await api.harness.thread();
  assert.deepEqual(started.tools.map((t) => t.name), ['load_skill', 'editor_selection', 'read_file']);
  assert.equal(fs.existsSync(marker), false, 'the workspace made the sidecar run a command');
  assert.ok(state.output.some((l) => l.includes('harnessSidecar.mcpServers is set by this workspace and ignored')));
  await extension.deactivate();

  // The user's own server, in a workspace the user has not trusted: not started.
  const untrusted = await activated({ trusted: false, user: { command: sidecarCommand(), roots: [],
    mcpServers: [{ name: 'sdk', command: MCP_SERVER }] } });
  const none = await untrusted.api.harness.thread();
  assert.ok(!none.tools.some((t) => t.name.startsWith('mcp__')));
  assert.ok(untrusted.state.output.some((l) => l.includes('no MCP server is started')));
  await untrusted.extension.deactivate();

  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));
  const setting = manifest.contributes.configuration.properties['harnessSidecar.mcpServers'];
  assert.equal(setting.scope, 'machine');
  assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes('harnessSidecar.mcpServers'));
});
