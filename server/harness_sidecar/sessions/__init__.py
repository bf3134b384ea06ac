"""Sessions (protocol-v4 §5): what a thread started with a ``sessionId`` keeps across threads, hosts and
sidecar runs — each extension's ``ctx.state`` and the activated skills. ``store`` owns the files."""
