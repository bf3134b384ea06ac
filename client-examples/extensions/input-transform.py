"""input-transform: rewrite or answer what the user types before it reaches the model.

Shows: the ``input`` event (``input/submit``) with its three answers — ``{"text": ...}`` rewrites
the message (later handlers, ``/template`` and ``/command`` expansion see the new text),
``{"handled": True}`` answers it locally (nothing goes to the model), ``None`` passes it on —
and an ``async`` handler (``ctx.ui.notify`` returns at once: call it without ``await``).
Ported from Pi's ``examples/extensions/input-transform.ts``:
  ?quick What is TypeScript?  ->  "Respond briefly in 1-2 sentences: What is TypeScript?"
  ping                        ->  "pong" shown to the user, nothing sent
  time                        ->  the current time shown to the user, nothing sent
Pi's ``event.source`` (skip text other extensions injected) has no counterpart: only the user's
typing reaches ``input/submit``.

Settings (``thread/start.extensionSettings["input-transform"]``), all optional:
  quickPrefix  the prefix that asks for a brief answer (default "?quick ")
"""

import time


async def shape(event, ctx):
    text = event["text"]
    prefix = ctx.settings.get("quickPrefix", "?quick ")
    if text.startswith(prefix) or text == prefix.strip():
        query = text[len(prefix):].strip()
        if not query:
            ctx.ui.notify(f"Usage: {prefix}<question>", level="warning")
            return {"handled": True, "reason": "usage shown"}
        return {"text": f"Respond briefly in 1-2 sentences: {query}"}
    if text.strip().lower() == "ping":
        ctx.ui.notify("pong")
        return {"handled": True, "reason": "answered locally: pong"}
    if text.strip().lower() == "time":
        now = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        ctx.ui.notify(now)
        return {"handled": True, "reason": f"answered locally: {now}"}
    return None


def activate(api):
    api.on("input", shape)
