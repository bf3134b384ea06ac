"""The wire: where a request enters and every answer leaves.

``transport`` frames bytes on stdin/stdout, ``endpoint`` is the JSON-RPC endpoint (served
and sent requests in separate tables), ``lifecycle`` answers ``initialize``, ``params``
checks the shape of every request, ``lsp`` serves the same methods as a language server.
Nothing here imports ``resources`` or ``extensions``: the methods are handed in.
"""
