"""summarize: ``/summarize`` sums up the conversation so far, so the user can resume it later.

Shows: a command that reads the conversation (``ctx.messages()``, asked of the editor with
``session/messages`` under ``capabilities.conversation``), has the editor's model write the summary
(``ctx.sample``, ``model/sample`` under ``capabilities.sampling``), and tells the user with
``ctx.ui.notify`` when there is nothing to sum up or the editor does not share the conversation.
Ported from Pi's ``examples/extensions/summarize.ts`` (github:badlogic/pi-mono, packages/coding-agent;
MIT licence, © Mario Zechner). Class: **nearly** — the command, the conversation it reads (user and
assistant text, one line per tool call, as Pi's ``buildConversationText``), Pi's summary prompt word
for word, the model's summary and the "No conversation text found" warning port; which model writes
it and how the answer is shown are the editor's.
What changed and why:
- Pi asks a model it names (``complete(getModel("openai", "gpt-5.2"))``) and shows the answer in a
  custom TUI panel. Here ``ctx.sample`` asks the editor's model (the editor chooses it, and may ask
  the user first); the summary is the command's result, which the editor shows.
- An editor without ``capabilities.sampling``: ``/summarize model`` sends the prompt as a user message
  (``chat/send``, under ``ui.sendMessage``) so the model answers in the chat; otherwise, and for a plain
  ``/summarize`` there, the port sums up deterministically — Goals (what the user asked), Progress
  (what the assistant said and the tools it called), Open questions (the last assistant message's
  questions), Next steps (a user message not answered yet).
- Pi's "No API key" warnings have no match (the editor owns the model's keys).

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
    try:
        written = await ctx.sample(summary_prompt(text), max_tokens=2048)
    except RuntimeError:  # SamplingUnavailable: no capabilities.sampling, refused, or no answer
        written = None
    if written:
        return {"content": written, "details": {"messages": len(messages), "summarizedBy": "editor-model"}}
    if arguments["text"].strip() == "model" and await ctx.ui.send_message(summary_prompt(text)):
        ctx.ui.notify("Preparing summary...", "info")
        return {"content": "Asked the model for a summary (it answers in the chat).",
                "details": {"messages": len(messages), "summarizedBy": "model"}}
    return {"content": summary(messages), "details": {"messages": len(messages), "summarizedBy": "summarize"}}


def activate(api):
    api.register_command("summarize", "Summarize the current conversation with the editor's model (\"model\": in the "
                         "chat when the editor offers no sampling).",
                         summarize, raw_arguments=True)
