#!/usr/bin/env bash
# The sidecar as a bash coprocess: the script plays the editor. It answers the sidecar's reverse
# requests: item/tool/call for two editor-owned tools (`editor_date`: today's date; `bash`: says
# what it would run, and runs nothing), and ui/confirm — the question a trusted extension asks the
# user (here the example permission-gate, which asks before `rm -r`, `sudo`, `chmod 777`).
#
# The policy that answers ui/confirm in place of a user:
#   allow, unless the tool call's arguments mention a path outside the workspace
#   (client-examples/workspace): a word of any string argument that starts with `/` or `~`
#   and is not the workspace or under it, or any word with a `..` segment, is outside.
#   Anything the policy cannot read is denied.
# It declares exactly that in initialize: capabilities.ui = {confirm: true} (so the sidecar never
# sends it ui/select or ui/input, and writes ui/notify and ui/status to its stderr instead).
#
# Usage: client-examples/shell/coproc.sh   (HARNESS_SIDECAR overrides the command)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ws=$(cd "$here/../workspace" && pwd)
gate=$(cd "$here/../extensions" && pwd)/permission-gate.py
read -r -a sidecar <<< "${HARNESS_SIDECAR:-harness-sidecar}"

coproc SIDECAR { exec "${sidecar[@]}"; }
# A sidecar that is gone: a write to it fails (EPIPE) and is said, instead of SIGPIPE ending this script
# without a word; bash also forgets a coprocess that ended (its fds are then unset).
trap '' PIPE
send() { [ -n "${SIDECAR[1]:-}" ] && printf '%s\n' "$1" >&"${SIDECAR[1]}" 2>/dev/null; }

# The policy: prints "allow", or "deny <the paths outside the workspace>".
policy() {
  jq -r --arg ws "$ws" '
    def inside: (. == $ws or startswith($ws + "/")) and (test("(^|/)\\.\\.(/|$)") | not);
    [.params.arguments // {} | .. | strings | splits("[[:space:]]+")
     | select(test("^[/~]|(^|/)\\.\\.(/|$)")) | select(inside | not)]
    | if length == 0 then "allow" else "deny " + join(" ") end' <<<"$1" 2>/dev/null || echo "deny (unreadable)"
}

# Answer one request of the sidecar ($1: the line).
answer() {
  local line=$1 id method
  id=$(jq '.id' <<<"$line")
  method=$(jq -r '.method' <<<"$line")
  case "$method" in
    item/tool/call)
      local tool text
      tool=$(jq -r '.params.tool' <<<"$line")
      echo "sidecar asks the editor to run: $tool $(jq -c '.params.arguments' <<<"$line")" >&2
      case "$tool" in
        editor_date) text=$(date -u +%Y-%m-%d) ;;
        bash) text="would run: $(jq -r '.params.arguments.command' <<<"$line")" ;;
        *) send "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{\"code\":-32601,\"message\":\"no such editor tool\"}}"; return ;;
      esac
      send "$(jq -nc --argjson id "$id" --arg text "$text" \
        '{jsonrpc: "2.0", id: $id, result: {contentItems: [{type: "inputText", text: $text}], success: true}}')"
      ;;
    ui/confirm)
      local decision
      decision=$(policy "$line")
      echo "sidecar asks the user to confirm ($(jq -r '.params.extensionId + ": " + .params.title + " — " + (.params.tool // "") + " " + (.params.arguments // {} | tostring)' <<<"$line")): $decision" >&2
      send "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"confirmed\":$([ "$decision" = allow ] && echo true || echo false)}}"
      ;;
    *)
      send "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{\"code\":-32601,\"message\":\"this editor does not answer $method\"}}"
      ;;
  esac
}

# Read messages until the response with id $1 arrives (kept in $RESPONSE); answer the sidecar's
# requests on the way. No pipes or $(...) around it: a subshell cannot use the coprocess.
await() {
  local line
  [ -n "${SIDECAR[0]:-}" ] || return 1
  while IFS= read -r -t 30 line <&"${SIDECAR[0]}"; do
    if jq -e 'has("method") and has("id")' <<<"$line" >/dev/null; then
      answer "$line"
    elif jq -e --argjson want "$1" '.id == $want' <<<"$line" >/dev/null; then
      RESPONSE=$line
      return 0
    fi
  done
  return 1
}

# request ID JSON FILTER: send a request, wait for its answer, print FILTER of it.
request() {
  if ! send "$2" || ! await "$1"; then
    echo "no response to request $1 (the sidecar stopped or took longer than 30 s)" >&2
    exit 1
  fi
  jq -c "$3" <<<"$RESPONSE"
}

# tools/call of `bash` with COMMAND as request ID: prints whether it ran or who blocked it.
shell() {
  request "$1" "$(jq -nc --argjson id "$1" --arg command "$2" \
    '{id: $id, method: "tools/call", params: {threadId: "thread-1", call: {id: "call_\($id)", name: "bash", arguments: {command: $command}}}}')" \
    '.result.result | {isError, blocked: .details.blocked, text: .content[0].text}'
}

request 1 '{"id":1,"method":"initialize","params":{"protocolVersion":"4","capabilities":{"ui":{"confirm":true}}}}' '.result.serverInfo'
request 2 "$(jq -nc --arg ws "$ws" --arg gate "$gate" '{id: 2, method: "thread/start", params: {
  roots: ["\($ws)/project"], trustedExtensions: ["permission-gate"], extensions: [{id: "permission-gate", path: $gate}],
  dynamicTools: [{name: "editor_date", description: "Today'"'"'s date in the editor.", inputSchema: {type: "object"}},
                 {name: "bash", description: "Run a shell command.", inputSchema: {type: "object"}}]}}')" \
  '[.result.tools[].name]'
request 3 '{"id":3,"method":"tools/call","params":{"threadId":"thread-1","call":{"id":"call_1","name":"editor_date","arguments":{}}}}' \
  '.result.result'
shell 4 "rm -rf $ws/project/build"   # dangerous, so the gate asks: inside the workspace, so allowed
shell 5 "sudo rm -rf /etc/harness"   # dangerous, and outside the workspace: denied
shell 6 "ls /etc"                    # not dangerous: the gate does not ask
request 7 '{"id":7,"method":"shutdown"}' '.result'
send '{"method":"exit"}'
pid=$SIDECAR_PID
status=0
wait "$pid" || status=$?
echo "sidecar exited with status $status"
exit "$status"
