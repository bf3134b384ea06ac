"""Hooks: code that decides about the agent's steps — one package, two sources, one decision.

- ``python``: the rules for what *Python hooks* (extension handlers, run inside the thread's
  extension host) return — ``interpret_before``, ``interpret_patch``, … The host imports it, so
  it imports nothing of the sidecar's.
- *Command hooks* (protocol-v3 §5: Claude Code's and Codex's ``hooks.json``), run as processes:
  ``declared`` reads a declaration file into handlers (any source: a root's ``hooks.json``, a
  plugin's, each under a ``HookSource``), ``matcher`` decides which handlers an event reaches,
  ``command`` runs one handler and reads its answer, ``boundaries`` ties them to the thread's
  boundaries (tools/call, input/submit, thread start and close, and the loop events);
  ``vocabulary`` maps the thread's tools to the names and fields hooks were written for (``hookAs``),
  ``rules`` decides a handler's ``if`` (a permission rule).
- ``decision``: the one ``Verdict`` of any hook and the one merge (deterministic: deny > ask > one
  rewrite) — for a tool call's command hooks, and for a loop event's command hooks and extension
  handlers together (``loop.interpret`` makes an extension handler's return a ``Verdict``).

This ``__init__`` imports nothing: the extension host imports ``hooks.python`` alone.
"""
