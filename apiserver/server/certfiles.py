"""A serving certificate the operator provides (``--tls-cert-file``/``--tls-key-file``), followed as it changes.

cert-manager, or any rotation job, replaces the files in place (in a pod: a Secret volume swapping its
``..data`` symlink). The server's TLS context is told the new pair when the files change, so new
connections get the new certificate without a restart; established ones keep theirs. A pair that does not
load (written half-way, a key that does not match) is refused with a warning and the current one kept,
and tried again at the next change.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0


@dataclass(frozen=True)
class CertificateFiles:
    cert: Path
    key: Path
    ca: Path | None = None  # the CA kubeconfigs and bootstraps carry; None: clients use their system trust

    def check(self) -> None:
        """Refuse, with a message naming the file, a pair that cannot serve (read at start-up)."""
        for path in (self.cert, self.key, *((self.ca,) if self.ca is not None else ())):
            if not path.is_file():
                raise ValueError(f"{path}: no such file")
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(self.cert, self.key)
        except ssl.SSLError as exc:
            raise ValueError(f"{self.cert} and {self.key} are not a certificate and its key: {exc}") from None
        if self.ca is not None:
            try:
                ssl.create_default_context(cafile=str(self.ca))
            except ssl.SSLError as exc:
                raise ValueError(f"{self.ca} holds no CA certificate: {exc}") from None

    def ca_pem(self) -> bytes | None:
        return self.ca.read_bytes() if self.ca is not None else None

    def stamp(self) -> tuple[tuple[int, int], ...] | None:
        """What changes when either file is replaced; None while one is missing (mid-swap)."""
        try:
            return tuple((s.st_mtime_ns, s.st_size) for s in (os.stat(self.cert), os.stat(self.key)))
        except OSError:
            return None


async def follow(files: CertificateFiles, context: ssl.SSLContext, poll: float = POLL_SECONDS) -> None:
    """Load ``files`` into ``context`` whenever they change (until cancelled)."""
    loaded = files.stamp()
    refused = None
    while True:
        await asyncio.sleep(poll)
        stamp = files.stamp()
        if stamp is None or stamp in (loaded, refused):
            continue
        try:
            context.load_cert_chain(files.cert, files.key)
        except (OSError, ssl.SSLError) as exc:
            refused = stamp
            log.warning("TLS certificate %s not reloaded, still serving the previous one: %s", files.cert, exc)
            continue
        loaded, refused = stamp, None
        log.info("TLS certificate reloaded from %s", files.cert)
