'use strict';
// extension.js as people use it (protocol v3 § 3), against the real sidecar with the stand-in
// `vscode` module: the live catalog (catalog/changed → thread/refresh of the same thread: tree,
// status bar and Problems follow, activated skills stay), roots written as users write them, and
// quiet default roots with a welcome view when there is nothing to list.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { WORKSPACE, sidecarCommand } = require('./helpers');
const { activate, deactivateAll, run, until } = require('./vscode-stand-in');

const EXTENSION = path.resolve(__dirname, '..', 'extension.js');
const activations = [];
test.after(() => deactivateAll(activations));
const activated = (options) => activate(options, EXTENSION, activations);

function skill(root, name, description) {
  fs.mkdirSync(path.join(root, 'skills', name), { recursive: true });
  fs.writeFileSync(path.join(root, 'skills', name, 'SKILL.md'),
    `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name} body\n`);
}

// A new root whose extensions/<name>.py holds the given lines of Python.
function rootWithExtension(prefix, name, lines) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.mkdirSync(path.join(root, 'extensions'));
  fs.writeFileSync(path.join(root, 'extensions', `${name}.py`), [...lines, ''].join('\n'));
  return root;
}

const labels = (tree, node) => tree.getChildren(node).map((n) => n.item.label);

test('catalog/changed: the same thread is refreshed; tree, status bar and Problems follow; activations stay', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-live-'));
  skill(root, 'alpha', 'Use when testing the live catalog.');
  const { vscode, state, api } = await activated({ user: { command: sidecarCommand(), roots: [root] } });
  await run(state, 'harnessSidecar.activateSkill', 'alpha');
  const threadId = api.harness.started.threadId;
  const tree = state.trees.get('harnessSidecar.catalog');
  assert.deepEqual(labels(tree), ['Skills (1)', 'Templates (0)', 'Extensions (0)', 'Diagnostics (0)']);
  assert.match(state.statusBar.text, /Harness 1 skills$/);

  skill(root, 'gamma', 'Use when a skill appears while the editor runs.');
  fs.mkdirSync(path.join(root, 'skills', 'broken'));
  fs.writeFileSync(path.join(root, 'skills', 'broken', 'SKILL.md'), '---\nname: broken\n---\nno description\n');
  await until(() => api.harness.started.catalog.skills.length === 2 && api.harness.started.diagnostics.length > 0,
    15000, 'the refreshed catalog');
  assert.equal(api.harness.started.threadId, threadId, 'a new thread was started');
  assert.ok(api.harness.refreshCount >= 1);
  const groups = tree.getChildren();
  assert.deepEqual(groups.map((g) => g.item.label), ['Skills (2)', 'Templates (0)', 'Extensions (0)', 'Diagnostics (1)']);
  assert.deepEqual(labels(tree, groups[0]), ['alpha', 'gamma']);
  assert.match(state.statusBar.text, /Harness 2 skills \$\(warning\) 1$/);
  const problems = state.collections.find((c) => c.name === 'harness-sidecar');
  const broken = problems.get(vscode.Uri.file(path.join(root, 'skills', 'broken', 'SKILL.md')));
  assert.equal(broken.length, 1);
  assert.equal(broken[0].severity, vscode.DiagnosticSeverity.Error);

  // the skill activated before the change is still active; Refresh keeps it too
  await run(state, 'harnessSidecar.showSystemPrompt');
  assert.match(state.shown.at(-1).getText(), /# alpha body/);
  fs.rmSync(path.join(root, 'skills', 'broken'), { recursive: true });
  await run(state, 'harnessSidecar.refreshCatalog');
  assert.equal(api.harness.started.threadId, threadId);
  assert.equal(problems.get(vscode.Uri.file(path.join(root, 'skills', 'broken', 'SKILL.md'))), undefined);
  await run(state, 'harnessSidecar.showSystemPrompt');
  assert.match(state.shown.at(-1).getText(), /# alpha body/);
  assert.match(state.statusBar.text, /Harness 2 skills$/);
});

test('roots as users write them: ${workspaceFolder}, relative to the folder, ~ and ${env:…}', async () => {
  process.env.HS_TEST_USER_ROOT = path.join(WORKSPACE, 'user');
  const { vscode, state, api } = await activated({
    folder: WORKSPACE,
    user: { command: sidecarCommand(), roots: ['${workspaceFolder}/project', '${env:HS_TEST_USER_ROOT}', 'user/', '~/.agents-that-is-not-there'] },
  });
  delete process.env.HS_TEST_USER_ROOT;
  assert.deepEqual(api.harness.settings.roots, [path.join(WORKSPACE, 'project'), path.join(WORKSPACE, 'user'),
    path.join(WORKSPACE, 'user'), path.join(os.homedir(), '.agents-that-is-not-there')]);
  await run(state, 'harnessSidecar.showCatalog');
  const skills = api.harness.started.catalog.skills.map((s) => s.name);
  assert.deepEqual(skills, ['commit-message', 'review']);
  // a root the user wrote that does not exist is listed (they chose it), never a command failure
  assert.ok(api.harness.started.diagnostics.some((d) => d.path === path.join(os.homedir(), '.agents-that-is-not-there')));
  assert.equal(state.errors.length, 0, JSON.stringify(state.errors));
  // in Problems with a hint in this editor's words, not the protocol's
  const problems = state.collections.find((c) => c.name === 'harness-sidecar');
  const [missing] = problems.get(vscode.Uri.file(path.join(os.homedir(), '.agents-that-is-not-there')));
  assert.match(missing.message, /check harnessSidecar\.roots in your settings/);
  assert.doesNotMatch(missing.message, /thread\/start/);
});

test('a relative root without an open folder is left out and said in the log, not sent', async () => {
  const { state, api } = await activated({ user: { command: sidecarCommand(), roots: ['.agents', path.join(WORKSPACE, 'user')] } });
  assert.deepEqual(api.harness.settings.roots, [path.join(WORKSPACE, 'user')]);
  assert.ok(state.output.some((l) => l.includes('harnessSidecar.roots: .agents: a relative root needs an open workspace folder')),
    state.output.join('\n'));
});

test('default roots the user never made are quiet; an empty catalog shows the welcome view', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-home-'));
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-folder-'));
  const saved = process.env.HOME;
  process.env.HOME = home; // os.homedir(): ~/.agents does not exist either
  let started;
  try {
    const { state, api } = await activated({ folder, user: { command: sidecarCommand() } });
    await run(state, 'harnessSidecar.showCatalog');
    started = api.harness.started;
    assert.deepEqual(api.harness.settings.roots, [path.join(folder, '.agents'), path.join(home, '.agents')]);
    assert.equal(state.statusBar.text, '$(book) Harness 0 skills'); // no "⚠ 2"
    const problems = state.collections.find((c) => c.name === 'harness-sidecar');
    assert.equal(problems.entries.size, 0);
    const tree = state.trees.get('harnessSidecar.catalog');
    assert.deepEqual(tree.getChildren(), []); // VS Code shows the viewsWelcome content
    assert.deepEqual(state.executed.filter((c) => c[0] === 'setContext').at(-1), ['setContext', 'harnessSidecar.catalogEmpty', true]);
    assert.equal(state.errors.length, 0);

    // the welcome view is declared for that context, with how to make a skill
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
    const welcome = manifest.contributes.viewsWelcome.find((w) => w.view === 'harnessSidecar.catalog');
    assert.equal(welcome.when, 'harnessSidecar.catalogEmpty');
    assert.match(welcome.contents, /\.agents\/skills\/<name>\/SKILL\.md/);

    // a skill appears: the tree has something to list again
    skill(path.join(folder, '.agents'), 'first', 'Use when the first skill is made.');
    await run(state, 'harnessSidecar.restart'); // .agents did not exist, so nothing watched it
    await run(state, 'harnessSidecar.showCatalog');
    assert.deepEqual(tree.getChildren().map((g) => g.item.label), ['Skills (1)', 'Templates (0)', 'Extensions (0)', 'Diagnostics (0)']);
    assert.deepEqual(state.executed.filter((c) => c[0] === 'setContext').at(-1), ['setContext', 'harnessSidecar.catalogEmpty', false]);
  } finally {
    process.env.HOME = saved;
  }
  assert.ok(started.diagnostics.length >= 1, 'the sidecar did report the missing roots');
});

/** Whether VS Code would activate the extension on `folder`: a workspaceContains:<path> event whose path is there. */
function activatesOn(folder) {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  return manifest.activationEvents.filter((e) => e.startsWith('workspaceContains:'))
    .map((e) => e.slice('workspaceContains:'.length))
    .filter((p) => !/[*?[{]/.test(p) && fs.existsSync(path.join(folder, p)));
}

test('a repository with only .claude/ or .codex/ activates the extension and is read; its hooks stay untrusted (attacker test)', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-home-'));
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-folder-'));
  const marker = path.join(home, 'hook-ran');
  assert.deepEqual(activatesOn(folder), []);
  // Claude Code's project layout: a skill and a PreToolUse hook in .claude/settings.json
  skill(path.join(folder, '.claude'), 'from-claude', 'Use when a repository keeps its skills in .claude.');
  const settingsFile = path.join(folder, '.claude', 'settings.json');
  fs.writeFileSync(settingsFile, JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'load_skill',
    hooks: [{ type: 'command', command: `touch ${marker}; echo "from the repository" >&2; exit 2` }] }] } }));
  assert.deepEqual(activatesOn(folder), ['.claude']);
  fs.mkdirSync(path.join(folder, '.codex'));
  fs.writeFileSync(path.join(folder, '.codex', 'hooks.json'), JSON.stringify({ hooks: { SessionStart: [{
    hooks: [{ type: 'command', command: `touch ${marker}` }] }] } }));
  assert.deepEqual(activatesOn(folder), ['.claude', '.codex']);

  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    const { state, api, extension } = await activated({ folder, user: { command: sidecarCommand() },
      workspace: { trustedHooks: [{ path: settingsFile }] } }); // what the repository's .vscode/settings.json says
    await run(state, 'harnessSidecar.showCatalog');
    assert.deepEqual(api.harness.settings.roots, [path.join(folder, '.agents'), path.join(folder, '.claude'),
      path.join(folder, '.codex'), path.join(home, '.agents')]);
    const { catalog } = api.harness.started;
    assert.deepEqual(catalog.skills.map((s) => s.name), ['from-claude']);
    assert.deepEqual(catalog.hooks.map((h) => [h.event, h.trusted]).sort(), [['PreToolUse', false], ['SessionStart', false]]);
    assert.match(state.shown.at(-1).getText(), /\*\*PreToolUse\*\* \[load_skill\]: .* — not trusted/);
    // called by hand, the tool runs: the repository's hook does not
    await run(state, 'harnessSidecar.callTool', 'load_skill', { name: 'from-claude' });
    assert.match(state.shown.at(-1).getText(), /^# load_skill\n/);
    assert.match(state.shown.at(-1).getText(), /# from-claude body/);
    assert.equal(fs.existsSync(marker), false, 'a hook the user never trusted ran');
    await extension.deactivate();

    // the user trusts it in their own settings: now it runs and its reason is shown
    const trusted = await activated({ folder, user: { command: sidecarCommand(), trustedHooks: [{ path: settingsFile }] } });
    await run(trusted.state, 'harnessSidecar.callTool', 'load_skill', { name: 'from-claude' });
    assert.match(trusted.state.shown.at(-1).getText(), /^# load_skill \(blocked\)/);
    assert.match(trusted.state.shown.at(-1).getText(), /from the repository/);
    assert.equal(fs.existsSync(marker), true);
    await trusted.extension.deactivate();
  } finally {
    process.env.HOME = saved;
  }
});

test('the Tools view lists the active tools and follows ctx.tools.set_active (catalog/changed)', async () => {
  const root = rootWithExtension('hs-tools-', 'toolbox', [
    'def focus(call_id, arguments, ctx):',
    '    return ",".join(ctx.tools.set_active(arguments["names"]))',
    'def activate(api):',
    '    for name in ("alpha", "beta", "gamma"):',
    '        api.register_tool(name=name, description="Tool " + name + ".", input_schema={},',
    '                          execute=lambda call_id, arguments, ctx: "ran")',
    '    api.register_tool(name="focus", description="Choose the active tools.", input_schema={}, execute=focus)']);
  const { state, api } = await activated({ user: { command: sidecarCommand(), roots: [root], trustedExtensions: ['toolbox'] } });
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', 'package.json'), 'utf8'));
  assert.ok(manifest.contributes.views.explorer.some((v) => v.id === 'harnessSidecar.tools'));
  const tree = state.trees.get('harnessSidecar.tools');
  await run(state, 'harnessSidecar.showCatalog'); // starts the thread
  await until(() => api.harness.toolsCount >= 1, 15000, 'the tools listed');
  const all = ['alpha', 'beta', 'editor_selection', 'focus', 'gamma', 'load_skill', 'read_file'];
  assert.deepEqual(labels(tree), [`Active (${all.length})`]);
  assert.deepEqual(labels(tree, tree.getChildren()[0]).sort(), all);
  const alpha = tree.getChildren(tree.getChildren()[0]).find((n) => n.item.label === 'alpha');
  assert.equal(alpha.item.description, 'extension toolbox');

  const shown = api.harness.toolsCount;
  await run(state, 'harnessSidecar.callTool', 'focus', { names: ['alpha', 'focus'] });
  await until(() => api.harness.toolsCount > shown && labels(tree).length === 2, 15000, 'the Tools view after set_active');
  const [active, inactive] = tree.getChildren();
  assert.deepEqual([active.item.label, inactive.item.label], ['Active (3)', 'Inactive (4)']);
  assert.deepEqual(labels(tree, active).sort(), ['alpha', 'focus', 'load_skill']); // builtins stay active
  assert.deepEqual(labels(tree, inactive).sort(), ['beta', 'editor_selection', 'gamma', 'read_file']);
});

test('with harnessSidecar.deferToolsOver the Tools view lists the deferred tools apart', async () => {
  const root = rootWithExtension('hs-deferred-', 'many', [
    'def activate(api):',
    '    for name in ("one", "two", "three"):',
    '        api.register_tool(name=name, description="Tool " + name + ".", input_schema={},',
    '                          execute=lambda call_id, arguments, ctx: "ran")']);
  const { state, api } = await activated({ user: { command: sidecarCommand(), roots: [root], trustedExtensions: ['many'],
    deferToolsOver: 2 } });
  const tree = state.trees.get('harnessSidecar.tools');
  await run(state, 'harnessSidecar.showCatalog');
  await until(() => api.harness.toolsCount >= 1, 15000, 'the tools listed');
  const [active, deferred] = tree.getChildren();
  // 5 tools past the builtins (the editor's 2, the extension's 3): the first 2 stay, 3 are deferred; load_skill
  // and tool_search (listed once some are deferred) are active
  assert.deepEqual(labels(tree), ['Active (4)', 'Deferred (3)']);
  assert.ok(labels(tree, active).includes('tool_search') && labels(tree, active).includes('load_skill'),
    labels(tree, active).join(', '));
  assert.ok(tree.getChildren(deferred).every((n) => n.item.description === 'deferred: found with tool_search'));
});
