"""The syncer bootstrap file written by ``spacehub cluster register``: where the hub is and who we are."""

from __future__ import annotations

import base64
import binascii
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

KIND = "SyncerBootstrap"


class BootstrapError(ValueError):
    """The bootstrap file is missing, unreadable or incomplete; the message says which and how to fix it."""


@dataclass(frozen=True)
class Bootstrap:
    hub: str  # e.g. https://hub.example.com:6443, no trailing slash
    sync_target: str
    token: str
    ca_pem: bytes | None  # None: trust the system's CAs

    def ssl_context(self) -> ssl.SSLContext:
        if self.ca_pem is None:
            return ssl.create_default_context()
        return ssl.create_default_context(cadata=self.ca_pem.decode())

    def with_hub(self, hub: str | None) -> Bootstrap:
        """The same credential for a hub reached at another address (a load balancer, a reverse proxy)."""
        if not hub:
            return self
        return Bootstrap(hub=hub.rstrip("/"), sync_target=self.sync_target, token=self.token, ca_pem=self.ca_pem)

    @classmethod
    def from_dict(cls, doc: Any, source: str) -> Bootstrap:
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise BootstrapError(f"{source}: not a {KIND} (write one with `spacehub cluster register NAME "
                                 f"--bootstrap-out FILE`)")
        missing = [key for key in ("hub", "syncTarget", "token") if not isinstance(doc.get(key), str) or not doc[key]]
        if missing:
            raise BootstrapError(f"{source}: missing {', '.join(missing)}")
        ca_data = doc.get("certificateAuthorityData")
        ca_pem: bytes | None = None
        if ca_data:
            try:
                ca_pem = base64.b64decode(str(ca_data), validate=True)
            except (binascii.Error, ValueError):
                raise BootstrapError(f"{source}: certificateAuthorityData is not base64") from None
        return cls(hub=str(doc["hub"]).rstrip("/"), sync_target=doc["syncTarget"], token=doc["token"], ca_pem=ca_pem)

    @classmethod
    def load(cls, path: Path) -> Bootstrap:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BootstrapError(f"cannot read bootstrap {path}: {exc.strerror or exc}") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BootstrapError(f"{path}: not YAML: {exc}") from None
        return cls.from_dict(doc, str(path))
