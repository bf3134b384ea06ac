#!/usr/bin/env bash
# Run one of the plugin's headless tests with the given nvim (default: nvim on PATH):
#   tests/run.sh [nvim] [scenario.lua | ui.lua | live.lua | quit.lua]   (default: scenario.lua)
# (hitenter.lua needs a terminal: tests/test_clients.py runs it on a pty.)
# HARNESS_SIDECAR_CMD (a JSON array) names the sidecar; default: the checkout's .venv/bin/harness-sidecar,
# else harness-sidecar on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nvim=${1:-nvim}
scenario=${2:-scenario.lua}
exec "$nvim" --headless -u NONE -i NONE --cmd "set rtp^=$here" --cmd "runtime plugin/harness_sidecar.lua" \
  -c "luafile $here/tests/$scenario" -c 'cq 2'
