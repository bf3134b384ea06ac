'use strict';
// extension.js against the real sidecar, with a stand-in `vscode` module: what a user sees
// (tree, status bar, Problems, read-only documents, toasts with actions), the trust rules
// tested as an attacker would try them, cancellation, restarts.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ROOTS, WORKSPACE, sidecarCommand, extensionRoot } = require('./helpers');
const { activate, deactivateAll, run, until } = require('./vscode-stand-in');

const EXTENSION = path.resolve(__dirname, '..', 'extension.js');

// Every activated extension is deactivated after the file, also when an assertion failed.
const activations = [];
test.after(() => deactivateAll(activations));
const activated = (options) => activate(options, EXTENSION, activations);

const text = (doc) => doc.getText();

test('the catalog as a tree, a status bar, Problems and read-only documents', async () => {
  const { vscode, state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: ROOTS, trustedExtensions: ['review-extension'] },
  });
  assert.deepEqual([...state.commands.keys()].sort(), [
    'harnessSidecar.activateSkill', 'harnessSidecar.callTool', 'harnessSidecar.deactivateSkill',
    'harnessSidecar.refreshCatalog', 'harnessSidecar.renderTemplate',
    'harnessSidecar.restart', 'harnessSidecar.runCommand', 'harnessSidecar.showCatalog', 'harnessSidecar.showOutput', 'harnessSidecar.showSystemPrompt']);

  await run(state, 'harnessSidecar.showCatalog');
  const catalog = state.shown.at(-1);
  assert.equal(catalog.uri.scheme, 'harness-sidecar'); // a read-only virtual document, never an untitled one
  assert.equal(catalog.readOnly, true);
  assert.match(text(catalog), /\*\*review\*\*: Use when reviewing code in this repository/);
  assert.match(text(catalog), /review-extension\*\*: loaded/);

  const tree = state.trees.get('harnessSidecar.catalog');
  const groups = tree.getChildren();
  assert.deepEqual(groups.map((g) => g.item.label), ['Skills (2)', 'Templates (1)', 'Extensions (1)', 'Diagnostics (2)']);
  const skills = tree.getChildren(groups[0]).map((n) => n.item);
  assert.deepEqual(skills.map((s) => [s.label, s.description]), [
    ['commit-message', 'Use when writing a commit message for staged changes.'],
    ['review', 'Use when reviewing code in this repository; not for deploys.']]);
  assert.equal(skills[1].command.arguments[0].fsPath, path.join(ROOTS[0], 'skills/review/SKILL.md'));
  const [extensionNode] = tree.getChildren(groups[2]);
  assert.deepEqual([extensionNode.item.label, extensionNode.item.description], ['review-extension', 'loaded']);

  assert.match(state.statusBar.text, /2 skills/);
  assert.match(state.statusBar.tooltip, /1 extensions loaded/);
  // Problems: the shadowed skill and template at their own files.
  const problems = state.collections.find((c) => c.name === 'harness-sidecar');
  const shadowed = problems.get(vscode.Uri.file(path.join(ROOTS[1], 'skills/review/SKILL.md')));
  assert.equal(shadowed.length, 1);
  assert.equal(shadowed[0].code, 'shadowed');
  assert.equal(shadowed[0].severity, vscode.DiagnosticSeverity.Information);

  await run(state, 'harnessSidecar.activateSkill');
  const picked = state.quickPicks.at(-1).items;
  assert.deepEqual(picked.map((i) => [i.label, i.description]), [
    ['commit-message', 'Use when writing a commit message for staged changes.'],
    ['review', 'Use when reviewing code in this repository; not for deploys.']]);
  assert.match(text(state.shown.at(-1)), /^# commit-message\n\nSummarise why/);

  await run(state, 'harnessSidecar.renderTemplate', 'review');
  assert.equal(text(state.shown.at(-1)), 'Review value of path with the review skill. Focus on value of focus.\n');
  await run(state, 'harnessSidecar.activateSkill', 'review');
  await run(state, 'harnessSidecar.showSystemPrompt');
  assert.match(text(state.shown.at(-1)), /# Active skill: review/);
  assert.ok(state.progress.length >= 4 && state.progress.every((p) => p.options.cancellable));

  // The sidecar calls the editor tool (a reverse request): answered from the active selection.
  vscode.window.activeTextEditor = { selection: 'sel', document: { getText: () => 'picked «text»' } };
  const { threadId } = await api.harness.thread();
  const call = await api.client.request('tools/call', { threadId, call: { id: 'c', name: 'editor_selection', arguments: {} } });
  assert.deepEqual(call.result.content, [{ type: 'text', text: 'picked «text»' }]);
  // The trusted extension prints on every tool result: it reaches the log channel.
  await api.client.request('tools/call', { threadId, call: { id: 'n', name: 'review_note', arguments: { text: 'x' } } });
  await until(() => state.output.some((l) => l.includes('review-extension: review_note')), 5000, 'the extension log');
  assert.deepEqual(state.errors, []);
  await extension.deactivate();
});

test('a workspace cannot choose the command or trust an extension (attacker test)', async () => {
  const marker = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hs-')), 'pwned');
  const { state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: ROOTS }, // the user trusts nothing
    // What a cloned repository's .vscode/settings.json says:
    workspace: { command: ['/bin/sh', '-c', `touch ${marker}`], trustedExtensions: ['review-extension'] },
  });
  await run(state, 'harnessSidecar.showCatalog');
  assert.equal(fs.existsSync(marker), false, 'the workspace chose the executable');
  const started = await api.harness.thread();
  assert.equal(started.catalog.extensions[0].status, 'skipped_untrusted');
  assert.deepEqual(started.tools.map((t) => t.name), ['load_skill', 'editor_selection']);
  assert.ok(state.output.some((l) => l.includes('harnessSidecar.command is set by this workspace and ignored')));
  assert.ok(state.output.some((l) => l.includes('harnessSidecar.trustedExtensions is set by this workspace and ignored')));
  await extension.deactivate();

  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));
  const properties = manifest.contributes.configuration.properties;
  assert.equal(properties['harnessSidecar.command'].scope, 'machine');
  assert.equal(properties['harnessSidecar.trustedExtensions'].scope, 'machine');
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
  assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.sort(),
    ['harnessSidecar.command', 'harnessSidecar.disabledPlugins', 'harnessSidecar.mcpServers', 'harnessSidecar.plugins',
      'harnessSidecar.roots', 'harnessSidecar.trustedExtensions', 'harnessSidecar.trustedHooks', 'harnessSidecar.trustedPlugins']);
  for (const key of ['trustedHooks', 'plugins', 'disabledPlugins', 'trustedPlugins']) {
    assert.equal(properties[`harnessSidecar.${key}`].scope, 'machine', key);
  }
});

test('command hooks are listed with their trust state, trusted from user settings only (attacker test)', async () => {
  const declare = (matcher) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-hooks-'));
    fs.writeFileSync(path.join(root, 'hooks.json'), JSON.stringify({ hooks: { PreToolUse: [
      { matcher, hooks: [{ type: 'command', command: 'exit 2' }] }] } }));
    return root;
  };
  const mine = declare('Bash');
  const theirs = declare('Write');
  const { state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: [mine, theirs], trustedHooks: [{ path: path.join(mine, 'hooks.json') }] },
    // What a cloned repository's .vscode/settings.json says:
    workspace: { trustedHooks: [{ path: path.join(theirs, 'hooks.json') }] },
  });
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(text(state.shown.at(-1)), /\*\*PreToolUse\*\* \[Bash\]: `exit 2` — trusted/);
  assert.match(text(state.shown.at(-1)), /\*\*PreToolUse\*\* \[Write\]: `exit 2` — not trusted/);
  const started = await api.harness.thread();
  assert.deepEqual(started.catalog.hooks.map((h) => [h.matcher, h.trusted]), [['Bash', true], ['Write', false]]);
  const tree = state.trees.get('harnessSidecar.catalog');
  const group = tree.getChildren().find((g) => g.item.label === 'Command hooks (2)');
  assert.deepEqual(tree.getChildren(group).map((n) => [n.item.label, n.item.description, n.item.iconPath.id]), [
    ['PreToolUse [Bash]', 'trusted · exit 2', 'pass'], ['PreToolUse [Write]', 'not trusted · exit 2', 'lock']]);
  assert.ok(state.output.some((l) => l.includes('harnessSidecar.trustedHooks is set by this workspace and ignored')));
  await extension.deactivate();
});

// Real plugins used unchanged (tests/fixtures/plugins, each with its SOURCE.md): a Claude Code one with
// skills, a command template and an http MCP server; one whose only part is a SessionStart hook;
// a Codex one with agents and a command template.
const PLUGINS = path.resolve(__dirname, '..', '..', '..', 'tests', 'fixtures', 'plugins');
const pluginSettings = () => {
  process.env.HS_TEST_PLUGINS = PLUGINS;
  return {
    command: sidecarCommand(), roots: [fs.mkdtempSync(path.join(os.tmpdir(), 'hs-empty-'))],
    // written as users write roots: ${env:NAME} expanded by the extension
    plugins: ['${env:HS_TEST_PLUGINS}/example-plugin', path.join(PLUGINS, 'explanatory-output-style'),
      path.join(PLUGINS, 'debugging-toolkit'), path.join(PLUGINS, 'commit-commands')],
    disabledPlugins: ['commit-commands'],
    trustedPlugins: [{ name: 'explanatory-output-style' }],
  };
};
const pluginTree = (state) => {
  const tree = state.trees.get('harnessSidecar.catalog');
  const group = tree.getChildren().find((g) => /^Plugins/.test(g.item.label));
  const plugins = tree.getChildren(group);
  const parts = (name) => tree.getChildren(plugins.find((p) => p.plugin.name === name))
    .map((n) => [n.item.label, n.item.description, n.item.iconPath.id]);
  return { tree, group, plugins, parts };
};

test('plugins from user settings: the tree shows each with its parts and trust state; a workspace trusts none (attacker test)', async () => {
  const { state, extension, api } = await activated({
    user: pluginSettings(),
    // What a cloned repository's .vscode/settings.json says:
    workspace: { trustedPlugins: [{ name: 'example-plugin' }], disabledPlugins: ['explanatory-output-style'],
      plugins: [path.join(PLUGINS, 'block-no-verify')] },
  });
  await run(state, 'harnessSidecar.showCatalog');
  const started = await api.harness.thread();
  assert.deepEqual(started.catalog.plugins.map((p) => p.name), ['example-plugin', 'explanatory-output-style', 'debugging-toolkit']);
  const { tree, group, plugins, parts } = pluginTree(state);
  assert.equal(group.item.label, 'Plugins (3)');
  assert.deepEqual(plugins.map((p) => [p.item.label, p.item.description, p.item.iconPath.id]), [
    ['example-plugin', 'not trusted', 'lock'], // its MCP server is code: not granted
    ['explanatory-output-style 1.0.0', 'trusted', 'package'],
    ['debugging-toolkit 1.2.1', 'data only', 'package']]);
  assert.deepEqual(parts('example-plugin'), [
    ['example-plugin:example-command', 'skill', 'book'], ['example-plugin:example-skill', 'skill', 'book'],
    ['example-plugin:example-command', 'command <required-arg> [optional-arg]', 'terminal'],
    ['MCP example-server', 'not trusted · http https://mcp.example.com/api (not started here)', 'lock']]);
  // its one hook (SessionStart), granted by the user's trustedPlugins
  const hooks = parts('explanatory-output-style');
  assert.ok(hooks.length >= 1 && hooks.every(([, description, icon]) => /^trusted/.test(description) && icon === 'pass'), hooks);
  assert.deepEqual(parts('debugging-toolkit'), [
    ['debugging-toolkit:smart-debug', 'command', 'terminal'],
    ['debugging-toolkit-debugger', 'agent · listed, never run', 'person'],
    ['debugging-toolkit-dx-optimizer', 'agent · listed, never run', 'person']]);
  // command templates are listed where templates are
  const templates = tree.getChildren(tree.getChildren().find((g) => /^Templates/.test(g.item.label)));
  assert.deepEqual(templates.map((n) => [n.item.label, n.item.description]), [
    ['debugging-toolkit:smart-debug', 'free text'], ['example-plugin:example-command', '<required-arg> [optional-arg]']]);
  const catalog = text(state.shown.at(-1));
  assert.match(catalog, /- \*\*example-plugin\*\* \(claude\): not trusted/);
  assert.match(catalog, /- \*\*debugging-toolkit\*\* 1\.2\.1 \(codex\): data only/);
  assert.match(catalog, /  - MCP servers: example-server \(not trusted\)/);
  for (const key of ['plugins', 'disabledPlugins', 'trustedPlugins']) {
    assert.ok(state.output.some((l) => l.includes(`harnessSidecar.${key} is set by this workspace and ignored`)), key);
  }
  await extension.deactivate();
});

test('Render Template offers command templates and renders one from free text (templates/render text)', async () => {
  const { state, extension } = await activated({ user: pluginSettings() });
  state.answers.inputBox = () => 'fix "the flaky test"';
  await run(state, 'harnessSidecar.renderTemplate', 'example-plugin:example-command');
  assert.equal(state.inputs.at(-1).prompt, '<required-arg> [optional-arg]');
  assert.match(text(state.shown.at(-1)), /The user invoked this command with: fix "the flaky test"\n/);
  assert.match(text(state.shown.at(-1)), /^# Example Command \(Legacy `commands\/` Format\)/);
  // from the picker: both command templates, with their argument hints; a string argument is the text
  await run(state, 'harnessSidecar.renderTemplate');
  assert.deepEqual(state.quickPicks.at(-1).items.map((i) => [i.label, i.description]), [
    ['debugging-toolkit:smart-debug', 'free text'], ['example-plugin:example-command', '<required-arg> [optional-arg]']]);
  await run(state, 'harnessSidecar.renderTemplate', 'example-plugin:example-command', 'a b');
  assert.match(text(state.shown.at(-1)), /The user invoked this command with: a b\n/);
  assert.deepEqual(state.errors, []);
  await extension.deactivate();
});

test('an untrusted workspace trusts no plugin: their skills and commands stay, their code is not trusted', async () => {
  const { state, extension, api } = await activated({ user: pluginSettings(), trusted: false });
  await run(state, 'harnessSidecar.showCatalog');
  const started = await api.harness.thread();
  const explanatory = started.catalog.plugins.find((p) => p.name === 'explanatory-output-style');
  assert.equal(explanatory.trusted.hooks, false);
  const { plugins, parts } = pluginTree(state);
  assert.deepEqual(plugins.map((p) => p.item.description), ['not trusted', 'not trusted', 'data only']);
  assert.ok(parts('explanatory-output-style').every(([, description, icon]) => /^not trusted/.test(description) && icon === 'lock'));
  assert.ok(started.catalog.skills.some((s) => s.name === 'example-plugin:example-skill'));
  assert.match(text(state.shown.at(-1)), /no hooks or plugin code run/);
  await extension.deactivate();
});

test('an untrusted workspace trusts no extension, says so, and granting trust restarts', async () => {
  const { state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: ROOTS, trustedExtensions: ['review-extension'] }, trusted: false,
  });
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(text(state.shown.at(-1)), /not trusted: no extension code is loaded/);
  assert.match(text(state.shown.at(-1)), /review-extension\*\*: skipped_untrusted/);
  assert.match(state.statusBar.tooltip, /untrusted workspace/);
  const before = api.client;
  state.grantTrust();
  await until(() => api.client !== before && api.client && api.client.proc, 10000, 'a restart');
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(text(state.shown.at(-1)), /review-extension\*\*: loaded/);
  await extension.deactivate();
});

test('a sidecar that cannot start gives actionable errors, also on later commands', async () => {
  const { state, extension } = await activated({ user: { command: ['/nonexistent/harness-sidecar'], roots: ROOTS } });
  assert.equal(state.errors.length, 1);
  assert.match(state.errors[0].message, /could not start \/nonexistent\/harness-sidecar: \/nonexistent\/harness-sidecar was not found \(no such file\)/);
  // how to install it as it really is: from the repository (it is on no package index)
  assert.match(state.errors[0].message, /from its repository .*pip install -e \. in the checkout/);
  assert.doesNotMatch(state.errors[0].message, /pip install harness-sidecar/);
  assert.deepEqual(state.errors[0].actions, ['Show Output', 'Open Settings']);
  assert.match(state.statusBar.text, /not running/);
  state.answer = 'Open Settings';
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(state.errors[1].message, /could not start \/nonexistent\/harness-sidecar/); // not "not running"
  assert.deepEqual(state.executed.at(-1), ['workbench.action.openSettings', 'harnessSidecar']);
  await extension.deactivate();
});

test('the default command not on PATH: the error says it was not found, names the setting and the path to set', async () => {
  const saved = process.env.PATH;
  // as on a machine where harness-sidecar was never put on PATH (it is on no package index)
  process.env.PATH = saved.split(path.delimiter).filter((dir) => !fs.existsSync(path.join(dir, 'harness-sidecar'))).join(path.delimiter);
  try {
    const { state, extension } = await activated({ user: { roots: ROOTS } }); // harnessSidecar.command left at its default
    assert.equal(state.errors.length, 1);
    const { message } = state.errors[0];
    assert.match(message, /^Harness: could not start harness-sidecar: harness-sidecar was not found \(it is not on your PATH/);
    assert.match(message, /harnessSidecar\.command is \["harness-sidecar"\]/);
    assert.match(message, /set harnessSidecar\.command to \["\/path\/to\/checkout\/\.venv\/bin\/harness-sidecar"\] in your user settings/);
    assert.doesNotMatch(message, /spawn harness-sidecar ENOENT/); // said in words, not as errno
    assert.deepEqual(state.errors[0].actions, ['Show Output', 'Open Settings']);
    assert.match(state.statusBar.text, /not running/);
    await extension.deactivate();
  } finally {
    process.env.PATH = saved;
  }
});

test('cancelling the progress cancels the request in the sidecar', async () => {
  const root = extensionRoot('slow',
    'import sys, time\ndef activate(api):\n    print("slow: activating", file=sys.stderr, flush=True)\n    time.sleep(6)\n');
  const { state, extension, api } = await activated({
    user: { command: sidecarCommand(), roots: [root], trustedExtensions: ['slow'] },
  });
  const sent = [];
  const notify = api.client.notify.bind(api.client);
  api.client.notify = (method, params) => { sent.push(method); return notify(method, params); };
  const pending = run(state, 'harnessSidecar.showCatalog');
  await until(() => state.output.some((l) => l.includes('slow: activating')), 15000, 'the slow activate');
  const cancelledAt = Date.now();
  state.progress[0].source.cancel();
  await pending;
  assert.ok(Date.now() - cancelledAt < 4000, 'the command waited for the slow activate');
  assert.deepEqual(sent, ['$/cancelRequest']);
  assert.deepEqual(state.errors, []); // a cancellation is no error
  assert.ok(state.output.some((l) => l.includes('cancelled')));
  await extension.deactivate();
});

test('changing a setting restarts the sidecar with it; a crash is shown with actions', async () => {
  const { state, extension, api } = await activated({ user: { command: sidecarCommand(), roots: ROOTS } });
  await run(state, 'harnessSidecar.showCatalog');
  const first = api.client;
  state.setUser('roots', [path.join(WORKSPACE, 'user')]);
  await until(() => api.client !== first && api.client && api.client.proc, 10000, 'a restart');
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(text(state.shown.at(-1)), /commit-message/);
  assert.doesNotMatch(text(state.shown.at(-1)), /shadowed/); // only the user root now
  const client = api.client;
  client.maxRestarts = 0;
  const exited = new Promise((resolve) => client.once('exit', resolve));
  client.proc.kill('SIGKILL');
  await exited;
  await until(() => state.errors.length === 1, 5000, 'the crash toast');
  assert.match(state.errors[0].message, /stopped \(signal SIGKILL\)/);
  assert.deepEqual(state.errors[0].actions, ['Show Output', 'Open Settings']);
  assert.match(state.statusBar.text, /stopped/);
  await run(state, 'harnessSidecar.restart');
  await run(state, 'harnessSidecar.showCatalog');
  assert.match(text(state.shown.at(-1)), /commit-message/);
  await extension.deactivate();
});

// A root whose extension asks the user (ctx.ui.confirm) before the editor tool runs, and whose hooks.json
// blocks load_skill for the skill "secret" with its reason on stderr (exit 2, as Claude Code's hooks do).
function callToolRoot() {
  const root = extensionRoot('ask-first', `
def gate(event, ctx):
    if event["call"]["name"] != "editor_selection":
        return None
    if ctx.ui.confirm("Read the selection?", "May the agent read what you selected?"):
        return None
    return {"block": True, "reason": "the user kept the selection private"}


def activate(api):
    api.on("tool_call", gate)
`);
  fs.mkdirSync(path.join(root, 'skills', 'secret'), { recursive: true });
  fs.writeFileSync(path.join(root, 'skills', 'secret', 'SKILL.md'),
    '---\nname: secret\ndescription: Use never; a hook keeps it closed.\n---\nThe secret body.\n');
  fs.writeFileSync(path.join(root, 'hooks.json'), JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'load_skill',
    hooks: [{ type: 'command', command: 'grep -q secret && { echo "secret skills stay closed" >&2; exit 2; }; exit 0' }] }] } }));
  return root;
}

test('Call Tool…: pick a tool, type its arguments as JSON (bad JSON asked again), see the result, a hook\'s block and a confirm prompt', async () => {
  const root = callToolRoot();
  const { vscode, state, extension } = await activated({ user: { command: sidecarCommand(), roots: [root, ...ROOTS],
    trustedExtensions: ['ask-first'], trustedHooks: [{ path: path.join(root, 'hooks.json') }] } });
  assert.ok(state.commands.has('harnessSidecar.callTool'));
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));
  assert.ok(manifest.contributes.commands.some((c) => c.command === 'harnessSidecar.callTool' && c.title === 'Call Tool…'));

  // The picker lists the thread's tools (tools/list); the stand-in user picks the one named here.
  const pickTool = (name) => { state.answers.quickPick = (items) => items.find((i) => i.label === name); };
  const typed = [];
  state.answers.inputBox = () => typed.shift();

  pickTool('load_skill');
  typed.push('{"name": "review"', '["review"]', '{"name": "review"}');
  await run(state, 'harnessSidecar.callTool');
  const listed = state.quickPicks.at(-1).items.map((i) => i.label);
  assert.deepEqual(listed.slice().sort(), ['editor_selection', 'load_skill'], listed);
  // prefilled {}, refused while typing, and asked again (the text kept) with the reason
  const asked = state.inputs.slice(-3);
  assert.equal(asked[0].value, '{}');
  assert.match(asked[0].validateInput('{"name": "review"'), /not JSON/);
  assert.equal(asked[0].validateInput('{"name": "review"}'), undefined);
  assert.equal(asked[1].value, '{"name": "review"');
  assert.match(asked[1].prompt, /not JSON.*try again/);
  assert.match(asked[2].prompt, /must be a JSON object.*try again/);
  assert.ok(state.messages.some((m) => m.level === 'warning' && /load_skill: not JSON/.test(m.message)));
  let doc = state.shown.at(-1);
  assert.equal(doc.uri.scheme, 'harness-sidecar');
  assert.equal(doc.readOnly, true);
  assert.match(text(doc), /^# load_skill\n\nArguments: `\{"name":"review"\}`/);
  assert.match(text(doc), /# Reviewing in this project/);

  // A command hook blocks the call: the document says so, with the hook's own reason.
  typed.push('{"name": "secret"}');
  await run(state, 'harnessSidecar.callTool');
  doc = state.shown.at(-1);
  assert.match(text(doc), /^# load_skill \(blocked\)/);
  assert.match(text(doc), /Blocked by root:.*hooks\.json.*: .*secret skills stay closed/);
  assert.doesNotMatch(text(doc), /The secret body/);

  // The extension's confirm prompt is the modal a user answers: Deny blocks, Allow runs the editor tool.
  vscode.window.activeTextEditor = { selection: 'sel', document: { getText: () => 'my «selection»' } };
  pickTool('editor_selection');
  state.answers.modal = () => 'Deny';
  typed.push('{}');
  await run(state, 'harnessSidecar.callTool');
  assert.equal(state.modals.at(-1).message, 'Read the selection?');
  assert.match(text(state.shown.at(-1)), /^# editor_selection \(blocked\)/);
  assert.match(text(state.shown.at(-1)), /Blocked by extension ask-first \(deny\): the user kept the selection private/);
  state.answers.modal = () => 'Allow';
  typed.push('{}');
  await run(state, 'harnessSidecar.callTool');
  assert.equal(state.modals.length, 2);
  assert.match(text(state.shown.at(-1)), /^# editor_selection\n\nArguments: `\{\}`\n\nmy «selection»/);

  // Escape on the arguments calls nothing; a tool named that the thread lacks is an error naming the tools.
  const shown = state.shown.length;
  typed.push(undefined);
  await run(state, 'harnessSidecar.callTool', 'load_skill');
  assert.equal(state.shown.length, shown);
  assert.deepEqual(state.errors.filter((e) => !/not JSON|JSON object/.test(e.message)), []);
  await run(state, 'harnessSidecar.callTool', 'Bash', {});
  assert.match(state.errors.at(-1).message, /no tool named Bash in this thread \(tools\/list: .*load_skill/);
  await extension.deactivate();
});

test('a window reload resumes the session: the activated skill comes back; Deactivate Skill ends it', async () => {
  const kept = new Map(); // the workspace's state, which outlives the extension host a reload replaces
  const workspaceState = { get: (key) => kept.get(key), update: async (key, value) => { kept.set(key, value); } };
  const options = { user: { command: sidecarCommand(), roots: ROOTS } };
  const first = await activate(options, EXTENSION, activations, { workspaceState });
  await run(first.state, 'harnessSidecar.activateSkill', 'review');
  assert.match(kept.get('harnessSidecar.sessionId'), /^vscode:[0-9a-f-]{36}$/);
  await first.extension.deactivate(); // the window reloads: this sidecar ends, a new one starts
  const second = await activate(options, EXTENSION, activations, { workspaceState });
  const { threadId } = await second.api.harness.thread();
  const built = await second.api.client.request('context/build', { threadId });
  assert.deepEqual(built.activeSkills.map((s) => [s.name, s.via]), [['review', 'activate']]);
  assert.match(built.systemPrompt, /# Active skill: review/);
  await run(second.state, 'harnessSidecar.deactivateSkill', 'review');
  assert.equal(second.state.infos.at(-1), 'Harness: deactivated review; active: none');
  const after = await second.api.client.request('context/build', { threadId });
  assert.deepEqual(after.activeSkills, []);
  assert.doesNotMatch(after.systemPrompt, /# Active skill: review/);
});
