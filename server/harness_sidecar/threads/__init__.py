"""The threads: the sidecar's methods, one module a protocol noun, composed by ``sidecar.Sidecar``.

``thread`` (what a thread holds), ``open_threads`` (the table of open threads), ``editor`` (what the
threads tell and ask the editor), ``scan`` (a scan of the roots and plugins), ``lifecycle``
(thread/start, thread/close), ``live_catalog`` (thread/refresh, watching, rescans), ``resources``
(skills/activate, templates/render, context/build), ``tools`` (tools/list, tools/call, the tools whose
core runs here), ``commands`` (commands/*, input/submit, loop/event), ``extensions`` (the threads'
extension hosts) and ``typed_input`` (slash lines). Each part is a class given the parts it uses.
"""
