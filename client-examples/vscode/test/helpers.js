'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const WORKSPACE = path.resolve(__dirname, '..', '..', 'workspace');
const ROOTS = [path.join(WORKSPACE, 'project'), path.join(WORKSPACE, 'user')];
const EXAMPLE_EXTENSIONS = path.resolve(__dirname, '..', '..', 'extensions');
const REPO = path.resolve(__dirname, '..', '..', '..');
/** The checkout's virtual environment, as the README makes it (`python3 -m venv .venv` at the top). */
const VENV_BIN = path.join(REPO, '.venv', 'bin');
/** `name` in the checkout's .venv/bin when it is there, else `fallback` (found on PATH). */
function fromVenv(name, fallback) {
  return fs.existsSync(path.join(VENV_BIN, name)) ? path.join(VENV_BIN, name) : fallback;
}
/**
 * A stdio MCP server written with the SDK (tests/mcp_servers/sdk_server.py), run by $HARNESS_TEST_PYTHON,
 * else by the checkout's .venv/bin/python (where the `test` extra installs the SDK), else python3.
 */
const MCP_SERVER = [process.env.HARNESS_TEST_PYTHON || fromVenv('python', 'python3'),
  path.join(REPO, 'tests', 'mcp_servers', 'sdk_server.py')];
/** An SDK server whose tool `ask_name` elicits {name, age, colour (enum), ok (boolean)} (tests/mcp_servers/more_server.py). */
const MCP_MORE_SERVER = [MCP_SERVER[0], path.join(REPO, 'tests', 'mcp_servers', 'more_server.py')];

/**
 * The sidecar's argv: $HARNESS_SIDECAR_CMD (a JSON array), else the checkout's
 * .venv/bin/harness-sidecar, else `harness-sidecar` on PATH.
 */
function sidecarCommand() {
  return process.env.HARNESS_SIDECAR_CMD ? JSON.parse(process.env.HARNESS_SIDECAR_CMD)
    : [fromVenv('harness-sidecar', 'harness-sidecar')];
}

/** A new root in the temporary directory whose extensions/ holds one extension: `<id>.py`, the given code. */
function extensionRoot(id, code) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-'));
  fs.mkdirSync(path.join(root, 'extensions'));
  fs.writeFileSync(path.join(root, 'extensions', `${id}.py`), code);
  return root;
}

module.exports = { WORKSPACE, ROOTS, EXAMPLE_EXTENSIONS, MCP_SERVER, MCP_MORE_SERVER, sidecarCommand, extensionRoot };
