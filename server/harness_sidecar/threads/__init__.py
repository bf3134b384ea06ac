"""The sidecar's methods, one module a protocol noun; ``threads.Sidecar`` composes their classes.

``thread`` (thread/start, thread/close), ``live_catalog`` (thread/refresh, watching, rescans),
``resources`` (skills/activate, templates/render, context/build), ``tools`` (tools/list, tools/call,
the tools whose core runs here), ``commands`` (commands/*, input/submit, loop/event), ``extensions``
(the thread's extension host) and ``ui`` (``ui/*`` to the editor). Each class is a part of
``Sidecar``, never used alone: it reads the state ``Sidecar`` keeps (``peer``, ``threads``,
``thread()``) and reaches the other parts through ``self``.
"""
