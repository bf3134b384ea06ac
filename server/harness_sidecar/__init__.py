"""harness-sidecar: an agent harness's knowledge and extension code, served to editors."""

__version__ = "0.1.0"
SERVER_NAME = "harness-sidecar"
PROTOCOL_VERSION = "4"
# Each version adds to the one before (v4 keeps every earlier name unless it says otherwise): a client
# asking for an earlier one is served the current protocol, with no warning naming a version not served.
SUPPORTED_PROTOCOL_VERSIONS = ("1", "2", "3", "4")
