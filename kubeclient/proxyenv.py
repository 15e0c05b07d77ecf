"""The proxy the environment names for a URL, read as httpx and curl read it, once per connection pool."""

from __future__ import annotations

import urllib.parse
import urllib.request


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``/``HTTP_PROXY``, else ``ALL_PROXY``), or None
    where ``NO_PROXY`` covers its host, or its host and port. aiohttp's ``trust_env`` would read this, and
    ``~/.netrc``, in a thread for every request: a sixth of a simulator process's threads with a thousand
    syncers. ``NO_PROXY`` entries may also be URLs (``https://host:port``), as httpx (kr8s's client for the
    same cluster) reads them."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if "no" in proxies:
        proxies["no"] = ",".join(urllib.parse.urlsplit(entry.strip()).netloc if "://" in entry else entry
                                 for entry in proxies["no"].split(","))
    host = f"{parts.hostname or ''}:{parts.port}" if parts.port else parts.hostname or ""
    if urllib.request.proxy_bypass_environment(host, proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")
