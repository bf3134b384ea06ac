"""Containment: every process the sidecar starts (extension hosts, MCP servers, command hooks) is
started by ``launcher`` and only there, so that what fences it (its own session, death with the
sidecar, and the kernel's own fences where it has them) is written once.
"""
