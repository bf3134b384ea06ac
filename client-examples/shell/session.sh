#!/usr/bin/env bash
# A whole session typed by hand: a here-doc piped into the sidecar, jq to pretty-print.
# Usage: client-examples/shell/session.sh   (HARNESS_SIDECAR overrides the command)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ws=$(cd "$here/../workspace" && pwd)
read -r -a sidecar <<< "${HARNESS_SIDECAR:-harness-sidecar}"

"${sidecar[@]}" <<EOF | jq 'walk(if type == "string" and length > 100 then .[0:97] + "..." else . end)'
{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bash"}}}
{"id":2,"method":"thread/start","params":{"roots":["$ws/project","$ws/user"],"trustedExtensions":["review-extension"]}}
{"id":3,"method":"skills/activate","params":{"threadId":"thread-1","name":"review","resources":["references/checklist.md"]}}
{"id":4,"method":"templates/render","params":{"threadId":"thread-1","name":"review","arguments":{"path":"src/parser.ts","focus":"error handling"}}}
{"id":5,"method":"context/build","params":{"threadId":"thread-1"}}
{"id":6,"method":"tools/call","params":{"threadId":"thread-1","call":{"id":"call_1","name":"review_note","arguments":{"text":"parse() drops the last token"}}}}
{"id":7,"method":"tools/call","params":{"threadId":"thread-1","call":{"id":"call_2","name":"review_note","arguments":{"text":"the key is SECRET-1234"}}}}
{"id":8,"method":"shutdown"}
{"method":"exit"}
EOF
