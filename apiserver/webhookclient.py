"""The one HTTPS client the server calls webhooks with (admission and CRD conversion).

A call POSTs a JSON review and returns the answer's bytes. It is asynchronous and bounded by the
webhook's timeout, so a slow or dead webhook holds only the request that called it, never the event
loop. Every way the transport can fail (no connection, TLS, timeout, a status other than 200, an
oversized answer) is a :class:`WebhookCallFailed` worded as kube's REST client words it; each caller
words its own context around it (admission: ``failed to call webhook: …``, conversion: ``conversion
webhook for … failed: …``) and checks what the answer must hold.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import aiohttp
import orjson

# A webhook's answer is small; more than this is refused rather than read into memory.
MAX_RESPONSE_BYTES = 3 * 1024 * 1024


class WebhookCallFailed(Exception):
    """The webhook could not be called or did not answer properly; ``str()`` is kube's wording.

    ``unreadable`` marks an answer that came but was refused (too large) rather than a call that failed."""

    def __init__(self, message: str, unreadable: bool = False) -> None:
        super().__init__(message)
        self.unreadable = unreadable


def _dial_error(exc: aiohttp.ClientConnectorError) -> str:
    """A failed connection as Go's net package words it (``dial tcp 127.0.0.1:9443: connect: connection
    refused``), which is what kube's messages carry; aiohttp's own text names its SSL context object."""
    why = exc.os_error
    if isinstance(why, ssl.SSLError):
        return str(why)
    reason = "connection refused" if isinstance(why, ConnectionRefusedError) else \
        (why.strerror or str(why)).lower()
    return f"dial tcp {exc.host}:{exc.port}: connect: {reason}"


class WebhookClient:
    """One HTTPS client for all webhooks of a server; TLS contexts are kept per CA bundle."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}

    def _context(self, ca_bundle: bytes | None) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context()
            if ca_bundle is not None:
                context = ssl.create_default_context(cadata=ca_bundle.decode("ascii", "replace"))
            self._contexts[ca_bundle] = context
        return context

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def post(self, url: str, ca_bundle: bytes | None, timeout_seconds: float, body: dict[str, Any]) -> bytes:
        """The body of the webhook's 200 answer to ``body``."""
        post = f'Post "{url}"'
        try:
            context = self._context(ca_bundle)
        except (ssl.SSLError, ValueError) as exc:
            raise WebhookCallFailed(f"{post}: invalid caBundle: {exc}") from None
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            async with asyncio.timeout(timeout_seconds):
                async with self._session.post(url, data=orjson.dumps(body), ssl=context,
                                              headers={"Content-Type": "application/json",
                                                       "Accept": "application/json"}) as resp:
                    raw = await resp.content.read(MAX_RESPONSE_BYTES + 1)
                    status = resp.status
        except TimeoutError:
            raise WebhookCallFailed(f"{post}: context deadline exceeded") from None
        except aiohttp.ClientConnectorError as exc:
            raise WebhookCallFailed(f"{post}: {_dial_error(exc)}") from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise WebhookCallFailed(f"{post}: {exc}") from None
        if status != 200:
            raise WebhookCallFailed(f"the server responded with the status code {status} but did not return more "
                                    "information")
        if len(raw) > MAX_RESPONSE_BYTES:
            raise WebhookCallFailed(f"the response is larger than {MAX_RESPONSE_BYTES} bytes", unreadable=True)
        return raw
