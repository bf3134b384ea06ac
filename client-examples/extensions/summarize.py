"""summarize: ``/summarize`` sums up the conversation so far, so the user can resume it later.

Shows: a command that reads the conversation (``ctx.messages()``, asked of the editor with
``session/messages`` under ``capabilities.conversation``), tells the user with ``ctx.ui.notify`` when
there is nothing to sum up or the editor does not share the conversation, and (``/summarize model``)
hands a prompt to the editor's model with ``ctx.ui.send_message``.
Ported from Pi's ``examples/extensions/summarize.ts`` (github:badlogic/pi-mono, packages/coding-agent;
MIT licence, © Mario Zechner). Class: **partly** — the command, the conversation it reads (user and
assistant text, one line per tool call, as Pi's ``buildConversationText``), the "No conversation text
found" warning and a summary under headings port; the model-written summary does not.
What changed and why:
- Pi asks a model of its own (``complete(getModel("openai", "gpt-5.2"))``) and shows the answer in a
  custom TUI panel. An extension here cannot reach a model: ``model/sample`` is offered to MCP servers
  only, and choosing a model is the editor's (protocol.md's Pi → sidecar table). So ``/summarize``
  sums up deterministically — Goals (what the user asked), Progress (what the assistant said and the
  tools it called), Open questions (the last assistant message's questions), Next steps (a user
  message not answered yet) — and returns it as the command's result, which the editor shows.
- ``/summarize model`` sends Pi's own summary prompt, the conversation in it, as a user message
  (``chat/send``): the editor's model then writes the summary in the chat — when and whether is the
  editor's. Without the editor's ``ui.sendMessage`` it falls back to the deterministic summary.
- Pi's panel is the editor's (a command's text result); Pi's "No API key" warnings have no match.

Settings: none.
"""

import json
import re

LINE = 200  # characters of a message's first line a summary keeps


def conversation_text(messages):
    """Pi's ``buildConversationText``: ``User: …`` / ``Assistant: …`` and a line per tool call."""
    sections = []
    for message in messages:
        if message["role"] not in ("user", "assistant"):
            continue
        label = "User" if message["role"] == "user" else "Assistant"
        lines = [f"{label}: {message['text'].strip()}"] if message["text"].strip() else []
        if message["role"] == "assistant":
            lines += [f"Tool {call['name']} was called with args {json.dumps(call.get('arguments', {}))}"
                      for call in message.get("toolCalls", []) if isinstance(call.get("name"), str)]
        if lines:
            sections.append("\n".join(lines))
    return "\n\n".join(sections)


def summary_prompt(text):
    """Pi's ``buildSummaryPrompt``, word for word."""
    return "\n".join(["Summarize this conversation so I can resume it later.",
                      "Include goals, key decisions, progress, open questions, and next steps.",
                      "Keep it concise and structured with headings.", "", "<conversation>", text,
                      "</conversation>"])


def first_line(text):
    line = text.strip().split("\n")[0].strip()
    return line if len(line) <= LINE else line[:LINE] + "..."


def summary(messages):
    said = [m for m in messages if m["role"] in ("user", "assistant") and (m["text"].strip() or m.get("toolCalls"))]
    asked = [first_line(m["text"]) for m in said if m["role"] == "user" and m["text"].strip()]
    replies = [first_line(m["text"]) for m in said if m["role"] == "assistant" and m["text"].strip()]
    tools = {}
    for message in said:
        for call in message.get("toolCalls", []) if message["role"] == "assistant" else []:
            if isinstance(call.get("name"), str):
                tools[call["name"]] = tools.get(call["name"], 0) + 1
    last_reply = next((m for m in reversed(said) if m["role"] == "assistant"), None)
    questions = re.findall(r"[^.!?\n]*\?", last_reply["text"]) if last_reply else []
    waiting = said[-1]["role"] == "user" if said else False
    parts = ["# Conversation Summary", "", "## Goals", *(f"- {line}" for line in asked or ["(none stated)"]),
             "", "## Progress", *(f"- {line}" for line in replies or ["(no assistant reply yet)"])]
    if tools:
        parts.append("- Tools used: " + ", ".join(f"{name} ×{n}" for name, n in tools.items()))
    parts += ["", "## Open questions", *(f"- {q.strip()}" for q in questions or ["(none)"]),
              "", "## Next steps", f"- {'Answer: ' + asked[-1] if waiting else '(none stated)'}"]
    return "\n".join(parts)


async def summarize(arguments, ctx):
    try:
        messages = await ctx.messages()
    except RuntimeError as exc:  # ConversationUnavailable: the editor does not share the conversation
        ctx.ui.notify(f"No conversation to summarize: {exc}", "warning")
        return {"content": f"No conversation to summarize: {exc}", "isError": True}
    text = conversation_text(messages)
    if not text.strip():
        ctx.ui.notify("No conversation text found", "warning")
        return {"content": "No conversation text found", "details": {"messages": len(messages)}}
    if arguments["text"].strip() == "model" and await ctx.ui.send_message(summary_prompt(text)):
        ctx.ui.notify("Preparing summary...", "info")
        return {"content": "Asked the model for a summary (it answers in the chat).",
                "details": {"messages": len(messages), "summarizedBy": "model"}}
    return {"content": summary(messages), "details": {"messages": len(messages), "summarizedBy": "summarize"}}


def activate(api):
    api.register_command("summarize", "Summarize the current conversation (\"model\": ask the editor's model).",
                         summarize, raw_arguments=True)
