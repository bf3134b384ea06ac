"""The wire: where a request enters and every answer leaves.

``transport`` frames bytes on stdin/stdout, ``endpoint`` is the JSON-RPC endpoint (served and sent
requests in separate tables), ``lifecycle`` answers ``initialize``, ``params`` and ``shapes`` check the
shape of every request (``protocol`` is their JSON Schema), ``lsp`` serves the same methods as a
language server. The wire imports no layer above it: the methods it serves are handed in (``cli``
gives the endpoint a factory of ``threads.sidecar.Sidecar`` and what to preload while idle).
"""
