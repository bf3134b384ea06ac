#!/usr/bin/env bash
# Run the plugin's headless test with the given nvim (default: nvim on PATH).
# HARNESS_SIDECAR_CMD (a JSON array) names the sidecar; default: harness-sidecar on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nvim=${1:-nvim}
exec "$nvim" --headless -u NONE -i NONE --cmd "set rtp^=$here" --cmd "runtime plugin/harness_sidecar.lua" \
  -c "luafile $here/tests/scenario.lua" -c 'cq 2'
