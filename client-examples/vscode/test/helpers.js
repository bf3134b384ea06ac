'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const WORKSPACE = path.resolve(__dirname, '..', '..', 'workspace');
const ROOTS = [path.join(WORKSPACE, 'project'), path.join(WORKSPACE, 'user')];
const EXAMPLE_EXTENSIONS = path.resolve(__dirname, '..', '..', 'extensions');
const REPO = path.resolve(__dirname, '..', '..', '..');
/** A stdio MCP server written with the SDK (tests/mcp_servers/sdk_server.py), run by $HARNESS_TEST_PYTHON. */
const MCP_SERVER = [process.env.HARNESS_TEST_PYTHON || 'python3', path.join(REPO, 'tests', 'mcp_servers', 'sdk_server.py')];

/** The sidecar's argv: $HARNESS_SIDECAR_CMD (a JSON array) or `harness-sidecar` on PATH. */
function sidecarCommand() {
  return process.env.HARNESS_SIDECAR_CMD ? JSON.parse(process.env.HARNESS_SIDECAR_CMD) : ['harness-sidecar'];
}

/** A new root in the temporary directory whose extensions/ holds one extension: `<id>.py`, the given code. */
function extensionRoot(id, code) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-'));
  fs.mkdirSync(path.join(root, 'extensions'));
  fs.writeFileSync(path.join(root, 'extensions', `${id}.py`), code);
  return root;
}

module.exports = { WORKSPACE, ROOTS, EXAMPLE_EXTENSIONS, MCP_SERVER, sidecarCommand, extensionRoot };
