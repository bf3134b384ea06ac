#!/usr/bin/env bash
# Run the LSP configuration's headless test with the given nvim (0.8+; default: nvim on PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
nvim=${1:-nvim}
exec "$nvim" --headless -u NONE -i NONE --cmd "set rtp^=$here" -c "luafile $here/tests/lsp.lua" -c 'cq 2'
