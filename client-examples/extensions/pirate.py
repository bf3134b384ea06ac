"""pirate: a ``/pirate`` command that changes how the agent speaks, through the system prompt.

Shows: ``api.register_command`` (run with ``commands/run``, or typed as ``/pirate`` in the chat
through ``input/submit``) and a ``context`` handler whose answer depends on the command's state.
Ported from Pi's ``examples/extensions/pirate.ts``: Pi appends to the system prompt in
``before_agent_start``; here the ``context`` handler's text becomes the
``# Extension: pirate`` section of ``context/build`` while pirate mode is on.

Settings: none.
"""

PIRATE_MODE = [False]  # this thread's (each thread has its own extension host)

INSTRUCTIONS = """You are now in PIRATE MODE. You must:
- Speak like a stereotypical pirate in all responses
- Use phrases like "Arrr!", "Ahoy!", "Shiver me timbers!", "Avast!"
- Replace "my" with "me", "you" with "ye", "your" with "yer"
- Refer to the user as "matey" or "landlubber"
- Still complete the actual task correctly, just in pirate speak
"""


def toggle(arguments, ctx):
    PIRATE_MODE[0] = not PIRATE_MODE[0]
    message = "Arrr! Pirate mode enabled!" if PIRATE_MODE[0] else "Pirate mode disabled"
    ctx.ui.notify(message)
    return message


def contribute(event):
    return INSTRUCTIONS if PIRATE_MODE[0] else None


def activate(api):
    api.register_command("pirate", "Toggle pirate mode (the agent speaks like a pirate).", toggle)
    api.on("context", contribute)
