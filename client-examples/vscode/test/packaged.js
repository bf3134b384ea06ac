'use strict';
// Run the extension as shipped: `node test/packaged.js <unpacked .vsix>/extension` loads its
// bundled main (dist/extension.js: everything, vscode-languageclient included) with the stand-in
// `vscode` module and drives it against the real sidecar in both modes. Prints `N passed, M failed`.
const fs = require('fs');
const path = require('path');
const { activate, run, until } = require('./vscode-stand-in');
const { ROOTS, WORKSPACE, sidecarCommand } = require('./helpers');

const root = path.resolve(process.argv[2]);
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const main = path.join(root, manifest.main);
let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`not ok - ${name}: ${err && err.stack}`);
  }
}

(async () => {
  await check('the bundle has no node_modules to load', async () => {
    if (fs.existsSync(path.join(root, 'node_modules'))) throw new Error('node_modules shipped');
  });
  await check('JSONL mode: the catalog', async () => {
    const { state, extension } = await activate({ user: { command: sidecarCommand(), roots: ROOTS } }, main);
    await run(state, 'harnessSidecar.showCatalog');
    if (!/\*\*review\*\*/.test(state.shown.at(-1).getText())) throw new Error(state.shown.at(-1).getText());
    await extension.deactivate();
  });
  await check('LSP mode: the bundled vscode-languageclient gets a live diagnostic', async () => {
    const { vscode, state, extension } = await activate({ user: { command: sidecarCommand(), mode: 'lsp',
      roots: [path.join(WORKSPACE, 'broken')] } }, main);
    const skill = path.join(WORKSPACE, 'broken', 'skills', 'wrong-name', 'SKILL.md');
    state.openDocument(skill, fs.readFileSync(skill, 'utf8'));
    const found = () => state.collections.map((c) => c.get(vscode.Uri.file(skill)) || []).flat();
    await until(() => found().some((d) => d.code === 'name_mismatch'), 15000, 'the live diagnostic')
      .catch((err) => { throw new Error(`${err.message}\n${state.output.join('\n')}\n${JSON.stringify(state.errors)}`); });
    await extension.deactivate();
  });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
