"""The whole protocol as one JSON Schema (draft 2020-12) document: ``harness-sidecar schema``.

The params of the methods the sidecar serves come from ``wire/params.py`` (the same shapes
parse them); everything else the wire carries — results, notifications, the sidecar's
requests to the editor and their answers, error ``data`` per ``kind`` — is declared here.
``document()`` assembles ``$defs`` and ``x-messages`` (contract v2 §5): for each method,
``{direction, kind, params, result?, errors?}`` where ``errors`` lists the domain error kinds
the method may answer, besides those any request may get (``x-request-errors``); each kind's
error is a ``$defs/Error_<Kind>`` (``$defs/Error`` is any of them).

Nothing here is imported on the way to ``initialize`` or ``thread/start``; the repository
keeps the document as ``protocol.schema.json`` (a test fails when it differs: regenerate with
``harness-sidecar schema > protocol.schema.json``).
"""

from __future__ import annotations

from typing import Any

from harness_sidecar import PROTOCOL_VERSION
from harness_sidecar.base.errors import DOMAIN_CODES
from harness_sidecar.base.names import QUALIFIED_COMMAND_NAME
from harness_sidecar.hooks.loop import EVENTS as _LOOP_EVENTS  # every loop/event name (v4 adds 13)
from harness_sidecar.wire import params as P
from harness_sidecar.wire.shapes import (
    AnyValue,
    Arr,
    Bool,
    Const,
    Either,
    Enum,
    Field,
    Int,
    Map,
    Null,
    Nullable,
    Obj,
    Shape,
    Str,
    Union,
    opt,
)

SCHEMA_ID = "https://harness-sidecar.invalid/protocol.schema.json"
CLIENT, SERVER, BOTH = "client→server", "server→client", "both"

# -- shared pieces ----------------------------------------------------------------------------

TEXT_CONTENT = Obj([Field("type", Const("text")), Field("text", Str())], name="TextContent")
# MCP's content blocks (v4 §4): a tool result's content passes them through as they came; fields MCP has
# beyond these (annotations, _meta, title, size, icons…) are kept.
CONTENT_BLOCK = Union(
    Obj([Field("type", Const("text")), Field("text", Str())], open_values=AnyValue(), name="TextBlock"),
    Obj([Field("type", Str(enum=("image", "audio"))), Field("data", Str(description="base64")),
         Field("mimeType", Str())], open_values=AnyValue(), name="MediaBlock"),
    Obj([Field("type", Const("resource_link")), Field("name", Str()), Field("uri", Str()),
         opt("description", Str()), opt("mimeType", Str())], open_values=AnyValue(), name="ResourceLinkBlock"),
    Obj([Field("type", Const("resource")), Field("resource", Union(
        Obj([Field("uri", Str()), opt("mimeType", Str()), Field("text", Str())], open_values=AnyValue(),
            name="TextResourceContents"),
        Obj([Field("uri", Str()), opt("mimeType", Str()), Field("blob", Str(description="base64"))],
            open_values=AnyValue(), name="BlobResourceContents"), name="ResourceContents"))],
        open_values=AnyValue(), name="EmbeddedResourceBlock"),
    name="ContentBlock", description="MCP's content blocks: text, image, audio, resource_link, resource.")
DIAGNOSTIC = Obj(
    [Field("kind", Str(), description="What went wrong: root_missing, invalid_frontmatter, shadowed, … "
                                      "(protocol.md § Diagnostics)."),
     opt("path", Str()), Field("message", Str()),
     opt("hint", Str(), description="How to fix it."),
     opt("line", Int(minimum=1)), opt("column", Int(minimum=1))],
    open_values=AnyValue(), name="Diagnostic",
    description="Something left out or worth knowing; kinds may carry more fields (name, shadowedBy, id, size…).")
ORIGIN = Obj([Field("kind", Str(enum=("builtin", "dynamic", "extension", "mcp"))),
              opt("id", Str(), description="The extension id or MCP server name.")], name="ToolOrigin")
PLUGIN_REF = Obj([Field("name", Str()), opt("version", Str()), Field("path", Str())], name="PluginRef")
SOURCE = Obj([Field("kind", Str(enum=("root", "plugin", "editor", "mcp"))),
              opt("root", Str(), description="The root that holds it (or holds the plugin that brings it)."),
              opt("plugin", PLUGIN_REF)], name="Source",
             description="Provenance of a catalog entry (protocol.md § Plugins).")
TOOL_SPEC = Obj([Field("name", P.TOOL_NAME_SHAPE), Field("description", Str()), Field("inputSchema", P.INPUT_SCHEMA),
                 Field("origin", ORIGIN), opt("source", SOURCE, description="Provenance: absent for a builtin.")],
                name="ToolSpec")
DEFERRED_TOOL = Obj([Field("name", P.TOOL_NAME_SHAPE), Field("deferred", Const(True))], name="DeferredTool",
                    description="v4: a tool past limits.deferToolsOver, listed by name only: tool_search gives its "
                                "spec; it can be called as any other.")
USER_MESSAGE = Obj([Field("role", Const("user")), Field("content", Str())], name="UserMessage")
REVISION = Int(minimum=1, name="Revision", description="The thread's catalog revision: 1 at thread/start, +1 per "
                                                       "change.")

COMMAND_TEMPLATE_ENTRY = Obj([
    Field("name", Str(pattern=QUALIFIED_COMMAND_NAME.pattern),
          description="<plugin>:<name> for a plugin's, <name> for a root's commands/<name>.md (prompts:<name> for a "
                      "Codex home's prompts/<name>.md); <name> is lower-case letters and digits in groups joined by "
                      "single '-' or '_' (v4: 'clean_gone')."),
    opt("description", Str()), opt("argumentHint", Str()), opt("allowedTools", Either(Str(), Arr(Str()))),
    opt("model", Str()), Field("path", Str()), Field("source", SOURCE),
    opt("unsupported", Arr(Str(enum=("shell", "file"))), description="!`command` lines and @file references in the "
                                                                     "body, kept verbatim when rendered.")],
    name="CommandTemplateEntry")
PLUGIN_ENTRY = Obj([
    Field("name", Str()), opt("version", Str()), Field("path", Str()), Field("manifest", Str()),
    Field("dialect", Str(enum=("claude", "codex"))), Field("source", SOURCE),
    Field("skills", Arr(Str())), Field("commands", Arr(Str())), Field("agents", Arr(Str())),
    Field("hooks", Int(minimum=0), description="How many hook handlers it declares."),
    Field("mcpServers", Arr(Str())), Field("extensions", Arr(Str())),
    Field("trusted", Obj([Field("hooks", Bool()), Field("mcpServers", Arr(Str())), Field("extensions", Arr(Str()))],
                         name="PluginTrust"), description="What of its code may run (trustedPlugins)."),
    opt("sha256", Str(), description="Its tree hash, when a trustedPlugins pin asked for it.")],
    name="PluginEntry")
AGENT_ENTRY = Obj([Field("name", Str()), Field("description", Str()), Field("plugin", Str()), Field("path", Str()),
                   Field("source", SOURCE)], name="AgentEntry", description="Listed as metadata; never run.")
PLUGIN_MCP_ENTRY = Obj([
    Field("name", Str(description="plugin_<plugin>_<server>: its tools are mcp__<name>__<tool>.")),
    Field("server", Str()), Field("plugin", Str()), Field("transport", Str(enum=("stdio", "http", "sse"))),
    opt("command", Str()), opt("args", Arr(Str())), opt("url", Str()), Field("trusted", Bool()),
    Field("path", Str()), Field("source", SOURCE)], name="PluginMcpServerEntry")

MCP_RESOURCE_ENTRY = Union(
    Obj([Field("server", Str()), Field("name", Str()), Field("uri", Str()), opt("description", Str()),
         opt("mimeType", Str())], name="McpResourceEntry"),
    Obj([Field("server", Str()), Field("name", Str()), Field("uriTemplate", Str(description="RFC 6570")),
         opt("description", Str()), opt("mimeType", Str())], name="McpResourceTemplateEntry"),
    name="McpResource", description="Read with mcp/resource/read {server, uri} (a template's uri is one it expands to).")
MCP_PROMPT_ENTRY = Obj([
    Field("server", Str()), Field("name", Str()), opt("description", Str()),
    opt("arguments", Arr(Obj([Field("name", Str()), opt("description", Str()), opt("required", Bool())],
                             name="McpPromptArgument")))],
    name="McpPromptEntry", description="Get with mcp/prompt/get {server, name, arguments?}.")
MARKETPLACE_ENTRY = Obj([
    Field("name", Str(), description="The marketplace's name (its folder's when it declares none)."),
    Field("path", Str(), description="Its marketplace.json."),
    Field("plugins", Arr(Obj([
        Field("name", Str()),
        Field("source", AnyValue(), description="A local source: the plugin folder's path (the sidecar loads it); "
                                                "any other (github, url, git-subdir, npm…): as declared, never "
                                                "fetched."),
        opt("description", Str()), opt("version", Str()),
        Field("installed", Bool(), description="The thread serves this plugin from that folder.")],
        name="MarketplacePlugin")))], name="MarketplaceEntry")

CATALOG = Obj([
    Field("instructions", Arr(Obj([Field("root", Str()), Field("path", Str()), Field("source", SOURCE)],
                                  name="InstructionsEntry")),
          description="Every root's AGENTS.md, in root order; none shadowed."),
    Field("skills", Arr(Obj([Field("name", Str()), Field("description", Str()), Field("root", Str()),
                             Field("path", Str(), description="Its SKILL.md."), Field("source", SOURCE)],
                            name="SkillEntry")),
          description="Winners only, sorted by name; no body."),
    Field("templates", Arr(Obj([Field("name", Str()), opt("description", Str()), Field("root", Str()),
                                Field("path", Str()), Field("source", SOURCE), Field("variables", Arr(Str()))],
                               name="TemplateEntry")),
          description="Winners only, sorted by name; variables in order of first appearance."),
    Field("extensions", Arr(Obj([
        Field("id", Str()), opt("root", Str(), description="Absent for an explicit source."),
        Field("path", Str(), description="The .py file or the package folder."), Field("source", SOURCE),
        Field("sha256", Str()),
        Field("status", Str(enum=("loaded", "skipped_untrusted", "failed", "hash_mismatch"))),
        opt("error", Str())], name="ExtensionEntry")), description="Sorted by id."),
    opt("hooks", Arr(Obj([
        Field("source", Str(), description="root:<path of the hooks file: hooks.json, settings.json, "
                                           "settings.local.json, config.toml> or plugin:<name>."),
        Field("event", Str(), description="Any Claude Code or Codex event (protocol.md § Command hooks, "
                                          "Events); those the sidecar does not fire are dormant."),
        Field("matcher", Nullable(Str()), description="As declared; null when absent."),
        opt("command", Str(), description="Always there for a command handler; for an unsupported one, as declared "
                                          "(when it declares one)."),
        opt("args", Arr(Str())),
        opt("timeout", AnyValue(), description="Seconds (a positive number), as declared."),
        opt("type", Str(), description="Absent for a command handler: http, mcp_tool, prompt, agent (v4), or, with "
                                       "supported: false, the type as declared (absent when it declares none)."),
        opt("url", Str(), description="An http handler's url, as declared (its headers are not listed)."),
        opt("server", Str(), description="An mcp_tool handler's MCP server."),
        opt("tool", Str(), description="An mcp_tool handler's tool."),
        opt("prompt", Str(), description="A prompt or agent handler's prompt, as declared."),
        opt("model", Str(), description="A prompt or agent handler's model, as declared."),
        opt("supported", Const(False), description="Present (false) only for a handler that does not run here: an "
                                                   "unknown type, a type on an event Claude Code does not run it on, "
                                                   "a prompt/agent handler without capabilities.hookPrompt "
                                                   "(hook_type_unsupported); absent means supported."),
        opt("dormant", Const(True), description="Present (true) only for a handler of an event the sidecar does not "
                                                "fire: listed, never run (hook_dormant, info)."),
        opt("if", Str(), description="A permission rule (Bash(git *), Edit(*.ts)): the handler runs only for tool "
                                     "calls it matches, as the hooks see them (hookAs); never on other events."),
        opt("once", Const(True), description="Runs once per thread."),
        opt("async", Const(True), description="Runs in the background: never blocks, decides nothing; its "
                                              "systemMessage still reaches the user."),
        opt("statusMessage", Str(), description="Sent as ui/status (key hook:<event>:<n>) while it runs; "
                                                "cleared (text null) after."),
        Field("trusted", Bool(), description="Only trusted handlers run (thread/start.trustedHooks for a root's, "
                                             "trustedPlugins for a plugin's).")],
        name="HookEntry")), description="Every declared command hook, trusted or not, in declaration order: the "
                                        "roots' hooks.json, then the plugins' (protocol.md § Command hooks)."),
    opt("plugins", Arr(PLUGIN_ENTRY), description="The thread's plugins, in discovery order (protocol.md § Plugins)."),
    opt("commandTemplates", Arr(COMMAND_TEMPLATE_ENTRY), description="Sorted by name."),
    opt("agents", Arr(AGENT_ENTRY)),
    opt("mcpServers", Arr(PLUGIN_MCP_ENTRY), description="Every MCP server plugins declare; only trusted stdio ones "
                                                         "start."),
    opt("mcpResources", Arr(MCP_RESOURCE_ENTRY), description="v4: the thread's MCP servers' resources, then their "
                                                             "resource templates, servers in start order (present "
                                                             "when the thread has MCP servers)."),
    opt("mcpPrompts", Arr(MCP_PROMPT_ENTRY), description="v4: the thread's MCP servers' prompts (present when the "
                                                         "thread has MCP servers)."),
    opt("marketplaces", Arr(MARKETPLACE_ENTRY), description="v4: the roots' marketplaces, then "
                                                            "thread/start.marketplaces'; absent when there are none."),
], name="Catalog")

THREAD_START_RESULT = Obj([
    Field("threadId", P.THREAD_ID),
    Field("revision", REVISION),
    Field("catalog", CATALOG),
    Field("tools", Arr(TOOL_SPEC), description="In claim order: builtins, dynamic tools, extension tools, MCP tools."),
    Field("diagnostics", Arr(DIAGNOSTIC)),
    opt("hookContext", Arr(Str()), description="thread/start only: what SessionStart command hooks added as "
                                               "context, in declaration order; it is also a section of every "
                                               "context/build systemPrompt for the thread's life."),
], name="ThreadStartResult")

SKILL_FILE = Obj([Field("path", Str(), description="Relative to the skill's directory, with '/'."),
                  Field("size", Int(minimum=0))], name="SkillFile")
RESOURCE = Union(
    Obj([Field("request", Str()), Field("path", Str(), description="The file's canonical (link-free) path."),
         Field("source", SOURCE, description="The skill's provenance, as in the catalog."),
         Field("content", Str(), description="The bytes decoded as UTF-8, a leading BOM kept as U+FEFF.")],
        name="TextResource"),
    Obj([Field("request", Str()), Field("path", Str()), Field("source", SOURCE), Field("encoding", Const("base64")),
         Field("mimeType", Str()), Field("content", Str())], name="BinaryResource"),
    name="SkillResource", description="A requested file: text, or base64 when it is not UTF-8.")
ACTIVATED_SKILL = Obj([
    Field("name", Str()),
    Field("description", Str(), description="As written (YAML's value: a block scalar keeps its line breaks); "
                                            "the catalog's text is it stripped, whitespace runs joined."),
    Field("root", Str()), Field("path", Str(), description="Its SKILL.md, as found under the root."),
    Field("source", SOURCE, description="Provenance, as in the catalog (v4: the file is path)."),
    Field("body", Str(), description="The text after the frontmatter, leading blank lines removed."),
    Field("directory", Str(), description="The skill's absolute directory."),
    Field("files", Arr(SKILL_FILE), description="Every regular file under the directory (no "
                                                                "dot-files), sorted, at most limits.maxListedFiles."),
    opt("filesOmitted", Int(minimum=1), description="How many files maxListedFiles left out."),
    Field("dotEntries", Arr(Str()), description="Entries whose name starts with '.' (not listed in files, not "
                                                "entered): the relative path of each dot-entry itself, sorted."),
    Field("resources", Arr(RESOURCE), description="In request order, each request once."),
], name="ActivatedSkill")

BLOCKED = Obj([opt("extensionId", Str(), description="The extension whose before hook blocked (\"host\" when the "
                                                        "thread's host could not run it; absent for command hooks: "
                                                        "see by)."),
               Field("kind", Str(enum=("deny", "throw", "timeout", "crash", "closed", "failed", "hook", "hook_failed",
                                       "hook_conflict")),
                     description="closed: thread/close came before the core began; failed: the thread's "
                                 "extensions failed (3 host exits in 5 minutes) and none of its tools runs."),
               Field("reason", Str()),
               opt("by", Arr(Str()), description="Command hooks: the sources that blocked (root:<path>, plugin:<name>).")],
              name="Blocked")
WITHHELD = Obj([Field("extensionId", Str()), Field("kind", Str(enum=("throw", "timeout", "crash"))),
                Field("reason", Str())], name="Withheld")
STOP_TURN = Obj([Field("reason", Str(), description="The hooks' stopReason (else what they said), joined with '; '."),
                 Field("by", Arr(Str()), description="The sources that answered continue: false.")],
                name="StopTurn", description="A command hook answered continue: false: the editor ends the turn "
                                             "(protocol-v4 §3).")
TOOL_DETAILS = Obj([
    opt("kind", Str(), description="Why the call failed, when the sidecar says so: tool_not_found, "
                                   "invalid_arguments, stale_tool, tool_error, timeout, crash, too_large, editor_error, "
                                   "malformed_answer, mcp_exit, mcp_unavailable, or an activation error kind "
                                   "(load_skill)."),
    opt("blocked", BLOCKED, description="A before hook blocked the call; the core never ran."),
    opt("withheld", WITHHELD, description="A result transform failed; the core's result is not returned."),
    opt("argumentsRewrittenBy", Arr(Str()), description="Extensions whose before hooks rewrote the arguments."),
    opt("transformedBy", Arr(Str()), description="Extensions whose transforms changed the result."),
    opt("structuredContent", AnyValue(), description="An MCP tool's structuredContent."),
    opt("hookContext", Arr(Str()), description="PreToolUse command hooks' additionalContext, in declaration order."),
    opt("hookRewrittenBy", Arr(Str()), description="The command hooks whose updatedInput was applied."),
    opt("hookMessages", Arr(Str()), description="PreToolUse command hooks' systemMessage values, for the user "
                                                "(also when they blocked; each also sent as ui/notify warning)."),
    opt("stopTurn", STOP_TURN, description="A PreToolUse/PostToolUse/PostToolUseFailure hook answered "
                                           "continue: false: end the turn after this result."),
    opt("hookFeedback", Arr(Obj([Field("source", Str()), Field("kind", Str(enum=("block", "context"))),
                                 Field("text", Str())], name="HookFeedback")),
        description="PostToolUse command hooks' feedback, also appended as text items '[hook <source>] …'."),
], open_values=AnyValue(), name="ToolDetails",
    description="What the tool or the sidecar adds; a tool's own details are free-form.")
TOOL_RESULT = Obj([Field("toolCallId", P.REQUEST_ID, description="The call's id."), Field("toolName", Str()),
                   Field("content", Arr(CONTENT_BLOCK), description="Text, and (v4) MCP's image, audio, "
                                                                    "resource_link and resource items as they came."),
                   Field("details", TOOL_DETAILS), Field("isError", Bool())],
                  name="ToolResult")
COMMAND_RESULT = Obj([Field("content", Arr(TEXT_CONTENT)), Field("details", P.JSON_OBJECT), Field("isError", Bool())],
                     name="CommandResult")
INPUT_SUBMIT_RESULT = Union(
    Obj([Field("action", Const("send")), Field("message", USER_MESSAGE),
         opt("hookContext", Arr(Str()), description="UserPromptSubmit (then, for a command template, "
                                                    "UserPromptExpansion) command hooks' context, for the model."),
         opt("diagnostics", Arr(DIAGNOSTIC), description="A command template's template_feature_unsupported.")],
        name="InputSend"),
    Obj([Field("action", Const("handled")),
         Field("by", Obj([Field("kind", Const("extension")), Field("id", Str())], name="HandledByExtension")),
         opt("reason", Str())], name="InputHandledByExtension"),
    Obj([Field("action", Const("handled")),
         Field("by", Obj([Field("kind", Const("command")), Field("id", Str(), description="The command's name."),
                          Field("extensionId", Str())], name="HandledByCommand")),
         Field("result", COMMAND_RESULT)], name="InputHandledByCommand"),
    name="InputSubmitResult")

SERVER_CAPABILITIES = Obj([
    Field("framing", Str(enum=("jsonl", "content-length"))),
    Field("methods", Arr(Str()), description="The requests this sidecar serves."),
    Field("notifications", Arr(Str()), description="The notifications it may send."),
    Field("clientRequests", Arr(Str()), description="The requests it may send the editor."),
    Field("cancellation", Bool()),
], name="ServerCapabilities")
INITIALIZE_RESULT = Obj([
    Field("serverInfo", Obj([Field("name", Str()), Field("version", Str())], name="ServerInfo")),
    Field("protocolVersion", Const(PROTOCOL_VERSION), description="Whatever the client asked for."),
    Field("capabilities", SERVER_CAPABILITIES),
    Field("containment", Obj([
        Field("landlockAbi", Nullable(Int(minimum=1)),
              description="The kernel's Landlock ABI; null where Landlock is unavailable (no started process "
                          "is in a domain of its own)."),
        Field("nonDumpable", Bool(), description="The sidecar and its Python hosts are non-dumpable."),
        Field("scopedSignals", Bool(), description="Landlock ABI >= 6: started processes cannot signal, or reach "
                                                   "the abstract UNIX sockets of, processes outside their domain."),
    ], name="Containment"), description="What the kernel offered to fence the processes the sidecar starts."),
], name="InitializeResult")

# -- notifications and requests the sidecar sends ---------------------------------------------------

HOOKS = ("tool_call", "tool_result", "tool_result_transform", "thread_start", "thread_close", "context",
         "input") + _LOOP_EVENTS
THREAD_DIAGNOSTIC = Union(
    Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("hook", Str(enum=HOOKS)),
         Field("kind", Str(enum=("throw", "timeout"))), Field("message", Str())], name="HookFault",
        description="A handler registered with api.on raised or timed out."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("host_exit")), Field("message", Str()),
         opt("exitCode", Int()), opt("signal", Int())], name="HostExit",
        description="The thread's extension host died."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("host_restarted")), opt("message", Str())],
        name="HostRestarted"),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("extension_changed")), Field("extensionId", Str()),
         Field("message", Str())], name="ExtensionChanged",
        description="A trusted extension's bytes changed on disk; start a new thread to load it."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("mcp_exit")), Field("name", Str()),
         Field("message", Str()), opt("exitCode", Int()), opt("signal", Int())], name="McpExit",
        description="A thread's MCP server exited; it is restarted on the next call to it (3 exits in 5 minutes: "
                    "not any more)."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("mcp_restarted")), Field("name", Str()),
         Field("message", Str())], name="McpRestarted", description="A thread's MCP server was started again."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("mcp_auth_required")), Field("name", Str()),
         Field("message", Str()),
         Field("data", Obj([Field("server", Str()), Field("url", Str(description="The authorization URL to open."))],
                           name="McpAuthRequiredData"))],
        name="McpAuthRequired",
        description="A remote MCP server needs the user to sign in and the editor declared no "
                    "capabilities.ui.openUrl (or did not open it); its tools join once signed in."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("mcp_unavailable")), Field("name", Str()),
         Field("message", Str())], name="McpUnavailableLater",
        description="A remote MCP server's sign-in, which thread/start did not wait for, failed."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Str(enum=("handler_return_ignored", "ui_after_handler"))),
         Field("extensionId", Str()), opt("hook", Str(), description="The event (or command) of the handler."),
         Field("message", Str(), description="What was ignored or refused, and the right form.")],
        name="ExtensionAuthorNotice",
        description="Nothing ignored silently: an observer returned a value, a handler changed event in place "
                    "instead of returning it, or ctx.ui was used after its handler ended (refused)."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("stderr_dropped")),
         Field("dropped", Int(), description="Lines dropped since the last such diagnostic."), Field("message", Str())],
        name="StderrDropped",
        description="The editor does not read the sidecar's stderr: lines of this thread's processes were dropped "
                    "rather than block the sidecar (at most one a minute per thread)."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Str(enum=("hook_untrusted", "hook_failed",
                                                                  "config_change_blocked"))),
         Field("source", Str()), Field("message", Str()), opt("path", Str()), opt("sha256", Str()),
         opt("event", Str()), opt("command", Str(), description="The handler's command (its url, server/tool or "
                                                                 "prompt for another type)."),
         opt("type", Str(enum=("http", "mcp_tool", "prompt", "agent")), description="hook_failed: the handler's "
                                                                                    "type, when not command."),
         opt("field", Str(), description="hook_failed for an answer read strictly: the field whose value the format "
                                         "does not define (decision, hookSpecificOutput.permissionDecision, "
                                         "hookSpecificOutput.decision, hookSpecificOutput.decision.behavior).")], name="CommandHookDiagnostic",
        description="hook_untrusted: a source's command hooks do not run (once per source and thread); hook_failed: "
                    "a command hook failed where a failure does not block, or answered a value the format does not "
                    "define (said even when it blocks, with field); config_change_blocked: a ConfigChange hook "
                    "kept a changed hooks file (path) from applying at thread/refresh."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("trust_ambiguous")),
         Field("grant", Str(enum=("trustedPlugins", "trustedExtensions", "trustedHooks")),
               description="The list of the grant."),
         Field("name", Str(), description="The plugin's name, the extension's id or the hooks file's path the grant "
                                          "names."),
         Field("candidates", Arr(Str()), description="Every candidate of that name: its folder or file."),
         Field("field", Str(enum=("path", "plugins", "extensions")),
               description="What would choose one: the grant's path, or passing the one meant as an explicit "
                           "source (thread/start.plugins or .extensions)."),
         Field("message", Str())], name="TrustAmbiguous",
        description="A grant matched two or more candidates, or only a shadowed one: none of them runs any code "
                    "(once per grant and thread; also in the catalog's diagnostics)."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("hook_text_truncated")),
         Field("cut", Int(minimum=1), description="How many hook texts were cut (each ends with the cut mark)."),
         Field("leftOutBytes", Int(minimum=0), description="UTF-8 bytes of hook text left out, in all."),
         Field("limit", Int(minimum=1), description="--max-result-bytes."), Field("message", Str())],
        name="HookTextTruncated",
        description="Texts hooks added to one answer (tools/call, thread/start, input/submit, loop/event, "
                    "context/build) were cut to fit --max-result-bytes: once per answer that cut any; the answer "
                    "the method made is kept whole."),
    Obj([Field("threadId", P.THREAD_ID), Field("kind", Const("containment_reduced")),
         Field("what", Arr(Str(enum=("processes", "maxProcesses", "landlock"))),
               description="What is fenced less: processes (no writable cgroups: the subreaper mode, or nothing), "
                           "maxProcesses (cgroups without the pids controller), landlock (missing or below ABI 6)."),
         Field("message", Str())],
        name="ContainmentReduced",
        description="Once per thread that starts foreign code, where the machine fences less than protocol.md "
                    "promises: what is not fenced."),
    name="ThreadDiagnosticParams")
CATALOG_CHANGE = Obj([Field("kind", Str(enum=("skill", "template", "instructions", "extension", "tool", "hooks",
                                               "plugin", "commandTemplate", "mcpResource", "mcpPrompt"))),
                      Field("name", Str(description="mcpResource: <server>:<uri or uriTemplate>; mcpPrompt: "
                                                    "<server>:<name>."))], name="CatalogChange")
CATALOG_CHANGED = Obj([Field("threadId", P.THREAD_ID), Field("revision", REVISION),
                       Field("added", Arr(CATALOG_CHANGE)), Field("removed", Arr(CATALOG_CHANGE)),
                       Field("changed", Arr(CATALOG_CHANGE)), Field("diagnostics", Arr(DIAGNOSTIC))],
                      name="CatalogChangedParams")
UI_NOTIFY = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()),
                 Field("level", Str(enum=("info", "warning", "error"))), Field("message", Str())],
                name="UiNotifyParams")
UI_STATUS = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("key", Str()),
                 Field("text", Nullable(Str()), description="null clears the item.")], name="UiStatusParams")
CHAT_SEND = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("text", Str())],
                name="ChatSendParams",
                description="An extension asks the editor to send a message (ctx.ui.send_message); the editor "
                            "decides. Sent only to an editor that declared capabilities.ui.sendMessage.")
CHAT_DRAFT = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("text", Str()),
                  Field("newThread", Bool(), description="true: in a new conversation (Pi's newSession first).")],
                 name="ChatDraftParams",
                 description="v4: an extension asks the editor to put text in its input box for the user to edit "
                             "and send (ctx.ui.set_editor_text, Pi's setEditorText); the editor decides. Sent only to "
                             "an editor that declared capabilities.ui.draft.")
CHAT_COMPACT = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()),
                    opt("instructions", Str(), description="For the summary (Pi's customInstructions).")],
                   name="ChatCompactParams",
                   description="v4: an extension asks the editor to compact the conversation now (ctx.ui.compact, "
                               "Pi's ctx.compact); the editor decides, and reports compact_before/compact_after as "
                               "usual. Sent only to an editor that declared capabilities.ui.compact.")
CHAT_MODEL = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()),
                  opt("model", Str(), description="The model, in the editor's own names (e.g. provider/id)."),
                  opt("thinkingLevel", Str(), description="Pi's thinking levels: off, minimal, low, medium, high, "
                                                          "xhigh.")],
                 name="ChatModelParams",
                 description="v4: an extension asks the editor to switch the model and/or the thinking level "
                             "(ctx.ui.set_model, Pi's setModel/setThinkingLevel); the editor decides, and reports "
                             "a switch with loop/event model_select. At least one of the two. Sent only to an "
                             "editor that declared capabilities.ui.model.")
TOOLS_PROGRESS = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()),
                      Field("callId", P.REQUEST_ID, description="The tools/call's call.id, as the editor sent it."),
                      Field("text", Str(), description="How the call is going (Pi's onUpdate), the latest replacing "
                                                       "the one before.")],
                     name="ToolsProgressParams",
                     description="v4: a tool's execute tells the editor how a call in flight is going "
                                 "(ctx.ui.progress); labelled by the sidecar with the call. Sent only to an editor "
                                 "that declared capabilities.ui.progress.")
LOOP_EVENT_RESULT = Obj([
    Field("blocked", Nullable(Obj([Field("reason", Str(), description="Every blocking source's reason, joined "
                                                                       "with '; ' in declaration order."),
                                   Field("by", Arr(Str()), description="The blocking sources: extension:<id>, "
                                                                       "root:<path>, plugin:<name>.")],
                                  name="LoopBlocked"))),
    opt("decision", Nullable(Str(enum=("allow", "deny"))),
        description="permission_request only: deny (any deny or block), allow (an allow and no ask), or null "
                    "(ask the user as usual)."),
    Field("additionalContext", Arr(Str()), description="Every source's context, in declaration order."),
    Field("systemMessages", Arr(Str()), description="Messages for the user, in declaration order."),
    opt("stopTurn", STOP_TURN, description="A command hook answered continue: false: the editor ends the turn."),
    opt("compaction", Obj([Field("summary", Str(), description="The text to compact the conversation into."),
                           Field("by", Str(), description="The extension that gave it: extension:<id>.")],
                          name="LoopCompaction"),
        description="v4, compact_before only: an extension's own summary (Pi's {compaction: {summary}}), the "
                    "first in load order; absent when blocked or none gave one. The editor decides whether to use "
                    "it instead of its own."),
    opt("userBash", Obj([Field("output", Str()), Field("exitCode", Int()),
                         Field("by", Str(), description="The extension that ran it: extension:<id>.")],
                        name="LoopUserBash"),
        description="v4, user_bash only: an extension ran the user's command in the editor's place (Pi's "
                    "{result}), the first in load order; absent when blocked or none did: the editor runs it."),
], name="LoopEventResult")

ITEM_TOOL_CALL = Obj([Field("threadId", P.THREAD_ID), Field("callId", P.REQUEST_ID), Field("tool", Str()),
                      Field("arguments", P.JSON_OBJECT),
                      opt("namespace", Str(), description="A Codex namespace's tool: its namespace (tool is "
                                                          "<namespace>__<name>).")], name="ItemToolCallParams")
ITEM_TOOL_CALL_RESULT = Obj([
    Field("contentItems", Arr(Union(
        Obj([Field("type", Const("inputText")), Field("text", Str())], name="InputTextItem"),
        Obj([Field("type", Const("inputImage")), Field("imageUrl", Str(pattern="data:[^,]*;base64,.*",
                                                                       description="A data: URL (base64)."))],
            name="InputImageItem"),
        CONTENT_BLOCK, name="EditorContentItem")),
        description="inputText (MCP's text item is accepted too); v4: an inputImage (a data: URL, becoming an image "
                    "item) or any of MCP's content blocks, kept as it is."),
    Field("success", Bool(), description="false: the result is an error with this text."),
], name="ItemToolCallResult")
UI_TIMEOUT = opt("timeoutMs", Int(),
                 description="v4: the question's own time (ctx.ui.*(timeout_ms=)), at most limits.uiTimeoutMs; "
                             "the sidecar cancels it then, so an editor may show a countdown")
UI_CONFIRM = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("title", Str()),
                  Field("message", Str()),
                  opt("callId", P.REQUEST_ID, description="The tool call a hook is deciding, so the editor can show it."),
                  opt("tool", Str()), opt("arguments", P.JSON_OBJECT), UI_TIMEOUT], name="UiConfirmParams")
UI_OPTION = Obj([Field("value", Str()), Field("label", Str()), opt("description", Str())], name="UiOption")
UI_SELECT = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("title", Str()),
                 Field("options", Arr(UI_OPTION)), UI_TIMEOUT], name="UiSelectParams")
UI_INPUT = Obj([Field("threadId", P.THREAD_ID), Field("extensionId", Str()), Field("title", Str()),
                opt("placeholder", Str()), UI_TIMEOUT], name="UiInputParams")
ELICIT_SCHEMA = Obj([Field("type", Const("object")), Field("properties", Map(AnyValue())),
                     opt("required", Arr(Str()))], open_values=AnyValue(), name="ElicitRequestedSchema",
                    description="MCP's flat object schema: each property a string (format, enum, oneOf), number, "
                                "integer, boolean, or array of enum strings.")
UI_ELICIT = Obj([Field("threadId", P.THREAD_ID),
                 opt("server", Str(), description="The MCP server that asks (absent when an extension asks)."),
                 opt("extensionId", Str(), description="v4: the extension whose ctx.ui.elicit asks (absent when an "
                                                       "MCP server asks)."),
                 Field("message", Str()), Field("requestedSchema", ELICIT_SCHEMA), UI_TIMEOUT],
                name="UiElicitParams")
UI_ELICIT_RESULT = Union(
    Obj([Field("action", Const("accept")),
         Field("content", Map(AnyValue()), description="A value per field: string, number, boolean or array of "
                                                       "strings.")], name="ElicitAccept"),
    Obj([Field("action", Str(enum=("decline", "cancel")))], name="ElicitDecline"),
    name="UiElicitResult", description="MCP's ElicitResult. Anything else (an error, a malformed answer, no answer "
                                       "within uiTimeoutMs) is a decline.")
MODEL_SAMPLE = Obj([Field("threadId", P.THREAD_ID), Field("messages", Arr(Obj([
    Field("role", Str(enum=("user", "assistant"))), Field("content", AnyValue())], open_values=AnyValue(),
    name="SamplingMessage"))), Field("maxTokens", Int()), opt("systemPrompt", Str()),
    opt("modelPreferences", AnyValue()), opt("includeContext", Str()), opt("temperature", AnyValue()),
    opt("stopSequences", Arr(Str())), opt("metadata", AnyValue()),
    opt("extensionId", Str(), description="v4: the extension whose ctx.sample asks (absent: an MCP server's "
                                          "sampling/createMessage)")], open_values=AnyValue(),
    name="ModelSampleParams", description="MCP's CreateMessageRequest params, plus threadId.")
MODEL_SAMPLE_RESULT = Obj([Field("role", Str(enum=("user", "assistant"))), Field("content", AnyValue()),
                           Field("model", Str()), opt("stopReason", Str())], open_values=AnyValue(),
                          name="ModelSampleResult",
                          description="MCP's CreateMessageResult. An error answer is relayed to the server as "
                                      "error -1 (the user rejected it).")
MCP_READ_RESULT = Obj([Field("contents", Arr(Union(
    Obj([Field("uri", Str()), opt("mimeType", Str()), Field("text", Str())], open_values=AnyValue(),
        name="McpTextContents"),
    Obj([Field("uri", Str()), opt("mimeType", Str()), Field("blob", Str(description="base64"))],
        open_values=AnyValue(), name="McpBlobContents"), name="McpResourceContents")))],
    open_values=AnyValue(), name="McpResourceReadResult", description="MCP's ReadResourceResult, as the server gave it.")
MCP_PROMPT_RESULT = Obj([opt("description", Str()), Field("messages", Arr(Obj([
    Field("role", Str(enum=("user", "assistant"))), Field("content", CONTENT_BLOCK)], open_values=AnyValue(),
    name="McpPromptMessage")))], open_values=AnyValue(), name="McpPromptGetResult",
    description="MCP's GetPromptResult, as the server gave it.")
HOOK_PROMPT = Obj([Field("threadId", P.THREAD_ID),
                   Field("prompt", Str(), description="The hook's prompt, $ARGUMENTS replaced by the hook input JSON "
                                                      "(appended when it has none)."),
                   opt("model", Str(), description="The model the hook asks for, as declared."),
                   Field("kind", Str(enum=("prompt", "agent")), description="agent: the hook expects a verifier that "
                                                                            "may use tools (Claude Code's agent hooks).")],
                  name="HookPromptParams")
HOOK_PROMPT_RESULT = Obj([Field("ok", Bool(), description="true: nothing against; false: it blocks (a deny, a Stop "
                                                          "that keeps the agent working)."),
                          opt("reason", Str(), description="Why, when ok is false: the block's reason.")],
                         name="HookPromptResult",
                         description="Anything else (an error, a malformed answer, no answer by the hook's timeout) "
                                     "is a hook failure (hook_failed).")
UI_OPEN_URL = Obj([Field("threadId", P.THREAD_ID), Field("url", Str(), description="An http(s) URL to open in the "
                                                                              "user's browser."),
                   Field("reason", Str(), description="Why, for the user.")], name="UiOpenUrlParams")
UI_OPEN_URL_RESULT = Obj([Field("opened", Bool())], name="UiOpenUrlResult",
                         description="Anything but opened: true (an error, no answer) makes the sidecar give the URL "
                                     "in a thread/diagnostic mcp_auth_required.")
UI_CONFIRM_RESULT = Obj([Field("confirmed", Bool())], name="UiConfirmResult",
                        description="Anything else (an error, a malformed answer, no answer) counts as false.")
UI_VALUE_RESULT = Obj([Field("value", Nullable(Str()), description="null: the user cancelled.")],
                      name="UiValueResult")

SESSION_MESSAGE = Obj([Field("role", Str(), description="user, assistant, tool, system: the editor's word."),
                       Field("text", Str()), opt("toolCalls", Arr(P.JSON_OBJECT)),
                       opt("toolResults", Arr(P.JSON_OBJECT))], name="SessionMessage")
SESSION_MESSAGES = Obj([Field("threadId", P.THREAD_ID),
                        opt("limit", Int(minimum=0), description="The last this many; absent: all.")],
                       name="SessionMessagesParams")
SESSION_MESSAGES_RESULT = Obj([Field("messages", Arr(SESSION_MESSAGE), description="Oldest first.")],
                              name="SessionMessagesResult")

NO_PARAMS = Map(AnyValue(), name="NoParams", description="No params are read (absent, null or an object).")
NULL_RESULT = Null(name="NullResult")


# -- errors -----------------------------------------------------------------------------------------

class ErrorKind:
    def __init__(self, kind: str, codes: tuple[int, ...], fields: list[Field], description: str) -> None:
        self.kind, self.codes, self.fields, self.description = kind, codes, fields, description

    def shape(self) -> Shape:
        name = "Error_" + "".join(part.capitalize() for part in self.kind.split("_"))
        code = Const(self.codes[0]) if len(self.codes) == 1 else Enum(*self.codes)
        data = Obj([Field("kind", Const(self.kind)), *self.fields], open_values=AnyValue())
        return Obj([Field("code", code), Field("message", Str()), Field("data", data)], name=name,
                   description=self.description)


def _domain(kind: str, fields: list[Field], description: str) -> ErrorKind:
    return ErrorKind(kind, (DOMAIN_CODES[kind],), fields, description)


S = Str
# Errors any request may get (the JSON-RPC ones and the sidecar's lifecycle).
GENERIC_ERRORS = [
    ErrorKind("parse_error", (-32700,), [], "Malformed JSON, invalid UTF-8, a bad Content-Length frame; id null."),
    ErrorKind("invalid_request", (-32600,), [], "Not a request: not an object, a batch, no method, a bad id."),
    ErrorKind("too_large", (-32600, DOMAIN_CODES["too_large"]),
              [opt("size", Int(minimum=0)), opt("limit", Int(minimum=0)), opt("path", S())],
              "A message over 16 MiB (-32600, id null), an answer over --max-result-bytes, or a file over "
              "limits.maxFileBytes (-32017)."),
    ErrorKind("shutting_down", (-32600,), [], "A request after shutdown."),
    ErrorKind("already_initialized", (-32600,), [], "A second initialize."),
    ErrorKind("duplicate_id", (-32600,), [], "A request reusing the id of one still in flight."),
    ErrorKind("method_not_found", (-32601,), [], "Unknown method."),
    ErrorKind("invalid_params", (-32602,), [Field("field", S(), description="The offending field: roots[0], call.id, "
                                                                            "limits.hookTimeoutMs.")],
              "Params of the wrong shape."),
    ErrorKind("too_deep", (-32602,), [], "A message nested deeper than 512 levels of arrays and objects (id null "
              "when its id cannot be read before the deep part)."),
    ErrorKind("not_initialized", (-32002,), [], "A request before initialize."),
    ErrorKind("cancelled", (-32800,), [], "Cancelled by $/cancelRequest, or by exit without shutdown."),
    ErrorKind("internal_error", (-32603,), [], "A bug in the sidecar (logged); it keeps serving."),
    ErrorKind("resources_exhausted", (DOMAIN_CODES["resources_exhausted"],), [opt("errno", Int(minimum=0))],
              "The system refused the sidecar what the request needed (no file descriptors, no memory, no "
              "processes): this request fails, nothing of it ran half, the sidecar keeps serving."),
    ErrorKind("overloaded", (DOMAIN_CODES["overloaded"],), [opt("limit", Int(minimum=0))],
              "--max-in-flight requests are running and the request does not fit in the queue behind them "
              "(--max-queued-bytes); nothing of it ran."),
]
DOMAIN_ERRORS = [
    _domain("thread_not_found", [opt("threadId", S())], "An unknown or closed threadId (not echoed when it is "
            "over 200 characters long)."),
    _domain("skill_not_found", [opt("name", S()), opt("path", S())],
            "No such skill, or it is gone from disk, or (path) no same-name candidate is at that path."),
    _domain("skill_not_active", [Field("name", S())], "skills/deactivate of a skill the thread has not active."),
    _domain("invalid_arguments", [opt("name", S()), opt("request", S()), opt("field", S()), opt("path", S())],
            "Arguments the method refuses: a malformed skill name, a non-string template argument, command "
            "arguments that do not match its inputSchema, a word without '=' in input/submit."),
    _domain("path_escape", [opt("path", S()), opt("request", S()), opt("resolved", S())],
            "A path that leaves its boundary lexically or through a link."),
    _domain("name_mismatch", [opt("name", S()), opt("path", S())], "SKILL.md's name no longer matches its directory."),
    _domain("invalid_frontmatter", [opt("name", S()), opt("path", S()), opt("line", Int(minimum=1))],
            "Missing, unclosed or invalid frontmatter."),
    _domain("not_utf8", [opt("path", S())], "A file that is not valid UTF-8."),
    _domain("resource_not_found", [opt("path", S()), opt("request", S()),
                                   opt("suggestions", Arr(S()), description="Close matches.")],
            "A requested resource file that does not exist or is not a regular file."),
    _domain("broken_link", [opt("path", S()), opt("request", S()), opt("target", S(), description="The link's text.")],
            "A link (or a directory link on the way) whose target does not exist; never a path_escape."),
    _domain("template_not_found", [opt("name", S())], "No such template, or it is gone from disk."),
    _domain("missing_argument", [Field("variable", S()), opt("missing", Arr(S()))],
            "A template variable without an argument."),
    _domain("command_not_found", [opt("name", S())], "No command of that name in the thread."),
    _domain("input_blocked", [opt("extensionId", S()), opt("by", Arr(S())),
                              opt("blockedKind", S(enum=("hook", "hook_failed", "hook_conflict"))),
                              opt("stopTurn", STOP_TURN)],
            "An input handler failed (fail-closed), or UserPromptSubmit command hooks (by) blocked the input."),
    _domain("mcp_unavailable", [Field("name", S())], "A required MCP server could not be started; mcp/resource/read, "
            "mcp/prompt/get: the server is not running and could not be restarted."),
    _domain("mcp_server_not_found", [opt("server", S())], "No MCP server of that name in the thread."),
    _domain("mcp_error", [opt("server", S()), opt("code", Int(), description="The server's JSON-RPC error code.")],
            "The MCP server answered with an error (code), gave a result that is not valid, did not answer within "
            "limits.mcpToolTimeoutMs, or does not declare the capability (resources, prompts)."),
    _domain("too_many_threads", [Field("limit", Int(minimum=1))],
            "thread/start while --max-threads threads are open or starting."),
    _domain("extension_failed", [opt("threadId", S())], "The thread's extensions failed (3 host exits in 5 "
            "minutes): commands/run and input/submit are refused."),
]
ERROR_KINDS = {e.kind: e for e in GENERIC_ERRORS + [d for d in DOMAIN_ERRORS if d.kind != "too_large"]}
ERROR = Union(*(e.shape() for e in ERROR_KINDS.values()), name="Error",
              description="error of a response: code, message and data.kind (clients branch on data.kind).")
PEER_ERROR = Obj([Field("code", Int()), Field("message", Str()), opt("data", AnyValue())], name="PeerError",
                 description="An error the editor answers a request of the sidecar with.")

_FILE_ERRORS = ["path_escape", "not_utf8", "too_large", "invalid_frontmatter"]

# -- the messages ------------------------------------------------------------------------------------


class Message:
    def __init__(self, method: str, direction: str, kind: str, params: Shape, result: Shape | None = None,
                 errors: tuple[str, ...] = (), description: str = "") -> None:
        self.method, self.direction, self.kind = method, direction, kind
        self.params, self.result, self.errors, self.description = params, result, errors, description


def _request(method: str, params: Shape, result: Shape, errors: tuple[str, ...] = (), description: str = "",
             direction: str = CLIENT) -> Message:
    return Message(method, direction, "request", params, result, errors, description)


def _notification(method: str, params: Shape, direction: str = SERVER, description: str = "") -> Message:
    return Message(method, direction, "notification", params, None, (), description)


THREAD = ("thread_not_found",)
ACTIVE_SKILL = Obj([Field("name", Str()), Field("path", Str(), description="The activated candidate's SKILL.md."),
                    Field("via", Str(enum=("activate", "load_skill")),
                          description="load_skill: its body is the tool result, not pasted into the prompt.")],
                   name="ActiveSkill")
MESSAGES: list[Message] = [
    _request("initialize", P.INITIALIZE, INITIALIZE_RESULT, description="The first request."),
    _notification("initialized", NO_PARAMS, CLIENT, "Optional; ignored."),
    _request("shutdown", NO_PARAMS, NULL_RESULT, description="Answers once the requests in flight are answered."),
    _notification("exit", NO_PARAMS, CLIENT, "Ends the process: 0 after shutdown, 1 without."),
    _notification("$/cancelRequest", P.CANCEL, BOTH, "The request is answered -32800 (kind cancelled); the "
                                                    "sidecar sends it for a ui/* request whose tools/call was "
                                                    "cancelled."),
    _request("thread/start", P.THREAD_START, THREAD_START_RESULT, ("mcp_unavailable", "too_many_threads")),
    _request("thread/refresh", P.THREAD_PARAMS, THREAD_START_RESULT, THREAD,
             "Rescans the roots now; answers like thread/start."),
    _request("thread/fork", P.THREAD_FORK, THREAD_START_RESULT, THREAD + ("too_many_threads", "mcp_unavailable"),
             "A new thread over the same roots, grants, tools and limits, with copies of the state and activations "
             "(thread_start reason \"fork\"); answers like thread/start."),
    _request("thread/close", P.THREAD_PARAMS, Obj([Field("state", Map(AnyValue()), description=(
        "Extension id → its last ctx.state (JSON), for an editor that keeps state itself (thread/start.state)."))],
        name="ThreadCloseResult"), THREAD),
    _request("skills/activate", P.SKILLS_ACTIVATE, Obj([Field("skill", ACTIVATED_SKILL)], name="SkillsActivateResult"),
             THREAD + ("skill_not_found", "invalid_arguments", "path_escape", "name_mismatch", "invalid_frontmatter",
                       "not_utf8", "resource_not_found", "too_large", "broken_link")),
    _request("skills/deactivate", P.SKILLS_DEACTIVATE, Obj([Field("activeSkills", Arr(ACTIVE_SKILL))],
                                                           name="SkillsDeactivateResult"),
             THREAD + ("skill_not_active", "invalid_arguments"), "The skill leaves the thread's context/build."),
    _request("templates/render", P.TEMPLATES_RENDER, Obj([Field("message", USER_MESSAGE),
                                                          opt("diagnostics", Arr(DIAGNOSTIC))],
                                                         name="TemplatesRenderResult"),
             THREAD + ("template_not_found", "missing_argument", "invalid_arguments", *_FILE_ERRORS)),
    _request("context/build", P.THREAD_PARAMS, Obj([Field("systemPrompt", Str(
        description="Sections: instructions, skills, active skills, '# Hook context (SessionStart: <source>)' for "
                    "what the thread's SessionStart hooks said (for the thread's life), then extension sections "
                    "(protocol.md § context/build). A skill loaded by load_skill is named in activeSkills, its body "
                    "not pasted again.")),
        Field("revision", REVISION, description="The catalog revision the prompt was built from."),
        Field("activeSkills", Arr(ACTIVE_SKILL), description="The thread's activated skills, by name."),
        Field("toolsRevision", REVISION, description="tools/list's revision of the same view: an editor sends the "
                                                     "tools of this revision with this prompt.")],
        name="ContextBuildResult"), THREAD),
    _request("tools/list", P.THREAD_PARAMS,
             Obj([Field("tools", Arr(Union(TOOL_SPEC, DEFERRED_TOOL)),
                        description="The active tools (builtins always), a deferred one by name only (v4)."),
                  Field("revision", REVISION)], name="ToolsListResult"),
             THREAD),
    _request("tools/call", P.TOOLS_CALL, Obj([Field("result", TOOL_RESULT)], name="ToolsCallResult"), THREAD,
             "Never a protocol error for what a tool, hook or editor did: a result paired with the call."),
    _request("commands/list", P.THREAD_PARAMS, Obj([Field("commands", Arr(Obj([
        Field("name", P.TOOL_NAME_SHAPE), Field("description", Str()), opt("inputSchema", P.INPUT_SCHEMA),
        Field("origin", Obj([Field("kind", Const("extension")), Field("id", Str())], name="CommandOrigin")),
        opt("rawArguments", Const(True), description="The command takes the rest of the slash line as {text}: "
                                                     "send commands/run {name, text}.")],
        name="CommandSpec")))], name="CommandsListResult"), THREAD),
    _request("commands/run", P.COMMANDS_RUN, COMMAND_RESULT, THREAD + ("command_not_found", "invalid_arguments",
                                                                     "extension_failed")),
    _request("input/submit", P.INPUT_SUBMIT, INPUT_SUBMIT_RESULT,
             THREAD + ("invalid_arguments", "missing_argument", "template_not_found", "input_blocked",
                       "command_not_found", "extension_failed", *_FILE_ERRORS)),
    _request("loop/event", P.LOOP_EVENT, LOOP_EVENT_RESULT, THREAD,
             "The editor's agent loop reports a boundary; the extensions' (and command hooks') verdicts, merged."),
    _request("mcp/resource/read", P.MCP_RESOURCE_READ, MCP_READ_RESULT,
             THREAD + ("mcp_server_not_found", "mcp_unavailable", "mcp_error"),
             "v4: resources/read of one of the thread's MCP servers."),
    _request("mcp/prompt/get", P.MCP_PROMPT_GET, MCP_PROMPT_RESULT,
             THREAD + ("mcp_server_not_found", "mcp_unavailable", "mcp_error"),
             "v4: prompts/get of one of the thread's MCP servers."),
    _notification("chat/send", CHAT_SEND),
    _notification("chat/draft", CHAT_DRAFT),
    _notification("chat/compact", CHAT_COMPACT),
    _notification("chat/model", CHAT_MODEL),
    _notification("tools/progress", TOOLS_PROGRESS),
    _notification("thread/diagnostic", THREAD_DIAGNOSTIC),
    _notification("catalog/changed", CATALOG_CHANGED),
    _notification("ui/notify", UI_NOTIFY),
    _notification("ui/status", UI_STATUS),
    _request("item/tool/call", ITEM_TOOL_CALL, ITEM_TOOL_CALL_RESULT, direction=SERVER,
             description="A dynamic tool's call, for the editor to run."),
    _request("ui/confirm", UI_CONFIRM, UI_CONFIRM_RESULT, direction=SERVER),
    _request("hook/prompt", HOOK_PROMPT, HOOK_PROMPT_RESULT, direction=SERVER,
             description="A prompt or agent hook asks the editor's model (only with capabilities.hookPrompt)."),
    _request("session/messages", SESSION_MESSAGES, SESSION_MESSAGES_RESULT, direction=SERVER,
             description="v4: the conversation, asked only of an editor that declared capabilities.conversation."),
    _request("ui/select", UI_SELECT, UI_VALUE_RESULT, direction=SERVER),
    _request("ui/input", UI_INPUT, UI_VALUE_RESULT, direction=SERVER),
    _request("ui/elicit", UI_ELICIT, UI_ELICIT_RESULT, direction=SERVER,
             description="v4: an MCP server's elicitation/create (capabilities.ui.elicit)."),
    _request("model/sample", MODEL_SAMPLE, MODEL_SAMPLE_RESULT, direction=SERVER,
             description="v4: an MCP server's sampling/createMessage (capabilities.sampling)."),
    _request("ui/openUrl", UI_OPEN_URL, UI_OPEN_URL_RESULT, direction=SERVER,
             description="A remote MCP server's sign-in page (OAuth), for the editor to open (capabilities.ui.openUrl)."),
]
BY_METHOD = {m.method: m for m in MESSAGES}

ENVELOPE_REQUEST = Obj([opt("jsonrpc", Const("2.0")), Field("id", P.REQUEST_ID), Field("method", Str()),
                        opt("params", AnyValue())], name="Request",
                       description="The sidecar always sends jsonrpc; editors may omit it.")
ENVELOPE_NOTIFICATION = Obj([opt("jsonrpc", Const("2.0")), Field("method", Str()), opt("params", AnyValue())],
                            name="Notification")
ENVELOPE_RESULT = Obj([opt("jsonrpc", Const("2.0")), Field("id", P.REQUEST_ID), Field("result", AnyValue())],
                      name="ResultResponse")
ENVELOPE_ERROR = Obj([opt("jsonrpc", Const("2.0")), Field("id", Nullable(P.REQUEST_ID)),
                      Field("error", Obj([Field("code", Int()), Field("message", Str()), opt("data", AnyValue())],
                                         name="ErrorObject"))],
                     name="ErrorResponse", description="error is an Error when the sidecar sends it.")
MESSAGE = Union(ENVELOPE_REQUEST, ENVELOPE_NOTIFICATION, ENVELOPE_RESULT, ENVELOPE_ERROR, name="Message")


def document() -> dict[str, Any]:
    """The JSON Schema document (draft 2020-12) of the whole protocol."""
    defs: dict[str, Any] = {}
    root = MESSAGE.schema(defs)
    messages: dict[str, Any] = {}
    for m in MESSAGES:
        entry: dict[str, Any] = {"direction": m.direction, "kind": m.kind, "params": m.params.schema(defs)}
        if m.result is not None:
            entry["result"] = m.result.schema(defs)
        if m.errors:
            entry["errors"] = list(m.errors)
        if m.description:
            entry["description"] = m.description
        messages[m.method] = entry
    ERROR.schema(defs)
    PEER_ERROR.schema(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "harness-sidecar protocol",
        "description": f"Every message of the harness-sidecar wire, protocol {PROTOCOL_VERSION} (JSON-RPC 2.0). The "
                       "root schema is any message's envelope; x-messages maps each method to the definitions of "
                       "its params and result; $defs/Error is an error response's error by data.kind. "
                       "Generated by `harness-sidecar schema`; see protocol.md § Machine-readable protocol.",
        **root,
        "x-messages": messages,
        "x-request-errors": [e.kind for e in GENERIC_ERRORS],
        "$defs": dict(sorted(defs.items())),
    }


def dumps() -> str:
    import json

    return json.dumps(document(), indent=2, ensure_ascii=False) + "\n"
