"""The extension host's pieces, one module a noun of the host's side of the channel.

``host`` (run as ``__main__``: the process set-up and ``Host``, which composes the mixins here) imports
them; none of them imports ``host``: run as ``__main__``, it is not in ``sys.modules`` by its name,
and an import would load a second copy of it. ``output`` (frames to the sidecar, ``out_of_memory``), ``exchanges`` (a
request on its way through its steps: ``Exchange``, ``Outcome``, ``Abandoned``), ``serving`` (reading
the channel, leader/follower, dispatch, an exchange's outcome), ``loading`` (init, load, commit and the
in-memory import of an extension's hashed bytes), ``running`` (user code: the event-loop thread, a
handler's call, its copy of the event, what it returned that is ignored), ``ui`` (``ctx`` and
``ctx.ui``: questions to the user and their answers), ``calls`` (a tool call's steps), ``events``
(lifecycle, context, input and loop-event handlers) and ``commands`` (an extension's command). Each
mixin is a part of ``Host``, never used alone: it reads the state ``Host`` keeps and reaches the other
parts through ``self``.
"""
