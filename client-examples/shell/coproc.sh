#!/usr/bin/env bash
# The sidecar as a bash coprocess: the script plays the editor and answers the sidecar's
# reverse request item/tool/call for an editor-owned tool (here: the current date).
# Usage: client-examples/shell/coproc.sh   (HARNESS_SIDECAR overrides the command)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ws=$(cd "$here/../workspace" && pwd)
read -r -a sidecar <<< "${HARNESS_SIDECAR:-harness-sidecar}"

coproc SIDECAR { exec "${sidecar[@]}"; }
send() { printf '%s\n' "$1" >&"${SIDECAR[1]}"; }

# Read messages until the response with id $1 arrives (kept in $RESPONSE); answer reverse
# requests on the way. No pipes or $(...) around it: a subshell cannot use the coprocess.
await() {
  local line
  while IFS= read -r -t 30 line <&"${SIDECAR[0]}"; do
    if jq -e 'has("method") and has("id")' <<<"$line" >/dev/null; then
      local id tool
      id=$(jq '.id' <<<"$line")
      tool=$(jq -r '.params.tool' <<<"$line")
      echo "sidecar asks the editor to run: $tool $(jq -c '.params.arguments' <<<"$line")" >&2
      if [ "$tool" = "editor_date" ]; then
        send "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"contentItems\":[{\"type\":\"inputText\",\"text\":\"$(date -u +%Y-%m-%d)\"}],\"success\":true}}"
      else
        send "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{\"code\":-32601,\"message\":\"no such editor tool\"}}"
      fi
    elif jq -e --argjson want "$1" '.id == $want' <<<"$line" >/dev/null; then
      RESPONSE=$line
      return 0
    fi
  done
  echo "no response to request $1 (the sidecar stopped or took longer than 30 s)" >&2
  return 1
}

# request ID JSON FILTER: send a request, wait for its answer, print FILTER of it.
request() {
  send "$2"
  await "$1" || exit 1
  jq -c "$3" <<<"$RESPONSE"
}

request 1 '{"id":1,"method":"initialize"}' '.result.serverInfo'
request 2 "{\"id\":2,\"method\":\"thread/start\",\"params\":{\"roots\":[\"$ws/project\"],\"dynamicTools\":[{\"name\":\"editor_date\",\"description\":\"Today's date in the editor.\",\"inputSchema\":{\"type\":\"object\"}}]}}" \
  '[.result.tools[].name]'
request 3 '{"id":3,"method":"tools/call","params":{"threadId":"thread-1","call":{"id":"call_1","name":"editor_date","arguments":{}}}}' \
  '.result.result'
request 4 '{"id":4,"method":"shutdown"}' '.result'
send '{"method":"exit"}'
pid=$SIDECAR_PID
status=0
wait "$pid" || status=$?
echo "sidecar exited with status $status"
exit "$status"
