"""Containment: every process the sidecar starts (extension hosts, MCP servers, command hooks) is
started by ``launcher`` and only there, so that what fences it (its own session, death with the
sidecar, and the kernel's own fences where it has them) is written once.
"""

# Set by the serving entry points (``cli.serve``, ``cli.serve_lsp``): this process is the sidecar, whose
# children are all started by the launcher (and the reaper), so with cgroups too it adopts orphans and
# ends every descendant that left its groups (``lifetimes``). A process that merely uses the launcher
# (a test, a bench) keeps its own children to itself.
SERVING = False
