"""harness-sidecar: an agent harness's knowledge and extension code, served to editors."""

__version__ = "0.1.0"
SERVER_NAME = "harness-sidecar"
PROTOCOL_VERSION = "2"
SUPPORTED_PROTOCOL_VERSIONS = ("1", "2")  # v2 only adds to v1: a v1 client is served as is
