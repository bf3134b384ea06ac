"""harness-sidecar: an agent harness's knowledge and extension code, served to editors."""

__version__ = "0.1.0"
SERVER_NAME = "harness-sidecar"
PROTOCOL_VERSION = "1"
