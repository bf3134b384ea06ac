'use strict';
const path = require('path');

const WORKSPACE = path.resolve(__dirname, '..', '..', 'workspace');
const ROOTS = [path.join(WORKSPACE, 'project'), path.join(WORKSPACE, 'user')];

/** The sidecar's argv: $HARNESS_SIDECAR_CMD (a JSON array) or `harness-sidecar` on PATH. */
function sidecarCommand() {
  return process.env.HARNESS_SIDECAR_CMD ? JSON.parse(process.env.HARNESS_SIDECAR_CMD) : ['harness-sidecar'];
}

module.exports = { WORKSPACE, ROOTS, sidecarCommand };
