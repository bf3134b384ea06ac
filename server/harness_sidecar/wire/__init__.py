"""The wire: where a request enters and every answer leaves.

``transport`` frames bytes on stdin/stdout, ``endpoint`` is the JSON-RPC endpoint (served
and sent requests in separate tables), ``lifecycle`` answers ``initialize``, ``params``
checks the shape of every request, ``lsp`` serves the same methods as a language server.
Nothing here imports ``resources`` or ``extensions``: the methods are handed in (the endpoint
names ``threads`` only as its default service, imported when first needed or warmed on a
thread while idle). The naming rules ``params`` checks live in the top-level ``names``.
"""
