"""A remote MCP server's OAuth tokens and client registration, kept for the user (protocol-v4 §4).

One file per server URL: ``<state dir>/mcp-auth/<first 32 hex of sha256(url)>.json``, owner-only
(0600, in a 0700 folder), written atomically (a private temporary file renamed over it). It holds
the URL it is for, the dynamic client registration, the tokens and when they were issued (so a
token's remaining lifetime is known after a restart). Nothing of it goes to the catalog, the logs
or a diagnostic. A file that cannot be read or parsed is treated as no file (the user is asked to
log in again) and replaced on the next save.

The class is the SDK's ``TokenStorage`` protocol (``get_tokens`` / ``set_tokens`` /
``get_client_info`` / ``set_client_info``), with the issue time besides.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

from harness_sidecar.base.state_dir import state_dir


def token_path(url: str) -> str:
    digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(state_dir(), "mcp-auth", f"{digest}.json")


class TokenFile:
    """The stored registration and tokens of one server URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = token_path(url)

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                data = json.loads(f.read())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _write(self, data: dict[str, Any]) -> None:
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, json.dumps({**data, "url": self.url}).encode())
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)

    def issued_at(self) -> float | None:
        value = self._read().get("issuedAt")
        return float(value) if isinstance(value, (int, float)) else None

    def forget_tokens(self) -> None:
        data = self._read()
        if "tokens" in data:
            data.pop("tokens")
            data.pop("issuedAt", None)
            self._write(data)

    def forget_client(self) -> None:
        data = self._read()
        if "client" in data:
            data.pop("client")
            self._write(data)

    # -- the SDK's TokenStorage -------------------------------------------------------------------

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["issuedAt"] = time.time()
        self._write(data)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)
