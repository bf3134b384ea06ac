"""The extension host's pieces, one module a noun of the host's side of the channel.

``host`` (run as ``__main__``: the process set-up and ``Host``) imports them; none of them imports
``host`` — that would load a second copy of it, with an ``Output`` and an ``Abandoned`` of its own.
``output`` (frames to the sidecar, ``out_of_memory``), ``exchanges`` (a request on its way through its
steps: ``Exchange``, ``Outcome``, ``Abandoned``), ``running`` (where user code runs: the event-loop
thread, whose code a thread runs, each handler's copy of the event), ``ui`` (``ctx`` and ``ctx.ui``),
``loading`` (the in-memory import of an extension's hashed bytes) and ``calls`` (a tool call's state
and the result bodies the host makes).
"""
