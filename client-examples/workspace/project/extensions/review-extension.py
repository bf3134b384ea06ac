"""Review notes, with a guard: a note (or an MCP issue comment) that contains a secret is never recorded."""

NOTES = []


def record_note(call_id, arguments):
    text = arguments.get("text", "")
    NOTES.append(text)
    return {"content": f"noted ({len(NOTES)} so far): {text}", "details": {"count": len(NOTES)}}


def refuse_secrets(event):
    call = event["call"]
    if call["name"] == "review_note" and "SECRET" in str(call["arguments"].get("text", "")):
        return {"block": True, "reason": "review notes must not contain secrets"}
    if call["name"].endswith("__post_comment") and "SECRET" in str(call["arguments"].get("text", "")):
        return {"block": True, "reason": "comments must not contain secrets"}  # an MCP server's tool: same gate
    return None


def log_results(event):
    result = event["result"]
    print(f"review-extension: {event['call']['name']} -> isError={result['isError']}")  # lands on stderr


def activate(api):
    api.register_tool(
        name="review_note",
        description="Record a review note.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        execute=record_note,
    )
    api.on("tool_call", refuse_secrets)
    api.on("tool_result", log_results)
