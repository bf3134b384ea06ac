"""The extension host: the process that runs one thread's trusted extensions — the host's side of the channel.

``main`` (run as ``__main__``: the process set-up and ``Host``, which makes the parts) imports them;
none of them imports ``main``. The parts, each given the shared ``state.HostState`` and the parts it
uses: ``serving`` (reading the channel, leader/follower, dispatch), ``loading`` (init, load, commit and
the in-memory import of an extension's hashed bytes), ``running`` (user code: the event-loop thread, a
handler's call, its copy of the event, what it returned that is ignored), ``ui`` (``ctx`` and
``ctx.ui``: questions to the user and their answers), ``calls`` (a tool call's steps), ``events``
(lifecycle, context, input and loop-event handlers) and ``commands`` (an extension's command); with
``exchanges`` (a request on its way through its steps, and its outcome), ``output`` (frames to the
sidecar), ``api`` (what extension code is given), ``answers`` and ``jsondata``.

Runs beside extension code: imports nothing of the sidecar's side (``tests/test_house.py``).
"""
